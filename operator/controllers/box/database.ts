// The box's database: which PostgreSQL it lives in (spec.database.secretRef, or
// the operator's own), and the Secret the API pods read their URL from (the
// box role's password, made once; the URL kept current with the host).
import { randomBytes } from 'node:crypto';
import { boxDbNames, databaseOf, urlAs } from '../../boxdb.js';
import { Problem } from '../../controller.js';
import { SECRETS, type Kube } from '../../kube.js';
import { BoxReason } from '../../reasons.js';
import { secretData, secretValue, type SecretObject } from '../../secrets.js';
import { boxNames } from '../box-manifests.js';
import { ensureBoxSecret } from './secrets.js';
import type { BoxResource, BoxSettings } from './types.js';

/** The administrative URL of the box's database: from spec.database.secretRef, or the operator's own. */
export async function adminUrlOf(kube: Kube, box: BoxResource, settings: BoxSettings): Promise<string> {
  const ref = box.spec?.database?.secretRef;
  if (!ref) return settings.adminUrl;
  const ns = box.metadata.namespace!;
  const key = ref.key ?? 'DATABASE_URL';
  const secret = await kube.find<SecretObject>(SECRETS, ns, ref.name);
  if (!secret) throw new Problem(BoxReason.DatabaseSecretNotFound, `Secret ${ns}/${ref.name} (spec.database.secretRef) does not exist`);
  const url = secretValue(secret, key);
  if (!url || !/^postgres(ql)?:\/\//.test(url)) {
    throw new Problem(BoxReason.DatabaseSecretInvalid, `Secret ${ns}/${ref.name} key "${key}" must hold a postgres:// URL`);
  }
  return url;
}

/** The Secret with the box role's password and the URL the API pods use. */
export async function ensureDatabaseSecret(kube: Kube, box: BoxResource, adminUrl: string, settings: BoxSettings): Promise<SecretObject> {
  const ns = box.metadata.namespace!;
  const name = boxNames(box).secrets.database;
  const host = box.spec?.database?.secretRef ? undefined : settings.boxDatabaseHost;
  const { role } = boxDbNames(ns, databaseOf(adminUrl));
  const secret = await ensureBoxSecret(kube, box, name, () => {
    const password = randomBytes(24).toString('base64url');
    return { DATABASE_URL: urlAs(adminUrl, role, password, host), username: role, password };
  });
  const data = secretData(secret);
  const wanted = urlAs(adminUrl, role, data.password!, host);
  if (data.DATABASE_URL === wanted && data.username === role) return secret;
  return kube.patch<SecretObject>(SECRETS, ns, name, { stringData: { DATABASE_URL: wanted, username: role } });
}
