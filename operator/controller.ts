// What every controller shares: a work queue fed by event handlers (which only
// enqueue keys), the skip rule, status writes and finalizers.
//
// Skip rule: a key whose object was reconciled to Ready at this generation, with
// the same dependencies (Secrets' resourceVersions, the Box's state: see
// fingerprint()), is not worked on again, unless the periodic resync forces a
// full pass to repair drift in the database.
import type { Logger } from '../api/log.js';
import { setCondition, type Condition, type NewCondition } from './conditions.js';
import type { EventRecorder } from './events.js';
import type { Informer } from './informer.js';
import { isNotFound, PATCH, type KObject, type Kube, type ResourceType } from './kube.js';
import type { OperatorMetrics } from './metrics.js';
import { WorkQueue } from './queue.js';

export interface Status {
  observedGeneration?: number;
  conditions?: Condition[];
  [field: string]: unknown;
}

export type Resource<S = unknown> = KObject & { spec?: S; status?: Status };

/** A failure the resource's author can fix: Ready=False with this reason and message, and a Warning Event. */
export class Problem extends Error {
  readonly event: boolean;

  constructor(readonly reason: string, message: string, opts: { event?: boolean; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.event = opts.event ?? true;
  }
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
}

export abstract class Controller<T extends Resource> {
  readonly queue = new WorkQueue();
  private readonly synced = new Map<string, string>();

  constructor(
    readonly name: string,
    protected readonly type: ResourceType,
    protected readonly informer: Informer<T>,
    protected readonly deps: ControllerDeps,
  ) {
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
    this.queue.run(workers, (key, force) => this.work(key, force), (key, err, retryInMs) => {
      this.log.error({ controller: this.name, key, err, retryInMs }, 'reconcile failed; retrying'); // pino's err serializer: stack and causes
    });
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

  private async work(key: string, force: boolean): Promise<{ requeueAfterMs?: number } | void> {
    const [namespace, name] = key.split('/') as [string, string];
    this.deps.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
    const obj = this.informer.get(namespace, name);
    if (!obj) {
      this.synced.delete(key);
      await this.forgetObject(namespace, name);
      return;
    }
    const fingerprint = `${obj.metadata.generation}|${this.fingerprint(obj)}`;
    if (!force && !obj.metadata.deletionTimestamp && this.synced.get(key) === fingerprint
      && obj.status?.observedGeneration === obj.metadata.generation) {
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

  /**
   * Sets the Ready condition (and any extra fields) and writes status when it
   * changed. A flip to False records a Warning Event; a flip to True a Normal one.
   */
  protected async writeStatus(obj: T, ready: NewCondition, fields: Record<string, unknown> = {}, extra: NewCondition[] = [],
    event = true): Promise<void> {
    const previous = obj.status ?? {};
    let conditions = setCondition(previous.conditions, ready, obj.metadata.generation);
    for (const c of extra) conditions = setCondition(conditions, c, obj.metadata.generation);
    const next: Status = { ...fields, observedGeneration: obj.metadata.generation, conditions };
    const patch: Record<string, unknown> = { ...next };
    for (const k of Object.keys(previous)) if (!(k in next)) patch[k] = null;
    const was = previous.conditions?.find((c) => c.type === 'Ready');
    const changed = was?.status !== ready.status || was.reason !== ready.reason || was.message !== ready.message;
    if (event && ready.status === 'False' && changed) this.deps.events.warning(obj, ready.reason, ready.message);
    if (event && ready.status === 'True' && was?.status !== 'True') this.deps.events.normal(obj, ready.reason, ready.message);
    if (sameJson(previous, next)) return;
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
      await this.kube.patch(this.type, obj.metadata.namespace, obj.metadata.name, [
        { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
        { op: 'add', path: '/metadata/finalizers', value: next },
      ], PATCH.json);
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

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, canonical(v)]));
  }
  return value;
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

export function ownerReference(obj: KObject): { apiVersion: string; kind: string; name: string; uid: string; controller: true; blockOwnerDeletion: true } {
  return { apiVersion: obj.apiVersion!, kind: obj.kind!, name: obj.metadata.name, uid: obj.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

export const MANAGED_LABELS = { 'app.kubernetes.io/managed-by': 'boxauth-operator' } as const;
