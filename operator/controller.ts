// What every controller shares: a work queue fed by event handlers (which only
// enqueue keys), the skip rule, status writes and finalizers.
//
// Skip rule: a key whose object was reconciled to Ready at this generation, with
// the same dependencies (Secrets' resourceVersions, the Box's state: see
// fingerprint()), is not worked on again; the periodic resync rechecks it
// (recheck(): its database only, since Kubernetes announces the rest), or leaves
// that to its Box's recheck (sweptByBox(): the records of a box, looked at in one
// query per kind rather than one reconcile each).
import { span, type Logger, type SpanNotes } from '../api/public.js';
import type { Clock } from './clock.js';
import { findCondition, setCondition, type Condition, type NewCondition } from './conditions.js';
import type { EventRecorder } from './events.js';
import type { ObjectCache } from './informer.js';
import { isNotFound, PATCH, type KObject, type Kube, type ResourceType } from './kube.js';
import type { OperatorMetrics } from './metrics.js';
import { WorkQueue } from './queue.js';
import { ConditionType, progressOf, ReconcilingReason, type Reason } from './reasons.js';

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
  /** Conditions set along with Ready (a Box's Available, a SAML app's SamlMetadataReady). */
  conditions?: NewCondition[];
  /** Conditions that no longer apply (a SamlMetadataReady once the metadata is no longer at a URL): removed. */
  without?: ConditionType[];
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

  enqueue(namespace: string, name: string, force = false, background = false): void {
    this.queue.add(`${namespace}/${name}`, { force, background });
    this.deps.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
  }

  enqueueNamespace(namespace: string): void {
    for (const obj of this.informer.list(namespace)) this.enqueue(namespace, obj.metadata.name);
  }

  /**
   * Forces a full reconcile (drift repair) of every object of the namespaces `inSlice` takes (the resync goes
   * through them a slice at a time: resyncSlices()), but those its Box's recheck looks at.
   */
  resync(inSlice: (namespace: string) => boolean = () => true): void {
    for (const obj of this.informer.list()) {
      const namespace = obj.metadata.namespace!;
      if (!inSlice(namespace) || this.sweptByBox(obj)) continue;
      // Behind every change: a Client applied now is not held by the thousands of objects looked at again.
      this.enqueue(namespace, obj.metadata.name, true, true);
    }
  }

  /** Whether the object is in Ready as this process last reconciled it, nothing it depends on changed since. */
  protected isSynced(obj: T): boolean {
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    return (
      !obj.metadata.deletionTimestamp &&
      obj.status?.observedGeneration === obj.metadata.generation &&
      this.synced.get(key) === `${obj.metadata.generation}|${this.fingerprint(obj)}`
    );
  }

  /** An object the periodic resync leaves to its Box's recheck (RecordController.sweep): none by default. */
  protected sweptByBox(_obj: T): boolean {
    return false;
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

  /**
   * The periodic resync of an object reconciled to Ready in this process with nothing it depends on changed since:
   * what Kubernetes does not announce (drift in the box's database) is looked at again; what it announces is not.
   * By default the whole reconcile.
   */
  protected recheck(obj: T): Promise<Outcome> {
    return this.reconcile(obj, true);
  }

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
    const unchanged =
      !obj.metadata.deletionTimestamp && this.synced.get(key) === fingerprint && obj.status?.observedGeneration === obj.metadata.generation;
    if (unchanged && !force) {
      this.deps.metrics.reconciles.inc({ controller: this.name, result: 'skipped' });
      return;
    }
    // One span per reconcile that does work (api/tracing.ts; off: a branch): the object, and how it ended.
    return span('reconcile', { 'boxauth.controller': this.name, 'k8s.namespace.name': namespace, 'k8s.object.name': name }, (notes) =>
      this.reconcileNow(key, obj, fingerprint, unchanged, force, notes),
    );
  }

  private async reconcileNow(
    key: string,
    obj: T,
    fingerprint: string,
    unchanged: boolean,
    force: boolean,
    notes: SpanNotes,
  ): Promise<{ requeueAfterMs?: number } | void> {
    const end = this.deps.metrics.reconcileSeconds.startTimer({ controller: this.name });
    try {
      const newGeneration = !obj.metadata.deletionTimestamp && obj.status?.observedGeneration !== obj.metadata.generation;
      const outcome = unchanged
        ? await this.recheck(obj)
        : await this.reconcile(newGeneration ? await this.markReconciling(obj) : obj, force);
      // Ready, but to be looked at again (a SAML app's metadata the box has not fetched yet): the requeue must not be skipped.
      if (outcome.ready && outcome.requeueAfterMs === undefined) this.synced.set(key, fingerprint);
      else this.synced.delete(key);
      const result = outcome.requeueAfterMs !== undefined ? 'requeue' : 'ok';
      this.deps.metrics.reconciles.inc({ controller: this.name, result });
      notes.setAttributes({ 'boxauth.reconcile.result': result, 'boxauth.reconcile.ready': outcome.ready });
      return outcome.requeueAfterMs !== undefined ? { requeueAfterMs: outcome.requeueAfterMs } : undefined;
    } catch (err) {
      this.synced.delete(key);
      this.deps.metrics.reconciles.inc({ controller: this.name, result: 'error' });
      notes.setAttributes({ 'boxauth.reconcile.result': 'error' });
      throw err;
    } finally {
      end();
    }
  }

  /** Ready=True (Reconciling and Stalled False), with the status fields as they now are; a Normal Event when the resource was not ready before. */
  protected async markReady(obj: T, { reason, message, fields = {}, conditions = [], without = [] }: ReadyOptions): Promise<void> {
    if (readyCondition(obj)?.status !== 'True') this.deps.events.normal(obj, reason, message);
    const settled = { status: 'False', reason, message } as const;
    await this.writeStatus(
      obj,
      [
        { type: ConditionType.Ready, status: 'True', reason, message },
        { type: ConditionType.Reconciling, ...settled },
        { type: ConditionType.Stalled, ...settled },
        ...conditions,
      ],
      fields,
      true,
      without,
    );
  }

  /**
   * Ready=False with the problem's reason and message, and Reconciling=True or
   * Stalled=True (the other False) as operator/reasons.ts classifies the
   * reason; a Warning Event when they are news (a retry that fails the same
   * way adds none), unless the problem is reported elsewhere.
   */
  protected async markNotReady(obj: T, problem: Problem, { fields = this.statusFields(obj) }: NotReadyOptions = {}): Promise<void> {
    const was = readyCondition(obj);
    if (problem.event && (was?.status !== 'False' || was.reason !== problem.reason || was.message !== problem.message)) {
      this.deps.events.warning(obj, problem.reason, problem.message);
    }
    const { reason, message } = problem;
    const stalled = progressOf(this.type.kind, reason) === ConditionType.Stalled;
    await this.writeStatus(
      obj,
      [
        { type: ConditionType.Ready, status: 'False', reason, message },
        { type: ConditionType.Reconciling, status: stalled ? 'False' : 'True', reason, message },
        { type: ConditionType.Stalled, status: stalled ? 'True' : 'False', reason, message },
      ],
      fields,
    );
  }

  /**
   * Reconciling=True (Stalled=False) as the work on a generation the status
   * does not show yet begins, so that tools that wait (kstatus, Argo CD) see
   * it at once, and a new resource is not taken for a current one. Ready and
   * status.observedGeneration stay as they are: they tell of the last
   * generation done, until this one is. The object as the API server now
   * has it (the reconcile's writes build on its status and resourceVersion).
   */
  private async markReconciling(obj: T): Promise<T> {
    const generation = obj.metadata.generation;
    const reconciling = findCondition(obj.status?.conditions, ConditionType.Reconciling);
    if (reconciling?.status === 'True' && reconciling.observedGeneration === generation) return obj;
    const reason = ReconcilingReason.Progressing;
    const message = `working on generation ${generation ?? 1}`;
    const written = await this.writeStatus(
      obj,
      [
        { type: ConditionType.Reconciling, status: 'True', reason, message },
        { type: ConditionType.Stalled, status: 'False', reason, message },
      ],
      this.statusFields(obj),
      false,
    );
    return written ?? obj;
  }

  /**
   * Sets the conditions, each with the generation it tells of (cert-manager's rule: see conditions.ts), and replaces
   * the other fields; writes only what changed. status.observedGeneration becomes the object's generation when `done`
   * (its reconcile is over), else stays as it was. The object as written, when it was.
   */
  private async writeStatus(
    obj: T,
    changes: NewCondition[],
    fields: Record<string, unknown>,
    done = true,
    without: ConditionType[] = [],
  ): Promise<T | undefined> {
    const previous = obj.status ?? {};
    let conditions = previous.conditions?.filter((c) => !without.includes(c.type as ConditionType));
    const now = new Date(this.deps.clock.now());
    for (const c of changes) conditions = setCondition(conditions, c, obj.metadata.generation, now);
    const observedGeneration = done ? obj.metadata.generation : previous.observedGeneration;
    const next: Status = { ...fields, ...(observedGeneration !== undefined ? { observedGeneration } : {}), conditions };
    if (sameJson(previous, next)) return undefined;
    try {
      const status = mergePatchOf(previous, next);
      return await this.kube.patch<T>(this.type, obj.metadata.namespace, obj.metadata.name, { status }, PATCH.merge, 'status');
    } catch (err) {
      if (!isNotFound(err)) throw err; // deleted meanwhile: nothing to report on
      return undefined;
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

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The merge patch (RFC 7386) that turns `from` into `to`: a field `to` lacks is set to null, which removes it,
 * at every depth (a field of status.database as well as status.database itself); arrays are replaced whole.
 */
export function mergePatchOf(from: Record<string, unknown>, to: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    patch[k] = isPlainObject(v) && isPlainObject(from[k]) ? mergePatchOf(from[k], v) : v;
  }
  for (const k of Object.keys(from)) if (to[k] === undefined) patch[k] = null;
  return patch;
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}
