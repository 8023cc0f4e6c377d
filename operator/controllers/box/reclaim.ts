// What deleting a Box does to its database (spec.reclaimPolicy): Retain keeps
// the schema and hands the records of Client/AccessPolicy resources to the REST
// API (managed_by cleared); Delete drops the schema and the role. Only what is
// marked as the namespace's (operator/boxdb.ts): anything else stays as it is.
import { NotOwned } from '../../boxdb.js';
import { Problem } from '../../controller.js';
import { SECRETS } from '../../kube.js';
import { secretValue, type SecretObject } from '../../secrets.js';
import { boxNames } from '../box-manifests.js';
import { adminUrlOf } from './database.js';
import type { BoxResource, BoxWork } from './types.js';

export async function reclaim({ kube, log, databases, settings }: BoxWork, box: BoxResource): Promise<void> {
  const ns = box.metadata.namespace!;
  let adminUrl: string;
  try {
    adminUrl = await adminUrlOf(kube, box, settings);
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    // The Secret of spec.database is gone or holds no URL: no way into the database. A namespace being deleted takes
    // its Secrets at once and accepts no new one, so holding the Box until the Secret returns would hold the namespace
    // in Terminating for ever; what is in the database stays, as with anything reclaimPolicy Delete may not drop.
    log.warn({ namespace: ns, err: err.message }, 'box deleted; its database cannot be reached: its schema and role are left as they are');
    return databases.forget(ns);
  }
  if (box.spec?.reclaimPolicy === 'Delete') return databases.drop(ns, adminUrl);
  const password = secretValue(await kube.find<SecretObject>(SECRETS, ns, boxNames(box).secrets.database), 'password');
  try {
    if (password) {
      await databases.releaseRecords(ns, adminUrl, password);
      log.info({ namespace: ns }, 'box deleted; its schema is retained and its records are managed through the REST API now');
    }
  } catch (err) {
    if (!(err instanceof NotOwned)) throw err;
    log.warn({ namespace: ns, err: err.message }, "box deleted; its schema is not marked as this namespace's: left as it is");
  } finally {
    await databases.forget(ns);
  }
}
