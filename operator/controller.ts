// What every controller shares: a work queue fed by event handlers (which only
// enqueue keys), the skip rule, status writes and finalizers.
//
// Skip rule: a key whose object was reconciled to Ready at this generation, with
// the same dependencies (Secrets' resourceVersions, the Box's state: see
// fingerprint()), is not worked on again, unless the periodic resync forces a
// full pass to repair drift in the database.
import type { Logger } from '../api/log.js';
import type { Clock } from './clock.js';
import { findCondition, setCondition, type Condition, type NewCondition } from './conditions.js';
import type { EventRecorder } from './events.js';
import type { ObjectCache } from './informer.js';
import { isNotFound, PATCH, type KObject, type Kube, type ResourceType } from './kube.js';
import type { OperatorMetrics } from './metrics.js';
import { WorkQueue } from './queue.js';
import { ConditionType, type Reason } from './reasons.js';

export interface Status {
  observedGeneration?: number;
  conditions?: Condition[];
  [field: string]: unknown;
}

export type Resource<S = unknown> = KObject & { spec?: S; status?: Status };

/** A failure the resource's author can fix: Ready=False with this reason and message, and a Warning Event. */
export class Problem extends Error {
  /** false: another object reports this failure (a Client's Box that is not ready), so no Warning Event here. */
  readonly event: boolean;

  constructor(
    readonly reason: Reason,
    message: string,
    opts: { event?: boolean; cause?: unknown } = {},
  ) {
    super(message, { cause: opts.cause });
    this.event = opts.event ?? true;
  }
}

export interface ReadyOptions {
  reason: Reason;
  message: string;
  /** The status fields besides the conditions, as they now are: one left out is removed. */
  fields?: Record<string, unknown>;
  /** Conditions set along with Ready (a Box's Available). */
  conditions?: NewCondition[];
}

export interface NotReadyOptions {
  /** The status fields besides the conditions; by default kept as they are: a failure does not undo what is in place. */
  fields?: Record<string, unknown>;
}

export interface Outcome {
  ready: boolean;
  requeueAfterMs?: number;
}

export interface ControllerDeps {
  kube: Kube;
  log: Logger;
  metrics: OperatorMetrics;
  events: EventRecorder;
  clock: Clock;
}

export abstract class Controller<T extends Resource> {
  readonly queue: WorkQueue;
  private readonly synced = new Map<string, string>();

  constructor(
    readonly name: string,
    protected readonly type: ResourceType,
    protected readonly informer: ObjectCache<T>,
    protected readonly deps: ControllerDeps,
  ) {
    this.queue = new WorkQueue({ clock: deps.clock });
    informer.on((_event, obj) => this.enqueue(obj.metadata.namespace!, obj.metadata.name));
  }

  protected get kube(): Kube {
    return this.deps.kube;
  }

  protected get log(): Logger {
    return this.deps.log;
  }

  enqueue(namespace: string, name: string, force = false): void {
    this.queue.add(`${namespace}/${name}`, { force });
    this.deps.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
  }

  enqueueNamespace(namespace: string): void {
    for (const obj of this.informer.list(namespace)) this.enqueue(namespace, obj.metadata.name);
  }

  /** Forces a full reconcile of every object (drift repair). */
  resync(): void {
    for (const obj of this.informer.list()) this.enqueue(obj.metadata.namespace!, obj.metadata.name, true);
  }

  start(workers: number): void {
    this.queue.run(
      workers,
      (key, force) => this.reconcileKey(key, force),
      (key, err, retryInMs) => {
        // The error itself: pino's err serializer logs its stack and causes.
        this.log.error({ controller: this.name, key, err, retryInMs }, 'reconcile failed; retrying');
      },
    );
  }

  stop(): Promise<void> {
    return this.queue.shutdown();
  }

  /** What the object's reconcile depends on besides its generation; a change means work even at the same generation. */
  protected abstract fingerprint(obj: T): string;

  /** Reads the world, applies the desired state idempotently, writes status. */
  protected abstract reconcile(obj: T, force: boolean): Promise<Outcome>;

  /** The object is gone from the cache (deleted, finalizers done). */
  protected async forgetObject(_namespace: string, _name: string): Promise<void> {}

  /**
   * One pass over the object of `key` ("namespace/name") as the cache holds it:
   * what a queue worker runs, and what a test calls to see one reconcile. A throw
   * means: retry with backoff.
   */
  async reconcileKey(key: string, force = false): Promise<{ requeueAfterMs?: number } | void> {
    const [namespace, name] = key.split('/') as [string, string];
    this.deps.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
    const obj = this.informer.get(namespace, name);
    if (!obj) {
      this.synced.delete(key);
      await this.forgetObject(namespace, name);
      return;
    }
    const fingerprint = `${obj.metadata.generation}|${this.fingerprint(obj)}`;
    if (
      !force &&
      !obj.metadata.deletionTimestamp &&
      this.synced.get(key) === fingerprint &&
      obj.status?.observedGeneration === obj.metadata.generation
    ) {
      this.deps.metrics.reconciles.inc({ controller: this.name, result: 'skipped' });
      return;
    }
    const end = this.deps.metrics.reconcileSeconds.startTimer({ controller: this.name });
    try {
      const outcome = await this.reconcile(obj, force);
      if (outcome.ready) this.synced.set(key, fingerprint);
      else this.synced.delete(key);
      this.deps.metrics.reconciles.inc({ controller: this.name, result: outcome.requeueAfterMs !== undefined ? 'requeue' : 'ok' });
      return outcome.requeueAfterMs !== undefined ? { requeueAfterMs: outcome.requeueAfterMs } : undefined;
    } catch (err) {
      this.synced.delete(key);
      this.deps.metrics.reconciles.inc({ controller: this.name, result: 'error' });
      throw err;
    } finally {
      end();
    }
  }

  /** Ready=True, with the status fields as they now are; a Normal Event when the resource was not ready before. */
  protected async markReady(obj: T, { reason, message, fields = {}, conditions = [] }: ReadyOptions): Promise<void> {
    if (readyCondition(obj)?.status !== 'True') this.deps.events.normal(obj, reason, message);
    await this.writeStatus(obj, [{ type: ConditionType.Ready, status: 'True', reason, message }, ...conditions], fields);
  }

  /**
   * Ready=False with the problem's reason and message; a Warning Event when
   * they are news (a retry that fails the same way adds none), unless the
   * problem is reported elsewhere.
   */
  protected async markNotReady(obj: T, problem: Problem, { fields = this.statusFields(obj) }: NotReadyOptions = {}): Promise<void> {
    const was = readyCondition(obj);
    if (problem.event && (was?.status !== 'False' || was.reason !== problem.reason || was.message !== problem.message)) {
      this.deps.events.warning(obj, problem.reason, problem.message);
    }
    await this.writeStatus(obj, [{ type: ConditionType.Ready, status: 'False', reason: problem.reason, message: problem.message }], fields);
  }

  /** Sets the conditions (cert-manager's rule: see conditions.ts) and replaces the other fields; writes only what changed. */
  private async writeStatus(obj: T, changes: NewCondition[], fields: Record<string, unknown>): Promise<void> {
    const previous = obj.status ?? {};
    let conditions = previous.conditions;
    const now = new Date(this.deps.clock.now());
    for (const c of changes) conditions = setCondition(conditions, c, obj.metadata.generation, now);
    const next: Status = { ...fields, observedGeneration: obj.metadata.generation, conditions };
    if (sameJson(previous, next)) return;
    const patch: Record<string, unknown> = { ...next };
    for (const k of Object.keys(previous)) if (!(k in next)) patch[k] = null; // a merge patch removes a field set to null
    try {
      await this.kube.patch(this.type, obj.metadata.namespace, obj.metadata.name, { status: patch }, PATCH.merge, 'status');
    } catch (err) {
      if (!isNotFound(err)) throw err; // deleted meanwhile: nothing to report on
    }
  }

  /** The status fields other than conditions, as they are: kept when only Ready changes. */
  protected statusFields(obj: T): Record<string, unknown> {
    const { conditions: _c, observedGeneration: _g, ...fields } = obj.status ?? {};
    return fields;
  }

  protected hasFinalizer(obj: T, finalizer: string): boolean {
    return obj.metadata.finalizers?.includes(finalizer) ?? false;
  }

  /** Adds or removes a finalizer; the resourceVersion test makes a stale cache fail (and retry) instead of clobbering. */
  protected async setFinalizer(obj: T, finalizer: string, present: boolean, retried = false): Promise<void> {
    const current = obj.metadata.finalizers ?? [];
    const next = present ? [...new Set([...current, finalizer])] : current.filter((f) => f !== finalizer);
    if (next.length === current.length && next.every((f, i) => f === current[i])) return;
    try {
      await this.kube.patch(
        this.type,
        obj.metadata.namespace,
        obj.metadata.name,
        [
          { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
          { op: 'add', path: '/metadata/finalizers', value: next },
        ],
        PATCH.json,
      );
    } catch (err) {
      if (isNotFound(err)) {
        if (present) throw err;
        return;
      }
      if (retried) throw err;
      // Our cache was behind (e.g. our own status write): once more with the object as it is now.
      const fresh = await this.kube.find<T>(this.type, obj.metadata.namespace, obj.metadata.name);
      if (fresh) await this.setFinalizer(fresh, finalizer, present, true);
    }
  }
}

const readyCondition = (obj: Resource): Condition | undefined => findCondition(obj.status?.conditions, ConditionType.Ready);

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}
