// What deleting a Box does to its database (spec.reclaimPolicy): Retain keeps
// the database or schema and hands the records of Client/AccessPolicy resources
// to the REST API (managed_by cleared); Delete drops the box's own database or
// its schema, and the role (never a CloudNativePG Cluster's role: that is the
// Cluster's). Only what is marked as the namespace's (operator/boxdb.ts):
// anything else stays as it is.
import { NotOwned, type BoxAccess } from '../../boxdb.js';
import { Problem } from '../../controller.js';
import { accessForReclaim } from './database.js';
import type { BoxResource, BoxWork } from './types.js';

export async function reclaim({ kube, log, databases, settings }: BoxWork, box: BoxResource): Promise<void> {
  const ns = box.metadata.namespace!;
  let access: BoxAccess;
  try {
    access = await accessForReclaim(kube, box, settings, databases);
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    // The Secret or Cluster of spec.database is gone or holds no URL: no way into the database. A namespace being deleted
    // takes its Secrets (and a Cluster) at once and accepts no new one, so holding the Box until they return would hold
    // the namespace in Terminating for ever; what is in the database stays, as with anything reclaimPolicy Delete may not drop.
    log.warn(
      { namespace: ns, err: err.message },
      'box deleted; its database cannot be reached: its database or schema and role are left as they are',
    );
    return databases.forget(ns);
  }
  if (box.spec?.reclaimPolicy === 'Delete') return databases.drop(ns, access);
  try {
    if (access.kind === 'owner' || access.password) {
      await databases.releaseRecords(ns, access);
      log.info({ namespace: ns }, 'box deleted; its database or schema is retained and its records are managed through the REST API now');
    }
  } catch (err) {
    if (!(err instanceof NotOwned)) throw err;
    log.warn({ namespace: ns, err: err.message }, "box deleted; its schema is not marked as this namespace's: left as it is");
  } finally {
    await databases.forget(ns);
  }
}
