// The audit trail (migration 024, docs/operations/audit.md): written in the transaction of the
// change an event reports (`within`), or in batches shortly after (`soon`, through a group commit,
// for events with no transaction of their own: a sign-in refused, a decision refused at the gate);
// searched newest first, by cursor; bounded by age and by rows (api/jobs/purge.ts).
import {
  BOX_CHANGE_EVENTS,
  CHANGE_EVENTS,
  NOT_CHANGES,
  type AuditRow,
  type AuditTrail,
  type InTransaction,
  type LeftOutWhy,
} from '../audit.js';
import type { Pool, Queryable } from '../db/pool.js';
import { rowMayCause } from './constraints.js';
import { GroupCommit } from './group-commit.js';
import { insertNoticeEvent, noticeEventsWritten } from './notices.js';

const COLUMNS = 'event, action, outcome, actor_client, actor_user, actor_session, subject_user, client, resource_type, resource_id, detail';

const values = (r: AuditRow): unknown[] => [
  r.event,
  r.action,
  r.outcome,
  r.actorClient,
  r.actorUser,
  r.actorSession,
  r.subjectUser,
  r.client,
  r.resourceType,
  r.resourceId,
  JSON.stringify(r.detail),
];

/**
 * Keeps `rows` in the trail; `toOutbox`, also as events of the outbox of notices (migration 030),
 * in the same statement: neither is written without the other.
 */
export async function insertAuditEvents(db: Queryable, rows: AuditRow[], toOutbox = false): Promise<void> {
  if (!rows.length) return;
  const columns = rows.map(values);
  const insert = `INSERT INTO audit_events (${COLUMNS})
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::jsonb[])`;
  await db.query(
    toOutbox
      ? `WITH kept AS (${insert} RETURNING id, detail) INSERT INTO notice_events (event) SELECT detail FROM kept ORDER BY id`
      : insert,
    COLUMNS.split(', ').map((_, i) => columns.map((c) => c[i])),
  );
}

/** An event of the trail as GET /AuditEvent answers it. */
export interface StoredAuditEvent extends AuditRow {
  id: string;
  at: Date;
}

/** What a search of the trail may narrow by; every field given must match. */
export interface AuditSearch {
  /** Who acted: a person's id or a client's id. */
  actor?: string;
  /** The person an event concerns. */
  user?: string;
  client?: string;
  resourceType?: string;
  resourceId?: string;
  event?: string;
  outcome?: 'success' | 'failure';
  since?: Date;
  until?: Date;
  /** Events older than this one (the cursor: an id the last page ended with). */
  before?: string;
  /** Events newer than this one (`boxauth events --follow`), oldest first. */
  after?: string;
  count: number;
}

/** The events that match, newest first (oldest first with `after`), at most `count`. */
export async function searchAuditEvents(db: Queryable, search: AuditSearch): Promise<StoredAuditEvent[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: (p: string) => string, value: unknown): void => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (search.actor !== undefined) add((p) => `(actor_user = ${p} OR actor_client = ${p})`, search.actor);
  if (search.user !== undefined) add((p) => `subject_user = ${p}`, search.user);
  if (search.client !== undefined) add((p) => `client = ${p}`, search.client);
  if (search.resourceType !== undefined) add((p) => `resource_type = ${p}`, search.resourceType);
  if (search.resourceId !== undefined) add((p) => `resource_id = ${p}`, search.resourceId);
  if (search.event !== undefined) add((p) => `event = ${p}`, search.event);
  if (search.outcome !== undefined) add((p) => `outcome = ${p}`, search.outcome);
  if (search.since !== undefined) add((p) => `at >= ${p}`, search.since);
  if (search.until !== undefined) add((p) => `at < ${p}`, search.until);
  if (search.before !== undefined) add((p) => `id < ${p}::bigint`, search.before);
  if (search.after !== undefined) add((p) => `id > ${p}::bigint`, search.after);
  params.push(search.count);
  // The id goes out as text (a bigint may exceed what a JS number holds), and is sorted as the
  // bigint it is: ORDER BY a bare `id` would name the output column, sorting "10" before "9".
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT a.id::text AS id, at, ${COLUMNS} FROM audit_events a ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY a.id ${search.after !== undefined ? 'ASC' : 'DESC'} LIMIT $${params.length}`,
    params,
  );
  return rows.map((r) => ({
    id: r.id as string,
    at: r.at as Date,
    event: r.event as AuditRow['event'],
    action: r.action as string | null,
    outcome: r.outcome as AuditRow['outcome'],
    actorClient: r.actor_client as string | null,
    actorUser: r.actor_user as string | null,
    actorSession: r.actor_session as string | null,
    subjectUser: r.subject_user as string | null,
    client: r.client as string | null,
    resourceType: r.resource_type as string | null,
    resourceId: r.resource_id as string | null,
    detail: r.detail as AuditRow['detail'],
  }));
}

/** Deletes events older than `retentionDays`, a batch at a time. */
export async function purgeAuditEvents(db: Queryable, retentionDays: number, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    'DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < now() - make_interval(days => $1) LIMIT $2)',
    [retentionDays, batch],
  );
  return rowCount ?? 0;
}

/** Whether a row is a change (api/audit.ts isChange, in SQL; $1 CHANGE_EVENTS, $2 NOT_CHANGES). */
const IS_CHANGE = `(outcome = 'success' AND event = ANY($1::text[]) AND coalesce(action, '') <> ALL($2::text[]))`;
/** Which of three the row is, kept in this order (api/audit.ts isChange, isBoxChange; $3 BOX_CHANGE_EVENTS): 0 not a change, 1 a person's own change, 2 the box's. */
const RANK = `(CASE WHEN NOT ${IS_CHANGE} THEN 0 WHEN event = ANY($3::text[]) OR actor_client IS NOT NULL THEN 2 ELSE 1 END)`;

/**
 * Deletes, a batch at a time, the oldest events beyond the newest `maxRows`, in three ranks: first
 * the events that are no change beyond what the changes leave of `maxRows`, then people's own
 * changes beyond what the box's changes leave of it, then the box's changes beyond `maxRows`. So a
 * flood of refusals, sign-ins or closes keeps the newest of them and never deletes a change, a
 * person making changes of their own in a loop never deletes the box's, and only newer changes of
 * the box delete one of the box's.
 */
export async function capAuditEvents(db: Queryable, maxRows: number, batch = 5000): Promise<number> {
  for (const rank of [0, 1, 2]) {
    const deleted = await db.query(
      `DELETE FROM audit_events WHERE id IN (
         SELECT id FROM audit_events WHERE ${RANK} = $4 ORDER BY id DESC
         OFFSET greatest($5 - (SELECT count(*) FROM audit_events WHERE ${RANK} > $4), 0) LIMIT $6)`,
      [CHANGE_EVENTS, NOT_CHANGES, BOX_CHANGE_EVENTS, rank, maxRows, batch],
    );
    if (deleted.rowCount) return deleted.rowCount;
  }
  return 0;
}

/** How many events are kept, and the table's size on disk (indexes and TOAST included). */
export async function auditEventsKept(db: Queryable): Promise<{ rows: number; bytes: number }> {
  const { rows } = await db.query<{ rows: string; bytes: string }>(
    "SELECT (SELECT count(*) FROM audit_events) AS rows, pg_total_relation_size(to_regclass('audit_events')) AS bytes",
  );
  return { rows: Number(rows[0]!.rows), bytes: Number(rows[0]!.bytes ?? 0) };
}

/** Events waiting for their batch at most; beyond, the newest is not kept (and counted): a flood never grows the process. */
const MAX_WAITING = 10_000;

/** The trail's writer (api/audit.ts AuditTrail). */
export class AuditEventWriter implements AuditTrail {
  private readonly commits: GroupCommit<AuditRow, void>;
  private waiting = 0;

  constructor(
    pool: Pool,
    /**
     * Told of each event not kept, and why: `queue` (too many waiting), `error` (the database refused
     * the batch), `anonymous` or `rate` (a refused sign-in the trail leaves to the log), `caller` (one
     * caller's events over its bound a minute: api/audit.ts).
     */
    private readonly notKept: (why: 'queue' | 'error' | LeftOutWhy, err?: Error) => void,
    /** Whether the events kept are events of the outbox of notices as well (api/notices/). */
    private readonly toOutbox = false,
  ) {
    this.commits = new GroupCommit<AuditRow, void>(
      async (rows) => {
        await insertAuditEvents(pool, rows, toOutbox);
        if (toOutbox) await noticeEventsWritten(pool).catch(() => undefined); // else the dispatchers' poll finds them
        return rows.map(() => undefined);
      },
      { maxInFlight: 1, maxBatch: 500, isolate: rowMayCause },
    );
  }

  async within(tx: InTransaction, row: AuditRow, facts?: object): Promise<void> {
    await insertAuditEvents(tx as Queryable, [row]);
    if (this.toOutbox) await insertNoticeEvent(tx as Queryable, row.detail, facts ?? {});
  }

  leftOut(why: LeftOutWhy): void {
    this.notKept(why);
  }

  soon(row: AuditRow): void {
    if (this.waiting >= MAX_WAITING) return this.notKept('queue');
    this.waiting++;
    this.commits
      .submit(row)
      .catch((err: Error) => this.notKept('error', err))
      .finally(() => this.waiting--);
  }
}
