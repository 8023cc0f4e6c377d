// Start and stop of a box process. `prepareBox` runs once per start (database,
// migrations, signing key, root client); `startServer` runs in every worker.
import { ServiceProviders } from './saml/service-providers.js';
import { watchSamlMetadata } from './saml/app-status.js';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Audit } from './audit.js';
import { AuditEventWriter } from './store/audit-events.js';
import { bootstrapAdmin, bootstrapAdminClient, bootstrapRootClient, ensureFactorKey, type Credentials } from './bootstrap.js';
import { ReadFence } from './cache/read-fence.js';
import { RecordCache } from './cache/record-cache.js';
import { RefreshHolders } from './cache/refresh-holders.js';
import type { Config } from './config.js';
import { startEmbeddedPostgres } from './db/embedded.js';
import { migrate, migrationsDone } from './db/migrate.js';
import { ChangeFeed } from './db/notify.js';
import { HostLocator, type Located } from './db/locator.js';
import { createPool, type Pool } from './db/pool.js';
import { parseDatabaseUrl } from './database-url.js';
import { createRequestListener, SERVER_CLASSES } from './http/app.js';

/** The request and response classes every box's server builds (api/http/router.ts). */
export { SERVER_CLASSES };
import { addressResolver } from './http/client-address.js';
import { httpsServer } from './http/tls.js';
import { clientCertificates } from './http/client-certificate.js';
import { startPurgeJob } from './jobs/purge.js';
import { startOutbox } from './mail/outbox.js';
import { noticeKinds } from './notice-kinds.js';
import { startNotices } from './notices/outbox.js';
import { createRequestLogger, type Logger } from './log.js';
import { startTracing, stopTracing } from './tracing.js';
import { Metrics } from './metrics.js';
import { HookCaller } from './hooks/caller.js';
import { onStop } from './policy/budget.js';
import { Keyring } from './credentials/keyring.js';
import { Argon2Gate, dummyHash, SecretVerifier } from './credentials/secrets.js';
import { DEVICE_CODE_LIFETIME_SECONDS } from './oauth/device.js';
import { ADDRESS_FACTOR, FailureThrottle } from './credentials/throttle.js';
import { VerifiedAssertions } from './credentials/workload/assertion.js';
import { WorkloadBindings } from './credentials/workload/bindings.js';
import { TrustedIssuers } from './credentials/workload/issuers.js';
import { fetchClientDocument, fetchSamlMetadata } from './document-fetch.js';
import { Attempts } from './people/attempts.js';
import { principalUser } from './people/principal.js';
import { AppDirectory } from './decision/apps.js';
import { Decisions } from './decision/record.js';
import { Policies } from './policy/evaluate.js';
import type { Services } from './services.js';
import { clients } from './store/clients.js';
import { accessPolicies } from './store/policies.js';
import { RefreshWriter } from './store/refresh-writer.js';
import { RefreshReader } from './store/refresh-reader.js';
import { SessionWriter } from './store/session-writer.js';
import { ensureSetting } from './store/box-settings.js';
import type { SubjectSettings } from './credentials/subjects.js';
import { personOfSubject } from './credentials/presented-subjects.js';
import { findByAccessToken, findById } from './store/sessions.js';
import { backfillEmailKeys, peopleNamed } from './store/users.js';
import { listenOn } from './listen.js';
import { Dpop } from './credentials/dpop/check.js';
import { DpopNonces } from './credentials/dpop/nonce.js';
import { ProofLedger } from './store/dpop-proofs.js';
import { ClientAssertions, MAX_JWKS_BYTES } from './oauth/client-assertion.js';
import { SpiffeClientAuth } from './oauth/spiffe.js';
import { sectorRefusal } from './oauth/sector-identifier.js';

export interface PreparedBox {
  databaseUrl: string;
  rootCredentials: Credentials;
  adminCredentials: Credentials;
  embedded: boolean;
  stopDatabase(): Promise<void>;
}

export async function prepareBox(config: Config, log: Logger): Promise<PreparedBox> {
  let databaseUrl = config.databaseUrl;
  let stopDatabase = async (): Promise<void> => undefined;
  if (!databaseUrl) {
    const embedded = await startEmbeddedPostgres(config.dataDir, (msg) => log.info(msg));
    databaseUrl = embedded.url;
    stopDatabase = embedded.stop;
  }
  // Migrations: through PostgreSQL itself, never a transaction pooler.
  const pool = createPool(config.databaseDirectUrl ?? databaseUrl, 2);
  try {
    const applied = await migrate(pool);
    if (applied.length) log.info({ applied }, 'database migrated');
    const keyless = await backfillEmailKeys(pool);
    if (keyless.length) {
      log.warn(
        { users: keyless },
        "these users have an email that is the same account as an older user's (in another case or form): " +
          'they cannot sign in until an administrator changes or deletes one of the two (docs/guides/upgrading.md)',
      );
    }
    await new Keyring(pool, config).ensureActive();
    await ensureFactorKey(pool, config);
    const root = await bootstrapRootClient(pool, config, log);
    const admin = await bootstrapAdmin(pool, config, log);
    await bootstrapAdminClient(pool, config, log);
    return { databaseUrl, rootCredentials: root, adminCredentials: admin, embedded: !config.databaseUrl, stopDatabase };
  } catch (err) {
    await stopDatabase();
    throw err;
  } finally {
    await pool.end();
  }
}

export interface RunningServer {
  port: number;
  /** Where Envoy's gRPC ext_authz is served (undefined: BOXAUTH_GRPC_PORT=0). */
  grpcPort: number | undefined;
  metrics: Metrics;
  stop(): Promise<void>;
}

/**
 * A locator of the database URL's hosts that watches the one in use and says in the log when it
 * changes. A host's box watches only a URL of several hosts (a failover to follow): the watch is a
 * connection and a query a second, for each open box; with one host, a connection that fails
 * still has the locator look at once (HostLocator.suspect).
 */
function watchedLocator(
  url: string,
  config: Config,
  log: Logger,
  which: string,
  options: OpenOptions = { draining: () => false },
): HostLocator {
  const parsed = parseDatabaseUrl(url);
  const known = options.databaseHosts?.get(url);
  const locator = new HostLocator(parsed, {
    timeoutMs: config.dbConnectTimeoutMs,
    ...(known ? { known } : {}),
    onChange: (change) => {
      if (change.kind === 'lost')
        log.warn({ host: change.host, why: change.why, url: which }, 'database host given up; looking for one that fits');
      else
        log.info(
          { host: change.host, url: which, moved: change.moved },
          change.moved ? 'database failed over: now using this host' : 'database host found',
        );
    },
  });
  if (!options.hosted || parsed.hosts.length > 1) locator.watch();
  return locator;
}

/** How long a hosted box keeps an idle connection of its pool. */
const HOSTED_IDLE_CONNECTION_MS = 5_000;
/**
 * Connections a hosted box's pool opens as it opens, beside its change feed's: it opens for a request
 * that waits, whose first queries then wait for no handshake (SCRAM, a backend started) of their own.
 */
const HOSTED_WARM_CONNECTIONS = 2;

/** A box composed over its database: its services and its request listener, listening nowhere yet. */
export interface OpenBox {
  svc: Services;
  listener: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  metrics: Metrics;
  /** Stops its jobs (each given up to `timeoutMs` for what it is sending), its change feed and its pools. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * Composes one box over `databaseUrl`: pools, change feed, keyring, caches, the
 * request listener and the jobs (upkeep, SAML metadata, mail, notices). A box
 * process opens one and listens (startServer); a host opens one per box it
 * serves, on the box's first request, and closes it when the box idles (api/host/).
 */
export interface OpenOptions {
  draining: () => boolean;
  /** One of many boxes of a host: the process's own metrics (and the policies' stops) are the host's to count. */
  hosted?: boolean;
  /**
   * The secrets that passed argon2 (by client and stored hash), kept by a host across the box's
   * closes: the first token after idling costs no argon2 run for a client seen before.
   */
  secrets?: SecretVerifier;
  /** The box's argon2 queues (those `secrets` runs in), kept by a host across its closes as `secrets` is. */
  argon2?: Argon2Gate;
  /**
   * The database host each URL's locator used when the box was last open, kept by a host across its
   * closes: connected to at once, without a connection to ask it first; a failure looks again.
   */
  databaseHosts?: Map<string, Located>;
}

export async function openBox(config: Config, databaseUrl: string, log: Logger, options: OpenOptions): Promise<OpenBox> {
  const locator = watchedLocator(databaseUrl, config, log, 'DATABASE_URL', options);
  // The change feed LISTENs: through PostgreSQL itself (BOXAUTH_DATABASE_DIRECT_URL), where DATABASE_URL is a pooler.
  const direct = config.databaseDirectUrl
    ? watchedLocator(config.databaseDirectUrl, config, log, 'BOXAUTH_DATABASE_DIRECT_URL', options)
    : locator;
  const stopLocators = (): void => {
    for (const [url, l] of [[databaseUrl, locator] as const, [config.databaseDirectUrl, direct] as const])
      if (url && l.current) options.databaseHosts?.set(url, l.current);
    locator.stop();
    direct.stop();
  };
  const pool = createPool(locator, config.dbPoolSize, {
    statementTimeoutMs: config.dbStatementTimeoutMs,
    namedStatements: config.dbNamedStatements,
    // A host's box gives its connections back sooner: the host's boxes share PostgreSQL's max_connections.
    ...(options.hosted ? { idleMs: HOSTED_IDLE_CONNECTION_MS } : {}),
  });
  if (options.hosted) warm(pool, Math.min(HOSTED_WARM_CONNECTIONS, config.dbPoolSize));
  // The upkeep holds a lease by its connection across its statements (api/store/upkeep.ts): not through a pooler either.
  const upkeepPool = direct === locator ? pool : createPool(direct, 1, { statementTimeoutMs: config.dbStatementTimeoutMs });
  const feed = new ChangeFeed(direct, log, config.outageMemorySeconds * 1000, direct === locator ? [] : [locator]);
  await feed.start().catch(async (err: unknown) => {
    stopLocators();
    await pool.end();
    if (upkeepPool !== pool) await upkeepPool.end();
    throw err;
  });
  const keyring = new Keyring(pool, config);
  await keyring.load();
  feed.onChange('signing_keys', () => {
    keyring.load().catch((err: Error) => log.error({ err }, 'reloading signing keys failed'));
  });
  feed.onReset(() => {
    keyring.load().catch(() => undefined);
  });

  // The box's own queues for the process's argon2 runs, which the boxes of a host take in turns.
  const argon2 = options.argon2 ?? new Argon2Gate({ maxWaiting: config.argon2MaxWaiting, signUpMaxWaiting: config.signUpMaxWaiting });
  await dummyHash(); // made now, so that the first unknown client's check costs what later ones do
  const csrfKey = Buffer.from(await ensureSetting(pool, 'csrf_key', () => randomBytes(32).toString('base64url')));
  // The key of device cookies (api/people/devices.ts): shared, so that a browser one process knows every process knows.
  const deviceKey = Buffer.from(await ensureSetting(pool, 'device_key', () => randomBytes(32).toString('base64url')));
  // The key of DPoP nonces: shared, so that a nonce one process hands out holds at the others.
  const dpopNonceKey = Buffer.from(await ensureSetting(pool, 'dpop_nonce_key', () => randomBytes(32).toString('base64url')));
  const factorKey = await ensureFactorKey(pool, config);
  // Migration 036 recorded which public subs this box hands out (sequential where people had them before).
  const recordedSubjects = await ensureSetting(pool, 'public_subjects', () => 'opaque');
  const subjects: SubjectSettings = {
    publicSubjects: config.publicSubjects ?? (recordedSubjects === 'sequential' ? 'sequential' : 'opaque'),
    key: factorKey,
  };
  const requestLog = createRequestLogger(config.logLevel, { box: config.box });
  const metrics = new Metrics(config.box, { processMetrics: !options.hosted });
  metrics.watch(pool, () => argon2.waitingByLane(), locator);
  const stopCounting = options.hosted ? undefined : onStop((limit) => metrics.policyStops.inc({ limit }));
  const audit = new Audit(
    log,
    requestLog,
    new AuditEventWriter(
      pool,
      (why, err) => {
        metrics.auditEventsNotKept.inc({ why });
        if (err) log.warn({ err: err.message }, 'an audit event could not be kept in the audit trail (it is in the log)');
      },
      config.notices.enabled,
    ),
  );
  // The replay ledger (RFC 9449 §11.1's DPoP proofs, client assertions' jti): one table, a group commit
  // each. Client assertions' has one commit in flight, as the session writer: under load their batches
  // are twice the size, and PostgreSQL's CPU per assertion less (make bench, cc_private_key_jwt).
  const proofLedger = new ProofLedger(pool, (n) => metrics.batchSize.observe({ writer: 'dpop-proofs' }, n));
  const assertionLedger = new ProofLedger(pool, (n) => metrics.batchSize.observe({ writer: 'client-assertions' }, n), 1);
  // AuthnRequests' IDs: one at a time in flight, as client assertions, whose size they share.
  const samlRequestLedger = new ProofLedger(pool, (n) => metrics.batchSize.observe({ writer: 'saml-requests' }, n), 1);
  const svc: Services = {
    config,
    csrfKey,
    deviceKey,
    factorKey,
    subjects,
    issuers: new TrustedIssuers(
      config,
      log,
      (issuer) => metrics.jwksFetches.inc({ issuer }),
      async (url, { ca, allowed }) =>
        (
          await fetchClientDocument(url, {
            allowed,
            timeoutMs: config.clientMetadata.timeoutMs,
            boxUrl: config.baseUrl,
            maxBytes: MAX_JWKS_BYTES,
            accept: 'application/json, application/jwk-set+json',
            ...(ca ? { ca } : {}),
          })
        ).body,
    ),
    workloadBindings: new WorkloadBindings(pool, feed),
    verifiedAssertions: new VerifiedAssertions(),
    log,
    requestLog,
    audit,
    pool,
    feed,
    keyring,
    metrics,
    policies: new Policies(pool, feed, (id, err) =>
      log.error({ policy: id, err: err.message }, 'AccessPolicy cannot be evaluated; it allows nothing'),
    ),
    serviceProviders: new ServiceProviders({ pool, feed, log }, (url) => fetchSamlMetadata(url, config)),
    samlRequests: samlRequestLedger,
    argon2,
    secrets: options.secrets ?? new SecretVerifier(argon2),
    attempts: new Attempts(pool, config),
    apps: new AppDirectory(
      pool,
      feed,
      (host, apps) => log.warn({ host, apps }, 'more than one App has a url at this host: requests found by it are refused'),
      config.baseUrl,
      (app, why) => log.warn({ app, why }, 'this App decides nothing: its audience is not its own'),
    ),
    decisions: new Decisions(pool, audit, metrics, log, config.allowedDecisionSample),
    clientThrottle: new FailureThrottle(
      (key) => (key.kind === 'address' ? ADDRESS_FACTOR : 1) * config.clientAuthMaxFailures,
      config.clientAuthWindowSeconds * 1000,
    ),
    deviceThrottle: new FailureThrottle(() => config.deviceCodesPerAddress, DEVICE_CODE_LIFETIME_SECONDS * 1000, {
      what: 'device codes from this address',
    }),
    addressOf: addressResolver(config.trustedProxies),
    clientCertificates: clientCertificates(config),
    sessionWriter: new SessionWriter(pool, (n) => metrics.batchSize.observe({ writer: 'sessions' }, n)),
    refreshWriter: new RefreshWriter(pool, (n) => metrics.batchSize.observe({ writer: 'refreshes' }, n)),
    refreshReader: new RefreshReader(pool),
    clientAssertions: new ClientAssertions(
      config,
      assertionLedger,
      () => metrics.jwksFetches.inc({ issuer: 'client jwks_uri' }),
      () => keyring.jwks().keys,
    ),
    spiffe: new SpiffeClientAuth(config, assertionLedger, { pool, feed }, (trustDomain) =>
      metrics.jwksFetches.inc({ issuer: `spiffe://${trustDomain}` }),
    ),
    dpop: new Dpop(proofLedger, config.dpopNonce === 'required' ? new DpopNonces(dpopNonceKey) : undefined),
    clients: new RecordCache(feed, 'clients', (id) => clients.read(pool, id)),
    policyRecords: new RecordCache(feed, 'access_policies', (id) => accessPolicies.read(pool, id)),
    readFence: new ReadFence(pool, feed),
    hooks: new HookCaller({ config, pool, feed, factorKey, keyring, metrics, audit, log }),
    refreshHolders: new RefreshHolders(feed),
    sessions: new RecordCache(
      feed,
      'sessions',
      (key) => (key.length === 64 ? findByAccessToken(pool, Buffer.from(key, 'hex')) : findById(pool, key)),
      100_000,
    ),
    peopleNamed: (name) => peopleNamed(pool, name),
    // A pairwise client whose sector document does not list it reads no sub of that sector, as it is given none.
    subjectNamed: async (client, sub) =>
      (await sectorRefusal({ config, log }, client)) ? undefined : personOfSubject({ pool, subjects }, client, sub),
    sectorRefusal: (client) => sectorRefusal({ config, log }, client),
    users: new RecordCache(feed, 'users', (id) => principalUser(pool, Number(id))),
  };
  feed.onChange('groups', () => svc.users.clear()); // cached users carry group names

  const listener = createRequestListener(svc, { draining: options.draining, migrationsDone: () => migrationsDone(svc.pool) });
  const stopPurge = startPurgeJob({ ...svc, pool: upkeepPool });
  // Every process looks at the SAML apps' metadata URLs it claims (one fetch each per box).
  const stopMetadataWatch = watchSamlMetadata(svc);
  // Every process sends mail: a process killed mid-send leaves its mails to the others (api/mail/outbox.ts).
  const outbox = config.smtp ? startOutbox(svc, config.smtp) : undefined;
  // Every process dispatches and sends notices, each kind's (api/notices/outbox.ts); a process
  // killed mid-send leaves its notices to the others.
  const notices = config.notices.enabled ? startNotices(svc, noticeKinds(svc)) : undefined;
  return {
    svc,
    listener,
    metrics,
    async close(timeoutMs) {
      stopCounting?.();
      stopPurge();
      await stopMetadataWatch();
      await Promise.all([outbox?.stop(timeoutMs), notices?.stop(timeoutMs)]);
      await feed.stop();
      stopLocators();
      await pool.end();
      if (upkeepPool !== pool) await upkeepPool.end();
    },
  };
}

/** Opens `n` connections of `pool` at once and gives them back, idle, to the next queries (a failure is theirs to see). */
function warm(pool: Pool, n: number): void {
  for (let i = 0; i < n; i++)
    pool.connect().then(
      (client) => client.release(),
      () => undefined,
    );
}

export async function startServer(config: Config, databaseUrl: string, log: Logger): Promise<RunningServer> {
  let draining = false;
  // Before the first request: off (OTEL_TRACES_EXPORTER unset), this loads nothing.
  await startTracing(config.tracing, { 'boxauth.box': config.box });
  const box = await openBox(config, databaseUrl, log, { draining: () => draining });
  const { svc, listener } = box;
  const secure = config.tls ? httpsServer(config.tls, listener, log, { requestCert: config.clientCertificates.request }) : undefined;
  const server = secure?.server ?? http.createServer(SERVER_CLASSES, listener);
  server.keepAliveTimeout = 65_000; // longer than common load balancer idle timeouts
  await listenOn(server, config.port, config.host, 'BOXAUTH_PORT');
  const extAuthz =
    config.grpcPort === 0
      ? undefined
      : // gRPC (@grpc/grpc-js, protobufjs and Envoy's protos) only in a process that serves it.
        await import('./grpc/ext-authz.js')
          .then(({ serveExtAuthz }) => serveExtAuthz(svc))
          .catch((err: unknown) => {
            server.close();
            throw err;
          });
  return {
    port: (server.address() as AddressInfo).port,
    grpcPort: extAuthz?.port,
    metrics: box.metrics,
    async stop() {
      draining = true;
      secure?.stopWatching();
      // Kubernetes removes a stopping pod from its Service while it sends SIGTERM: for a moment new
      // connections still come. Go on answering them (each with Connection: close, /readyz with 503)
      // until the load balancers have let go, then stop.
      if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      // Stop accepting; let requests in flight finish; then drop idle keep-alive connections.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await Promise.all([closed, extAuthz?.stop(config.shutdownTimeoutMs)]);
      clearTimeout(timer);
      await box.close(config.shutdownTimeoutMs);
      // The spans of the last requests are exported before the process ends.
      await stopTracing().catch((err: unknown) => log.warn({ err }, 'the last spans could not be exported'));
    },
  };
}
