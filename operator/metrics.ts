// The operator's Prometheus metrics (GET /metrics on the health port).
import promClient from 'prom-client';

const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = promClient;

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'boxauth_operator_reconciles_total',
    help: 'Reconciles by controller and result (ok, skipped, error, requeue)',
    labelNames: ['controller', 'result'],
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'boxauth_operator_reconcile_duration_seconds',
    help: 'Time one reconcile took',
    labelNames: ['controller'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'boxauth_operator_queue_depth',
    help: 'Keys waiting in a work queue',
    labelNames: ['controller'],
    registers: [this.registry],
  });
  readonly relists = new Counter({
    name: 'boxauth_operator_informer_relists_total',
    help: 'Full lists an informer made (start, 410 Gone, watchdog, period)',
    labelNames: ['informer', 'cause'],
    registers: [this.registry],
  });
  readonly watchErrors = new Counter({
    name: 'boxauth_operator_informer_watch_errors_total',
    help: 'Watches that ended with an error or were cut by the watchdog',
    labelNames: ['informer'],
    registers: [this.registry],
  });
  readonly apiRequests = new Counter({
    name: 'boxauth_operator_api_requests_total',
    help: 'Requests to the Kubernetes API server by verb (get, list, watch, create, update, patch, delete) and resource',
    labelNames: ['verb', 'resource'],
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'boxauth_operator_leader',
    help: '1 while this replica holds the leader Lease',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
