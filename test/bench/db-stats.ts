// What a target asks of PostgreSQL, from the server's cumulative statistics:
// transactions in its database, rows written to its own tables, WAL bytes and
// WAL fsyncs of the server (the target is the only thing running on it).
// Backends report their statistics at most once a second and an idle one within
// 10 s, so a window is read after 11 s of quiet at each end.
import pg from 'pg';
import { sleep } from '../support/box.js';

export interface DbCounters {
  transactions: number;
  rowsWritten: number;
  walBytes: number;
  /** Absent where the server does not count them. */
  walFsyncs: number | undefined;
}

export const STATS_SETTLE_MS = 11_000;

export async function dbCounters(databaseUrl: string): Promise<DbCounters> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Rows of its own tables only: the system catalogs' count autovacuum's ANALYZE too.
    const db = await client.query<{ xacts: string; rows: string }>(
      `SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS xacts,
              (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables) AS rows`,
    );
    // PostgreSQL 18 counts WAL fsyncs in pg_stat_io; 14-17 in pg_stat_wal.wal_sync.
    const wal = await client.query<{ w: Record<string, string> }>('SELECT to_jsonb(w) AS w FROM pg_stat_wal w');
    const io = await client
      .query<{ fsyncs: string | null }>(`SELECT sum(fsyncs)::text AS fsyncs FROM pg_stat_io WHERE object = 'wal'`)
      .catch(() => ({ rows: [{ fsyncs: null }] }));
    const w = wal.rows[0]!.w;
    const fsyncs = w.wal_sync ?? io.rows[0]?.fsyncs ?? undefined;
    return {
      transactions: Number(db.rows[0]!.xacts),
      rowsWritten: Number(db.rows[0]!.rows),
      walBytes: Number(w.wal_bytes),
      walFsyncs: fsyncs === undefined || fsyncs === null ? undefined : Number(fsyncs),
    };
  } finally {
    await client.end();
  }
}

export async function settledCounters(databaseUrl: string): Promise<DbCounters> {
  await sleep(STATS_SETTLE_MS);
  return dbCounters(databaseUrl);
}

/** Per request, between two readings. */
export function perRequest(before: DbCounters, after: DbCounters, requests: number): DbCounters {
  const per = (a: number, b: number): number => (b - a) / requests;
  return {
    transactions: per(before.transactions, after.transactions),
    rowsWritten: per(before.rowsWritten, after.rowsWritten),
    walBytes: per(before.walBytes, after.walBytes),
    walFsyncs: before.walFsyncs === undefined || after.walFsyncs === undefined ? undefined : per(before.walFsyncs, after.walFsyncs),
  };
}
