// The box's database: which PostgreSQL it lives in (the operator's own,
// spec.database.secretRef's, or the CloudNativePG Cluster of
// spec.database.cluster: cnpg.ts), where in it (a database of its own or a
// schema of the shared one: operator/boxdb-names.ts), how the operator gets into
// it, and the Secret the API pods read their URLs from, kept current with what
// they come from. With its own role (the operator's database, or a Secret's),
// that role's password is made once and kept there; with a Cluster, the URLs
// carry the Cluster's application credentials, so a new password there
// rewrites the Secret, which rolls the pods.
import { parseDatabaseUrl } from '../../../api/public.js';
import { randomBytes } from 'node:crypto';
import { urlAs, type BoxAccess, type BoxDatabases } from '../../boxdb.js';
import { Problem } from '../../controller.js';
import { SECRETS, type Kube } from '../../kube.js';
import { BoxReason } from '../../reasons.js';
import { secretData, secretValue, type SecretObject } from '../../secrets.js';
import { boxNames, DATABASE_DIRECT_KEY, DATABASE_URL_KEY } from '../box-manifests.js';
import { clusterDatabase, readClusterObjects, type ClusterDatabase } from './cnpg.js';
import { ensureBoxSecret } from './secrets.js';
import type { DatabaseDescription } from './status.js';
import type { BoxResource, BoxSettings } from './types.js';

/** The box's database, located, with the Secret of its API pods written. */
export interface BoxDatabase {
  access: BoxAccess;
  /** <box>-database: the URLs the API pods read. */
  secret: SecretObject;
  description: DatabaseDescription;
}

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

/** The Cluster of spec.database.cluster, as far as CloudNativePG has made it; a Problem says what is missing. */
async function clusterOf(kube: Kube, box: BoxResource, options?: { pooler: boolean }): Promise<ClusterDatabase> {
  const found = clusterDatabase(box, await readClusterObjects(kube, box), options);
  if (found instanceof Problem) throw found;
  return found;
}

/** Where spec.database says, with <box>-database written for the API pods. */
export async function ensureBoxDatabase(
  kube: Kube,
  box: BoxResource,
  settings: BoxSettings,
  databases: BoxDatabases,
): Promise<BoxDatabase> {
  if (box.spec?.database?.cluster) return ensureClusterDatabase(kube, box);
  const adminUrl = await adminUrlOf(kube, box, settings);
  const ref = box.spec?.database?.secretRef;
  // The operator's settings say how pods reach its own database; a Secret's URL is taken as it is.
  const host = ref ? undefined : settings.boxDatabaseHost;
  const pooler = ref ? undefined : settings.boxDatabasePoolerHost;
  const place = await databases.place(box.metadata.namespace!, adminUrl, settings.boxIsolation);
  const { role, database } = place.names;
  const secret = await writeDatabaseSecret(kube, box, (data) => {
    const password = data.password ?? randomBytes(24).toString('base64url');
    const direct = urlAs(adminUrl, role, password, { host, database });
    return {
      [DATABASE_URL_KEY]: pooler ? urlAs(adminUrl, role, password, { host: pooler, database }) : direct,
      [DATABASE_DIRECT_KEY]: pooler ? direct : undefined,
      username: role,
      password,
    };
  });
  const url = secretValue(secret, DATABASE_URL_KEY)!;
  const direct = secretValue(secret, DATABASE_DIRECT_KEY);
  return {
    access: { kind: 'role', adminUrl, password: secretValue(secret, 'password')!, place },
    secret,
    description: {
      source: ref ? 'Secret' : 'Operator',
      ...(ref ? { secret: ref.name } : {}),
      host: parseDatabaseUrl(url).where,
      ...(direct ? { directHost: parseDatabaseUrl(direct).where } : {}),
      database,
      role,
      isolation: place.isolation,
    },
  };
}

async function ensureClusterDatabase(kube: Kube, box: BoxResource): Promise<BoxDatabase> {
  const ref = box.spec!.database!.cluster!;
  const cluster = await clusterOf(kube, box);
  const pooled = cluster.podUrl !== cluster.directUrl;
  // The role's password stays out of this Secret's `password`: that key is the box's own role's, should it move back.
  const secret = await writeDatabaseSecret(kube, box, () => ({
    [DATABASE_URL_KEY]: cluster.podUrl,
    [DATABASE_DIRECT_KEY]: pooled ? cluster.directUrl : undefined,
    username: cluster.role,
  }));
  return {
    access: { kind: 'owner', url: cluster.directUrl },
    secret,
    description: {
      source: 'Cluster',
      cluster: ref.name,
      secret: cluster.appSecret.metadata.name,
      ...(pooled ? { pooler: ref.pooler, directHost: parseDatabaseUrl(cluster.directUrl).where } : {}),
      host: parseDatabaseUrl(cluster.podUrl).where,
      database: cluster.database,
      role: cluster.role,
      isolation: 'Database',
    },
  };
}

/**
 * <box>-database with the values `wanted` gives for what it holds (undefined: no such key; a key left out
 * stays as it is): made when absent, patched only when a value differs.
 */
async function writeDatabaseSecret(
  kube: Kube,
  box: BoxResource,
  wanted: (data: Record<string, string>) => Record<string, string | undefined>,
): Promise<SecretObject> {
  const name = boxNames(box).secrets.database;
  const present = (values: Record<string, string | undefined>): Record<string, string> =>
    Object.fromEntries(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined));
  const secret = await ensureBoxSecret(kube, box, name, () => present(wanted({})));
  const data = secretData(secret);
  const changed = Object.entries(wanted(data)).filter(([key, value]) => data[key] !== value);
  if (!changed.length) return secret;
  const removed = changed.filter(([, value]) => value === undefined).map(([key]) => [key, null]);
  return kube.patch<SecretObject>(SECRETS, box.metadata.namespace, name, {
    ...(removed.length ? { data: Object.fromEntries(removed) } : {}),
    stringData: present(Object.fromEntries(changed)),
  });
}

/**
 * How the operator gets into the database of a Box being deleted, without writing anything: the Secret or
 * Cluster it names may be gone already (a Problem then). A role's password is empty when its Secret is gone.
 */
export async function accessForReclaim(kube: Kube, box: BoxResource, settings: BoxSettings, databases: BoxDatabases): Promise<BoxAccess> {
  // The primary only: a Pooler deleted first does not keep a deleted Box's schema from its reclaimPolicy.
  if (box.spec?.database?.cluster) return { kind: 'owner', url: (await clusterOf(kube, box, { pooler: false })).directUrl };
  const adminUrl = await adminUrlOf(kube, box, settings);
  const secret = await kube.find<SecretObject>(SECRETS, box.metadata.namespace, boxNames(box).secrets.database);
  const place = await databases.place(box.metadata.namespace!, adminUrl, settings.boxIsolation);
  return { kind: 'role', adminUrl, password: secretValue(secret, 'password') ?? '', place };
}
