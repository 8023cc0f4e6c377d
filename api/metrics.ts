// Prometheus metrics, served on a port of their own (serveMetrics). With several
// worker processes the primary serves them for all, gathering every worker's
// registry (prom-client's AggregatorRegistry).
import cluster from 'node:cluster';
import http, { type Server } from 'node:http';
import promClient from 'prom-client';
import { errorMessage } from './errors.js';
import { listenOn } from './listen.js';
import { droppedLogLines } from './log.js';
import { traceExemplar } from './tracing.js';

const { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = promClient;

/** Seconds, for request and token latencies alike, so that their panels read the same. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * A latency histogram that keeps exemplars (observeLatency). prom-client refuses exemplars on a
 * registry of the text format, which shows none of them anyway: registered past that check, the
 * text format is as before, and the OpenMetrics exposition (openMetricsText) shows them.
 */
function latencyHistogram<T extends string>(
  registry: promClient.Registry,
  config: { name: string; help: string; labelNames: readonly T[] },
): promClient.Histogram<T> {
  const histogram = new Histogram<T>({ ...config, buckets: LATENCY_BUCKETS, registers: [], enableExemplars: true });
  registry.registerMetric(histogram);
  return histogram;
}

function openMetricsRegistry(): promClient.Registry<promClient.OpenMetricsContentType> {
  const registry = new Registry<promClient.OpenMetricsContentType>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  return registry;
}

export class Metrics {
  readonly registry = new Registry();
  /** Renders the registry's metrics as OpenMetrics (exemplars), registering none of its own. */
  private readonly openMetrics = openMetricsRegistry();
  readonly requests = new Counter({
    name: 'boxauth_http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly duration = latencyHistogram(this.registry, {
    name: 'boxauth_http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames: ['method', 'route'],
  });
  readonly tokens = new Counter({
    name: 'boxauth_tokens_issued_total',
    help: 'Access tokens issued',
    labelNames: ['grant'],
    registers: [this.registry],
  });
  readonly jwksFetches = new Counter({
    name: 'boxauth_jwks_fetches_total',
    help: "Fetches of a workload issuer's signing keys",
    labelNames: ['issuer'],
    registers: [this.registry],
  });
  readonly tokenErrors = new Counter({
    name: 'boxauth_token_errors_total',
    help: 'Token endpoint refusals by OAuth error code',
    labelNames: ['error'],
    registers: [this.registry],
  });
  readonly tokenDuration = latencyHistogram(this.registry, {
    name: 'boxauth_token_duration_seconds',
    help: 'Time to answer a token request that issued a token, by grant (the session committed)',
    labelNames: ['grant'],
  });
  readonly refusals = new Counter({
    name: 'boxauth_refusals_total',
    help: 'Requests answered with an error, by error code (invalid_client, invalid_token, access_denied, too_many_requests, …)',
    labelNames: ['error'],
    registers: [this.registry],
  });
  readonly signIns = new Counter({
    name: 'boxauth_sign_ins_total',
    help: 'People signing in on the box, by result: success, failure (wrong email or password), throttled (locked out)',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly decisions = new Counter({
    name: 'boxauth_decisions_total',
    help: 'Decisions of the decision point, by app, front door (authzen, http, forward-auth, grpc) and result (allow, deny)',
    labelNames: ['app', 'door', 'result'],
    registers: [this.registry],
  });
  readonly decisionDenials = new Counter({
    name: 'boxauth_decision_denials_total',
    help: 'Refused decisions by reason: no-policy, no-app, bad-path, bad-body, bad-token, wrong-audience, sign-in, step-up, error',
    labelNames: ['app', 'reason'],
    registers: [this.registry],
  });
  readonly decisionsNotKept = new Counter({
    name: 'boxauth_decisions_not_kept_total',
    help: 'Refused decisions left out of the record boxauth explain reads, by why: anonymous (no identified caller), rate (over 50 a second), share (over 5 a second of one caller), queue (the writer fell behind), cap (deleted before their retention: BOXAUTH_DECISION_MAX_ROWS)',
    labelNames: ['why'],
    registers: [this.registry],
  });
  readonly logLinesDropped = new Counter({
    name: 'boxauth_log_lines_dropped_total',
    help: "Log lines dropped because the log's reader (stdout) took none while 4 MB of lines waited; a line of the log says how many, once it takes lines again",
    registers: [this.registry],
    collect() {
      this.reset();
      this.inc(droppedLogLines());
    },
  });
  readonly policyStops = new Counter({
    name: 'boxauth_policy_evaluations_stopped_total',
    help: 'Policy evaluations stopped (each denies) by the limit that stopped them: policy (one evaluation, 1,000,000 units), decision (the policies of one request object, 100,000), request (an AuthZEN batch or search, 10,000,000)',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  // Every process measures the one table of its box: its workers' readings are the same one, not parts of a sum.
  readonly decisionRecords = new Gauge({
    name: 'boxauth_decision_records',
    help: 'Refused decisions kept for boxauth explain (rows), as the last purge run counted them; at most BOXAUTH_DECISION_MAX_ROWS after each run',
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly decisionRecordBytes = new Gauge({
    name: 'boxauth_decision_records_bytes',
    help: 'Size on disk of the refused decisions kept (the table, its indexes and TOAST), as the last purge run measured it',
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly auditEventsNotKept = new Counter({
    name: 'boxauth_audit_events_not_kept_total',
    help: 'Audit events left out of the audit trail (they are still logged), by why: queue (the writer fell behind), error (the database refused the batch), cap (deleted before their retention: BOXAUTH_AUDIT_MAX_ROWS), anonymous (a refused sign-in that names no person), rate (refused sign-ins over 20 a second, or 2 of one person), caller (refused decisions and refused writes of one caller over 60 a minute)',
    labelNames: ['why'],
    registers: [this.registry],
  });
  readonly auditEvents = new Gauge({
    name: 'boxauth_audit_events',
    help: 'Events kept in the audit trail (rows), as the last purge run counted them; at most BOXAUTH_AUDIT_MAX_ROWS after each run',
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly auditEventBytes = new Gauge({
    name: 'boxauth_audit_events_bytes',
    help: 'Size on disk of the audit trail (the table, its indexes and TOAST), as the last purge run measured it',
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly decisionDuration = new Histogram({
    name: 'boxauth_decision_duration_seconds',
    help: 'Time to decide, by front door',
    labelNames: ['door'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'boxauth_group_commit_batch_size',
    help: 'Rows committed together by one group commit, by writer (sessions, refreshes, dpop-proofs, client-assertions, saml-requests)',
    labelNames: ['writer'],
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500],
    registers: [this.registry],
  });

  readonly mails = new Counter({
    name: 'boxauth_mails_total',
    help: 'Mails of the outbox by kind and result: sent, no-recipient (no one holds the address: nothing sent), failed (an attempt, tried again later), given-up (after two days of failures, or refused)',
    labelNames: ['kind', 'result'],
    registers: [this.registry],
  });
  // Every process counts the one table of its box.
  readonly mailOutbox = new Gauge({
    name: 'boxauth_mail_outbox',
    help: 'Mails waiting in the outbox (rows, due or retried later), as this process last counted them',
    aggregator: 'max',
    registers: [this.registry],
  });

  readonly notices = new Counter({
    name: 'boxauth_notices_total',
    help: "Notices out of the box (api/notices/) by kind, destination and result: sent (acknowledged), retrying (an attempt failed; tried again later), given_up (refused, or failing past the kind's time)",
    labelNames: ['kind', 'destination', 'result'],
    registers: [this.registry],
  });
  readonly hookCalls = new Counter({
    name: 'boxauth_hook_calls_total',
    help: "Calls to the box's Hooks (api/hooks/) by hook, moment and result: allowed, refused, or why the call failed (timeout, unreachable, refused_address, status, garbage, busy, breaker_open, condition_error), which the Hook's failurePolicy then decided",
    labelNames: ['hook', 'moment', 'result'],
    registers: [this.registry],
  });
  readonly hookDuration = new Histogram({
    name: 'boxauth_hook_duration_seconds',
    help: 'How long a call to a Hook took, answer read (or failed), by hook and moment',
    labelNames: ['hook', 'moment'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly noticesWaiting = new Gauge({
    name: 'boxauth_notices_waiting',
    help: 'Notices waiting to be sent, by kind and destination, as this process last counted them',
    labelNames: ['kind', 'destination'],
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly noticeOldestSeconds = new Gauge({
    name: 'boxauth_notice_oldest_seconds',
    help: 'Age of the oldest notice waiting, by kind and destination, as this process last saw it',
    labelNames: ['kind', 'destination'],
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly noticeEventsWaiting = new Gauge({
    name: 'boxauth_notice_events_waiting',
    help: 'Events of the outbox of notices not yet fanned out into notices, as this process last counted them',
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly noticeDelivery = new Histogram({
    name: 'boxauth_notice_delivery_seconds',
    help: 'From the fan-out of a notice to its acknowledgement by the receiver, by kind',
    labelNames: ['kind'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers: [this.registry],
  });

  /** Gauges read when scraped: the database pool's connections and waiters, the argon2 queues, the database host in use. */
  watch(
    pool: { totalCount: number; idleCount: number; waitingCount: number },
    argon2: () => Record<string, number>,
    database: { current: unknown; moves: number },
  ): void {
    new Gauge({
      name: 'boxauth_database_up',
      help: 'Whether a host of DATABASE_URL that accepts writes is in use (0: every request that needs the database answers 503)',
      registers: [this.registry],
      collect() {
        this.set(database.current === undefined ? 0 : 1);
      },
    });
    new Gauge({
      name: 'boxauth_database_failovers',
      help: 'Times this process found the database on another host than the one it used before (a failover followed)',
      registers: [this.registry],
      collect() {
        this.set(database.moves);
      },
    });
    new Gauge({
      name: 'boxauth_db_pool_waiting',
      help: 'Requests waiting for a database connection (the pool is exhausted while above 0)',
      registers: [this.registry],
      collect() {
        this.set(pool.waitingCount);
      },
    });
    new Gauge({
      name: 'boxauth_db_pool_connections',
      help: 'Database connections of the pool, by state',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'busy' }, pool.totalCount - pool.idleCount);
      },
    });
    new Gauge({
      name: 'boxauth_argon2_waiting',
      help: 'argon2 checks waiting for a slot, by lane (sign-in, write, client, sign-up); a full lane answers 503',
      labelNames: ['lane'],
      registers: [this.registry],
      collect() {
        for (const [lane, n] of Object.entries(argon2())) this.set({ lane }, n);
      },
    });
  }

  /**
   * The registry's metrics as OpenMetrics. Not prom-client's own metrics() of an OpenMetrics
   * registry, which renames each counter it renders (drops `_total`) for good, and so the text
   * format's counters after one OpenMetrics scrape: a counter is renamed in a copy here.
   */
  async openMetricsText(): Promise<string> {
    const families = await Promise.all(
      this.registry.getMetricsAsArray().map((m) => {
        const metric = m as unknown as { type: string; get(): Promise<promClient.MetricObjectWithValues<promClient.MetricValue<string>>> };
        const renamed =
          metric.type === 'counter' ? { get: async () => ({ ...(await metric.get()), name: m.name.replace(/_total$/, '') }) } : metric;
        return (this.openMetrics as unknown as { getMetricsAsString(m: unknown): Promise<string> }).getMetricsAsString(renamed);
      }),
    );
    return `${families.join('\n')}\n# EOF\n`;
  }

  /** `processMetrics`: the process's own (memory, event loop, …) too; a host counts those once, not per box. */
  constructor(box: string, { processMetrics = true }: { processMetrics?: boolean } = {}) {
    this.registry.setDefaultLabels({ box });
    this.openMetrics.setDefaultLabels({ box });
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
    if (cluster.isWorker) {
      // Constructing one installs prom-client's listener that answers the primary.
      new AggregatorRegistry();
      AggregatorRegistry.setRegistries([this.registry]);
    }
  }
}

/**
 * Observes a latency; the request being served, if traced and sampled, is its exemplar (shown in
 * OpenMetrics only: the text format Prometheus asks for without them is unchanged).
 */
export function observeLatency<T extends string>(
  histogram: promClient.Histogram<T>,
  labels: promClient.LabelValues<T>,
  seconds: number,
): void {
  histogram.observe({ labels, value: seconds, exemplarLabels: traceExemplar() as promClient.LabelValues<T> });
}

export interface Exposition {
  contentType: string;
  body: string;
}

/** Whether a scraper's Accept asks for OpenMetrics (Prometheus does, first, when it stores exemplars). */
const wantsOpenMetrics = (accept: string): boolean => /application\/openmetrics-text/i.test(accept);

/**
 * This process's metrics (one process serves the box): OpenMetrics, with exemplars, to a scraper
 * that asks for it; else Prometheus' text format.
 */
export const processMetrics =
  (metrics: Metrics) =>
  async (accept: string): Promise<Exposition> =>
    wantsOpenMetrics(accept)
      ? { contentType: Registry.OPENMETRICS_CONTENT_TYPE, body: await metrics.openMetricsText() }
      : { contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };

/** Every worker's metrics, gathered by the primary (prom-client's AggregatorRegistry asks each worker). */
export function clusterMetrics(): () => Promise<Exposition> {
  const aggregator = new AggregatorRegistry();
  return async () => ({ contentType: aggregator.contentType, body: await aggregator.clusterMetrics() });
}

/**
 * GET /metrics on a port of its own (BOXAUTH_METRICS_PORT), never on the public
 * API port: what the box counts (clients, refusals, sign-ins) is for the cluster's
 * Prometheus, not for whoever can reach the API. Anything else answers 404.
 */
export async function serveMetrics(port: number, host: string, collect: (accept: string) => Promise<Exposition>): Promise<Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('metrics are at GET /metrics\n');
      return;
    }
    collect(req.headers.accept ?? '').then(
      ({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType }).end(body),
      (err: unknown) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`# error: ${errorMessage(err)}\n`),
    );
  });
  await listenOn(server, port, host, 'BOXAUTH_METRICS_PORT');
  return server;
}
