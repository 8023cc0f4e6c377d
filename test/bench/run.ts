// `make bench`: the box as production runs it (one worker per core, a real
// PostgreSQL with durable commits), driven by wrk from its own process at 32
// connections, scenario by scenario; the ceiling (test/bench/ceiling.ts) under
// the same load; then the JWT scenario again with 100,000 clients and 5,000,000
// sessions in the database. Prints a table and writes bench-results.json.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { projectPath } from '../../api/paths.js';
import { basic, Box, sleep } from '../support/box.js';
import { TestIssuer } from '../support/issuer.js';
import { freePort } from '../support/ports.js';
import { benchServer, freshDatabase } from './database.js';
import { benchDecisions, DECISION_KEYS, type DecisionResults } from './decision-bench.js';
import { benchDpop, DPOP_KEYS, measureOnce, proofCheckCpu } from './dpop-bench.js';
import { appTokens, seedApp } from './decisions.js';
import { extauthzAvailable } from './grpc-load.js';
import { benchHa, failoverLine, HA_KEYS, type HaResults } from './ha-bench.js';
import { wrkAvailable } from './load.js';
import { LOAD, measure as measureLoad, type Row } from './measure.js';
import { seedScale } from './scale.js';
import { AUDIENCE, benchTrustDomain, sample, scenarios, seed, type Scenario } from './scenarios.js';
import { textTable } from './table.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const { workers: WORKERS, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS } = LOAD;
const REFRESH_TOKENS = env('BENCH_REFRESH_TOKENS', 100_000);
const SCALE_CLIENTS = env('BENCH_SCALE_CLIENTS', 100_000);
const SCALE_SESSIONS = env('BENCH_SCALE_SESSIONS', 5_000_000);
/** Comma-separated scenario keys to run (with their ceilings); `decisions` for all the decision rows. */
const ONLY = process.env.BENCH_ONLY?.split(',');
/** A directory for V8 CPU profiles of the API processes (read them with dist/test/bench/profile.js). */
const PROFILE_DIR = process.env.BENCH_PROFILE;
const P99_TARGET_MS = 25;
const RSS_TARGET_MB = 200;

const log = (msg: string): void => {
  process.stderr.write(`bench: ${msg}\n`);
};

/** A fresh database for the run, on DATABASE_URL's server or an embedded one. */
async function benchDatabase(): Promise<{ url: string; postgresPid: number | undefined; stop(): Promise<void> }> {
  const server = await benchServer(log);
  return { ...server, url: await freshDatabase(server.url, 'boxauth_bench') };
}

async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
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

async function startCeiling(client: { id: string; secret: string }): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [projectPath('dist', 'test', 'bench', 'ceiling.js')], {
    env: {
      ...process.env,
      CEILING_PORT: String(port),
      CEILING_WORKERS: String(WORKERS),
      CEILING_CLIENT_ID: client.id,
      CEILING_CLIENT_SECRET: client.secret,
    },
    stdio: 'inherit',
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`${url}/auth/token`, {
        method: 'POST',
        headers: { Authorization: basic(client.id, client.secret) },
        body: 'grant_type=client_credentials',
      });
      if (res.status === 200) return { url, process: child };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill();
  throw new Error('the ceiling server did not start');
}

function judge(row: Row, scenario: Scenario | undefined, ceilingRps: number): void {
  row.ratio = row.rps / ceilingRps;
  if (scenario?.minRatio !== undefined && row.ratio < scenario.minRatio) row.targets.push(`ratio < ${scenario.minRatio}`);
  if (scenario?.tokenScenario && row.p99Ms > P99_TARGET_MS) row.targets.push(`p99 > ${P99_TARGET_MS} ms`);
  if (row.failures > 0) row.targets.push('non-2xx');
  if (row.rssMb > RSS_TARGET_MB) row.targets.push(`RSS > ${RSS_TARGET_MB} MB`);
}

function table(rows: Row[]): string {
  const head = ['scenario', 'req/s', '× ceiling', 'p50 ms', 'p90 ms', 'p99 ms', 'non-2xx', 'peak RSS MB', 'CPU µs/req API+PG', 'targets'];
  const body = rows.map((r) => [
    r.title,
    Math.round(r.rps).toLocaleString('en'),
    r.ratio === undefined ? '' : r.ratio.toFixed(2),
    r.p50Ms.toFixed(2),
    r.p90Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.failures),
    r.rssMb.toFixed(0),
    `${r.cpuUs.api.toFixed(0)}+${r.cpuUs.postgres.toFixed(0)}`,
    r.key.startsWith('ceiling') ? '' : r.targets.length ? `MISSED: ${r.targets.join(', ')}` : 'met',
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
  let box: Box | undefined;
  let ceiling: ChildProcess | undefined;
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
      },
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
    });
    const seeded = await seed(box, issuer, db.url, REFRESH_TOKENS, trustDomain.sign);
    if (process.env.BENCH_SQL) await runSql(db.url, process.env.BENCH_SQL); // to try a schema change
    const list = scenarios(seeded).filter((s) => !ONLY || ONLY.includes(s.key));
    for (const s of list) s.check(await sample(box, s.requests[0]!));
    const decisionKeys = DECISION_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('decisions'));
    const dpopKeys = DPOP_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('dpop'));
    const haKeys = HA_KEYS.filter((k) => !ONLY || ONLY.includes(k) || ONLY.includes('ha'));
    await seedApp(box);
    const tokens = await appTokens(box, seeded);

    const rows: Row[] = [];
    if (list.length > 0 || dpopKeys.length > 0 || haKeys.some((k) => k !== 'ha_failover')) {
      // The ceiling runs alone: the box is idle meanwhile (its database too).
      const started = await startCeiling(seeded.jwt);
      ceiling = started.process;
      rows.push(
        await measure(started.url, ceiling.pid!, db.postgresPid, 'ceiling', 'ceiling: bare node:http + ES256', [
          {
            method: 'POST',
            path: '/auth/token',
            headers: { Authorization: basic(seeded.jwt.id, seeded.jwt.secret), 'Content-Type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: 'client_credentials', audience: AUDIENCE }).toString(),
          },
        ]),
      );
      ceiling.kill('SIGTERM');
      ceiling = undefined;
    }
    const ceilingRow = rows[0];
    for (const s of list) {
      const row = s.fresh
        ? { key: s.key, title: s.title, ...(await measureOnce(box.url, box.process!.pid!, s.fresh(), db.postgresPid)), targets: [] }
        : await measure(box.url, box.process!.pid!, db.postgresPid, s.key, s.title, s.requests);
      if (row.failures > 0) log(`answers of 400 or more so far:\n${await failedAnswers(box)}`);
      judge(row, s, ceilingRow!.rps);
      rows.push(row);
    }
    let proofCpu: Awaited<ReturnType<typeof proofCheckCpu>> | undefined;
    if (dpopKeys.length > 0) {
      const reader = await box.addClient('bench-dpop-reader', {}, { secret: 'bench-dpop-reader-secret' }); // with an allow policy
      for (const d of await benchDpop(box, seeded.opaque, reader, dpopKeys, db.postgresPid, log)) {
        const row: Row = { key: d.key, title: d.title, ...d.measured, targets: [] };
        log(`${d.title}: ${Math.round(row.rps)} req/s, p99 ${row.p99Ms.toFixed(1)} ms, ${row.failures} failed`);
        judge(row, { key: d.key, title: d.title, requests: [], check: () => undefined, tokenScenario: true }, ceilingRow!.rps);
        rows.push(row);
      }
      proofCpu = await proofCheckCpu();
    }
    let decisions: DecisionResults | undefined;
    if (decisionKeys.length > 0) {
      decisions = await benchDecisions(box, tokens, db, decisionKeys, log);
      rows.push(...decisions.rows);
    }

    let ha: HaResults | undefined;
    if (haKeys.length > 0) {
      ha = await benchHa(haKeys, log);
      for (const row of ha.rows) {
        judge(row, undefined, ceilingRow!.rps);
        rows.push(row);
      }
    }

    let scale: { clients: number; sessions: number; ratio: number } | undefined;
    if (SCALE_SESSIONS > 0 && (!ONLY || ONLY.includes('cc_jwt'))) {
      await box.stop();
      log(`adding ${SCALE_CLIENTS.toLocaleString('en')} clients and ${SCALE_SESSIONS.toLocaleString('en')} sessions`);
      const t0 = Date.now();
      await seedScale(db.url, SCALE_CLIENTS, SCALE_SESSIONS, log);
      log(`seeded in ${Math.round((Date.now() - t0) / 1000)} s`);
      await box.launch();
      const jwtScenario = list.find((s) => s.key === 'cc_jwt')!;
      const row = await measure(
        box.url,
        box.process!.pid!,
        db.postgresPid,
        'cc_jwt_scale',
        `${jwtScenario.title}, ${SCALE_CLIENTS.toLocaleString('en')} clients/${SCALE_SESSIONS.toLocaleString('en')} sessions`,
        jwtScenario.requests,
      );
      judge(row, jwtScenario, ceilingRow!.rps);
      const empty = rows.find((r) => r.key === 'cc_jwt')!;
      scale = { clients: SCALE_CLIENTS, sessions: SCALE_SESSIONS, ratio: row.rps / empty.rps };
      if (scale.ratio < 0.9) row.targets.push('< 0.9 × empty database');
      rows.push(row);
    }

    process.stdout.write(`\n${table(rows)}\n`);
    if (decisions) process.stdout.write(`\n${decisionDbLine(decisions.db)}\n`);
    if (proofCpu) {
      const met = proofCpu.checkUs <= 100 ? 'met' : 'MISSED';
      process.stdout.write(
        `\nCPU of a DPoP proof check (ES256, one core, the replay cache's round trip aside): ${proofCpu.verifyUs.toFixed(1)} µs the proof, ` +
          `${proofCpu.checkUs.toFixed(1)} µs the whole check (goal ≤ 100 µs: ${met})\n`,
      );
    }
    if (ha) process.stdout.write(`\n${haLines(ha)}\n`);
    if (scale)
      process.stdout.write(
        `\nwith ${scale.clients.toLocaleString('en')} clients and ${scale.sessions.toLocaleString('en')} sessions: ${scale.ratio.toFixed(2)} × the empty-database JWT throughput\n`,
      );
    process.stdout.write(
      `(${os.availableParallelism()} cores, ${WORKERS} API workers, ${CONNECTIONS} connections, ${SECONDS} s per scenario, wrk)\n`,
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
          scenarios: rows,
          scale,
          decisionDatabase: decisions?.db,
          dpopProofCheckCpuUs: proofCpu,
          failover: ha?.failover,
        },
        null,
        2,
      )}\n`,
    );
    process.stdout.write('written to bench-results.json\n');
  } finally {
    ceiling?.kill('SIGTERM');
    await box?.stop();
    await issuer.stop();
    await trustDomain.close();
    await db.stop();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
