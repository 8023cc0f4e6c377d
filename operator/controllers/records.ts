// Client, AccessPolicy, App and IdentityProvider resources become records in
// their box's database, written through api/store with managed_by naming the
// resource ("Client team-a/orders"), which makes the REST API refuse to change
// them (409). The reconcile of every kind is the same; the kinds differ in what
// the record holds.
//
// Finalizer rule: deleting the resource removes its record (a Client's sessions
// are closed with it), unless the namespace's Box is gone or going: then the
// Box's reclaimPolicy decides the records' fate, and the finalizer is released.
// A record created through the REST API under the same id is adopted; one owned
// by another resource is refused.
//
// Drift (a record changed or deleted in the database behind the operator's back)
// is found by the periodic resync of the Box, not of each resource: one query
// reads the stamps of a kind's rows (sweep()), and only a resource whose row's
// stamp is not the one its last reconcile left is reconciled again. A thousand
// boxes of ten records each are a thousand queries a resync, not twenty
// thousand reconciles (docs/kubernetes/operator.md). A resource refused with RecordRefused has no
// record at all: one written before (when the Box still allowed it) is removed.
//
// The records a box creates for itself (api/reserved.ts) are the box's: a
// resource of such a name is refused before anything is written, whether the
// record exists or not, since the box starts only with them as it made them
// (and the admin UI's client, adopted, would send admins' codes wherever the
// resource says). One an earlier operator adopted is handed back to the box, on
// refusal and on deletion alike: removing it would break the box just the same.
import {
  errorMessage,
  isReserved,
  type Pool,
  reservedRecords,
  type Resources,
  type ResourceTable,
  type Stored,
  validateResource,
  ValidationError,
} from '../../api/public.js';
import { findCondition, isReady, type NewCondition } from '../conditions.js';
import { Controller, Problem, type ControllerDeps, type Outcome, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import type { ResourceType } from '../kube.js';
import { ConditionType, RecordReason } from '../reasons.js';
import { ROOT_CLIENT_ID } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';

export const RECORD_FINALIZER = 'boxauth.io/record';

const RESERVED = reservedRecords(ROOT_CLIENT_ID);

type Record_ = { id: string; resourceType: string };

export interface Desired<R extends Record_> {
  record: R;
  /** A new secret hash (Clients); null: no secret; undefined keeps the current one. */
  secretHash?: string | null;
  /** A new sealed secret (IdentityProviders); null: no secret; undefined keeps the current one. */
  secretSealed?: Buffer | null;
  /** Extra status fields (e.g. the Client's secretName). */
  status?: Record<string, unknown>;
  /** Conditions besides Ready (a SAML app's SamlMetadataReady), and those that no longer apply. */
  conditions?: NewCondition[];
  without?: ConditionType[];
  /** Look again in this many ms though the resource is ready (something the box has not done yet). */
  requeueAfterMs?: number;
}

/**
 * A Problem for which the resource must have no record in the box at all (e.g. a
 * Client binding ServiceAccounts its Box does not allow): a record written
 * before is removed, and a Client's sessions with it.
 */
export class RecordRefused extends Problem {}

/** A controller of the resources of kind K: S is their spec, Resources[K] the record each becomes. */
export abstract class RecordController<S, K extends keyof Resources> extends Controller<Resource<S>> {
  /** By resource: the stamp its record's row had when this process last reconciled it to Ready. */
  private readonly stamps = new Map<string, string>();

  constructor(
    name: string,
    type: ResourceType,
    informer: ObjectCache<Resource<S>>,
    deps: ControllerDeps,
    protected readonly boxes: BoxController,
    protected readonly table: ResourceTable<Resources[K]>,
  ) {
    super(name, type, informer, deps);
  }

  protected get kind(): K {
    return this.type.kind as K;
  }

  /** The value of managed_by: the resource, as the REST API's 409 names it. */
  managedBy(obj: Resource<S>): string {
    return `${this.kind} ${obj.metadata.namespace}/${obj.metadata.name}`;
  }

  /** The record the resource stands for, as the REST API would store it. */
  protected baseRecord(obj: Resource<S>, drop: string[] = []): Resources[K] {
    const spec = { ...(obj.spec ?? {}) } as Record<string, unknown>;
    for (const field of drop) delete spec[field];
    const record: unknown = { resourceType: this.kind, id: obj.metadata.name, ...spec };
    try {
      validateResource(this.kind, record);
    } catch (err) {
      if (err instanceof ValidationError)
        throw new Problem(RecordReason.InvalidSpec, `spec is not a valid ${this.kind}: ${err.message}`, { cause: err });
      throw err;
    }
    return record;
  }

  /**
   * Computes the record (and secret) to write, given the record as it is stored now; throws Problem when the author
   * must fix something.
   */
  protected abstract desired(obj: Resource<S>, box: BoxResource, stored: Stored<Resources[K]> | undefined): Promise<Desired<Resources[K]>>;

  /** Deletes the record this resource manages; a Client closes its sessions too. */
  protected async deleteRecord(pool: Pool, id: string, managedBy: string): Promise<void> {
    await this.table.remove(pool, id, managedBy);
  }

  /** Removes the record when this resource manages it; one that is not its own (any more) is left. */
  private async removeRecord(pool: Pool, id: string, managedBy: string): Promise<void> {
    if ((await this.table.read(pool, id))?.managedBy !== managedBy) return;
    await this.deleteRecord(pool, id, managedBy);
  }

  /**
   * The resync's look at the records of the namespace (at its Box's recheck, with its pool): one query; the resources
   * whose row is not as their last reconcile left it are enqueued for a full one, behind every change.
   */
  async sweep(namespace: string, pool: Pool): Promise<void> {
    const resources = this.informer.list(namespace).filter((obj) => this.sweptByBox(obj));
    if (!resources.length) return;
    const stamps = await this.table.stamps(pool);
    for (const obj of resources) {
      const { name } = obj.metadata;
      if (stamps.get(name) !== this.stamps.get(`${namespace}/${name}`)) this.enqueue(namespace, name, true, true);
    }
  }

  /** A resource in Ready as this process left it, whose row's stamp it knows: its Box's recheck looks at it. */
  protected override sweptByBox(obj: Resource<S>): boolean {
    return this.stamps.has(`${obj.metadata.namespace}/${obj.metadata.name}`) && this.isSynced(obj);
  }

  protected override async forgetObject(namespace: string, name: string): Promise<void> {
    this.stamps.delete(`${namespace}/${name}`);
  }

  protected fingerprint(obj: Resource<S>): string {
    const box = this.boxes.activeBox(obj.metadata.namespace!);
    const pool = box && this.boxes.pool(box);
    return `${box?.metadata.uid}|${isReady(box)}|${pool ? 1 : 0}`;
  }

  protected async reconcile(obj: Resource<S>): Promise<Outcome> {
    const namespace = obj.metadata.namespace!;
    const box = this.boxes.activeBox(namespace);
    const pool = box && this.boxes.pool(box);
    if (obj.metadata.deletionTimestamp) {
      if (!this.hasFinalizer(obj, RECORD_FINALIZER)) return { ready: false };
      if (box && !box.metadata.deletionTimestamp) {
        if (!pool) return { ready: false, requeueAfterMs: 1000 }; // the Box's database is being (re)connected
        await this.letGo(pool, obj);
      }
      await this.setFinalizer(obj, RECORD_FINALIZER, false);
      return { ready: false };
    }
    await this.setFinalizer(obj, RECORD_FINALIZER, true);
    if (this.reserved(obj)) return this.refuseReserved(obj, pool);

    if (!box) {
      return this.notReady(
        obj,
        new Problem(
          RecordReason.BoxNotFound,
          `no Box in namespace ${namespace}: create one (e.g. kubectl apply -n ${namespace} -f examples/box.yaml)`,
        ),
      );
    }
    if (!isReady(box)) {
      const why = findCondition(box.status?.conditions, ConditionType.Ready);
      // Not a failure of this resource (the Box reports its own): no Warning Event.
      return this.notReady(
        obj,
        new Problem(RecordReason.BoxNotReady, `Box ${box.metadata.name} is not ready${why?.message ? `: ${why.message}` : ' yet'}`, {
          event: false,
        }),
      );
    }
    // A ready Box whose database this process has not connected to yet (it just started): the
    // Box's reconcile connects it and enqueues this again; the status stays as it is meanwhile.
    if (!pool) return { ready: false, requeueAfterMs: 2000 };
    try {
      const stored = await this.table.read(pool, obj.metadata.name);
      const desired = await this.desired(obj, box, stored);
      const written = await this.writeRecord(obj, pool, desired, stored);
      await this.markReady(obj, {
        reason: RecordReason.Reconciled,
        message: `${this.kind} ${obj.metadata.name} is served by Box ${box.metadata.name} at ${box.status?.url ?? '?'}`,
        fields: desired.status,
        ...(desired.conditions ? { conditions: desired.conditions } : {}),
        ...(desired.without ? { without: desired.without } : {}),
      });
      const key = `${namespace}/${obj.metadata.name}`;
      if (written.stamp !== undefined) this.stamps.set(key, written.stamp);
      else this.stamps.delete(key);
      return { ready: true, ...(desired.requeueAfterMs !== undefined ? { requeueAfterMs: desired.requeueAfterMs } : {}) };
    } catch (caught) {
      const err = this.problemOf(caught) ?? caught;
      if (err instanceof RecordRefused) await this.removeRecord(pool, obj.metadata.name, this.managedBy(obj));
      if (err instanceof Problem) return this.notReady(obj, err);
      await this.markNotReady(obj, new Problem(RecordReason.ReconcileError, `${errorMessage(err)}; retrying`, { cause: err })).catch(
        () => undefined,
      );
      throw err;
    }
  }

  /** The Problem a failed write is for the author to fix (e.g. a unique index's refusal), if it is one. */
  protected problemOf(_err: unknown): Problem | undefined {
    return undefined;
  }

  private reserved(obj: Resource<S>): boolean {
    return isReserved(RESERVED, this.kind, obj.metadata.name);
  }

  /** The resource is gone: its record goes with it, unless the record is the box's own. */
  private async letGo(pool: Pool, obj: Resource<S>): Promise<void> {
    if (this.reserved(obj)) return this.handBack(pool, obj);
    await this.removeRecord(pool, obj.metadata.name, this.managedBy(obj));
    this.log.info({ [this.kind]: `${obj.metadata.namespace}/${obj.metadata.name}` }, 'record removed');
  }

  /** Ready=False ReservedName, nothing written; `pool` (when connected) to hand back what an earlier operator took. */
  private async refuseReserved(obj: Resource<S>, pool: Pool | undefined): Promise<Outcome> {
    if (pool) await this.handBack(pool, obj);
    return this.notReady(
      obj,
      new Problem(
        RecordReason.ReservedName,
        `"${obj.metadata.name}" is a ${this.kind} the box creates for itself and depends on; choose another name for this resource`,
      ),
    );
  }

  private async handBack(pool: Pool, obj: Resource<S>): Promise<void> {
    const id = obj.metadata.name;
    if ((await this.table.read(pool, id))?.managedBy !== this.managedBy(obj)) return;
    await this.table.setOwner(pool, id, null);
    this.log.warn(
      { [this.kind]: `${obj.metadata.namespace}/${id}` },
      "the box's own record was managed by this resource; handed it back to the box",
    );
  }

  private async notReady(obj: Resource<S>, problem: Problem): Promise<Outcome> {
    await this.markNotReady(obj, problem);
    return { ready: false };
  }

  private async writeRecord(
    obj: Resource<S>,
    pool: Pool,
    desired: Desired<Resources[K]>,
    stored: Stored<Resources[K]> | undefined,
  ): Promise<Stored<Resources[K]>> {
    const managedBy = this.managedBy(obj);
    const id = obj.metadata.name;
    if (stored && stored.managedBy !== managedBy) {
      if (stored.managedBy !== null) {
        throw new Problem(
          RecordReason.OwnedElsewhere,
          `the ${this.kind} record "${id}" is managed by ${stored.managedBy}; delete that resource first`,
        );
      }
      await this.table.setOwner(pool, id, managedBy);
      this.deps.events.normal(obj, RecordReason.Adopted, `took over the ${this.kind} record "${id}" created through the REST API`);
    }
    const { stored: after, created } = await this.table.write(pool, desired.record, {
      managedBy,
      ...(desired.secretHash !== undefined ? { secretHash: desired.secretHash } : {}),
      ...(desired.secretSealed !== undefined ? { secretSealed: desired.secretSealed } : {}),
    });
    const versionOf = (r: unknown): string | undefined => (r as { meta?: { versionId?: string } }).meta?.versionId;
    const changed = created || versionOf(after.resource) !== versionOf(stored?.resource);
    if (!changed) return after;
    const ref = `${obj.metadata.namespace}/${id}`;
    // A new secret from the Secret changes the record while the resource stays as it was: that is no drift.
    const newSecret = typeof desired.secretHash === 'string' || desired.secretSealed instanceof Buffer;
    const wasInPlace = isReady(obj) && obj.status?.observedGeneration === obj.metadata.generation && !newSecret;
    if (wasInPlace) {
      // Nothing in Kubernetes changed, yet the record differed: someone changed or deleted it in the database.
      this.log.warn({ [this.kind]: ref }, 'record differed from the resource; restored');
      this.deps.events.normal(
        obj,
        RecordReason.DriftRepaired,
        `the ${this.kind} record "${id}" was changed or deleted outside Kubernetes; restored it`,
      );
    } else {
      this.log.info({ [this.kind]: ref, created }, created ? 'record created' : 'record updated');
    }
    return after;
  }
}
