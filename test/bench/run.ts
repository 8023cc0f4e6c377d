// `make bench`: the box as production runs it (one worker per core, a real
// PostgreSQL with durable commits), driven by wrk from its own process at 32
// connections, scenario by scenario; the ceilings under the same load first: bare
// (test/bench/ceiling.ts) and durable (test/bench/ceiling-durable.ts: a token, a
// refresh, a DPoP-bound token, each with its row committed); every token row gets
// both ratios and issue 69's goals, met or missed. Then the JWT scenario at one
// worker, and again with 100,000 clients, 5,000,000 sessions and 1,000,000 DPoP
// proofs in the database. A row that fails (its wrk past its deadline) is reported
// as failed and the others still run. Prints a table and writes bench-results.json.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { projectPath } from '../../api/paths.js';
import { Box, sleep } from '../support/box.js';
import { TestIssuer } from '../support/issuer.js';
import { startCeiling } from './ceiling-start.js';
import { benchServer, checkpoint, freshDatabase, runSql, showSetting } from './database.js';
import { benchDecisions, DECISION_KEYS, type DecisionResults } from './decision-bench.js';
import { benchDpop, DPOP_KEYS, dpopTokenRequests, measureOnce, PROOFS, proofCheckCpu } from './dpop-bench.js';
import { appTokens, forwardAuthRequest, seedApp } from './decisions.js';
import { extauthzAvailable } from './grpc-load.js';
import { bareCallCpu, hookLines, hookSummaries, startBenchHooks, type HookRowSummary } from './hook-bench.js';
import { traceSink } from './trace-sink.js';
import { benchHa, failoverLine, HA_KEYS, type HaResults } from './ha-bench.js';
import { wrkAvailable, type BenchRequest } from './load.js';
import { LOAD, measure as measureLoad, rowOfFailure, type Row } from './measure.js';
import { seedScale } from './scale.js';
import {
  ASSERTIONS,
  AUDIENCE,
  benchTrustDomain,
  pkjwtRequest,
  sample,
  scenarios,
  seed,
  tokenRequest,
  type Baseline,
  type Scenario,
  type Seeded,
} from './scenarios.js';
import { textTable } from './table.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const { workers: WORKERS, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS } = LOAD;
const REFRESH_TOKENS = env('BENCH_REFRESH_TOKENS', 100_000);
const SCALE_CLIENTS = env('BENCH_SCALE_CLIENTS', 100_000);
const SCALE_SESSIONS = env('BENCH_SCALE_SESSIONS', 5_000_000);
const SCALE_PROOFS = env('BENCH_SCALE_PROOFS', 1_000_000);
/** Commits in flight per process of the durable ceilings: each value is measured and the best is the ceiling. */
const CEILING_IN_FLIGHT = (process.env.BENCH_CEILING_IN_FLIGHT ?? '1,2,4').split(',').map(Number);
/** 0: no row of the JWT scenario at one API worker. */
const ONE_WORKER_ROW = env('BENCH_ONE_WORKER_ROW', 1) !== 0;
/** Comma-separated scenario keys to run (with their ceilings); `decisions` for all the decision rows. */
const ONLY = process.env.BENCH_ONLY?.split(',');
/** A directory for V8 CPU profiles of the API processes (read them with dist/test/bench/profile.js). */
const PROFILE_DIR = process.env.BENCH_PROFILE;
const P99_TARGET_MS = 25;
const RSS_TARGET_MB = 200;

const STARTED = Date.now();

const log = (msg: string): void => {
  process.stderr.write(`bench: ${msg}\n`);
};

/** A fresh database for the run, on DATABASE_URL's server or an embedded one. */
async function benchDatabase(): Promise<{ url: string; postgresPid: number | undefined; stop(): Promise<void> }> {
  const server = await benchServer(log);
  return { ...server, url: await freshDatabase(server.url, 'boxauth_bench') };
}

async function measure(
  url: string,
  rootPid: number,
  postgresPid: number | undefined,
  key: string,
  title: string,
  requests: Scenario['requests'],
): Promise<Row> {
  const m = await measureLoad(url, rootPid, requests, postgresPid);
  log(
    `${title}: ${Math.round(m.rps)} req/s, p99 ${m.p99Ms.toFixed(1)} ms, ${m.failures} failed, CPU/request: API ${m.cpuUs.api.toFixed(0)} µs, PostgreSQL ${m.cpuUs.postgres.toFixed(0)} µs`,
  );
  return { key, title, ...m, targets: [] };
}

/** The box's count of answers by route and status of 400 or more (from /metrics), to say what failed. */
async function failedAnswers(box: Box): Promise<string> {
  const text = await box.metrics();
  return text
    .split('\n')
    .filter((l) => l.startsWith('boxauth_http_requests_total{') && /status="[45]\d\d"/.test(l))
    .join('\n');
}

type CeilingKind = 'bare' | 'token' | 'refresh' | 'dpop' | 'assertion';

const CEILING_TITLES: Record<CeilingKind, string> = {
  bare: 'ceiling: bare node:http + ES256',
  token: 'durable token ceiling: bare + its session row',
  refresh: 'durable refresh ceiling: update a row, insert one',
  dpop: 'durable DPoP ceiling: + proof, replay ledger, row',
  assertion: 'durable private_key_jwt ceiling: token + assertion, ledger',
};

/** What a ratio names in the table and the goals. */
const BASELINE_NAMES: Record<Baseline, string> = {
  bare: 'bare ceiling',
  token: 'durable token ceiling',
  refresh: 'durable refresh ceiling',
  dpop: 'durable DPoP ceiling',
  assertion: 'durable private_key_jwt ceiling',
  cc_jwt: 'the cc_jwt row',
};

/** The requests a ceiling is measured with: the box's rows' requests, to the ceiling; for a DPoP ceiling each good once. */
function ceilingRequests(kind: CeilingKind, url: string, seeded: Seeded): BenchRequest[] {
  if (kind === 'refresh')
    return Array.from({ length: REFRESH_TOKENS }, (_, i) =>
      tokenRequest(seeded.refreshClient, { grant_type: 'refresh_token', refresh_token: `ceiling-refresh-${i + 1}` }),
    );
  // Twice the box's: the ceiling issues about twice as fast, and a proof it ran out of would be sent again and refused.
  if (kind === 'dpop') return dpopTokenRequests(url, seeded.opaque, 2 * PROOFS + 1);
  if (kind === 'assertion') return Array.from({ length: 2 * ASSERTIONS + 1 }, () => pkjwtRequest(seeded.privateKeyJwt));
  return [tokenRequest(seeded.jwt, { grant_type: 'client_credentials', audience: AUDIENCE })];
}

/** Starts a ceiling (its first request answered 200), measures it, stops it: the box and its database idle meanwhile. */
async function measureCeiling(
  kind: CeilingKind,
  seeded: Seeded,
  db: { url: string; postgresPid?: number },
  inFlight?: number,
): Promise<Row> {
  const client =
    kind === 'refresh' ? seeded.refreshClient : kind === 'dpop' ? seeded.opaque : kind === 'assertion' ? seeded.privateKeyJwt : seeded.jwt;
  const script = kind === 'bare' ? 'ceiling.js' : 'ceiling-durable.js';
  let url = '';
  let probe: BenchRequest | undefined;
  let requests: BenchRequest[] = [];
  const { child, exited } = await startCeiling(
    script,
    {
      ...process.env,
      CEILING_WORKERS: String(WORKERS),
      CEILING_CLIENT_ID: client.id,
      CEILING_CLIENT_SECRET: 'secret' in client ? client.secret : '',
      CEILING_ASSERTION_JWK: JSON.stringify(seeded.privateKeyJwt.jwk),
      CEILING_ASSERTION_AUDIENCE: seeded.privateKeyJwt.audience,
      CEILING_MODE: kind,
      CEILING_DATABASE_URL: db.url,
      CEILING_IN_FLIGHT: String(inFlight ?? 1),
      CEILING_REFRESH_TOKENS: String(REFRESH_TOKENS),
    },
    async (port, started) => {
      url = `http://127.0.0.1:${port}`;
      [probe, ...requests] = ceilingRequests(kind, url, seeded);
      await answers(url, probe!, started);
    },
  );
  try {
    await checkpoint(db.url);
    const title = inFlight === undefined ? CEILING_TITLES[kind] : `${CEILING_TITLES[kind]} (${inFlight} in flight)`;
    const key = kind === 'bare' ? 'ceiling' : `ceiling_${kind}`;
    if (kind !== 'dpop' && kind !== 'assertion')
      return await measure(url, child.pid!, db.postgresPid, key, title, kind === 'refresh' ? requests : [probe!]);
    const row = { key, title, ...(await measureOnce(url, child.pid!, requests, db.postgresPid)), targets: [] };
    log(`${title}: ${Math.round(row.rps)} req/s, p99 ${row.p99Ms.toFixed(1)} ms, ${row.failures} failed`);
    return row;
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

async function answers(url: string, r: BenchRequest, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300 && child.exitCode === null; i++) {
    try {
      const res = await fetch(`${url}${r.path}`, { method: r.method, headers: r.headers, body: r.body ?? null });
      if (res.status === 200) return;
      throw new Error(`the ceiling answered ${res.status}: ${await res.text()}`);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err; // TypeError: not listening yet
    }
    await sleep(100);
  }
  throw new Error('the ceiling server did not start');
}

/** The best of the durable ceiling measured at each number of commits in flight (CEILING_IN_FLIGHT), and each one's rate. */
async function bestCeiling(
  kind: Exclude<CeilingKind, 'bare'>,
  seeded: Seeded,
  db: { url: string; postgresPid?: number },
): Promise<{ row: Row; byInFlight: Record<number, number> }> {
  const byInFlight: Record<number, number> = {};
  let best: Row | undefined;
  for (const n of CEILING_IN_FLIGHT) {
    const row = await measureCeiling(kind, seeded, db, n);
    byInFlight[n] = Math.max(byInFlight[n] ?? 0, Math.round(row.rps)); // a value listed twice: its best
    if (!best || row.rps > best.rps) best = row;
  }
  return { row: best!, byInFlight };
}

/**
 * What the bare code's private_key_jwt costs beyond its token, in machine time per token (the two durable ceilings' rates
 * apart, all cores), and so the most the private_key_jwt row could be of the cc_jwt row if the box added nothing to an
 * assertion but that cost (issue 65 asks 0.9).
 */
function assertionBound(baselines: Map<Baseline, number>): string | undefined {
  const [ccJwt, token, assertion] = (['cc_jwt', 'token', 'assertion'] as const).map((b) => baselines.get(b));
  if (!ccJwt || !token || !assertion) return undefined;
  const extra = 1 / assertion - 1 / token; // seconds of the machine per token
  const bound = 1 / ccJwt / (1 / ccJwt + extra);
  return (
    `private_key_jwt: an assertion costs the bare code ${Math.round(extra * os.availableParallelism() * 1e6)} µs of CPU per token ` +
    `(its ceiling ${(assertion / token).toFixed(2)} × the token ceiling); on top of the cc_jwt row's cost the private_key_jwt ` +
    `row can reach at most ${bound.toFixed(2)} × cc_jwt here`
  );
}

/** A row measured again with traces on: what it is called, its rate untraced, and how it is measured under a key and title. */
interface TracedRow {
  of: string;
  title: string;
  untraced: number;
  measure(key: string, title: string): Promise<Row>;
}

/** A row whose measurement failed: zeros, and why (said in the log). */
function failedRow(key: string, title: string, err: unknown): Row {
  const row = rowOfFailure(key, title, err);
  log(`${title}: FAILED: ${row.failed}`);
  return row;
}

/** Both ratios of a row, and issue 69's (or 65's) goals it meets or misses (`targets`: the missed ones). */
function judge(row: Row, scenario: Pick<Scenario, 'durable' | 'goal' | 'latencyGoal'> | undefined, baselines: Map<Baseline, number>): void {
  if (row.failed) return;
  const bare = baselines.get('bare');
  if (bare) row.ratio = row.rps / bare;
  const durable = scenario?.durable && baselines.get(scenario.durable);
  if (durable) {
    row.durableRatio = row.rps / durable;
    row.durableOf = scenario.durable;
  }
  const goals: [string, boolean][] = [];
  if (scenario?.goal) {
    const base = baselines.get(scenario.goal.of);
    const text = `≥ ${scenario.goal.min} × ${BASELINE_NAMES[scenario.goal.of]}`;
    if (base) goals.push([text, row.rps / base >= scenario.goal.min]);
    else log(`${row.title}: ${text} not judged (not measured in this run)`);
  }
  if (scenario?.latencyGoal !== false) goals.push([`p99 ≤ ${P99_TARGET_MS} ms`, row.p99Ms <= P99_TARGET_MS]);
  goals.push([`peak RSS ≤ ${RSS_TARGET_MB} MB per API process`, row.rssMb <= RSS_TARGET_MB]);
  goals.push(['no failed request', row.failures === 0]);
  row.goals = goals.map((g) => g[0]);
  row.targets.push(...goals.filter((g) => !g[1]).map((g) => g[0]));
}

function table(rows: Row[]): string {
  const head = [
    'scenario',
    'req/s',
    '× ceiling',
    '× durable',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'non-2xx',
    'peak RSS MB',
    'CPU µs/req API+PG',
    'goals',
  ];
  const body = rows.map((r) => [
    r.title,
    Math.round(r.rps).toLocaleString('en'),
    r.ratio === undefined ? '' : r.ratio.toFixed(2),
    r.durableRatio === undefined ? '' : `${r.durableRatio.toFixed(2)} ${r.durableOf}`,
    r.p50Ms.toFixed(2),
    r.p90Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.failures),
    r.rssMb.toFixed(0),
    `${r.cpuUs.api.toFixed(0)}+${r.cpuUs.postgres.toFixed(0)}`,
    r.failed ? `FAILED: ${r.failed}` : r.key.startsWith('ceiling') ? '' : r.targets.length ? `MISSED: ${r.targets.join(', ')}` : 'met',
  ]);
  return textTable(head, body);
}

/** What PostgreSQL did while the box decided: the hot path must not reach it. */
function decisionDbLine(db: DecisionResults['db']): string {
  return (
    `PostgreSQL during the box's decision rows: ${db.transactions} transactions for ${db.decisions.toLocaleString('en')} decisions ` +
    `(${(db.perDecision * 1000).toFixed(3)} per 1,000, the box's background work included): ` +
    (db.met ? 'no database round trip on the hot path' : 'MISSED: the hot path reaches the database')
  );
}

/** What the HA rows say to each other: the price of a synchronous standby, PgBouncer against direct, the failovers. */
function haLines(ha: HaResults): string {
  const rps = (key: string): number | undefined => ha.rows.find((r) => r.key === key)?.rps;
  const [none, sync, bouncer] = [rps('ha_async'), rps('ha_sync'), rps('ha_pgbouncer')];
  const lines: string[] = [];
  if (none && sync) lines.push(`A synchronous standby: ${(sync / none).toFixed(2)} × the token rate with none (the price of durability)`);
  if (sync && bouncer)
    lines.push(`Through PgBouncer: ${(bouncer / sync).toFixed(2)} × the token rate direct (both with the synchronous standby)`);
  if (ha.failover.length) lines.push(failoverLine(ha.failover));
  return lines.join('\n');
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) throw new Error('wrk is not installed (make bench installs it: apt-get install wrk)');
  if (!extauthzAvailable()) throw new Error('test/extauthz is not built (make bench builds it: make test-tools)');
  log(`${WORKERS} API workers, ${CONNECTIONS} connections, ${SECONDS} s per scenario after ${WARMUP_SECONDS} s of warm-up`);
  const db = await benchDatabase();
  const issuer = await TestIssuer.start();
  const trustDomain = await benchTrustDomain();
  const hooks = await startBenchHooks();
  let box: Box | undefined;
  try {
    const dataDir = fs.mkdtempSync(`${os.tmpdir()}/boxauth-bench-`);
    box = await Box.start({
      databaseUrl: db.url,
      dataDir,
      // Its log as production's collector takes it: a pipe, read as it comes, into a file.
      logFile: `${dataDir}/box.log`,
      env: {
        // BOXAUTH_* settings of make bench's own environment reach the box (to compare settings)
        ...Object.fromEntries(
          Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('BOXAUTH_') && e[1] !== undefined),
        ),
        BOXAUTH_WORKERS: String(WORKERS),
        BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([issuer.trusted]),
        BOXAUTH_SPIFFE_TRUST_DOMAINS: trustDomain.setting,
        BOXAUTH_NOTICE_ALLOWED_ADDRESSES: hooks.allowed,
      },
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
    });
    const seeded = await seed(box, issuer, db.url, REFRESH_TOKENS, trustDomain.sign, hooks);
    if (process.env.BENCH_SQL) await runSql(db.url, process.env.BENCH_SQL); // to try a schema change
    const list = scenarios(seeded).filter((s) => !ONLY || ONLY.includes(s.key));
    for (const s of list.filter((s) => !s.around)) s.check(await sample(box, s.requests[0]!));
    const decisionKeys = DECISION_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('decisions'));
    const dpopKeys = DPOP_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('dpop'));
    const haKeys = HA_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('ha'));
    await seedApp(box);
    const tokens = await appTokens(box, seeded);

    const rows: Row[] = [];
    const baselines = new Map<Baseline, number>();
    // The ceilings run alone: the box is idle meanwhile (its database too). Each durable one only when a row is compared with it.
    const wanted = (kind: CeilingKind): boolean =>
      ONLY?.includes(kind === 'bare' ? 'ceiling' : `ceiling_${kind}`) ||
      (kind === 'bare'
        ? list.length > 0 || dpopKeys.length > 0 || haKeys.some((k) => k !== 'ha_failover')
        : kind === 'dpop'
          ? dpopKeys.length > 0
          : list.some((s) => s.durable === kind));
    const inFlight: Partial<Record<CeilingKind, Record<number, number>>> = {};
    for (const kind of ['bare', 'token', 'refresh', 'dpop', 'assertion'] as const) {
      if (!wanted(kind)) continue;
      try {
        const row =
          kind === 'bare'
            ? await measureCeiling(kind, seeded, db)
            : await bestCeiling(kind, seeded, db).then((b) => {
                inFlight[kind] = b.byInFlight;
                return b.row;
              });
        baselines.set(kind, row.rps);
        rows.push(row);
      } catch (err) {
        rows.push(failedRow(kind === 'bare' ? 'ceiling' : `ceiling_${kind}`, CEILING_TITLES[kind], err));
      }
    }
    const measureRow = async (s: Scenario, key = s.key, title = s.title): Promise<Row> => {
      try {
        await checkpoint(db.url);
        const row = s.fresh
          ? { key, title, ...(await measureOnce(box!.url, box!.process!.pid!, s.fresh(), db.postgresPid)), targets: [] }
          : await measure(box!.url, box!.process!.pid!, db.postgresPid, key, title, s.requests);
        if (row.failures > 0) log(`answers of 400 or more so far:\n${await failedAnswers(box!)}`);
        return row;
      } catch (err) {
        return failedRow(key, title, err);
      }
    };
    for (const s of list) {
      // A row's Hook exists only while it runs: checked once it is there, gone after.
      await s.around?.before();
      const row = await (async () => {
        try {
          if (s.around) s.check(await sample(box, s.requests[0]!));
          return await measureRow(s);
        } catch (err) {
          return failedRow(s.key, s.title, err);
        } finally {
          await s.around?.after();
        }
      })();
      if (s.key === 'cc_jwt' && !row.failed) baselines.set('cc_jwt', row.rps);
      rows.push(row);
    }
    // judged once all are measured: an exchange is compared with the cc_jwt row, wherever it stands
    for (const s of list)
      judge(
        rows.find((r) => r.key === s.key)!,
        s,
        baselines,
      );
    let proofCpu: Awaited<ReturnType<typeof proofCheckCpu>> | undefined;
    const dpopGoal = { durable: 'dpop', goal: { of: 'dpop', min: 0.8 } } as const;
    if (dpopKeys.length > 0) {
      try {
        const reader = await box.addClient('bench-dpop-reader', {}, { secret: 'bench-dpop-reader-secret' }); // with an allow policy
        for (const d of await benchDpop(box, seeded.opaque, reader, dpopKeys, db.postgresPid, log, () => checkpoint(db.url))) {
          const row: Row = { key: d.key, title: d.title, ...d.measured, targets: [] };
          log(`${d.title}: ${Math.round(row.rps)} req/s, p99 ${row.p99Ms.toFixed(1)} ms, ${row.failures} failed`);
          judge(row, dpopGoal, baselines);
          rows.push(row);
        }
        proofCpu = await proofCheckCpu();
      } catch (err) {
        rows.push(failedRow('dpop', 'DPoP rows', err));
      }
    }
    let decisions: DecisionResults | undefined;
    if (decisionKeys.length > 0) {
      try {
        decisions = await benchDecisions(box, tokens, db, decisionKeys, log);
        rows.push(...decisions.rows);
      } catch (err) {
        rows.push(failedRow('decisions', 'decision rows', err));
      }
    }

    let ha: HaResults | undefined;
    if (haKeys.length > 0) {
      try {
        ha = await benchHa(haKeys, log);
        for (const row of ha.rows) {
          judge(row, { durable: 'token' }, baselines);
          rows.push(row);
        }
      } catch (err) {
        rows.push(failedRow('ha', 'HA rows', err));
      }
    }

    // A hook row's CPU a call beside a bare HTTPS call's to the same hook, measured once the rows are done (nothing else runs).
    let hookRows: HookRowSummary[] = [];
    const hookedMs = (seeded.hooked ?? []).map((h) => h.ms).filter((ms) => list.some((s) => s.key === `cc_jwt_hook_${ms}ms`));
    if (hookedMs.length && baselines.has('cc_jwt')) {
      const bare = new Map<number, number>();
      for (const ms of hookedMs) bare.set(ms, await bareCallCpu(hooks, ms));
      hookRows = hookSummaries(rows, bare, { connections: CONNECTIONS, cores: os.availableParallelism() });
    }

    const jwtScenario = list.find((s) => s.key === 'cc_jwt');
    let workers: { one: number; all: number; ratio: number } | undefined;
    if (ONE_WORKER_ROW && WORKERS > 1 && jwtScenario && baselines.has('cc_jwt')) {
      await box.stop();
      await box.launch({ BOXAUTH_WORKERS: '1' });
      const row = await measureRow(jwtScenario, 'cc_jwt_1_worker', `${jwtScenario.title}, 1 API worker`);
      judge(row, { durable: 'token' }, baselines);
      rows.push(row);
      const all = baselines.get('cc_jwt')!;
      if (!row.failed) workers = { one: row.rps, all, ratio: all / row.rps };
      await box.stop();
      await box.launch();
    }

    // The JWT row and the forward-auth decision row with a JWT again with traces on (issue 84), every request a span
    // tree at 100 %, one in a hundred at 1 %, exported to a sink that drops them: what tracing costs, as a ratio to the
    // same row without.
    const traced: TracedRow[] = [];
    if (jwtScenario && baselines.has('cc_jwt'))
      traced.push({
        of: 'cc_jwt',
        title: jwtScenario.title,
        untraced: baselines.get('cc_jwt')!,
        measure: async (key, title) => {
          const row = await measureRow(jwtScenario, key, title);
          judge(row, { durable: 'token' }, baselines);
          return row;
        },
      });
    const decideJwt = decisions?.rows.find((r) => r.key === 'decide_http_jwt' && !r.failed);
    if (decideJwt)
      traced.push({
        of: 'decide_http_jwt',
        title: decideJwt.title,
        untraced: decideJwt.rps,
        measure: async (key, title) => {
          await checkpoint(db.url);
          const row = await measure(box!.url, box!.process!.pid!, db.postgresPid, key, title, [forwardAuthRequest(tokens.jwt)]);
          if (row.failures > 0) row.targets.push('failures');
          const ceiling = rows.find((r) => r.key === 'ceiling_decision_http' && !r.failed);
          if (ceiling) row.ratio = row.rps / ceiling.rps;
          return row;
        },
      });
    const tracing: { row: string; percent: number; rps: number; ratio: number; exports: number }[] = [];
    if (traced.length > 0 && (!ONLY || ONLY.includes('traces'))) {
      const sink = await traceSink();
      try {
        for (const [percent, ratio] of [
          [1, '0.01'],
          [100, '1'],
        ] as const) {
          await box.stop();
          await box.launch({
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
            OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
            OTEL_TRACES_SAMPLER_ARG: ratio,
          });
          for (const t of traced) {
            const exports = sink.received.exports;
            const row = await t
              .measure(`${t.of}_traced_${percent}`, `${t.title}, traced at ${percent} %`)
              .catch((err: unknown) => failedRow(`${t.of}_traced_${percent}`, `${t.title}, traced at ${percent} %`, err));
            rows.push(row);
            if (!row.failed)
              tracing.push({ row: t.of, percent, rps: row.rps, ratio: row.rps / t.untraced, exports: sink.received.exports - exports });
          }
        }
      } finally {
        await box.stop();
        await box.launch();
        await sink.close();
      }
    }

    let scale: { clients: number; sessions: number; dpopProofs: number; ratio: number; dpopRatio?: number } | undefined;
    if (SCALE_SESSIONS > 0 && jwtScenario) {
      await box.stop();
      const sizes = `${SCALE_CLIENTS.toLocaleString('en')} clients, ${SCALE_SESSIONS.toLocaleString('en')} sessions, ${SCALE_PROOFS.toLocaleString('en')} DPoP proofs`;
      log(`adding ${sizes}`);
      const t0 = Date.now();
      await seedScale(db.url, { clients: SCALE_CLIENTS, sessions: SCALE_SESSIONS, proofs: SCALE_PROOFS }, log);
      log(`seeded in ${Math.round((Date.now() - t0) / 1000)} s`);
      await box.launch();
      const emptyRate = (key: string): number | undefined => rows.find((r) => r.key === key && !r.failed)?.rps;
      const atScale = (key: string, row: Row, of: number | undefined): number | undefined => {
        judge(row, { durable: key === 'cc_jwt' ? 'token' : 'dpop' }, baselines);
        const ratio = of && !row.failed ? row.rps / of : undefined;
        row.goals!.push('≥ 0.9 × the empty database');
        if (ratio === undefined || ratio < 0.9) row.targets.push('≥ 0.9 × the empty database');
        rows.push(row);
        return ratio;
      };
      const ratio = atScale('cc_jwt', await measureRow(jwtScenario, 'cc_jwt_scale', `${jwtScenario.title}, ${sizes}`), emptyRate('cc_jwt'));
      let dpopRatio: number | undefined;
      if (dpopKeys.includes('dpop_cc')) {
        const title = `client_credentials + DPoP proof (bound, opaque), ${sizes}`;
        let row: Row;
        try {
          const requests = dpopTokenRequests(box.url, seeded.opaque, PROOFS);
          await checkpoint(db.url);
          row = { key: 'dpop_cc_scale', title, ...(await measureOnce(box.url, box.process!.pid!, requests, db.postgresPid)), targets: [] };
        } catch (err) {
          row = failedRow('dpop_cc_scale', title, err);
        }
        dpopRatio = atScale('dpop_cc', row, emptyRate('dpop_cc'));
      }
      scale = {
        clients: SCALE_CLIENTS,
        sessions: SCALE_SESSIONS,
        dpopProofs: SCALE_PROOFS,
        ratio: ratio ?? 0,
        ...(dpopRatio ? { dpopRatio } : {}),
      };
    }

    process.stdout.write(`\n${table(rows)}\n`);
    const keys = (list: Row[]): string => (list.length ? ` (${list.map((r) => r.key).join(', ')})` : '');
    const failed = rows.filter((r) => r.failed);
    const missed = rows.filter((r) => r.goals && r.targets.length > 0);
    const met = rows.filter((r) => r.goals && r.targets.length === 0);
    process.stdout.write(
      `\ngoals (issues 65 and 69): ${met.length} rows met all theirs, ${missed.length} missed some${keys(missed)}, ${failed.length} failed${keys(failed)}\n`,
    );
    const inFlightLine = Object.entries(inFlight)
      .map(
        ([kind, by]) =>
          `${kind} ${Object.entries(by)
            .map(([n, rps]) => `${n}: ${rps.toLocaleString('en')}/s`)
            .join(', ')}`,
      )
      .join('; ');
    const synchronousCommit = await showSetting(db.url, 'synchronous_commit');
    if (inFlightLine)
      process.stdout.write(
        `durable ceilings by commits in flight per process: ${inFlightLine} (synchronous_commit = ${synchronousCommit})\n`,
      );
    const assertionLimit = assertionBound(baselines);
    if (assertionLimit) process.stdout.write(`${assertionLimit}\n`);
    if (decisions) process.stdout.write(`\n${decisionDbLine(decisions.db)}\n`);
    if (proofCpu) {
      const met = proofCpu.checkUs <= 100 ? 'met' : 'MISSED';
      process.stdout.write(
        `\nCPU of a DPoP proof check (ES256, one core, the replay cache's round trip aside): ${proofCpu.verifyUs.toFixed(1)} µs the proof, ` +
          `${proofCpu.checkUs.toFixed(1)} µs the whole check (goal ≤ 100 µs: ${met})\n`,
      );
    }
    if (ha) process.stdout.write(`\n${haLines(ha)}\n`);
    if (hookRows.length) process.stdout.write(`\n${hookLines(hookRows)}\n`);
    if (workers)
      process.stdout.write(
        `\nclient_credentials JWT: ${Math.round(workers.one).toLocaleString('en')}/s at 1 API worker, ${Math.round(workers.all).toLocaleString('en')}/s at ${WORKERS}: ${workers.ratio.toFixed(2)} ×\n`,
      );
    for (const t of tracing)
      process.stdout.write(
        `\n${t.row} traced at ${t.percent} %: ${Math.round(t.rps).toLocaleString('en')}/s, ${t.ratio.toFixed(2)} × the same row untraced (${t.exports} exports)\n`,
      );
    if (scale)
      process.stdout.write(
        `\nwith ${scale.clients.toLocaleString('en')} clients, ${scale.sessions.toLocaleString('en')} sessions and ${scale.dpopProofs.toLocaleString('en')} DPoP proofs: ` +
          `${scale.ratio.toFixed(2)} × the empty-database JWT throughput` +
          `${scale.dpopRatio !== undefined ? `, ${scale.dpopRatio.toFixed(2)} × the empty-database DPoP-bound issuance` : ''} (goal ≥ 0.9)\n`,
      );
    const took = (Date.now() - STARTED) / 1000;
    process.stdout.write(
      `(${os.availableParallelism()} cores, ${WORKERS} API workers, ${CONNECTIONS} connections, ${SECONDS} s per scenario, wrk; the whole bench ${Math.floor(took / 60)} min ${Math.round(took % 60)} s)\n`,
    );
    fs.writeFileSync(
      projectPath('bench-results.json'),
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          cores: os.availableParallelism(),
          workers: WORKERS,
          connections: CONNECTIONS,
          seconds: SECONDS,
          benchSeconds: Math.round(took),
          synchronousCommit,
          goals: { p99Ms: P99_TARGET_MS, rssMbPerProcess: RSS_TARGET_MB },
          ceilingInFlight: inFlight,
          scenarios: rows.map((r) => ({ ...r, met: r.goals ? r.targets.length === 0 : undefined })),
          workerScaling: workers,
          tracing,
          scale,
          decisionDatabase: decisions?.db,
          dpopProofCheckCpuUs: proofCpu,
          failover: ha?.failover,
          hooks: hookRows.length ? hookRows : undefined,
        },
        null,
        2,
      )}\n`,
    );
    process.stdout.write('written to bench-results.json\n');
  } finally {
    await box?.stop();
    await issuer.stop();
    await trustDomain.close();
    await hooks.server.kill();
    await db.stop();
  }
}

// Exits when done, whatever a row left behind (a timer, a socket): the bench must end.
main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
