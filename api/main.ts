// Process entry of the box API: `node dist/api/main.js` (what `make run` and the
// operator's Deployment run). The primary prepares the box once, then serves
// itself (BOXAUTH_WORKERS=1) or forks that many workers sharing the port.
import { errorMessage } from './errors.js';
import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { clusterMetrics, processMetrics, serveMetrics } from './metrics.js';
import { prepareBox, startServer, type PreparedBox } from './server.js';

const HELP = `boxauth API server — one box: OAuth 2.0 tokens, sessions, users.

Usage: node dist/api/main.js            (or: make run)

Configuration is read from the environment:
  BOXAUTH_PORT                 HTTP port (8080)
  BOXAUTH_HOST                 listen address (0.0.0.0)
  BOXAUTH_BASE_URL             public URL: JWT iss, redirects (http://localhost:$BOXAUTH_PORT)
  BOXAUTH_BOX                  box name, in logs and metrics (default)
  DATABASE_URL                 postgres:// URL (unset: embedded PostgreSQL in $BOXAUTH_DATA_DIR)
  BOXAUTH_DATA_DIR             embedded database and generated credentials (.boxauth)
  BOXAUTH_ROOT_CLIENT_ID       root client id (root)
  BOXAUTH_ROOT_CLIENT_SECRET   root client secret (generated into $BOXAUTH_DATA_DIR/root-client.json)
  BOXAUTH_ADMIN_EMAIL          first admin user (admin@localhost)
  BOXAUTH_ADMIN_PASSWORD       its password (generated beside the root client)
  BOXAUTH_REGISTRATION         self sign-up on the sign-in page (false)
  BOXAUTH_SIGN_UP_MAX_PER_ADDRESS  sign-ups per address per BOXAUTH_SIGN_UP_ADDRESS_WINDOW_SECONDS before 429 (10 per 3600)
  BOXAUTH_SIGN_UP_MAX_PER_BOX  sign-ups box-wide per BOXAUTH_SIGN_UP_BOX_WINDOW_SECONDS before 429 (100 per 600)
  BOXAUTH_SIGN_UP_MAX_WAITING  sign-up hashes that may wait per process, behind every other check, before 503 (4)
  BOXAUTH_JWT_ALG              access tokens: ES256, RS256 or EdDSA (ES256); ID tokens RS256 unless the client chose
  BOXAUTH_SIGNING_KEY          a PEM private key to sign JWTs with instead of generated keys
  BOXAUTH_KEY_ROTATION_DAYS    age at which a generated signing key is replaced; 0 = never (30)
  BOXAUTH_WORKERS              worker processes, or "auto" for one per CPU (1)
  BOXAUTH_DB_POOL_SIZE         database connections per worker (10)
  BOXAUTH_SESSION_RETENTION_HOURS  how long closed/expired sessions stay visible (24)
  BOXAUTH_METRICS_PORT         port of GET /metrics for Prometheus, apart from the API (9464)
  BOXAUTH_TLS_CERT_FILE        HTTPS: PEM certificate (chain), reloaded when it changes (plain HTTP without)
  BOXAUTH_TLS_KEY_FILE         HTTPS: its PEM private key
  BOXAUTH_HSTS_MAX_AGE         with an https base URL, Strict-Transport-Security max-age in seconds (31536000)
  BOXAUTH_HSTS_INCLUDE_SUBDOMAINS  ...and includeSubDomains (false)
  BOXAUTH_TRUSTED_PROXIES      proxies whose X-Forwarded-For is believed, as CIDRs (none)
  BOXAUTH_CLIENT_AUTH_MAX_FAILURES  failed client authentications per client id and minute before 429 (10)
  BOXAUTH_DEVICE_CODES_PER_ADDRESS  device codes per address in 10 minutes before 429 (30)
  BOXAUTH_ARGON2_MAX_WAITING   argon2 checks that may wait per process and kind before 503 (32)
  BOXAUTH_LOG_LEVEL            trace, debug, info, warn, error (info)
See README.md for the whole list.
`;

function banner(config: Config, prepared: PreparedBox): string {
  const lines = [
    `boxauth: box "${config.box}" is serving at ${config.baseUrl}`,
    `  root client:  ${config.rootClientId}, secret ${prepared.rootCredentials.where}`,
    `  admin user:   ${config.adminEmail}, password ${prepared.adminCredentials.where}`,
    `  admin UI:     ${config.baseUrl}/admin`,
    `  metrics:      http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${config.metricsPort}/metrics`,
    `  database:     ${prepared.embedded ? `embedded PostgreSQL in ${config.dataDir}/postgres` : 'DATABASE_URL'}`,
    `  token:        curl -s -u ${config.rootClientId}:<secret> -d grant_type=client_credentials ${config.baseUrl}/auth/token`,
  ];
  return `${lines.join('\n')}\n`;
}

function onSignals(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handler = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: draining requests in flight');
    stop().then(
      () => process.exit(0),
      (err: Error) => {
        log.error({ err: err.message }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

async function runPrimary(config: Config, log: Logger): Promise<void> {
  const prepared = await prepareBox(config, log);
  if (config.workers === 1) {
    const server = await startServer(config, prepared.databaseUrl, log);
    const metrics = await serveMetrics(config.metricsPort, config.host, processMetrics(server.metrics));
    process.stderr.write(banner(config, prepared));
    onSignals(async () => {
      metrics.close();
      await server.stop();
      await prepared.stopDatabase();
    }, log);
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
    log.error({ worker: worker.process.pid, exitCode: code, signal }, 'worker died; starting another');
    setTimeout(fork, 500);
  });
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === config.workers) process.stderr.write(banner(config, prepared));
  });
  for (let i = 0; i < config.workers; i++) fork();
  onSignals(async () => {
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
  }, log);
}

async function runWorker(config: Config, log: Logger): Promise<void> {
  const server = await startServer(config, process.env.BOXAUTH_INTERNAL_DATABASE_URL!, log);
  onSignals(() => server.stop(), log);
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP);
    return;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`boxauth: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel, { box: config.box });
  try {
    if (cluster.isPrimary) await runPrimary(config, log);
    else await runWorker(config, log);
  } catch (err) {
    log.fatal({ err }, 'start-up failed');
    process.stderr.write(`boxauth: start-up failed: ${errorMessage(err)}\n`);
    process.exit(1);
  }
}

void main();
