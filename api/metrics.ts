// Prometheus metrics. With several worker processes, GET /metrics on any worker
// answers for all of them: the worker asks the primary, which gathers every
// worker's registry (prom-client's AggregatorRegistry).
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import promClient from 'prom-client';

const { AggregatorRegistry, Counter, Histogram, Registry, collectDefaultMetrics } = promClient;

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'boxauth_http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'boxauth_http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
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

  constructor(box: string) {
    this.registry.setDefaultLabels({ box });
    collectDefaultMetrics({ register: this.registry });
    if (cluster.isWorker) {
      // Constructing one installs prom-client's listener that answers the primary.
      new AggregatorRegistry();
      AggregatorRegistry.setRegistries([this.registry]);
    }
  }

  /** The exposition text for this process, or for every worker when clustered. */
  async text(): Promise<{ contentType: string; body: string }> {
    if (!cluster.isWorker || !process.send) return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    const id = randomUUID();
    const body = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        process.off('message', onMessage);
        reject(new Error('metrics request timed out'));
      }, 5000);
      const onMessage = (msg: { type?: string; id?: string; body?: string }): void => {
        if (msg?.type !== 'boxauth:metrics' || msg.id !== id) return;
        clearTimeout(timer);
        process.off('message', onMessage);
        resolve(msg.body ?? '');
      };
      process.on('message', onMessage);
      process.send!({ type: 'boxauth:metrics-request', id });
    });
    return { contentType: this.registry.contentType, body };
  }
}

/** In the primary: answers workers' requests for the cluster-wide metrics. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, msg: { type?: string; id?: string }) => {
    if (msg?.type !== 'boxauth:metrics-request') return;
    aggregator.clusterMetrics().then(
      (body) => worker.send({ type: 'boxauth:metrics', id: msg.id, body }),
      (err: Error) => worker.send({ type: 'boxauth:metrics', id: msg.id, body: `# error: ${err.message}\n` }),
    );
  });
}
