// The operator at a thousand boxes, on a real kube-apiserver + etcd, boxes on one PostgreSQL, each a
// database of its own (the operator's default) or, with --isolation Schema, a schema of one database:
// - cold start: Boxes, Clients and AccessPolicies all created first, then the operator started; the
//   time until every one is Ready at its generation. Without a kubelet no box pod runs, so a Box is
//   Ready when its schema, Secrets, Service and Deployment are in place (Available stays False), and
//   a Client or AccessPolicy when its record is in its box's schema;
// - quiet: with nothing changing, the operator's requests to the API server per minute (by verb,
//   from its own boxauth_operator_api_requests_total), its RSS, and the connections to box
//   databases it holds and opens;
// - `kubectl apply` of a new Client → a working token, from ONE box API process (the first box's,
//   run from its Deployment as a kubelet would), p50/p99;
// - the leader killed (SIGKILL) and a new one started: the time until it has caught up, and what
//   it wrote meanwhile to the API server and the box schemas, though nothing had changed;
// - what the boxes take of the server: the disk of their databases (or of their schemas), and
//   PostgreSQL's CPU while nothing changes (its autovacuum visits every database).
// Run with `make bench-operator-scale` (OPERATOR_SCALE="--boxes 100 --clients 1000 --policies 1000"
// for a quick check, "--isolation Schema" for schemas); operatorScale() is what `make bench-tenants` calls. For a diagnosis:
// BENCH_OPERATOR_LOG=<file> appends the operators' log lines there (BOXAUTH_LOG_LEVEL, warn by
// default) and keeps the API server's and etcd's beside it, BENCH_OPERATOR_NODE_OPTIONS is their NODE_OPTIONS (e.g. --cpu-prof --cpu-prof-dir=<dir>:
// a profile of the leader started after the restart, written as it stops). SIGINT or SIGTERM stops
// every process the bench started.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../api/db/embedded.js';
import { projectPath } from '../../api/paths.js';
import { BOX_ISOLATIONS, type BoxIsolation } from '../../operator/boxdb.js';
import {
  ACCESS_POLICIES,
  BOXES,
  CLIENTS,
  resourcePath,
  SECRETS,
  type HttpKube,
  type KObject,
  type ResourceType,
} from '../../operator/kube.js';
import { basic, onPickedPort } from '../e2e/operator/suite.js';
import type { Box } from '../support/box.js';
import { eventually, KUBE_BIN, OperatorProcess, TestCluster } from '../support/kube.js';
import { freePort } from '../support/ports.js';
import { children } from './process-stats.js';

export interface OperatorScaleOptions {
  boxes: number;
  clients: number;
  policies: number;
  /** New Clients applied one at a time, each timed to its first token. */
  applies?: number;
  /** How long nothing changes while requests are counted. */
  quietMs?: number;
  /** Where the operator puts each box (BOXAUTH_OPERATOR_BOX_ISOLATION): a database of its own (default) or a schema. */
  isolation?: BoxIsolation;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
}

export interface Percentiles {
  p50: number;
  p99: number;
  max: number;
}

export interface OperatorScaleFigures {
  boxes: number;
  clients: number;
  policies: number;
  isolation: BoxIsolation;
  cpus: number;
  /** The disk the boxes take after the cold start (migrated, their records written): all of them, and per box. */
  storage: { totalMiB: number; perBoxMiB: number };
  /** os.loadavg() (1, 5, 15 minutes) as the resources are created, and at the end: what else ran on the machine. */
  load: { start: number[]; end: number[] };
  /** Creating the resources through the API server (before the operator runs). */
  createSeconds: number;
  coldStart: { boxesReadySeconds: number; allReadySeconds: number; peakRssMiB: number };
  quiet: {
    windowSeconds: number;
    /** Operator → API server, per minute, by verb and resource (watch: the watches opened), the Lease's left out. */
    requestsPerMinute: Record<string, number>;
    writesPerMinute: number;
    rssMiB: number;
    /** Connections of box roles open at the end of the window, and the most seen during it. */
    boxConnections: number;
    boxConnectionsPeak: number;
    /** Connections opened to the database per minute (pg_stat_database.sessions). */
    connectionsOpenedPerMinute: number;
    /** Rows written in box schemas during the window. */
    dbRowWrites: number;
    /** CPU seconds of PostgreSQL (every process of the server, those that ended included) per minute. */
    postgresCpuSecondsPerMinute: number;
  };
  applyToToken: Percentiles & {
    n: number;
    /** The part until the operator had created the Client's Secret (the rest: its record written, the token answered). */
    secretP50: number;
    secretP99: number;
    /** Token requests refused, by status (a Client Ready whose token does not work yet). */
    refusals: Record<string, number>;
  };
  restart: {
    /** SIGKILL of the leader → the new one holds the Lease (a Lease of BOXAUTH_OPERATOR_LEASE_SECONDS). */
    leaderSeconds: number;
    /** → every object reconciled once and the queues empty. */
    caughtUpSeconds: number;
    /** Create, update, patch and delete requests (the Lease's left out), by resource. */
    apiWrites: Record<string, number>;
    dbRowWrites: number;
    /** The same, by table ("<table>": rows), summed over the box schemas. */
    dbRowWritesByTable: Record<string, number>;
    rssMiB: number;
  };
}

const LEASE_SECONDS = 5;
const NS = (i: number): string => `scale-${String(i).padStart(4, '0')}`;
const mib = (bytes: number): number => Math.round(bytes / 1024 / 1024);

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
function percentiles(ms: number[]): Percentiles {
  const s = [...ms].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1]! };
}

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Runs `work` on every item, `concurrency` at a time. */
async function inParallel<T>(items: T[], concurrency: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** Objects of `type` Ready=True at their generation, read page by page as a dashboard would. */
async function readyCount(kube: HttpKube, type: ResourceType): Promise<number> {
  let ready = 0;
  let cont: string | undefined;
  do {
    const page = await kube.request<{ items: any[]; metadata: { continue?: string } }>('GET', resourcePath(type), {
      query: { limit: 500, continue: cont },
      timeoutMs: 120_000,
    });
    for (const o of page.items) {
      const c = o.status?.conditions?.find((x: any) => x.type === 'Ready');
      if (c?.status === 'True' && o.status.observedGeneration === o.metadata.generation) ready++;
    }
    cont = page.metadata.continue || undefined;
  } while (cont);
  return ready;
}

/** The operator's counters of one metric, by the value of `label`. */
async function metricBy(op: OperatorProcess, name: string, label: string): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${op.healthPort}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const key = new RegExp(`${label}="([^"]*)"`).exec(line)?.[1] ?? '';
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/** The operator's requests to the API server, "<verb> <resource>": the Lease's left out (renewing it is how a leader stays one). */
async function apiRequests(op: OperatorProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${op.healthPort}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^boxauth_operator_api_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const verb = /verb="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
    const resource = /resource="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
    if (resource === 'leases' || !Number(m[2])) continue;
    out[`${verb} ${resource}`] = (out[`${verb} ${resource}`] ?? 0) + Number(m[2]);
  }
  return out;
}

const writesOf = (requests: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(requests).filter(([k]) => WRITE_VERBS.has(k.split(' ')[0]!)));

const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
const minus = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.keys(a).map((k) => [k, a[k]! - (b[k] ?? 0)]));

/** The databases that hold boxes: the server's one database (`url`'s) and each box's own. */
async function boxDatabaseNames(db: pg.Client): Promise<string[]> {
  const { rows } = await db.query<{ d: string }>(
    `SELECT datname AS d FROM pg_database WHERE datname = current_database() OR datname LIKE 'box\\_%' ORDER BY datname = current_database() DESC, datname`,
  );
  return rows.map((r) => r.d);
}

/** Box roles connected now (any database): a look cheap enough to take every few seconds. */
async function boxConnectionsNow(url: string): Promise<number> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return Number((await db.query<{ c: string }>(`SELECT count(*) AS c FROM pg_stat_activity WHERE usename LIKE 'box\\_%'`)).rows[0]!.c);
  } finally {
    await db.end();
  }
}

/**
 * PostgreSQL's counters: rows written in box schemas (in every database that holds boxes, each looked into), sessions
 * opened on the server (read first; `opened`: the sessions this look opened after reading them), box roles connected now.
 */
async function dbCounters(
  url: string,
): Promise<{ rowWrites: number; sessions: number; opened: number; boxConnections: number; byTable: Record<string, number> }> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let databases: string[];
  let sessions: number;
  let boxConnections: number;
  try {
    const { rows } = await db.query<{ s: string; c: string }>(
      `SELECT (SELECT sum(sessions) FROM pg_stat_database) AS s, (SELECT count(*) FROM pg_stat_activity WHERE usename LIKE 'box\\_%') AS c`,
    );
    sessions = Number(rows[0]!.s);
    boxConnections = Number(rows[0]!.c);
    databases = await boxDatabaseNames(db);
  } finally {
    await db.end();
  }
  const byTable: Record<string, number> = {};
  for (const database of databases) {
    const one = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: `/${database}` }).toString() });
    await one.connect();
    try {
      const tables = await one.query<{ t: string; w: string }>(
        `SELECT relname AS t, sum(n_tup_ins + n_tup_upd + n_tup_del) AS w FROM pg_stat_user_tables WHERE schemaname LIKE 'box\\_%' GROUP BY relname`,
      );
      for (const r of tables.rows) byTable[r.t] = (byTable[r.t] ?? 0) + Number(r.w);
    } finally {
      await one.end();
    }
  }
  return { rowWrites: sum(byTable), sessions, opened: databases.length, boxConnections, byTable };
}

/** The disk the boxes take: their own databases, or what the shared database holds beyond an empty one (template0). */
async function boxStorage(url: string, boxes: number): Promise<{ totalMiB: number; perBoxMiB: number }> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ own: string | null; shared: string }>(
      `SELECT (SELECT sum(pg_database_size(oid)) FROM pg_database WHERE datname LIKE 'box\\_%') AS own,
              pg_database_size(current_database()) - pg_database_size('template0') AS shared`,
    );
    const bytes = Number(rows[0]!.own ?? 0) + Number(rows[0]!.shared);
    return { totalMiB: Math.round(bytes / 2 ** 20), perBoxMiB: Math.round((bytes / 2 ** 20 / boxes) * 100) / 100 };
  } finally {
    await db.end();
  }
}

/** CPU seconds of a PostgreSQL server: its postmaster's own and its ended children's, and those of its children now. */
function postgresCpuSeconds(postmaster: number): number {
  const fieldsOf = (pid: number): number[] => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
    } catch {
      return [];
    }
  };
  const [utime = 0, stime = 0, cutime = 0, cstime = 0] = fieldsOf(postmaster).slice(11, 15);
  const live = children(postmaster).reduce((total, pid) => total + (fieldsOf(pid)[11] ?? 0) + (fieldsOf(pid)[12] ?? 0), 0);
  return (utime + stime + cutime + cstime + live) / 100; // USER_HZ
}

/**
 * Waits for `check`; one that throws counts as not yet (an API server this loaded may drop a
 * connection now and then: a run of an hour must not end on one).
 */
async function until(what: string, timeoutMs: number, check: () => Promise<boolean>, everyMs = 2000): Promise<void> {
  const started = Date.now();
  let failure: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      failure = err;
    }
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not after ${timeoutMs / 1000} s`, { cause: failure });
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function operatorScale(options: OperatorScaleOptions): Promise<OperatorScaleFigures> {
  const { boxes, clients, policies, applies = 50, quietMs = 120_000, isolation = 'Database' } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`operator-scale: ${line}\n`));
  const dataDir = projectPath('.boxauth', 'bench-operator-scale');
  fs.rmSync(dataDir, { recursive: true, force: true });
  const db = await startEmbeddedPostgres(dataDir, () => undefined);
  const cluster = await TestCluster.start();
  const kube = cluster.adminKube();
  let operator: OperatorProcess | undefined;
  let api: Box | undefined;
  const env = {
    DATABASE_URL: db.url,
    BOXAUTH_DATA_DIR: dataDir,
    BOXAUTH_LOG_LEVEL: process.env.BOXAUTH_LOG_LEVEL ?? 'warn',
    BOXAUTH_OPERATOR_NAMESPACE: 'default',
    BOXAUTH_OPERATOR_LEASE_SECONDS: String(LEASE_SECONDS),
    BOXAUTH_OPERATOR_BOX_ISOLATION: isolation,
    ...(process.env.DEBUG_STATUS ? { DEBUG_STATUS: '1' } : {}),
    ...(process.env.BENCH_OPERATOR_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_OPERATOR_NODE_OPTIONS } : {}),
  };
  const operators: OperatorProcess[] = [];
  const startOperator = async (): Promise<OperatorProcess> => {
    const op = await OperatorProcess.start(cluster.kubeconfig, env);
    operators.push(op);
    return op;
  };
  let cleaned: Promise<void> | undefined;
  const cleanUp = (): Promise<void> =>
    (cleaned ??= (async () => {
      await api?.stop().catch(() => undefined);
      await operator?.kill('SIGTERM').catch(() => undefined);
      const logFile = process.env.BENCH_OPERATOR_LOG;
      if (logFile) {
        for (const op of operators) fs.appendFileSync(logFile, op.logs.map((l) => `${JSON.stringify(l)}\n`).join(''));
        for (const name of ['kube-apiserver.log', 'etcd.log']) fs.copyFileSync(path.join(cluster.dir, name), `${logFile}.${name}`);
      }
      kube.close();
      await cluster.stop();
      await db.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    })());
  // Stopped by hand (a run of 50 minutes): kube-apiserver, etcd, PostgreSQL and the operator go too.
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping what the bench started`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const port = await freePort();
    const loadAtStart = os.loadavg();
    const created = Date.now();
    const post = (type: ResourceType, ns: string | undefined, body: KObject): Promise<unknown> =>
      kube.create(type, ns, { apiVersion: `boxauth.io/v1alpha1`, kind: type.kind, ...body });
    const indexes = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
    await inParallel(indexes(boxes), 16, (i) =>
      kube.create({ group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace' }, undefined, { metadata: { name: NS(i) } }),
    );
    await inParallel(indexes(boxes), 16, (i) =>
      post(BOXES, NS(i), {
        metadata: { name: 'auth', namespace: NS(i) },
        spec: i === 0 ? { port, baseUrl: `http://127.0.0.1:${port}` } : {},
      }),
    );
    await inParallel(indexes(clients), 16, (i) =>
      post(CLIENTS, NS(i % boxes), {
        metadata: { name: `c-${i}`, namespace: NS(i % boxes) },
        spec: { grant_types: ['client_credentials'] },
      }),
    );
    await inParallel(indexes(policies), 16, (i) =>
      post(ACCESS_POLICIES, NS(i % boxes), {
        metadata: { name: `p-${i}`, namespace: NS(i % boxes) },
        spec: { engine: 'allow', link: [{ id: `c-${i}`, resourceType: 'Client' }] },
      }),
    );
    const createSeconds = (Date.now() - created) / 1000;
    log(`created ${boxes} Boxes, ${clients} Clients, ${policies} AccessPolicies in ${createSeconds} s`);

    // Cold start.
    const started = Date.now();
    operator = await startOperator();
    let boxesReadySeconds = 0;
    const total = boxes + clients + policies;
    await until(
      'every resource Ready',
      4 * 3600_000,
      async () => {
        const b = await readyCount(kube, BOXES);
        if (b === boxes && !boxesReadySeconds) boxesReadySeconds = (Date.now() - started) / 1000;
        const n = b + (await readyCount(kube, CLIENTS)) + (await readyCount(kube, ACCESS_POLICIES));
        const connections = (await dbCounters(db.url)).boxConnections;
        log(
          `${((Date.now() - started) / 1000).toFixed(0)} s: ${n}/${total} Ready (${b} Boxes), RSS ${mib(status(operator!.pid, 'VmRSS'))} MiB, ${connections} box connections`,
        );
        return n === total;
      },
      5000,
    );
    const coldStart = {
      boxesReadySeconds,
      allReadySeconds: (Date.now() - started) / 1000,
      peakRssMiB: mib(status(operator.pid, 'VmHWM')),
    };
    log(`cold start: ${JSON.stringify(coldStart)}`);
    const storage = await boxStorage(db.url, boxes);
    log(`storage: ${JSON.stringify(storage)}`);

    // Quiet: nothing changes.
    await new Promise((r) => setTimeout(r, 10_000));
    const requestsBefore = await apiRequests(operator);
    const dbBefore = await dbCounters(db.url);
    let boxConnectionsPeak = dbBefore.boxConnections;
    const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const cpuBefore = postgresCpuSeconds(postmaster);
    const quietStart = Date.now();
    while (Date.now() - quietStart < quietMs) {
      await new Promise((r) => setTimeout(r, 2000));
      boxConnectionsPeak = Math.max(boxConnectionsPeak, await boxConnectionsNow(db.url));
    }
    const minutes = (Date.now() - quietStart) / 60_000;
    const postgresCpuSecondsPerMinute = Math.round(((postgresCpuSeconds(postmaster) - cpuBefore) / minutes) * 100) / 100;
    const requests = minus(await apiRequests(operator), requestsBefore);
    const dbAfter = await dbCounters(db.url);
    const perMinute = (n: number): number => Math.round(n / minutes);
    const quiet = {
      windowSeconds: Math.round(minutes * 60),
      requestsPerMinute: Object.fromEntries(Object.entries(requests).map(([k, v]) => [k, perMinute(v)])),
      writesPerMinute: perMinute(sum(writesOf(requests))),
      rssMiB: mib(status(operator.pid, 'VmRSS')),
      boxConnections: dbAfter.boxConnections,
      boxConnectionsPeak,
      // The bench's own looks left out: into each database holding boxes after the first count, one each poll after.
      connectionsOpenedPerMinute: perMinute(dbAfter.sessions - dbBefore.sessions - dbBefore.opened - Math.round((minutes * 60) / 2)),
      dbRowWrites: dbAfter.rowWrites - dbBefore.rowWrites,
      postgresCpuSecondsPerMinute,
    };
    log(`quiet: ${JSON.stringify(quiet)}`);

    // kubectl apply → token, from the first box's API. The token is asked for once the Client says it is Ready (as
    // `kubectl wait` would): each try before its record is written is a failed client authentication, which the box
    // checks against a dummy argon2id hash and counts (BOXAUTH_CLIENT_AUTH_MAX_FAILURES: 40 a minute per address),
    // so that trying every 10 ms from the start had the box refuse the bench's address for up to a minute.
    // On the port picked at the start; when another process took it since, the Box moves to a free one.
    api = await onPickedPort(
      async () => (await cluster.runDeployment(NS(0), 'auth')).box,
      async (port) => {
        const patch = { spec: { port, baseUrl: `http://127.0.0.1:${port}` } };
        await cluster.k(['patch', 'box', 'auth', '-n', NS(0), '--type=merge', '-p', JSON.stringify(patch)]);
        await eventually('the moved Box Ready', async () => {
          const box = await cluster.json(['get', 'box', 'auth', '-n', NS(0)]);
          const ready = box.status?.conditions?.find((c: any) => c.type === 'Ready');
          return ready?.status === 'True' && box.status.observedGeneration === box.metadata.generation;
        });
      },
    );
    const refusals: Record<string, number> = {};
    const tokenWorks = async (id: string, secret: string): Promise<boolean> => {
      const { status } = await api!.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
      if (status !== 200) refusals[status] = (refusals[status] ?? 0) + 1;
      return status === 200;
    };
    const times: number[] = [];
    const secretTimes: number[] = [];
    for (let i = 0; i < applies; i++) {
      const id = `new-${i}`;
      const t0 = Date.now();
      const r = spawnSync(path.join(KUBE_BIN, 'kubectl'), [`--kubeconfig=${cluster.kubeconfig}`, 'apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Client',
          metadata: { name: id, namespace: NS(0) },
          spec: { grant_types: ['client_credentials'] },
        }),
      });
      if (r.status !== 0) throw new Error(r.stderr.toString());
      let secretMs = 0;
      let raw: string | undefined;
      await until(
        `a token for ${id}`,
        60_000,
        async () => {
          if (raw === undefined) {
            raw = (await kube.find<{ data?: Record<string, string> }>(SECRETS, NS(0), `${id}-client-secret`))?.data?.['client-secret'];
            if (raw === undefined) return false;
            secretMs = Date.now() - t0;
          }
          const client = await kube.find<KObject & { status?: { observedGeneration?: number; conditions?: any[] } }>(CLIENTS, NS(0), id);
          const ready = client?.status?.conditions?.find((c) => c.type === 'Ready');
          if (ready?.status !== 'True' || client!.status!.observedGeneration !== client!.metadata.generation) return false;
          return tokenWorks(id, Buffer.from(raw, 'base64').toString('utf8'));
        },
        10,
      );
      times.push(Date.now() - t0);
      secretTimes.push(secretMs);
      log(`apply → token ${id}: ${times.at(-1)} ms (its Secret after ${secretMs} ms)`);
    }
    const secrets = percentiles(secretTimes);
    const applyToToken = { ...percentiles(times), n: applies, secretP50: secrets.p50, secretP99: secrets.p99, refusals };
    log(`apply → token: ${JSON.stringify(applyToToken)}`);

    // The leader killed; a new one started at once. The box API stopped first: its own writes are not the operator's.
    await api.stop();
    api = undefined;
    await new Promise((r) => setTimeout(r, 5000));
    const dbBeforeRestart = await dbCounters(db.url);
    const killed = Date.now();
    await operator.kill('SIGKILL');
    operator = await startOperator();
    const next = operator;
    await until('the new leader', 120_000, async () => (await next.metric('boxauth_operator_leader')) === 1, 100);
    const leaderSeconds = (Date.now() - killed) / 1000;
    const wanted: Record<string, number> = { box: boxes, client: clients + applies, accesspolicy: policies };
    let last = -1;
    await until(
      'the new leader caught up',
      4 * 3600_000,
      async () => {
        const done = await metricBy(next, 'boxauth_operator_reconciles_total', 'controller');
        const depth = sum(await metricBy(next, 'boxauth_operator_queue_depth', 'controller'));
        // The records' reconciles only: the resync looks at a slice of the Boxes every second, each a reconcile.
        const n = (done.client ?? 0) + (done.accesspolicy ?? 0);
        const settled = Object.entries(wanted).every(([c, w]) => (done[c] ?? 0) >= w) && depth === 0 && n === last;
        last = n;
        return settled;
      },
      1000,
    );
    const restart = {
      leaderSeconds,
      caughtUpSeconds: (Date.now() - killed) / 1000,
      apiWrites: writesOf(await apiRequests(next)),
      ...(await dbCounters(db.url).then((after) => ({
        dbRowWrites: after.rowWrites - dbBeforeRestart.rowWrites,
        dbRowWritesByTable: Object.fromEntries(Object.entries(minus(after.byTable, dbBeforeRestart.byTable)).filter(([, n]) => n > 0)),
      }))),
      rssMiB: mib(status(next.pid, 'VmRSS')),
    };
    log(`restart: ${JSON.stringify(restart)}`);
    if (process.env.DEBUG_STATUS) for (const l of next.logs) if (l.msg === 'DEBUG status write') log(JSON.stringify(l));
    const load = { start: loadAtStart, end: os.loadavg() };
    return {
      boxes,
      clients,
      policies,
      isolation,
      cpus: os.cpus().length,
      load,
      storage,
      createSeconds,
      coldStart,
      quiet,
      applyToToken,
      restart,
    };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanUp();
  }
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function isolationOption(): BoxIsolation {
  const i = process.argv.indexOf('--isolation');
  const value = i >= 0 ? process.argv[i + 1] : 'Database';
  if (!(BOX_ISOLATIONS as readonly (string | undefined)[]).includes(value))
    throw new Error(`--isolation must be one of ${BOX_ISOLATIONS.join(', ')}`);
  return value as BoxIsolation;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(projectPath('dist', 'test', 'bench', 'operator-scale.js'))) {
  const quick = process.argv.includes('--quick');
  operatorScale({
    boxes: option('boxes', quick ? 100 : 1000),
    clients: option('clients', quick ? 1000 : 10_000),
    policies: option('policies', quick ? 1000 : 10_000),
    applies: option('applies', 50),
    quietMs: option('quiet-seconds', 120) * 1000,
    isolation: isolationOption(),
  }).then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (err: Error) => {
      process.stderr.write(`operator-scale: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
