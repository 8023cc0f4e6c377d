// Objects the operator makes for a resource: labelled as the operator's, and
// owned by that resource (an ownerReference), so the garbage collector takes
// them away with it.
import { createHash } from 'node:crypto';
import { isConflict, type KObject, type Kube, type OwnerReference, type ResourceType } from './kube.js';

export const MANAGED_LABELS = { 'app.kubernetes.io/managed-by': 'boxauth-operator' } as const;

export function ownerReference(owner: KObject): OwnerReference & { controller: true; blockOwnerDeletion: true } {
  const { apiVersion, kind, metadata } = owner;
  return { apiVersion: apiVersion!, kind: kind!, name: metadata.name, uid: metadata.uid!, controller: true, blockOwnerDeletion: true };
}

export interface EnsureOwnedOptions {
  /**
   * Why an object of that name that no object of the owner's kind owns must
   * not be used; without it, one is used as it is (a Secret an admin wrote beforehand).
   */
  foreign?: () => Error;
}

/**
 * The object `name` in the owner's namespace, created from make() when absent.
 * One controlled by another object of the owner's kind was left by a deleted
 * owner of the same name that no garbage collector got to yet: it is taken
 * over. A create that meets one made meanwhile (an earlier attempt whose answer
 * was lost) uses it.
 *
 * Taken over (a patch of its ownerReferences), not waited for until the garbage
 * collector deletes it: its values must survive (a generated client secret apps
 * hold, a database password, the factor key that sealed a retained schema's TOTP
 * secrets), and a Box that used it meanwhile would run on a key about to be
 * replaced. Nor used as it is under its old owner: the collector would delete it
 * under the running box. The chart lets the operator patch only objects labelled
 * as its own (MANAGED_LABELS: its ValidatingAdmissionPolicy), which what an owner
 * of the same kind left is, as the operator made it; an object someone else made
 * is used as it is, or refused with `foreign`.
 */
export async function ensureOwned<T extends KObject>(
  kube: Kube,
  type: ResourceType,
  owner: KObject,
  name: string,
  make: () => KObject | Promise<KObject>,
  { foreign }: EnsureOwnedOptions = {},
): Promise<T> {
  const ns = owner.metadata.namespace!;
  let obj = await kube.find<T>(type, ns, name);
  if (!obj) {
    try {
      obj = await kube.create<T>(type, ns, await make());
    } catch (err) {
      if (!isConflict(err)) throw err;
      obj = await kube.get<T>(type, ns, name);
    }
  }
  const owners = obj.metadata.ownerReferences ?? [];
  if (owners.some((o) => o.uid === owner.metadata.uid)) return obj;
  if (owners.some((o) => o.kind === owner.kind && o.controller)) {
    await kube.patch(type, ns, name, { metadata: { ownerReferences: [ownerReference(owner)] } });
  } else if (foreign) {
    throw foreign();
  }
  return obj;
}

/** The digest of what the operator last applied to an object, on the object: a change of what it wants shows there. */
export const APPLIED_ANNOTATION = 'boxauth.io/applied';

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `live` holds every value of `wanted` (the server adds defaults beside them); arrays element by element. */
function holds(live: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) return Array.isArray(live) && live.length === wanted.length && wanted.every((w, i) => holds(live[i], w));
  if (isPlainObject(wanted)) return isPlainObject(live) && Object.entries(wanted).every(([k, w]) => w === undefined || holds(live[k], w));
  return live === wanted;
}

/**
 * Server-side apply of `desired`, unless `live` (the object as a cache or a GET has it) already is what it says:
 * an apply that changes nothing is still a write request, one per object at every restart of the operator and
 * every resync. The digest of `desired` goes on the object (APPLIED_ANNOTATION) so that a field the operator
 * stopped sending, which its apply would remove, counts as a change; an edit of a field it sends (drift) fails
 * `holds` and is applied over.
 */
export async function applyChanged<T extends KObject>(
  kube: Kube,
  type: ResourceType,
  namespace: string,
  desired: KObject,
  live: T | undefined,
): Promise<T> {
  const digest = createHash('sha256').update(JSON.stringify(desired)).digest('hex').slice(0, 16);
  const stamped = {
    ...desired,
    metadata: { ...desired.metadata, annotations: { ...desired.metadata.annotations, [APPLIED_ANNOTATION]: digest } },
  };
  if (live && live.metadata.annotations?.[APPLIED_ANNOTATION] === digest && holds(live, stamped)) return live;
  return kube.apply<T>(type, namespace, stamped);
}
