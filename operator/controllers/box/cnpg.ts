// spec.database.cluster: a CloudNativePG Cluster of the box's namespace, the
// box's own database. What CloudNativePG makes for it is read here (the
// Cluster, its application Secret and -rw Service, and the Pooler named with
// it and that Pooler's Service); what the box gets from them is decided
// without I/O (clusterDatabase): the URL of the primary as the application
// role, the one through the Pooler, or the reason a person reads when
// something is missing. Nothing here writes to CloudNativePG's objects.
//
// Addresses are the Services' cluster DNS names with the port each Service
// gives, so that the operator (in its own namespace) and the API pods (in the
// Cluster's) reach the same place; credentials are the application Secret's
// `username` and `password`, the keys every kind of that Secret has (the one
// CloudNativePG generates, or a basic-auth Secret of the Cluster's bootstrap).
import { Problem } from '../../controller.js';
import { CNPG_CLUSTERS, CNPG_POOLERS, SECRETS, SERVICES, type KObject, type Kube } from '../../kube.js';
import { BoxReason } from '../../reasons.js';
import { secretValue, type SecretObject } from '../../secrets.js';
import type { BoxResource } from './types.js';

/** The bootstrap methods of a Cluster, in the order CloudNativePG reads them for the application database. */
const BOOTSTRAPS = ['recovery', 'pg_basebackup', 'initdb'] as const;
/** CloudNativePG's default application database and owner (its defaulting webhook writes them into the Cluster). */
const DEFAULT_DATABASE = 'app';

interface Bootstrap {
  database?: string;
  owner?: string;
  secret?: { name?: string };
}

export type ClusterObject = KObject & { spec?: { bootstrap?: Partial<Record<(typeof BOOTSTRAPS)[number], Bootstrap>> } };
export type PoolerObject = KObject & { spec?: { cluster?: { name?: string }; type?: string } };
export type ServiceObject = KObject & { spec?: { ports?: { name?: string; port: number }[] } };

/** What CloudNativePG made for the Cluster (and Pooler) a Box names, as read; undefined where it is not there. */
export interface ClusterObjects {
  cluster?: ClusterObject;
  appSecret?: SecretObject;
  rwService?: ServiceObject;
  pooler?: PoolerObject;
  poolerService?: ServiceObject;
}

/** The first value `pick` finds in the Cluster's bootstrap methods, read as CloudNativePG's GetApplication* functions read them. */
function fromBootstrap(cluster: ClusterObject, pick: (b: Bootstrap) => string | undefined): string | undefined {
  for (const method of BOOTSTRAPS) {
    const bootstrap = cluster.spec?.bootstrap?.[method];
    const value = bootstrap && pick(bootstrap);
    if (value) return value;
  }
  return undefined;
}

/** The application Secret: the bootstrap's own, else <cluster>-app. */
export function appSecretName(cluster: ClusterObject): string {
  return fromBootstrap(cluster, (b) => b.secret?.name) ?? `${cluster.metadata.name}-app`;
}

/** The application database: the bootstrap's, else the Secret's dbname, else CloudNativePG's default. */
function appDatabase(cluster: ClusterObject, secret: SecretObject): string {
  return fromBootstrap(cluster, (b) => b.database) ?? secretValue(secret, 'dbname') ?? DEFAULT_DATABASE;
}

export const rwServiceName = (cluster: string): string => `${cluster}-rw`;

/** The Secrets a Box naming a Cluster reads, before the Cluster is known: the default application Secret. */
export function clusterSecretsNamedBy(box: BoxResource): string[] {
  const name = box.spec?.database?.cluster?.name;
  return name ? [`${name}-app`] : [];
}

/** Reads what the Box's spec.database.cluster names, each only once what it hangs on is there. */
export async function readClusterObjects(kube: Kube, box: BoxResource): Promise<ClusterObjects> {
  const ref = box.spec!.database!.cluster!;
  const ns = box.metadata.namespace!;
  const cluster = await kube.find<ClusterObject>(CNPG_CLUSTERS, ns, ref.name);
  if (!cluster) return {};
  const [appSecret, rwService, pooler] = await Promise.all([
    kube.find<SecretObject>(SECRETS, ns, appSecretName(cluster)),
    kube.find<ServiceObject>(SERVICES, ns, rwServiceName(ref.name)),
    ref.pooler ? kube.find<PoolerObject>(CNPG_POOLERS, ns, ref.pooler) : undefined,
  ]);
  // CloudNativePG names a Pooler's Service after the Pooler.
  const poolerService = pooler ? await kube.find<ServiceObject>(SERVICES, ns, pooler.metadata.name) : undefined;
  return { cluster, appSecret, rwService, pooler, poolerService };
}

/** How the box reaches its Cluster: everything in it is derived from the objects read. */
export interface ClusterDatabase {
  /** The primary (the -rw Service) as the application role: the operator's connection, and the API pods' direct one. */
  directUrl: string;
  /** Where the API pods send their queries: through the Pooler's Service, else directUrl. */
  podUrl: string;
  role: string;
  database: string;
  appSecret: SecretObject;
}

/** host:port of a Service by its cluster DNS name, on the port CloudNativePG names `portName` (else its first). */
function serviceAddress(service: ServiceObject, portName: string): string | undefined {
  const ports = service.spec?.ports ?? [];
  const port = (ports.find((p) => p.name === portName) ?? ports[0])?.port;
  return port === undefined ? undefined : `${service.metadata.name}.${service.metadata.namespace}.svc:${port}`;
}

function postgresUrl(address: string, user: string, password: string, database: string): string {
  const url = new URL(`postgres://${address}`);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

const DOCS = 'docs/kubernetes/cloudnative-pg.md';

/**
 * The box's database in its Cluster, from what was read; or the Problem that says what is missing. `pooler`
 * false: the Pooler is not looked at (what a deleted Box needs to reach its schema is the primary only).
 */
export function clusterDatabase(box: BoxResource, found: ClusterObjects, { pooler = true } = {}): ClusterDatabase | Problem {
  const ref = box.spec!.database!.cluster!;
  const ns = box.metadata.namespace!;
  const { cluster, appSecret, rwService } = found;
  const what = `Cluster ${ns}/${ref.name} (spec.database.cluster)`;
  if (!cluster) {
    return new Problem(
      BoxReason.DatabaseClusterNotFound,
      `${what} does not exist; create it, or fix the name (CloudNativePG must be installed: ${DOCS})`,
    );
  }
  const secretName = appSecretName(cluster);
  const user = secretValue(appSecret, 'username');
  const password = secretValue(appSecret, 'password');
  const direct = rwService && serviceAddress(rwService, 'postgres');
  if (!appSecret || !user || !password || !direct) {
    const missing = !appSecret
      ? `its application Secret ${secretName} does not exist`
      : !user || !password
        ? `its application Secret ${secretName} has no username and password`
        : `its Service ${rwServiceName(ref.name)} does not exist`;
    return new Problem(
      BoxReason.DatabaseClusterNotReady,
      `${what}: ${missing} yet; CloudNativePG makes it as it creates the Cluster (kubectl get cluster -n ${ns} ${ref.name})`,
    );
  }
  const database = appDatabase(cluster, appSecret);
  const directUrl = postgresUrl(direct, user, password, database);
  const connection = { directUrl, podUrl: directUrl, role: user, database, appSecret };
  if (!pooler || !ref.pooler) return connection;
  const route = poolerAddress(box, found);
  return route instanceof Problem ? route : { ...connection, podUrl: postgresUrl(route, user, password, database) };
}

/** host:port of the Pooler's Service, or why the API pods cannot go through it. */
function poolerAddress(box: BoxResource, { pooler, poolerService }: ClusterObjects): string | Problem {
  const ref = box.spec!.database!.cluster!;
  const ns = box.metadata.namespace!;
  const what = `Pooler ${ns}/${ref.pooler} (spec.database.cluster.pooler)`;
  if (!pooler) return new Problem(BoxReason.DatabasePoolerNotFound, `${what} does not exist; create it, or fix the name (${DOCS})`);
  const serves = pooler.spec?.cluster?.name;
  if (serves !== ref.name) {
    return new Problem(
      BoxReason.DatabasePoolerInvalid,
      `${what} serves Cluster ${serves ?? '(none)'}, not ${ref.name}; name a Pooler of Cluster ${ref.name}`,
    );
  }
  const type = pooler.spec?.type ?? 'rw';
  if (type !== 'rw') {
    return new Problem(
      BoxReason.DatabasePoolerInvalid,
      `${what} is of type ${type}: it reaches standbys, where the box cannot write; name a Pooler of type rw`,
    );
  }
  const address = poolerService && serviceAddress(poolerService, 'pgbouncer');
  if (!address) {
    return new Problem(
      BoxReason.DatabasePoolerNotFound,
      `${what}: its Service ${ref.pooler} does not exist yet; CloudNativePG makes it with the Pooler`,
    );
  }
  return address;
}
