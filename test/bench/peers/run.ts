// `make bench-peers`: Ory Hydra and Keycloak (built or fetched once by
// scripts/peers-build.sh), each in its production mode on the bench's
// PostgreSQL with a database of its own, then boxauth (opaque and JWT), one at a
// time under the same wrk load as `make bench` (test/bench/measure.ts), the same
// confidential client sending the same client_credentials request. Prints
// tokens/s, latency, CPU per token, peak RSS, what PostgreSQL did per token and
// boxauth's ratio to each. Then the decision point (decide.ts): boxauth, OPA
// and oauth2-proxy deciding the same request, side by side. Writes
// bench-peers-results.json. A peer that cannot be built or started is reported
// and the others still run.
import fs from 'node:fs';
import os from 'node:os';
import { projectPath } from '../../../api/paths.js';
import { errorMessage } from '../../../api/errors.js';
import { benchServer, freshDatabase } from '../database.js';
import { perRequest, settledCounters, type DbCounters } from '../db-stats.js';
import { wrkAvailable } from '../load.js';
import { LOAD, measure, STEADY, steadyWarmup, type Measured } from '../measure.js';
import { startBoxauth } from './boxauth.js';
import { benchDecisionPeers, DECISION_PEERS, type DecisionRow } from './decide.js';
import { decisionReport } from './decision-report.js';
import { startHydra } from './hydra.js';
import { startKeycloak } from './keycloak.js';
import { warmedFor } from './warmed.js';
import { buildPeer, stopOnInterrupt } from './process.js';
import { report, type Row, type Skipped } from './report.js';
import type { Target } from './target.js';

/** Comma-separated keys of what to run: hydra, keycloak, boxauth (tokens); opa, oauth2-proxy (decisions, with boxauth's); all by default. */
const ONLY = process.env.BENCH_PEERS_ONLY?.split(',');
const LOG_DIR = projectPath('.boxauth', 'bench-peers');

const log = (msg: string): void => {
  process.stderr.write(`bench-peers: ${msg}\n`);
};

interface Peer {
  key: 'hydra' | 'keycloak';
  title: string;
  start(built: Record<string, string>, databaseUrl: string): Promise<Target>;
}

const PEERS: Peer[] = [
  { key: 'hydra', title: 'Ory Hydra', start: (b, url) => startHydra(b.HYDRA!, url, LOG_DIR) },
  { key: 'keycloak', title: 'Keycloak', start: (b, url) => startKeycloak(b.KEYCLOAK_HOME!, b.JAVA_HOME!, url, LOG_DIR) },
];

const WARMING =
  `each target warmed in windows of ${STEADY.windowSeconds} s until one is no more than ${STEADY.tolerance * 100} % above the best before it ` +
  `(at least two, at most ${STEADY.maxSeconds} s)`;

/** One checked answer, then the load; PostgreSQL's counters around warm-up and load together. */
async function measureTarget(t: Target, databaseUrl: string, postgresPid: number | undefined): Promise<Row> {
  const res = await fetch(`${t.baseUrl}${t.request.path}`, { method: t.request.method, headers: t.request.headers, body: t.request.body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${t.title}: token request answered ${res.status}: ${text.slice(0, 300)}`);
  t.check(JSON.parse(text) as Record<string, unknown>);
  const before = await settledCounters(databaseUrl);
  const m: Measured = await measure(t.baseUrl, t.pid, [t.request], postgresPid, steadyWarmup);
  const after = await settledCounters(databaseUrl);
  const db: DbCounters = perRequest(before, after, m.requests + m.warmupRequests);
  log(
    `${t.title}: warmed ${warmedFor(m)}; ${Math.round(m.rps)} tokens/s, p99 ${m.p99Ms.toFixed(1)} ms, ${m.failures} failed, ` +
      `CPU/token ${m.cpuUs.api.toFixed(0)} + ${m.cpuUs.postgres.toFixed(0)} µs, ${db.rowsWritten.toFixed(2)} rows written/token`,
  );
  return { key: t.key, title: t.title, perToken: t.perToken, ...m, db };
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) throw new Error('wrk is not installed (make bench-peers installs it: apt-get install wrk)');
  const started = Date.now();
  const loadBefore = os.loadavg();
  fs.rmSync(LOG_DIR, { recursive: true, force: true }); // this run's logs only
  fs.mkdirSync(LOG_DIR, { recursive: true });
  const rows: Row[] = [];
  const skipped: Skipped[] = [];
  const peers = PEERS.filter((p) => !ONLY || ONLY.includes(p.key));

  const deciders = DECISION_PEERS.filter((k) => !ONLY || ONLY.includes(k));

  // Built before anything is measured: a build would load the machine.
  const built = new Map<string, Record<string, string>>();
  for (const peer of [...peers, ...deciders.map((key) => ({ key, title: key }))]) {
    log(`building ${peer.title} (scripts/peers-build.sh ${peer.key})`);
    try {
      built.set(peer.key, await buildPeer(peer.key));
    } catch (err) {
      log(`${peer.title} not built: ${errorMessage(err)}`);
      skipped.push({ key: peer.key, title: peer.title, reason: `not built: ${errorMessage(err)}` });
    }
  }
  let decisions: { rows: DecisionRow[]; skipped: Skipped[] } | undefined;

  log(`${LOAD.connections} connections, ${LOAD.seconds} s per target; ${WARMING}; ` + `logs of the peers in ${LOG_DIR}`);
  const server = await benchServer(log);
  const forget = stopOnInterrupt(() => server.stop());
  try {
    for (const peer of peers) {
      const b = built.get(peer.key);
      if (!b) continue;
      let target: Target | undefined;
      try {
        const url = await freshDatabase(server.url, `peers_${peer.key}`);
        log(`starting ${peer.title}`);
        target = await peer.start(b, url);
        rows.push(await measureTarget(target, url, server.postgresPid));
      } catch (err) {
        log(`${peer.title} not measured: ${errorMessage(err)}`);
        skipped.push({ key: peer.key, title: peer.title, reason: errorMessage(err) });
      } finally {
        await target?.stop();
      }
    }
    if (!ONLY || ONLY.includes('boxauth')) {
      const url = await freshDatabase(server.url, 'peers_boxauth');
      const box = await startBoxauth(url);
      const forgetBox = stopOnInterrupt(() => box.stop());
      try {
        for (const t of box.targets) rows.push(await measureTarget(t, url, server.postgresPid));
      } finally {
        forgetBox();
        await box.stop();
      }
    }
    if (deciders.length > 0) {
      const url = await freshDatabase(server.url, 'peers_decisions');
      decisions = await benchDecisionPeers(url, server.postgresPid, built, LOG_DIR, log);
      skipped.push(...decisions.skipped);
    }
  } finally {
    forget();
    await server.stop();
  }

  const loadAfter = os.loadavg();
  if (rows.length > 0)
    process.stdout.write(
      `\n${report(
        rows,
        skipped.filter((s) => !DECISION_PEERS.some((k) => k === s.key)),
      )}\n`,
    );
  if (decisions)
    process.stdout.write(
      `\n${decisionReport(
        decisions.rows,
        skipped.filter((s) => DECISION_PEERS.some((k) => k === s.key)),
      )}\n`,
    );
  process.stdout.write(
    `(${os.availableParallelism()} cores, ${LOAD.connections} connections, ${LOAD.seconds} s per target, wrk; ${WARMING}; ` +
      `load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after; ${Math.round((Date.now() - started) / 1000)} s in all)\n`,
  );
  fs.writeFileSync(
    projectPath('bench-peers-results.json'),
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        cores: os.availableParallelism(),
        loadAverage: { before: loadBefore, after: loadAfter },
        load: LOAD,
        warmup: STEADY,
        targets: rows,
        decisions: decisions?.rows,
        skipped,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write('written to bench-peers-results.json\n');
  if (skipped.length > 0) {
    log(`not measured: ${skipped.map((s) => s.title).join(', ')} (see above)`);
    process.exitCode = 1;
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench-peers: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
