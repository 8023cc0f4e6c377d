// Process entry of the box API: `node dist/api/main.js` (what `make run` and the
// operator's Deployment run). The primary prepares the box once, then serves
// itself (BOXAUTH_WORKERS=1) or forks that many workers sharing the port.
import { errorMessage } from './errors.js';
import cluster from 'node:cluster';
import { CONFIG_VARIABLES, variablesHelp } from './config-reference.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { tuneHeap } from './heap.js';
import { PortUnavailable } from './listen.js';
import { createLogger, type Logger } from './log.js';
import { clusterMetrics, processMetrics, serveMetrics } from './metrics.js';
import { Templates } from './mail/templates.js';
import { prepareBox, startServer, type PreparedBox } from './server.js';
import { startHost } from './host/host.js';
import { Shutdown } from './shutdown.js';

/** `--help`: every variable of api/config-reference.ts, its default, and what it means. */
function help(): string {
  return `boxauth API server: one box, an OAuth 2.0 and OpenID Connect provider with sessions, users and policies.

Usage: node dist/api/main.js            (or: make run; installed from the npm package: boxauth-api)
       BOXAUTH_HOSTED_BOXES=<file> node dist/api/main.js   a host: many boxes in one process

Configuration is read from the environment (docs/reference/configuration.md):
${variablesHelp(CONFIG_VARIABLES)}
`;
}

function banner(config: Config, prepared: PreparedBox): string {
  const lines = [
    `boxauth: box "${config.box}" is serving at ${config.baseUrl}`,
    `  root client:  ${config.rootClientId}, secret ${prepared.rootCredentials.where}`,
    `  admin user:   ${config.adminEmail}, password ${prepared.adminCredentials.where}`,
    `  admin UI:     ${config.baseUrl}/admin`,
    `  metrics:      http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${config.metricsPort}/metrics`,
    ...(config.grpcPort
      ? [
          `  ext_authz:    ${config.host === '0.0.0.0' ? 'localhost' : config.host}:${config.grpcPort} (gRPC, envoy.service.auth.v3.Authorization)`,
        ]
      : []),
    `  database:     ${prepared.embedded ? `embedded PostgreSQL in ${config.dataDir}/postgres` : 'DATABASE_URL'}`,
    `  token:        curl -s -u ${config.rootClientId}:<secret> -d grant_type=client_credentials ${config.baseUrl}/auth/token`,
  ];
  return `${lines.join('\n')}\n`;
}

async function runPrimary(config: Config, log: Logger, shutdown: Shutdown): Promise<void> {
  const prepared = await prepareBox(config, log);
  try {
    await serveBox(config, log, prepared, shutdown);
  } catch (err) {
    await prepared.stopDatabase(); // an embedded PostgreSQL started (or adopted) for a box that did not start
    throw err;
  }
}

async function serveBox(config: Config, log: Logger, prepared: PreparedBox, shutdown: Shutdown): Promise<void> {
  if (config.workers === 1) {
    const server = await startServer(config, prepared.databaseUrl, log);
    const metrics = await serveMetrics(config.metricsPort, config.host, processMetrics(server.metrics)).catch(async (err: unknown) => {
      await server.stop();
      throw err;
    });
    process.stderr.write(banner(config, prepared));
    shutdown.serving(async () => {
      metrics.close();
      await server.stop();
      await prepared.stopDatabase();
    });
    return;
  }

  const metrics = await serveMetrics(config.metricsPort, config.host, clusterMetrics());
  let stopping = false;
  const fork = (): void => {
    cluster.fork({
      BOXAUTH_INTERNAL_DATABASE_URL: prepared.databaseUrl,
      // Workers hash passwords with argon2 (19 MiB each): with a fixed mmap
      // threshold glibc hands that memory back after each hash instead of
      // keeping it in a per-thread arena (about 75 MB of RSS per process).
      MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072',
    });
  };
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (code === PORT_UNAVAILABLE_EXIT) {
      // Another worker would fail the same way: stop, as a single process does.
      stopping = true;
      log.fatal({ worker: worker.process.pid }, 'a worker could not listen; stopping');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      metrics.close();
      void prepared.stopDatabase().finally(() => process.exit(1));
      return;
    }
    log.error({ worker: worker.process.pid, exitCode: code, signal }, 'worker died; starting another');
    setTimeout(fork, 500);
  });
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === config.workers) process.stderr.write(banner(config, prepared));
  });
  for (let i = 0; i < config.workers; i++) fork();
  shutdown.serving(async () => {
    stopping = true;
    const exits = Object.values(cluster.workers ?? {}).map(
      (w) =>
        new Promise<void>((resolve) => {
          if (!w || w.isDead()) return resolve();
          w.once('exit', () => resolve());
          w.process.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
    metrics.close();
    await prepared.stopDatabase();
  });
}

/** A host of many boxes (BOXAUTH_HOSTED_BOXES): one process; replicas of its Deployment scale it. */
async function runHost(config: Config, log: Logger, shutdown: Shutdown): Promise<void> {
  const host = await startHost(config, process.env, log);
  process.stderr.write(
    `boxauth: host of ${host.boxes.size} boxes (${config.hosted!.boxesFile}) on port ${host.port}, metrics on ${host.metricsPort}\n`,
  );
  shutdown.serving(() => host.stop());
}

/** A worker's exit code when it cannot listen: the primary stops instead of starting another. */
const PORT_UNAVAILABLE_EXIT = 3;

async function runWorker(config: Config, log: Logger, shutdown: Shutdown): Promise<void> {
  try {
    const server = await startServer(config, process.env.BOXAUTH_INTERNAL_DATABASE_URL!, log);
    shutdown.serving(() => server.stop());
  } catch (err) {
    if (!(err instanceof PortUnavailable)) throw err;
    process.stderr.write(`boxauth: ${err.message}\n`);
    process.exit(PORT_UNAVAILABLE_EXIT);
  }
}

async function main(): Promise<void> {
  tuneHeap(); // the primary (or the one process) and each worker, before the load
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(help());
    return;
  }
  let config: Config;
  try {
    config = loadConfig();
    // Read now, so that a template naming an unknown placeholder stops the start with the config's message.
    if (config.smtp) Templates.load(config.smtp.templatesDir);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`boxauth: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // A host's own lines say `box: ""`; each box's child logger names its box.
  const log = createLogger(config.logLevel, { box: config.hosted ? '' : config.box });
  // A stop that takes longer than its delay and drain (BOXAUTH_SHUTDOWN_DELAY_MS, _TIMEOUT_MS) and closing the database is stuck.
  const shutdown = new Shutdown(log, { faultDeadlineMs: config.shutdownDelayMs + config.shutdownTimeoutMs + 5000 }).install();
  try {
    if (config.hosted) await runHost(config, log, shutdown);
    else if (cluster.isPrimary) await runPrimary(config, log, shutdown);
    else await runWorker(config, log, shutdown);
  } catch (err) {
    if (err instanceof PortUnavailable) {
      // A configuration to change, not a fault: the message says which, without a stack.
      process.stderr.write(`boxauth: ${err.message}\n`);
      process.exit(1);
    }
    log.fatal({ err }, 'start-up failed');
    process.stderr.write(`boxauth: start-up failed: ${errorMessage(err)}\n`);
    process.exit(1);
  }
}

void main();
