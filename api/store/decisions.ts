// Refused decisions of the decision point, kept for `boxauth explain` (migrations 011, 018).
import type { Queryable } from '../db/pool.js';

/** One policy's part in a decision at an app (api/decision/engine.ts), for the record and `boxauth explain`. */
export interface PolicyOutcome {
  id: string;
  /**
   * `would-…`: a dry-run policy, which decides nothing. `needs a stronger sign-in`: the policy's
   * rule allows the request, but the caller's sign-in falls short of the policy's `acr`; `needs
   * more scope`: it allows, but the token lacks some of the policy's `scope`.
   */
  verdict:
    | 'allows'
    | 'does not allow'
    | 'needs a stronger sign-in'
    | 'needs more scope'
    | 'would allow'
    | 'would not allow'
    | 'would need a stronger sign-in'
    | 'would need more scope';
  /** With `…stronger sign-in`: the class of sign-in the policy asks for. */
  acr?: string;
  /** With `…more scope` (and with `…stronger sign-in` when the token lacks them too): the scopes the policy wants, all of them. */
  scope?: string[];
  /** With `does not allow` (`would not allow`): its evaluation was stopped by its budget (api/policy/budget.ts), and by which. */
  stopped?: string;
}

export interface DecisionRow {
  id: string;
  app: string;
  at: Date;
  status: number;
  /** The description given at the time. */
  reason: string;
  /** The request object the policies saw, or a bounded excerpt of it (api/decision/excerpt.ts). */
  request: object;
  policies: PolicyOutcome[];
  /** What the excerpts of request and policies cut (empty: both are whole). */
  cut: string[];
}

export async function insertDecisions(db: Queryable, rows: DecisionRow[]): Promise<void> {
  if (!rows.length) return;
  await db.query(
    `INSERT INTO decisions (id, app, at, status, reason, request, policies, cut)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int[], $5::text[], $6::jsonb[], $7::jsonb[], $8::jsonb[])
     ON CONFLICT (id) DO NOTHING`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.app),
      rows.map((r) => r.at),
      rows.map((r) => r.status),
      rows.map((r) => r.reason),
      rows.map((r) => JSON.stringify(r.request)),
      rows.map((r) => JSON.stringify(r.policies)),
      rows.map((r) => JSON.stringify(r.cut)),
    ],
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function findDecision(db: Queryable, id: string): Promise<DecisionRow | undefined> {
  if (!UUID.test(id)) return undefined;
  const { rows } = await db.query<DecisionRow>('SELECT id, app, at, status, reason, request, policies, cut FROM decisions WHERE id = $1', [
    id,
  ]);
  return rows[0];
}

/** A kept refusal as a list shows it: what and when, without its request or its policies. */
export type DecisionSummary = Pick<DecisionRow, 'id' | 'app' | 'at' | 'status' | 'reason'>;

/** The newest refusals kept of `app`, newest first, at most `limit` (migration 026's index reads them in order). */
export async function recentDecisions(db: Queryable, app: string, limit: number): Promise<DecisionSummary[]> {
  const { rows } = await db.query<DecisionSummary>(
    'SELECT id, app, at, status, reason FROM decisions WHERE app = $1 ORDER BY at DESC, id DESC LIMIT $2',
    [app, limit],
  );
  return rows;
}

/** Deletes decisions older than `retentionHours`, a batch at a time. */
export async function purgeDecisions(db: Queryable, retentionHours: number, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM decisions WHERE id IN (SELECT id FROM decisions WHERE at < now() - make_interval(hours => $1) LIMIT $2)',
    [retentionHours, batch],
  );
  return rowCount ?? 0;
}

/** Deletes the oldest decisions beyond the newest `maxRows`, a batch at a time. */
export async function capDecisions(db: Queryable, maxRows: number, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM decisions WHERE id IN (SELECT id FROM decisions ORDER BY at DESC, id DESC OFFSET $1 LIMIT $2)',
    [maxRows, batch],
  );
  return rowCount ?? 0;
}

/** How many decisions are kept, and the table's size on disk (indexes and TOAST included). */
export async function decisionsKept(db: Queryable): Promise<{ rows: number; bytes: number }> {
  const { rows } = await db.query<{ rows: string; bytes: string }>(
    "SELECT (SELECT count(*) FROM decisions) AS rows, pg_total_relation_size(to_regclass('decisions')) AS bytes",
  );
  return { rows: Number(rows[0]!.rows), bytes: Number(rows[0]!.bytes) };
}
