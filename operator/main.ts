// Process entry of the operator: `node dist/operator/main.js` (what `make
// operator` and the chart's Deployment run). Campaigns for the leader Lease;
// the leader starts the informers and controllers. SIGTERM: stop handing out
// work, let reconciles in progress finish, release the Lease, exit 0.
import fs from 'node:fs';
import {
  ConfigError,
  createLogger,
  type EmbeddedDatabase,
  errorMessage,
  OPERATOR_CONFIG_VARIABLES,
  PortUnavailable,
  redactUrl,
  startEmbeddedPostgres,
  startTracing,
  stopTracing,
  variablesHelp,
} from '../api/public.js';
import { loadOperatorConfig, type OperatorConfig } from './config.js';
import { defaultHostUrl } from './controllers/host-manifests.js';
import { startHealthServer } from './health.js';
import { HttpKube } from './kube.js';
import { LeaderElector } from './leader.js';
import { Manager } from './manager.js';
import { OperatorMetrics } from './metrics.js';

/** `--help`: every variable of OPERATOR_CONFIG_VARIABLES (api/config-reference.ts), its default, and what it means. */
const HELP = `boxauth operator — reconciles Box, Client, AccessPolicy and App resources into boxes.

Usage: node dist/operator/main.js        (or: make operator)

Kubernetes credentials: $KUBECONFIG (or ~/.kube/config), else the pod's service account.
Configuration is read from the environment (docs/reference/configuration.md):
${variablesHelp(OPERATOR_CONFIG_VARIABLES)}
`;

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function leaseNamespace(config: OperatorConfig, kube: HttpKube): string {
  if (config.namespace) return config.namespace;
  try {
    return fs.readFileSync(SA_NAMESPACE_FILE, 'utf8').trim();
  } catch {
    return kube.contextNamespace ?? 'default';
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP);
    return;
  }
  let config: OperatorConfig;
  try {
    config = loadOperatorConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`boxauth-operator: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel, { component: 'operator', identity: config.identity });
  await startTracing(config.tracing, { 'boxauth.operator.identity': config.identity });
  let kube: HttpKube;
  try {
    kube = HttpKube.fromEnvironment();
  } catch (err) {
    process.stderr.write(
      `boxauth-operator: no Kubernetes credentials: ${errorMessage(err)} (set KUBECONFIG, e.g. eval "$(make -s kube-up)")\n`,
    );
    process.exit(2);
  }
  let embedded: EmbeddedDatabase | undefined;
  let adminUrl = config.databaseUrl;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, (msg) => log.info(msg));
    adminUrl = embedded.url;
  }
  const namespace = leaseNamespace(config, kube);
  const metrics = new OperatorMetrics();
  kube.onRequest = (kind) => metrics.apiRequests.inc({ ...kind });
  const elector = new LeaderElector(
    kube,
    {
      namespace,
      name: config.leaseName,
      identity: config.identity,
      leaseDurationMs: config.leaseDurationMs,
      renewDeadlineMs: Math.round((config.leaseDurationMs * 2) / 3),
      retryPeriodMs: Math.max(500, Math.round(config.leaseDurationMs / 7.5)),
    },
    log,
    metrics,
  );
  let manager: Manager | undefined;
  let stopping = false;
  const health = await startHealthServer(config.healthPort, config.healthHost, metrics, {
    ready: () => {
      if (stopping) return { ok: false, detail: 'shutting down' };
      if (!elector.isLeader) return { ok: true, detail: 'standby: waiting for the leader Lease' };
      return manager?.synced ? { ok: true, detail: 'leader: caches synced' } : { ok: false, detail: 'leader: caches syncing' };
    },
  }).catch(async (err: unknown) => {
    await embedded?.stop(); // a PostgreSQL started (or adopted) for an operator that did not start
    throw err;
  });
  log.info(
    {
      server: kube.config.getCurrentCluster()?.server,
      lease: `${namespace}/${config.leaseName}`,
      healthPort: health.port,
      database: redactUrl(adminUrl.replace(/\/\/[^@]*@/, '//')),
      boxImage: config.boxImage,
    },
    'boxauth operator starting',
  );

  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: finishing reconciles in progress');
    await manager?.stop(config.shutdownTimeoutMs);
    await elector.stop();
    await health.close();
    kube.close();
    await embedded?.stop();
    await stopTracing().catch((err: unknown) => log.warn({ err }, 'the last spans could not be exported'));
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  // Lead while the Lease is ours. A leader that cannot renew it (the API server
  // unreachable for longer than the renew deadline) stops its controllers and
  // campaigns again: it recovers without a restart of the process.
  while (await elector.acquire()) {
    manager = new Manager(
      kube,
      config,
      {
        adminUrl,
        boxDatabaseHost: config.boxDatabaseHost,
        boxDatabasePoolerHost: config.boxDatabasePoolerHost,
        boxIsolation: config.boxIsolation,
        image: config.boxImage,
        imagePullPolicy: config.boxImagePullPolicy,
        pinImage: config.pinBoxImage,
        tokenReviewBinding: config.tokenReviewBinding,
        // The host of hosted boxes runs in the operator's namespace, on the boxes' image.
        host: {
          namespace,
          image: config.boxImage,
          imagePullPolicy: config.boxImagePullPolicy,
          replicas: config.hostReplicas,
          resources: config.hostResources,
          url: config.hostUrl ?? defaultHostUrl(namespace),
        },
      },
      log,
      metrics,
    );
    const current = manager;
    current.start().then(
      () => log.info('caches synced; reconciling'),
      (err: unknown) => {
        log.fatal({ err }, 'could not start the controllers');
        process.exit(1);
      },
    );
    if ((await elector.hold()) === 'stopped') return; // shutdown() stops the manager
    log.warn('stopping the controllers until the Lease is ours again');
    await current.stop(config.shutdownTimeoutMs);
    if (manager === current) manager = undefined;
  }
}

main().catch((err: unknown) => {
  if (err instanceof PortUnavailable) {
    // A configuration to change, not a fault: the message names the variable, without a stack.
    process.stderr.write(`boxauth-operator: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`boxauth-operator: start-up failed: ${errorMessage(err)}\n`);
  process.exit(1);
});
