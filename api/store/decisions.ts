// Refused decisions of the decision point, kept for `boxauth explain` (migration 011).
import type { Queryable } from '../db/pool.js';
import type { PolicyOutcome } from '../policy/evaluate.js';

export interface DecisionRow {
  id: string;
  app: string;
  at: Date;
  status: number;
  /** The description given at the time. */
  reason: string;
  /** The request object the policies saw. */
  request: object;
  policies: PolicyOutcome[];
}

export async function insertDecisions(db: Queryable, rows: DecisionRow[]): Promise<void> {
  if (!rows.length) return;
  await db.query(
    `INSERT INTO decisions (id, app, at, status, reason, request, policies)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int[], $5::text[], $6::jsonb[], $7::jsonb[])
     ON CONFLICT (id) DO NOTHING`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.app),
      rows.map((r) => r.at),
      rows.map((r) => r.status),
      rows.map((r) => r.reason),
      rows.map((r) => JSON.stringify(r.request)),
      rows.map((r) => JSON.stringify(r.policies)),
    ],
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function findDecision(db: Queryable, id: string): Promise<DecisionRow | undefined> {
  if (!UUID.test(id)) return undefined;
  const { rows } = await db.query<DecisionRow>('SELECT id, app, at, status, reason, request, policies FROM decisions WHERE id = $1', [id]);
  return rows[0];
}

/** Deletes decisions older than `retentionHours`, a batch at a time. */
export async function purgeDecisions(db: Queryable, retentionHours: number, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM decisions WHERE id IN (SELECT id FROM decisions WHERE at < now() - make_interval(hours => $1) LIMIT $2)',
    [retentionHours, batch],
  );
  return rowCount ?? 0;
}
