// The rows of `make bench` about highly available PostgreSQL (issue 40), on Debian's
// PostgreSQL 15 with a streaming standby (test/support/replicated-postgres.ts):
// - the price of durability: opaque client_credentials tokens with commits that wait for no
//   standby (asynchronous streaming), then for a synchronous standby's flush;
// - PgBouncer (transaction mode, statements unnamed) against direct, both with the synchronous standby;
// - the failover: a box of two workers on the two-host DATABASE_URL under the load of
//   test/support/acknowledged.ts, the primary killed and the standby promoted, FAILOVER_ROUNDS
//   times: how long after the promote every process serves again (goal ≤ 5 s), how long after
//   the kill, what was acknowledged over the run, and what of it was lost (must be 0).
import fs from 'node:fs';
import os from 'node:os';
import { Ledger, load, lost, prepareLoad } from '../support/acknowledged.js';
import { Box, eventually, sleep } from '../support/box.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { ReplicatedPostgres } from '../support/replicated-postgres.js';
import { LOAD, measure, type Row } from './measure.js';
import { tokenClients, tokenRequest } from './scenarios.js';

export const HA_KEYS = ['ha_async', 'ha_sync', 'ha_pgbouncer', 'ha_failover'];
const FAILOVER_ROUNDS = Number(process.env.BENCH_FAILOVER_ROUNDS ?? 3);
const FAILOVER_GOAL_MS = 5000;

export interface FailoverRound {
  /** From the kill to the promoted standby taking writes (what the harness took: CloudNativePG's own detection comes on top). */
  promoteMs: number;
  /** From the promote to the last process's first success. */
  windowMs: number;
  acknowledged: number;
  lost: number;
}

export interface HaResults {
  rows: Row[];
  failover: FailoverRound[];
}

async function startBox(databaseUrl: string, env: Record<string, string> = {}): Promise<Box> {
  return Box.start({
    databaseUrl,
    dataDir: fs.mkdtempSync(`${os.tmpdir()}/boxauth-bench-ha-`),
    env: { BOXAUTH_WORKERS: String(LOAD.workers), ...env },
  });
}

/** The opaque token row on a box over `databaseUrl`, PostgreSQL's CPU read off `db`'s primary. */
async function tokenRow(
  key: string,
  title: string,
  db: ReplicatedPostgres,
  databaseUrl: string,
  env?: Record<string, string>,
): Promise<Row> {
  const box = await startBox(databaseUrl, env);
  try {
    const { opaque } = await tokenClients(box);
    const m = await measure(box.url, box.process!.pid!, [tokenRequest(opaque, { grant_type: 'client_credentials' })], db.primary.pid());
    return { key, title, ...m, targets: m.failures > 0 ? ['non-2xx'] : [] };
  } finally {
    await box.stop();
  }
}

async function failoverRound(log: (msg: string) => void): Promise<FailoverRound> {
  const db = await ReplicatedPostgres.start({ synchronous: true });
  let box: Box | undefined;
  try {
    box = await startBox(db.url());
    await prepareLoad(box);
    const root = await box.rootToken();
    const ledger = new Ledger();
    // Two loads: each worker process of the box is reached by the kernel's choice of connection, so both are busy.
    const loads = [load(box, root, ledger), load(box, root, ledger)];
    let killedAt = 0;
    let promotedAt = 0;
    let servedAt = 0;
    try {
      await eventually('load', async () => loads.every((l) => l.answered() >= 100), 30_000, 20);
      killedAt = Date.now();
      await db.primary.kill();
      await db.standby.promote();
      promotedAt = Date.now();
      await eventually('serving again', async () => loads.every((l) => l.lastSuccess() > promotedAt), 30_000, 10);
      servedAt = Math.max(...loads.map((l) => l.lastSuccess()));
      await sleep(1000);
    } finally {
      await Promise.all(loads.map((l) => l.stop()));
    }
    const wrong = loads.flatMap((l) => l.wrong);
    if (wrong.length) log(`failover: answers that were neither success nor 503: ${wrong.slice(0, 5).join('; ')}`);
    const missing = await lost([box], root, ledger);
    return { promoteMs: promotedAt - killedAt, windowMs: servedAt - promotedAt, acknowledged: ledger.size, lost: missing.length };
  } finally {
    await box?.stop();
    await db.stop();
  }
}

export async function benchHa(keys: string[], log: (msg: string) => void): Promise<HaResults> {
  const rows: Row[] = [];
  if (keys.includes('ha_async')) {
    const db = await ReplicatedPostgres.start({ synchronous: false });
    try {
      rows.push(await tokenRow('ha_async', 'client_credentials, opaque: PostgreSQL 15, no synchronous standby', db, db.url()));
    } finally {
      await db.stop();
    }
  }
  if (keys.includes('ha_sync') || keys.includes('ha_pgbouncer')) {
    const db = await ReplicatedPostgres.start({ synchronous: true });
    try {
      if (keys.includes('ha_sync')) {
        rows.push(await tokenRow('ha_sync', 'client_credentials, opaque: PostgreSQL 15, a synchronous standby', db, db.url()));
      }
      if (keys.includes('ha_pgbouncer')) {
        const bouncer = await PgBouncer.start({ server: db.primary.url(), poolSize: 20 });
        const database = await db.createDatabase('bouncer'); // a box of its own
        try {
          rows.push(
            await tokenRow(
              'ha_pgbouncer',
              'client_credentials, opaque: the same through PgBouncer (transaction mode)',
              db,
              bouncer.url(database),
              {
                BOXAUTH_DATABASE_DIRECT_URL: db.url(database),
              },
            ),
          );
        } finally {
          await bouncer.stop();
        }
      }
    } finally {
      await db.stop();
    }
  }
  for (const row of rows) log(`${row.title}: ${Math.round(row.rps)} req/s, p99 ${row.p99Ms.toFixed(1)} ms, ${row.failures} failed`);
  const failover: FailoverRound[] = [];
  if (keys.includes('ha_failover')) {
    for (let i = 0; i < FAILOVER_ROUNDS; i++) {
      const round = await failoverRound(log);
      log(
        `failover ${i + 1}: promoted ${round.promoteMs} ms after the kill, every process serving ${round.windowMs} ms after the promote; ` +
          `${round.acknowledged} acknowledged, ${round.lost} lost`,
      );
      failover.push(round);
    }
  }
  return { rows, failover };
}

/** The failover rounds in one line for the table's foot. */
export function failoverLine(rounds: FailoverRound[]): string {
  const windows = rounds.map((r) => r.windowMs).sort((a, b) => a - b);
  const worst = windows[windows.length - 1]!;
  const acknowledged = rounds.reduce((n, r) => n + r.acknowledged, 0);
  const lostCount = rounds.reduce((n, r) => n + r.lost, 0);
  const met = worst <= FAILOVER_GOAL_MS && lostCount === 0 ? 'met' : 'MISSED';
  return (
    `Failover (${rounds.length} rounds: a synchronous standby promoted under load, 2 workers): serving again ${windows.join(', ')} ms ` +
    `after the promote (goal ≤ ${FAILOVER_GOAL_MS} ms), promote ${rounds.map((r) => r.promoteMs).join(', ')} ms after the kill; ` +
    `${acknowledged} acknowledged, ${lostCount} lost: ${met}`
  );
}
