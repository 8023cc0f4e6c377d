// What the sections of the operator suite share: one cluster, the operator
// (a real process with a token of the chart's ServiceAccount), the database it
// provisions boxes in, and the API processes started from its Deployments.
import pg from 'pg';
import type { Dispatcher } from 'undici';
import { parseAllDocuments } from 'yaml';
import { ownDatabaseNames, readNameKey, type BoxDbNames } from '../../../operator/boxdb.js';
import type { Box } from '../../support/box.js';
import { eventually, OperatorProcess, type TestCluster } from '../../support/kube.js';
import { freePort, onFreePorts } from '../../support/ports.js';

export const OPERATOR_NAMESPACE = 'boxauth-system';

export interface Suite {
  cluster: TestCluster;
  /** kubeconfig with a token of the chart's ServiceAccount. */
  operatorKubeconfig: string;
  /** The plain-value env of the chart's operator container, plus the test's. */
  operatorEnv: Record<string, string>;
  databaseUrl: string;
  operator: OperatorProcess;
  pods: Box[];
  /** Where the operator asks the host of hosted boxes (BOXAUTH_OPERATOR_HOST_URL): the port the host is run on here. */
  hostPort: number;
}

export const suite = {} as Suite;

/** The objects `helm template` renders for the chart, with these extra arguments. */
export async function chartObjects(cluster: TestCluster, args: string[] = []): Promise<any[]> {
  const r = await cluster.helm(['template', 'boxauth', 'charts/boxauth', '-n', OPERATOR_NAMESPACE, ...args]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS())
    .filter(Boolean);
}

export async function startOperator(id: string, env: Record<string, string> = {}): Promise<OperatorProcess> {
  return OperatorProcess.start(suite.operatorKubeconfig, { ...suite.operatorEnv, BOXAUTH_OPERATOR_ID: id, ...env });
}

/** Runs SQL in the operator's database (or another of its server), as a person with psql would. */
export async function sql<T extends pg.QueryResultRow = any>(text: string, params: unknown[] = [], database?: string): Promise<T[]> {
  const url = new URL(suite.databaseUrl);
  if (database) url.pathname = `/${database}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    return (await db.query<T>(text, params)).rows;
  } finally {
    await db.end();
  }
}

/** Runs SQL in the database of the namespace's Box `auth` (status.database.database: its own, or the operator's). */
export async function boxSql<T extends pg.QueryResultRow = any>(namespace: string, text: string, params: unknown[] = []): Promise<T[]> {
  const database: string = (await suite.cluster.json(['get', 'box', 'auth', '-n', namespace])).status.database.database;
  return sql<T>(text, params, database);
}

/** The names the operator gives the box of `namespace` in a database of its own: from the key in its database, as it reads it. */
export async function ownNamesOf(namespace: string): Promise<BoxDbNames> {
  const db = new pg.Client({ connectionString: suite.databaseUrl });
  await db.connect();
  try {
    return ownDatabaseNames(namespace, (await readNameKey(db))!);
  } finally {
    await db.end();
  }
}

export async function readyOf(kind: string, namespace: string, name: string): Promise<any> {
  const obj = await suite.cluster.json(['get', kind, '-n', namespace, name]);
  return obj.status?.conditions?.find((c: any) => c.type === 'Ready');
}

export async function waitReady(kind: string, namespace: string, name: string, timeoutMs = 30_000): Promise<void> {
  await eventually(
    `${kind} ${namespace}/${name} Ready`,
    async () => {
      const obj = await suite.cluster.json(['get', kind, '-n', namespace, name]);
      const ready = obj.status?.conditions?.find((c: any) => c.type === 'Ready');
      return ready?.status === 'True' && obj.status.observedGeneration === obj.metadata.generation;
    },
    timeoutMs,
  );
}

/**
 * Box `auth` of `namespace` made reachable from this machine, as an Ingress would make it reachable: its API
 * on a free port, which its public URL names. Waits until it is Ready again; the port.
 */
export async function servedHere(namespace: string, timeoutMs?: number): Promise<number> {
  const port = await freePort();
  await suite.cluster.k([
    'patch',
    'box',
    'auth',
    '-n',
    namespace,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { port, baseUrl: `http://127.0.0.1:${port}` } }),
  ]);
  await waitReady('box', namespace, 'auth', timeoutMs);
  return port;
}

/** What a box (or the host) says when its API port, picked ahead by the test, was taken. */
const API_PORT_TAKEN = /\(BOXAUTH_PORT\) is in use/;

/**
 * `run` a box's API (or the host) on the port the test picked ahead and told the cluster; when another
 * process took that port first, `move` it to a free one and `run` again there (onFreePorts's tries).
 */
export function onPickedPort<T>(run: () => Promise<T>, move: (port: number) => Promise<void>): Promise<T> {
  let first = true;
  return onFreePorts(
    1,
    async ([port]) => {
      if (!first) await move(port);
      first = false;
      return run();
    },
    (err) => API_PORT_TAKEN.test(String(err)),
  );
}

/** Box `auth` of `namespace` moved to `port` (its base URL too when it names the old port), and Ready again. */
async function moveBox(namespace: string, port: number): Promise<void> {
  const spec = (await suite.cluster.json(['get', 'box', 'auth', '-n', namespace])).spec;
  const namesPort = spec.baseUrl && new URL(spec.baseUrl).port === String(spec.port);
  const baseUrl = namesPort ? { baseUrl: spec.baseUrl.replace(`:${spec.port}`, `:${port}`) } : {};
  await suite.cluster.k(['patch', 'box', 'auth', '-n', namespace, '--type=merge', '-p', JSON.stringify({ spec: { port, ...baseUrl } })]);
  await waitReady('box', namespace, 'auth', 60_000);
}

/**
 * The API of Box `auth` in `namespace`, run from its Deployment as a kubelet would (stopped with the
 * suite), with `env` beside the pod's. It listens on the Box's port, picked ahead by the test: when
 * another process took that port before the API listened, the Box moves to a free one and its API
 * starts again there (`api.port` is where it runs).
 */
export async function runBoxApi(namespace: string, options: { env?: Record<string, string>; dispatcher?: Dispatcher } = {}): Promise<Box> {
  const api = await onPickedPort(
    async () => (await suite.cluster.runDeployment(namespace, 'auth', options)).box,
    (port) => moveBox(namespace, port),
  );
  suite.pods.push(api);
  return api;
}

/** Box `auth` (reclaimPolicy Delete) applied in `namespace`, which exists, and Ready; its API running (with `env`), and its schema. */
export async function readyBox(namespace: string, env?: Record<string, string>): Promise<{ api: Box; schema: string }> {
  const port = await freePort();
  await suite.cluster.k(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'boxauth.io/v1alpha1',
      kind: 'Box',
      metadata: { name: 'auth', namespace },
      spec: { port, baseUrl: `http://127.0.0.1:${port}`, reclaimPolicy: 'Delete' },
    }),
  );
  await waitReady('box', namespace, 'auth', 60_000);
  const schema: string = (await suite.cluster.json(['get', 'box', 'auth', '-n', namespace])).status.schema;
  return { api: await runBoxApi(namespace, env && { env }), schema };
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** A client_credentials token from a box, or the refusal's status and error. */
export async function token(box: Box, id: string, secret: string): Promise<{ status: number; token?: string; error?: string }> {
  const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
  return { status: res.status, token: res.body?.access_token, error: res.body?.error };
}
