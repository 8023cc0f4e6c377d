// `make bench-tenants`: what a box costs in a host of many boxes (api/host/) beside
// a dedicated box process, on one PostgreSQL where every box has its own role and
// database (BENCH_TENANTS_ISOLATION=Schema: a schema each of one database), as the
// operator provisions them (./tenant-boxes.ts), in one run:
// (a) one hosted box against one dedicated box process under the same load (make
//     bench's client_credentials JWT and introspection rows, wrk at 32 connections):
//     the ratio of their rates (goal ≥ 0.9), p50/p99;
// (b) ACTIVE boxes of one host under load at once, each its own root client, against
//     the dedicated box with its root client: the ratio of the total rate (goal ≥ 0.9);
// (c) per idle box: the host's RSS and heap empty, with BOXES boxes registered,
//     after each was opened once and closed again (BOXAUTH_HOST_IDLE_SECONDS), and
//     the connections their roles hold then (goal 0); an open box's memory and connections;
// (d) the first token of a closed box, one box after another (p50/p99; goal ≤ 100 ms);
// (e) a dedicated box's idle RSS and connections;
// (f) --operator (or --operator-quick): the operator's figures (./operator-scale.ts).
// The host is one process; the dedicated box runs BENCH_TENANTS_DEDICATED_WORKERS (1)
// workers, so the ratios compare a process with a process; a row of the dedicated box
// at one worker per core follows for scale. Prints a table, writes bench-tenants-results.json.
import fs from 'node:fs';
import os from 'node:os';
import { projectPath } from '../../api/paths.js';
import { Box, sleep } from '../support/box.js';
import { Host } from '../support/host.js';
import { benchServer, checkpoint, freshDatabase } from './database.js';
import type { LatencySummary } from './latency.js';
import { wrkAvailable, type BenchRequest } from './load.js';
import { LOAD, measure, rowOfFailure, type Row } from './measure.js';
import { children, rssBytes } from './process-stats.js';
import { AUDIENCE, inBatches, introspectionRequests, sample, token, tokenClients, tokenRequest } from './scenarios.js';
import { operatorScale, type OperatorScaleFigures } from './operator-scale.js';
import { idleBox, type IdleBox } from './idle-box.js';
import { textTable } from './table.js';
import { benchIsolation, boxConnections, boxDatabases } from './tenant-boxes.js';
import { boxesIn, firstTokens, hostMemory, meanOpenMs, waitForBoxes, type HostMemory } from './tenant-idle.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
/** Boxes registered in the host (c, d). */
const BOXES = env('BENCH_TENANTS_BOXES', 200);
/** Boxes under load at once (b): the first of the registered ones. */
const ACTIVE = Math.min(env('BENCH_TENANTS_ACTIVE', 100), BOXES);
const IDLE_SECONDS = env('BENCH_TENANTS_IDLE_SECONDS', 20);
/** At most this many boxes open at once while the first tokens are timed (each holds connections). */
const OPEN_CAP = Math.max(env('BENCH_TENANTS_OPEN_CAP', 100), ACTIVE);
const DEDICATED_WORKERS = env('BENCH_TENANTS_DEDICATED_WORKERS', 1);
/** A database of its own per box (the operator's default), or a schema each of one database: BENCH_TENANTS_ISOLATION. */
const ISOLATION = benchIsolation();
/** A directory for a V8 CPU profile of the host (read it with dist/test/bench/profile.js). */
const PROFILE_DIR = process.env.BENCH_PROFILE;
const OPERATOR = process.argv.includes('--operator') || process.argv.includes('--operator-quick');
const RATIO_GOAL = 0.9;
const FIRST_TOKEN_GOAL_MS = 100;
const STARTED = Date.now();

const log = (msg: string): void => {
  process.stderr.write(`bench-tenants: ${msg}\n`);
};
const team = (i: number): string => `h${String(i + 1).padStart(4, '0')}`;

/**
 * (f) The operator's figures at many boxes (issue 82 item 4): operatorScale of ./operator-scale.ts on a
 * real kube-apiserver, after the rest (its own PostgreSQL and cluster). `--operator`: the issue's
 * 1,000 Boxes, 10,000 Clients and 10,000 AccessPolicies (long); `--operator-quick`: a tenth of each.
 */
async function operatorFigures(quick: boolean): Promise<OperatorScaleFigures> {
  const n = quick ? 0.1 : 1;
  return operatorScale({ boxes: 1000 * n, clients: 10_000 * n, policies: 10_000 * n, log });
}

/** (e) One idle dedicated box as ./idle-box.ts measures it: idle past the pool's idle timeout, then after one token. */
async function idleBoxFigures(serverUrl: string): Promise<IdleBox> {
  const idleSeconds = env('BENCH_TENANTS_IDLE_BOX_SECONDS', 35);
  log(`one idle box (idle-box.ts): idle ${idleSeconds} s, a token, idle ${idleSeconds} s`);
  return idleBox({ serverUrl, idleSeconds });
}

/** A dedicated box's process tree (primary and workers): its RSS added up, after a quiet moment, and its connections. */
async function idleDedicated(
  box: Box,
  databaseUrl: string,
  workers: number,
): Promise<{ workers: number; rssMb: number; connections: Connections }> {
  await box.rootToken();
  await sleep(5000);
  const pid = box.process!.pid!;
  const rss = [pid, ...children(pid)].reduce((sum, p) => sum + (rssBytes(p) ?? 0), 0);
  return {
    workers,
    rssMb: rss / (1024 * 1024),
    connections: await boxConnections(databaseUrl, 'dedicated'),
  };
}

interface Target {
  /** What wrk connects to, and the process metered. */
  url: string;
  pid: number;
  /** The box the first request is checked at. */
  check: Box;
  /** Hosted boxes: request i carries the Host header hosts[i % hosts.length] (a box's name). */
  hosts?: string[];
  /** Its Prometheus exposition (the host's covers its open boxes). */
  metrics: () => Promise<string>;
}

/** A row, with the session rows its target committed per statement during it (the group commit's batches). */
type TenantRow = Row & { rowsPerCommit?: number };

/**
 * Session rows and the statements that committed them, summed over every box of the exposition
 * (boxauth_group_commit_batch_size{writer="sessions"}): their ratio over a row is how much the
 * group commit could batch. One box under load batches its concurrent tokens; a hundred boxes
 * each at a hundredth of the load commit each token alone, and no statement may span two boxes
 * (each writes as its own role: docs/kubernetes/hosted-boxes.md).
 */
async function sessionCommits(target: Target): Promise<{ rows: number; commits: number }> {
  const text = await target.metrics();
  const sum = (series: string): number =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`boxauth_group_commit_batch_size_${series}{`) && l.includes('writer="sessions"'))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return { rows: sum('sum'), commits: sum('count') };
}

async function row(
  key: string,
  title: string,
  target: Target,
  requests: BenchRequest[],
  db: { url: string; postgresPid?: number },
): Promise<TenantRow> {
  try {
    const first = await sample(target.check, requests[0]!);
    if (first.status !== 200) throw new Error(`${requests[0]!.path} answered ${first.status}: ${first.text.slice(0, 200)}`);
    await checkpoint(db.url);
    const hosts = target.hosts;
    const sent = hosts ? requests.map((r, i) => ({ ...r, headers: { ...r.headers, Host: hosts[i % hosts.length]! } })) : requests;
    const before = await sessionCommits(target);
    const m = await measure(target.url, target.pid, sent, db.postgresPid);
    const after = await sessionCommits(target);
    const commits = after.commits - before.commits;
    const rowsPerCommit = commits > 0 ? (after.rows - before.rows) / commits : undefined;
    log(
      `${title}: ${Math.round(m.rps)} req/s, p50 ${m.p50Ms.toFixed(1)} ms, p99 ${m.p99Ms.toFixed(1)} ms, ${m.failures} failed` +
        (rowsPerCommit ? `, ${rowsPerCommit.toFixed(1)} sessions per commit` : ''),
    );
    return { key, title, ...m, targets: [], ...(rowsPerCommit ? { rowsPerCommit } : {}) };
  } catch (err) {
    const failed = rowOfFailure(key, title, err);
    log(`${title}: FAILED: ${failed.failed}`);
    return failed;
  }
}

/** A row's rate over its baseline's, judged against RATIO_GOAL (and no failed request). */
function judge(r: TenantRow, of: TenantRow | undefined): void {
  if (r.failed || !of || of.failed) return;
  r.ratio = r.rps / of.rps;
  r.goals = [`≥ ${RATIO_GOAL} × ${of.key}`, 'no failed request'];
  if (r.ratio < RATIO_GOAL) r.targets.push(r.goals[0]!);
  if (r.failures > 0) r.targets.push(r.goals[1]!);
}

/** Two clients of make bench's (JWT and opaque tokens), and 1,000 opaque tokens to introspect. */
async function seedRows(box: Box): Promise<{ jwt: BenchRequest[]; introspection: BenchRequest[] }> {
  const clients = await tokenClients(box);
  const tokens = await inBatches(1000, 32, async () => (await token(box, clients.opaque)).body.access_token as string);
  return {
    jwt: [tokenRequest(clients.jwt, { grant_type: 'client_credentials', audience: AUDIENCE })],
    introspection: introspectionRequests(clients.opaque, tokens),
  };
}

const kb = (mb: number, n: number): number => Math.round((mb * 1024) / n);
type Connections = Awaited<ReturnType<typeof boxConnections>>;
/** Connections by kind, in words: `(1 change feed, 1 host check, 3 pool)`. */
const kinds = ({ total: _, ...byKind }: Connections): string =>
  `(${Object.entries(byKind)
    .map(([k, n]) => `${n} ${k.replace(/^boxauth /, '')}`)
    .join(', ')})`;

interface IdleFigures {
  boxes: number;
  /** Where each box lives (BENCH_TENANTS_ISOLATION), and the seconds provisioning every one took (its role, and its database or schema). */
  isolation: typeof ISOLATION;
  provisionSeconds: number;
  prepareSeconds: number;
  memory: Record<'empty' | 'registered' | 'afterClosed' | 'activeOpen', HostMemory>;
  /** KB of RSS (and of heap) per box: registered never opened, opened once and closed, open. */
  perBoxKb: Record<'registered' | 'openedAndClosed' | 'open', { rss: number; heap: number }>;
  /** Held by the hosted boxes' roles, by kind (./tenant-boxes.ts boxConnections): idle, the active boxes just opened, after their load. */
  connections: Record<'idle' | 'activeOpen' | 'active', Connections>;
  /** Boxes opened during the row of the active boxes (0: all stayed open, as meant). */
  opensInActiveRow: number;
  firstToken: { neverOpened: LatencySummary & { failed: number }; afterIdle: LatencySummary & { failed: number }; meanOpenMs: number };
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) throw new Error('wrk is not installed (make bench-tenants installs it: apt-get install wrk)');
  log(
    `${BOXES} boxes in the host, ${ACTIVE} active at once, idle after ${IDLE_SECONDS} s; ${LOAD.connections} connections, ` +
      `${LOAD.seconds} s per row after ${LOAD.warmupSeconds} s of warm-up; the dedicated box at ${DEDICATED_WORKERS} worker(s)`,
  );
  // An open box holds its change feed's connection, its database watch's and its pool's (3 or more).
  const server = await benchServer(log, { name: 'bench-tenants', maxConnections: 8 * OPEN_CAP + 100 });
  const db = { url: await freshDatabase(server.url, 'boxauth_tenants'), postgresPid: server.postgresPid };
  const teams = Array.from({ length: BOXES }, (_, i) => team(i));
  const provisioning = Date.now();
  const urls = await boxDatabases(db.url, ['dedicated', ...teams], ISOLATION);
  const provisionSeconds = (Date.now() - provisioning) / 1000;
  log(
    `${BOXES + 1} boxes provisioned, each a ${ISOLATION === 'Database' ? 'database' : 'schema'} of its own, in ${provisionSeconds.toFixed(1)} s`,
  );
  const dataDir = fs.mkdtempSync(`${os.tmpdir()}/boxauth-bench-tenants-`);
  let dedicated: Box | undefined;
  let host: Host | undefined;
  try {
    dedicated = await Box.start({
      databaseUrl: urls.get('dedicated')!,
      dataDir,
      logFile: `${dataDir}/dedicated.log`,
      env: { BOXAUTH_WORKERS: String(DEDICATED_WORKERS) },
    });
    const dedicatedIdle = [await idleDedicated(dedicated, db.url, DEDICATED_WORKERS)];
    log(`dedicated box idle: ${dedicatedIdle[0]!.rssMb.toFixed(0)} MB RSS, ${dedicatedIdle[0]!.connections.total} connections`);

    host = await Host.start(
      [],
      { BOXAUTH_HOST_IDLE_SECONDS: String(IDLE_SECONDS) },
      {
        logFile: `${dataDir}/host.log`,
        // Its inspector, on loopback, to collect its garbage before each reading of its memory (./tenant-idle.ts).
        nodeArgs: ['--inspect=127.0.0.1:0', ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [])],
      },
    );
    // Its inspector took a port of its own and named it in the log.
    const inspector = /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(fs.readFileSync(`${dataDir}/host.log`, 'utf8'));
    if (!inspector) throw new Error(`the host's inspector did not say its port (${dataDir}/host.log)`);
    const inspectPort = Number(inspector[1]);
    const empty = await hostMemory(host, inspectPort);
    for (const name of teams) await host.add({ team: name, databaseUrl: urls.get(name)! }, { write: false });
    const t0 = Date.now();
    host.writeRegistry();
    await waitForBoxes(host, 'ready', (n) => n === BOXES, 60_000 + BOXES * 2000, 'preparing the boxes');
    const prepareSeconds = (Date.now() - t0) / 1000;
    log(`${BOXES} boxes prepared in ${prepareSeconds.toFixed(1)} s`);
    const registered = await hostMemory(host, inspectPort);

    // (c) and (d): each box opened once (its first token ever), closed when idle, then asked again.
    const neverOpened = await firstTokens(host, teams, OPEN_CAP);
    await waitForBoxes(host, 'open', (n) => n === 0, (IDLE_SECONDS + 30) * 1000, 'boxes closing after idling');
    const afterClosed = await hostMemory(host, inspectPort);
    const idleConnections = await boxConnections(db.url, 'h');
    const afterIdle = await firstTokens(host, teams, OPEN_CAP);
    const open = await meanOpenMs(host);
    log(
      `first token of a closed box: p50 ${afterIdle.p50.toFixed(1)} ms, p99 ${afterIdle.p99.toFixed(1)} ms (mean open ${open.ms.toFixed(1)} ms); ` +
        `idle: ${idleConnections.total} connections`,
    );
    await waitForBoxes(host, 'open', (n) => n === 0, (IDLE_SECONDS + 30) * 1000, 'boxes closing after idling');

    // The active boxes opened together: an open box's memory and connections.
    const actives = teams.slice(0, ACTIVE);
    const baseline = await hostMemory(host, inspectPort);
    await inBatches(ACTIVE, 8, (i) => host!.box(actives[i]!).rootToken());
    const activeOpen = await hostMemory(host, inspectPort);
    const activeOpenConnections = await boxConnections(db.url, 'h');
    if ((await boxesIn(host, 'open')) < ACTIVE)
      log(`some of the ${ACTIVE} boxes closed before their memory was read: raise BENCH_TENANTS_IDLE_SECONDS`);

    // (b) while they are open (a box that idled out would open again in the row), then (a); each pair of rows side by side.
    const hostUrl = `http://127.0.0.1:${host.port}`;
    const hostName = (name: string): string => `${name}.test:${host!.port}`;
    const hosted = (...names: string[]): Target => ({
      url: hostUrl,
      pid: host!.process!.pid!,
      check: host!.box(names[0]!),
      hosts: names.map(hostName),
      metrics: () => host!.metrics(),
    });
    const ded: Target = { url: dedicated.url, pid: dedicated.process!.pid!, check: dedicated, metrics: () => dedicated!.metrics() };
    const rootRequest = (secret: string): BenchRequest => tokenRequest({ id: 'root', secret }, { grant_type: 'client_credentials' });
    const manyRequests = actives.map((name) => rootRequest(host!.box(name).rootSecret));
    const w = `${DEDICATED_WORKERS} worker${DEDICATED_WORKERS === 1 ? '' : 's'}`;
    const rows: TenantRow[] = [];
    // Asked again just before their row (no open, no argon2: they are open): none has idled out when the row starts.
    await inBatches(ACTIVE, 8, (i) => host!.box(actives[i]!).rootToken());
    const opensBefore = (await meanOpenMs(host)).opens;
    rows.push(
      await row('hosted_many_cc_root', `${ACTIVE} hosted boxes of one host, each its root client`, hosted(...actives), manyRequests, db),
    );
    // Each open is a box that had idled out since it was opened above: the row then paid for opening it.
    const opensInRow = (await meanOpenMs(host)).opens - opensBefore;
    if (opensInRow > 0) log(`${opensInRow} boxes opened again during the row of ${ACTIVE} boxes: raise BENCH_TENANTS_IDLE_SECONDS`);
    const activeConnections = await boxConnections(db.url, 'h');
    rows.push(
      await row(
        'dedicated_cc_root',
        `dedicated box (${w}): client_credentials, its root client`,
        ded,
        [rootRequest(dedicated.rootSecret)],
        db,
      ),
    );
    const [dedicatedRows, hostedRows] = [await seedRows(dedicated), await seedRows(host.box(actives[0]!))];
    rows.push(await row('dedicated_cc_jwt', `dedicated box (${w}): client_credentials, JWT ES256 + audience`, ded, dedicatedRows.jwt, db));
    rows.push(await row('hosted_cc_jwt', 'hosted box, 1 of the host: the same', hosted(actives[0]!), hostedRows.jwt, db));
    rows.push(
      await row('dedicated_introspection', `dedicated box (${w}): introspection (opaque token)`, ded, dedicatedRows.introspection, db),
    );
    rows.push(await row('hosted_introspection', 'hosted box, 1 of the host: the same', hosted(actives[0]!), hostedRows.introspection, db));
    const byKey = (key: string): TenantRow | undefined => rows.find((r) => r.key === key);
    judge(byKey('hosted_cc_jwt')!, byKey('dedicated_cc_jwt'));
    judge(byKey('hosted_introspection')!, byKey('dedicated_introspection'));
    judge(byKey('hosted_many_cc_root')!, byKey('dedicated_cc_root'));

    // (e) and scale: the dedicated box as its Deployment runs it, a worker per core.
    if (LOAD.workers !== DEDICATED_WORKERS) {
      await dedicated.stop();
      await dedicated.launch({ BOXAUTH_WORKERS: String(LOAD.workers) });
      dedicatedIdle.push(await idleDedicated(dedicated, db.url, LOAD.workers));
      const all: Target = { url: dedicated.url, pid: dedicated.process!.pid!, check: dedicated, metrics: () => dedicated!.metrics() };
      rows.push(
        await row(
          'dedicated_cc_jwt_all',
          `dedicated box (${LOAD.workers} workers): client_credentials, JWT ES256 + audience`,
          all,
          dedicatedRows.jwt,
          db,
        ),
      );
    }
    const idleOne = await idleBoxFigures(server.url);
    const operator = OPERATOR ? await operatorFigures(process.argv.includes('--operator-quick')) : undefined;

    const idle: IdleFigures = {
      boxes: BOXES,
      isolation: ISOLATION,
      provisionSeconds,
      prepareSeconds,
      memory: { empty, registered, afterClosed, activeOpen },
      perBoxKb: {
        registered: { rss: kb(registered.rssMb - empty.rssMb, BOXES), heap: kb(registered.heapMb - empty.heapMb, BOXES) },
        openedAndClosed: { rss: kb(afterClosed.rssMb - empty.rssMb, BOXES), heap: kb(afterClosed.heapMb - empty.heapMb, BOXES) },
        open: { rss: kb(activeOpen.rssMb - baseline.rssMb, ACTIVE), heap: kb(activeOpen.heapMb - baseline.heapMb, ACTIVE) },
      },
      connections: { idle: idleConnections, activeOpen: activeOpenConnections, active: activeConnections },
      opensInActiveRow: opensInRow,
      firstToken: { neverOpened, afterIdle, meanOpenMs: open.ms },
    };
    report(rows, idle, dedicatedIdle, idleOne, operator);
  } finally {
    await host?.stop();
    await dedicated?.stop();
    await server.stop();
  }
}

function report(
  rows: TenantRow[],
  idle: IdleFigures,
  dedicatedIdle: Awaited<ReturnType<typeof idleDedicated>>[],
  oneIdle: IdleBox,
  operator: OperatorScaleFigures | undefined,
): void {
  const head = [
    'row',
    'req/s',
    '× dedicated',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'peak RSS MB',
    'CPU µs/req API+PG',
    'sessions/commit',
    'goals',
  ];
  const body = rows.map((r) => [
    r.title,
    Math.round(r.rps).toLocaleString('en'),
    r.ratio === undefined ? '' : r.ratio.toFixed(2),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.failures),
    r.rssMb.toFixed(0),
    `${r.cpuUs.api.toFixed(0)}+${r.cpuUs.postgres.toFixed(0)}`,
    r.rowsPerCommit === undefined ? '' : r.rowsPerCommit.toFixed(1),
    r.failed ? `FAILED: ${r.failed}` : !r.goals ? '' : r.targets.length ? `MISSED: ${r.targets.join(', ')}` : 'met',
  ]);
  const m = idle.memory;
  const ft = idle.firstToken;
  const firstMet = ft.afterIdle.p99 <= FIRST_TOKEN_GOAL_MS && ft.afterIdle.failed === 0;
  const lines = [
    '',
    textTable(head, body),
    '',
    `idle boxes: ${idle.boxes} registered, each in a ${idle.isolation === 'Database' ? 'database' : 'schema'} of its own ` +
      `(provisioned in ${idle.provisionSeconds.toFixed(1)} s, prepared in ${idle.prepareSeconds.toFixed(1)} s); host RSS ${m.empty.rssMb.toFixed(1)} MB empty, ` +
      `${m.registered.rssMb.toFixed(1)} MB registered, ${m.afterClosed.rssMb.toFixed(1)} MB after each was opened once and closed ` +
      `(heap ${m.empty.heapMb.toFixed(1)} / ${m.registered.heapMb.toFixed(1)} / ${m.afterClosed.heapMb.toFixed(1)} MB)`,
    `per idle box: ${idle.perBoxKb.registered.rss} KB RSS (${idle.perBoxKb.registered.heap} KB heap) registered, ` +
      `${idle.perBoxKb.openedAndClosed.rss} KB RSS (${idle.perBoxKb.openedAndClosed.heap} KB heap) opened once and closed; ` +
      `PostgreSQL connections held by the idle boxes: ${idle.connections.idle.total} (goal 0: ${idle.connections.idle.total === 0 ? 'met' : 'MISSED'})`,
    `per open box (${ACTIVE} open at once): ${idle.perBoxKb.open.rss} KB RSS (${idle.perBoxKb.open.heap} KB heap), ` +
      `${(idle.connections.activeOpen.total / ACTIVE).toFixed(1)} connections ${kinds(idle.connections.activeOpen)}; ` +
      `${(idle.connections.active.total / ACTIVE).toFixed(1)} after their load ${kinds(idle.connections.active)}`,
    `first token of a box never opened: p50 ${ft.neverOpened.p50.toFixed(1)} ms, p99 ${ft.neverOpened.p99.toFixed(1)} ms; ` +
      `of a closed box after idling: p50 ${ft.afterIdle.p50.toFixed(1)} ms, p99 ${ft.afterIdle.p99.toFixed(1)} ms, ` +
      `max ${ft.afterIdle.max.toFixed(1)} ms, ${ft.afterIdle.failed} failed (goal ≤ ${FIRST_TOKEN_GOAL_MS} ms: ${firstMet ? 'met' : 'MISSED'}); ` +
      `the host's mean open ${ft.meanOpenMs.toFixed(1)} ms`,
    ...dedicatedIdle.map(
      (d) =>
        `dedicated box idle, ${d.workers} worker(s): ${d.rssMb.toFixed(0)} MB RSS (all its processes), ` +
        `${d.connections.total} PostgreSQL connections ${kinds(d.connections)}`,
    ),
    `one idle box (idle-box.ts): ${oneIdle.rssMB.toFixed(1)} MB RSS (peak ${oneIdle.peakMB.toFixed(1)}), ${oneIdle.connections} connections; ` +
      `idle after a token ${oneIdle.afterToken.rssMB.toFixed(1)} MB RSS (peak ${oneIdle.afterToken.peakMB.toFixed(1)}), ${oneIdle.afterToken.connections} connections`,
    ...(operator ? [`operator: ${JSON.stringify(operator)}`] : []),
  ];
  const took = (Date.now() - STARTED) / 1000;
  lines.push(
    `(${os.availableParallelism()} cores, ${os.cpus()[0]?.model ?? '?'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB; ${LOAD.connections} connections, ` +
      `${LOAD.seconds} s per row, wrk; the whole bench ${Math.floor(took / 60)} min ${Math.round(took % 60)} s)`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  fs.writeFileSync(
    projectPath('bench-tenants-results.json'),
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: { cores: os.availableParallelism(), cpu: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30) },
        connections: LOAD.connections,
        seconds: LOAD.seconds,
        benchSeconds: Math.round(took),
        sizes: { boxes: BOXES, active: ACTIVE, idleSeconds: IDLE_SECONDS, dedicatedWorkers: DEDICATED_WORKERS, isolation: ISOLATION },
        goals: { ratio: RATIO_GOAL, firstTokenP99Ms: FIRST_TOKEN_GOAL_MS, idleConnections: 0 },
        rows: rows.map((r) => ({ ...r, met: r.goals ? r.targets.length === 0 : undefined })),
        idle,
        dedicatedIdle,
        idleBox: oneIdle,
        operator,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write('written to bench-tenants-results.json\n');
}

// Exits when done, whatever a row left behind (a timer, a socket): the bench must end.
main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench-tenants: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
