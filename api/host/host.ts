// A host: one process that serves many boxes, each at its own host names and
// issuer URL (docs/kubernetes/hosted-boxes.md). The request's Host header picks
// the box; the box's own listener answers, over its own database role, keys,
// caches and metrics, exactly as its dedicated process would. A Host that is no
// box's reaches only the host's /healthz and /readyz (the kubelet's probes).
import { startTracing, stopTracing } from '../tracing.js';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import promClient from 'prom-client';
import type { Config, Env } from '../config.js';
import { listenOn } from '../listen.js';
import { onStop } from '../policy/budget.js';
import type { Logger } from '../log.js';
import { serveMetrics } from '../metrics.js';
import { HostedBox, type HostParts } from './hosted-box.js';
import { SERVER_CLASSES } from '../server.js';
import { inOriginForm } from '../http/router.js';
import { boxEnv, watchRegistry, type RegistryEntry } from './registry.js';

const { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = promClient;

export interface RunningHost {
  port: number;
  metricsPort: number;
  /** The boxes served now, by name. */
  boxes: ReadonlyMap<string, HostedBox>;
  stop(): Promise<void>;
}

/** The host's own metrics: the process's, and how its boxes come and go. */
function hostMetrics(boxes: ReadonlyMap<string, HostedBox>) {
  const registry = new Registry();
  registry.setDefaultLabels({ box: '' });
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    opens: new Histogram({
      name: 'boxauth_host_box_open_seconds',
      help: 'Time to open a hosted box on its first request after idling (pools, change feed, keyring, caches)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    closes: new Counter({
      name: 'boxauth_host_box_closes_total',
      help: 'Hosted boxes closed after idling, or changed or removed',
      registers: [registry],
    }),
    refused: new Counter({
      name: 'boxauth_host_requests_refused_total',
      help: "Requests a host answered 503 without serving them: the box's line full, or the box not (yet) ready",
      labelNames: ['hosted_box', 'why'],
      registers: [registry],
    }),
    // Stops are counted where they happen, which is no box's in particular: once, for the process.
    policyStops: new Counter({
      name: 'boxauth_policy_evaluations_stopped_total',
      help: 'Policy evaluations stopped (each denies) by the limit that stopped them: policy (one evaluation, 1,000,000 units), decision (the policies of one request object, 100,000), request (an AuthZEN batch or search, 10,000,000)',
      labelNames: ['limit'],
      registers: [registry],
    }),
    boxes: new Gauge({
      name: 'boxauth_host_boxes',
      help: 'Boxes of the host, by state (preparing, ready, failed), and those open (holding connections and caches)',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const counts = { preparing: 0, ready: 0, failed: 0, open: 0 };
        for (const box of boxes.values()) {
          counts[box.state]++;
          if (box.isOpen) counts.open++;
        }
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    }),
  };
}

/** The Host header's box: with its port first, then without. */
export function boxOfHost(byHost: ReadonlyMap<string, HostedBox>, header: string | undefined): HostedBox | undefined {
  const host = (header ?? '').toLowerCase();
  return byHost.get(host) ?? byHost.get(host.replace(/:\d+$/, ''));
}

export async function startHost(config: Config, hostEnv: Env, log: Logger): Promise<RunningHost> {
  const settings = config.hosted!;
  // One exporter for the process: a request's span names the host it was sent to (server.address), so its box (api/tracing.ts).
  await startTracing(config.tracing, { 'boxauth.host': true });
  const boxes = new Map<string, HostedBox>();
  const metrics = hostMetrics(boxes);
  const stopCounting = onStop((limit) => metrics.policyStops.inc({ limit }));
  let byHost = new Map<string, HostedBox>();
  // Boxes are prepared a few at a time, in the registry's order, but one a request waits for first.
  let preparingNow = 0;
  const preparingLine: { box: HostedBox; go: () => void }[] = [];
  const parts: HostParts = {
    log,
    lineLimit: settings.boxConcurrency,
    lineQueue: settings.boxQueue,
    async preparing(box, fn) {
      if (preparingNow >= settings.prepareConcurrency) await new Promise<void>((go) => preparingLine.push({ box, go }));
      else preparingNow++;
      try {
        return await fn();
      } finally {
        const next = preparingLine.shift();
        if (next) next.go();
        else preparingNow--;
      }
    },
    hurry(box) {
      const at = preparingLine.findIndex((waiting) => waiting.box === box);
      if (at > 0) preparingLine.unshift(...preparingLine.splice(at, 1));
    },
    opened: (box, ms) => {
      metrics.opens.observe(ms / 1000);
      box.log.info({ ms: Math.round(ms) }, 'hosted box opened');
    },
    closed: (box) => {
      metrics.closes.inc();
      box.log.info('hosted box closed');
    },
    refused: (box, why) => metrics.refused.inc({ hosted_box: box.entry.box, why }),
  };

  const applyRegistry = (entries: RegistryEntry[]): void => {
    const next = new Map<string, HostedBox>();
    for (const entry of entries) {
      const known = boxes.get(entry.box);
      // An unchanged entry keeps its box, open or not; a changed one is prepared afresh.
      if (known && JSON.stringify(known.entry) === JSON.stringify(entry)) next.set(entry.box, known);
      else next.set(entry.box, new HostedBox(entry, boxEnv(entry, hostEnv), parts));
    }
    for (const [name, box] of boxes) if (next.get(name) !== box) void box.retire();
    boxes.clear();
    for (const [name, box] of next) boxes.set(name, box);
    byHost = new Map([...boxes.values()].flatMap((box) => box.entry.hostnames.map((h) => [h, box] as const)));
    log.info({ boxes: boxes.size }, 'host registry read');
  };
  const registry = watchRegistry(settings.boxesFile, applyRegistry, (err) =>
    log.error({ why: err.message, file: settings.boxesFile }, 'host registry not applied: the boxes served stay as they were'),
  );
  await registry.ready;
  // Ready once the boxes it started with are prepared (later ones are prepared as they come, while it serves).
  let warm = false;
  void Promise.all([...boxes.values()].map((box) => box.whenPrepared)).then(() => {
    warm = true;
  });

  const idleMs = settings.idleSeconds * 1000;
  const sweep = setInterval(
    () => {
      for (const box of boxes.values()) void box.closeIfIdle(idleMs);
    },
    Math.min(idleMs, 10_000),
  );
  sweep.unref();

  let draining = false;
  const server = http.createServer(SERVER_CLASSES, (req: IncomingMessage, res: ServerResponse) => {
    if (draining) res.setHeader('Connection', 'close');
    inOriginForm(req);
    const box = boxOfHost(byHost, req.headers.host);
    if (box) return box.serve(req, res);
    hostOwn(req, res, draining || !warm);
  });
  server.keepAliveTimeout = 65_000;
  await listenOn(server, config.port, config.host, 'BOXAUTH_PORT');

  const metricsServer = await serveMetrics(config.metricsPort, config.host, async () => {
    const perBox = await Promise.all([...boxes.values()].map((box) => box.metricsJson()));
    const all = [await metrics.registry.getMetricsAsJSON(), ...perBox.filter((m) => m !== undefined)];
    // Each box's series carry its own `box` label: aggregating keeps them apart, and gives one family per name.
    const merged = AggregatorRegistry.aggregate(all);
    return { contentType: merged.contentType, body: await merged.metrics() };
  });

  return {
    port: (server.address() as AddressInfo).port,
    metricsPort: (metricsServer.address() as AddressInfo).port,
    boxes,
    async stop() {
      draining = true;
      registry.stop();
      stopCounting();
      clearInterval(sweep);
      if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await closed;
      clearTimeout(timer);
      await Promise.all([...boxes.values()].map((box) => box.close(config.shutdownTimeoutMs)));
      metricsServer.close();
      await stopTracing().catch((err: unknown) => log.warn({ err }, 'the last spans could not be exported'));
    },
  };
}

/**
 * Whether a Host header names the host itself, not a box: an address (the kubelet's probes come
 * to the pod's IP) or localhost. A box's name that is not (yet) served must not answer the host's
 * /readyz: the operator waits for the box's own before it sends the box's traffic here.
 */
const namesTheHost = (header: string | undefined): boolean => {
  const name = (header ?? '').toLowerCase().replace(/:\d+$/, '');
  return name === '' || name === 'localhost' || isIP(name.replace(/^\[|\]$/g, '')) !== 0;
};

/**
 * A request at a name no box answers: the host's probes at its own address, else 404 (the name is
 * not echoed). Not ready while stopping, or before the boxes it started with are prepared: a new
 * replica takes traffic once it can serve each of them at once.
 */
function hostOwn(req: IncomingMessage, res: ServerResponse, notReady: boolean): void {
  const path = (req.url ?? '').split('?')[0];
  if (!namesTheHost(req.headers.host)) return notFound(res);
  if (req.method === 'GET' && path === '/healthz') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
  if (req.method === 'GET' && path === '/readyz') {
    return void res.writeHead(notReady ? 503 : 200, { 'Content-Type': 'text/plain' }).end(notReady ? 'not ready\n' : 'ok\n');
  }
  notFound(res);
}

function notFound(res: ServerResponse): void {
  res
    .writeHead(404, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
    .end(JSON.stringify({ error: 'not_found', error_description: 'no box is served at this host name' }));
}
