// The outbox of notices (migration 030, api/notices/): its events, written in the transaction of
// the change they report, and the notices the dispatcher makes of them, one per destination.
//
// Events are fanned out one batch at a time per box, under a lock of the box's (./box-locks.ts),
// so notices are made in the order of their events. A sender takes the head of each queue only (a
// destination's notices about one subject), by moving its next_attempt_at a lease ahead
// (claimNotices): one notice in flight per destination and subject, the rest waiting behind it in
// order of creation, and a few queues of one destination at once. `attempts`, counted up by each
// claim, says whose lease a row is under: a process whose lease ran out and was taken over changes
// the row no more (sentNotice, retryNotice), as in ./mail-outbox.ts.
import type { AuditEvent } from '../audit.js';
import type { Queryable, Transaction } from '../db/pool.js';
import { wake } from './box-channel.js';
import { tryLockForTransaction } from './box-locks.js';

// The records of the outbox, which its kinds (../notices/kinds.ts) re-export with their contract.

/** A session a close ended, as the closing transaction knew it (api/credentials/closing.ts). */
export interface ClosedSession {
  /** sessions.id */
  session: string;
  client: string;
  /** The person it was issued to; null for a client's own session. */
  user: number | null;
  /**
   * The `sub` its client was given of that person (api/credentials/subjects.ts); absent for a session
   * minted before release 036 (or recorded by the release before), whose sub was String(user).
   */
  sub?: string;
  /** The signed-in browser session it came from (the `sid` of its ID tokens), when it came from one. */
  sid: string | null;
  /**
   * A SAML app's sign-in (api/saml/sign-ins.ts), not a grant of tokens: the NameID the assertion
   * gave the app (its SessionIndex is `sid`). Told by the `saml-logout` kind, never by `backchannel`.
   */
  saml?: { nameId: string; nameIdFormat: string };
}

/** What the recorder of an event adds for the outbox, beyond its audit line; never logged, never a secret. */
export interface EventFacts {
  /** The sessions a `session_closed` event closed. */
  closed?: ClosedSession[];
  /** The person as they were when the event was recorded, for events after which they may be gone. */
  person?: { id: number; email: string | null; subject?: string };
  /**
   * A notice given up (`event: 'notice'`) that itself told of a give-up: the outbox fans it out to
   * no one, so that two dead receivers never tell each other of their give-ups in a loop.
   */
  quietGiveUp?: boolean;
}

/** An event of the outbox: an audit event recorded in the transaction of its change, with its facts. */
export interface BoxEvent {
  /** Increasing in commit order for events about one person (their changes hold their row). */
  id: string;
  at: Date;
  event: AuditEvent;
  facts: EventFacts;
}

/**
 * The names of the kinds of notice, as the outbox, this store and its metrics know them. Each name
 * is made by its kind in api/notice-kinds.ts (NOTICE_KINDS), which the type checker holds to this
 * list: the kinds live on the floors above this one (oauth/, ssf/, webhooks/), which this floor
 * does not import.
 */
export const NOTICE_KIND_NAMES = ['backchannel', 'saml-logout', 'ssf', 'webhook'] as const;

export type NoticeKindName = (typeof NOTICE_KIND_NAMES)[number];

/** One notice for one destination, as a kind's fan-out makes it. */
export interface NoticeDraft {
  /** Within the kind: a client id, a stream id, a Webhook's id (docs/operations/notices.md, "The kinds of notice"). */
  destination: string;
  /**
   * What `send` needs to build the message when it sends it; JSON, never a secret, never a token.
   * Its member `receiver`, when a string, names the record an administrator wrote that the
   * destination belongs to (an SSF stream's Client): the metrics name the destination by it
   * (metricsDestination), because a destination a receiver makes as often as it likes would be a
   * new label each time, and a metric keeps every label it was ever given.
   */
  payload: Record<string, unknown>;
  /**
   * Whom it is about (a person's `sub`, a record's kind and id): a destination's notices about one
   * subject go one at a time, in the order they were made; about different subjects, several at once.
   * None: ordered with the other notices that name none.
   */
  subject?: string;
}

/** A notice taken from the outbox to be sent, its lease running. */
export interface Notice extends NoticeDraft {
  id: string;
  kind: NoticeKindName;
  eventId: string;
  createdAt: Date;
  /** Attempts so far, this one counted. */
  attempts: number;
}

/** The kinds of notice the dispatchers (new events) and the senders (new notices) of the box are woken with (ChangeFeed.onNotice). */
export const NOTICE_EVENT_CHANNEL = 'notice_events';
export const NOTICE_CHANNEL = 'notices';

/** An event for the outbox, in `tx` with the change it reports. */
export async function insertNoticeEvent(tx: Queryable, event: AuditEvent, facts: EventFacts): Promise<void> {
  await tx.query('INSERT INTO notice_events (event, facts) VALUES ($1, $2)', [JSON.stringify(event), JSON.stringify(facts)]);
  await wake(tx, NOTICE_EVENT_CHANNEL);
}

/** Events kept in a batch of the audit trail (api/store/audit-events.ts), written: the box's processes hear of them. */
export async function noticeEventsWritten(db: Queryable): Promise<void> {
  await wake(db, NOTICE_EVENT_CHANNEL);
}

/**
 * The oldest `limit` events, in order, to be fanned out in `tx` and removed with removeEvents; or
 * undefined when another transaction of the box holds the fan-out (it will take these too).
 */
export async function claimEvents(tx: Transaction, limit: number): Promise<BoxEvent[] | undefined> {
  // The box's fan-out: one transaction at a time, across its processes.
  if (!(await tryLockForTransaction(tx, 'notice_events'))) return undefined;
  const { rows } = await tx.query<{ id: string; at: Date; event: AuditEvent; facts: EventFacts }>(
    'SELECT id::text, at, event, facts FROM notice_events ORDER BY id LIMIT $1',
    [limit],
  );
  return rows.map((r) => ({ id: r.id, at: r.at, event: r.event, facts: r.facts }));
}

/** The events fanned out, gone (in the transaction that made their notices). */
export async function removeEvents(tx: Transaction, ids: string[]): Promise<void> {
  if (ids.length) await tx.query('DELETE FROM notice_events WHERE id = ANY($1::bigint[])', [ids]);
}

/** Events waiting for their fan-out, and the age of the oldest in seconds (0 when none). */
export async function eventsWaiting(db: Queryable): Promise<{ count: number; oldestSeconds: number }> {
  const { rows } = await db.query<{ n: string; oldest: number | null }>(
    'SELECT count(*) AS n, extract(epoch FROM now() - min(at))::float8 AS oldest FROM notice_events',
  );
  return { count: Number(rows[0]!.n), oldestSeconds: rows[0]!.oldest ?? 0 };
}

/**
 * The notices of `kind` an event made, in the dispatch transaction. `quiet`: they tell of a
 * give-up; a give-up of one of them is not told again.
 */
export async function insertNotices(
  tx: Transaction,
  kind: NoticeKindName,
  eventId: string | null,
  drafts: NoticeDraft[],
  quiet = false,
): Promise<void> {
  if (!drafts.length) return;
  await tx.query(
    `INSERT INTO notices (kind, destination, payload, event_id, quiet, subject)
     SELECT $1, d, p, $4::bigint, $5, s FROM unnest($2::text[], $3::jsonb[], $6::text[]) WITH ORDINALITY AS t(d, p, s, i) ORDER BY i`,
    [
      kind,
      drafts.map((d) => d.destination),
      drafts.map((d) => JSON.stringify(d.payload)),
      eventId,
      quiet,
      drafts.map((d) => d.subject ?? ''),
    ],
  );
  await wake(tx, NOTICE_CHANNEL);
}

/** A notice that is not an event's fan-out (an SSF verification event), written in the caller's transaction `tx`. */
export async function enqueueNotice(tx: Queryable, kind: NoticeKindName, draft: NoticeDraft): Promise<void> {
  await tx.query('INSERT INTO notices (kind, destination, payload, subject) VALUES ($1, $2, $3, $4)', [
    kind,
    draft.destination,
    JSON.stringify(draft.payload),
    draft.subject ?? '',
  ]);
  await wake(tx, NOTICE_CHANNEL);
}

/** A notice taken from the outbox, with what only the outbox needs of it. */
export interface ClaimedNotice extends Notice {
  /** It tells of a give-up: its own give-up is not told. */
  quiet: boolean;
}

interface NoticeRow {
  id: string;
  kind: NoticeKindName;
  destination: string;
  subject: string;
  payload: Record<string, unknown>;
  event_id: string | null;
  created_at: Date;
  attempts: number;
  quiet: boolean;
}

/**
 * Up to `limit` due notices of `kinds`, each the head of its queue (the oldest notice of that kind,
 * destination and subject), leased to the caller for `leaseSeconds`. A head that is leased or
 * waiting for its retry holds its whole queue: one notice in flight per destination and subject, in
 * order. A destination has at most `perDestination` heads leased or waiting for a retry (as this
 * claim sees them), so that a slow or dead receiver holds a few of the sender's places, never all.
 * Two processes racing for one head: the second finds it leased when its row lock is granted (the
 * UPDATE's condition is checked again on the row as committed) and skips it.
 */
export async function claimNotices(
  db: Queryable,
  kinds: readonly NoticeKindName[],
  limit: number,
  leaseSeconds: number,
  perDestination: number,
): Promise<ClaimedNotice[]> {
  const { rows } = await db.query<NoticeRow>(
    `WITH head AS (SELECT DISTINCT ON (kind, destination, subject) id, kind, destination, next_attempt_at, attempts
                   FROM notices WHERE kind = ANY($3::text[]) ORDER BY kind, destination, subject, id),
          busy AS (SELECT kind, destination, count(*) AS n FROM head
                   WHERE next_attempt_at > now() AND attempts > 0 GROUP BY kind, destination),
          due AS (SELECT head.id, coalesce(busy.n, 0)
                           + row_number() OVER (PARTITION BY head.kind, head.destination ORDER BY head.id) AS place
                  FROM head LEFT JOIN busy USING (kind, destination) WHERE head.next_attempt_at <= now())
     UPDATE notices n SET next_attempt_at = now() + make_interval(secs => $2), attempts = n.attempts + 1
     FROM (SELECT id FROM due WHERE place <= $4 ORDER BY id LIMIT $1) AS chosen
     WHERE n.id = chosen.id AND n.next_attempt_at <= now()
     RETURNING n.id::text, n.kind, n.destination, n.subject, n.payload, n.event_id::text, n.created_at, n.attempts, n.quiet`,
    [limit, leaseSeconds, kinds, perDestination],
  );
  return rows
    .map((r) => ({
      id: r.id,
      kind: r.kind,
      destination: r.destination,
      ...(r.subject ? { subject: r.subject } : {}),
      payload: r.payload,
      // A notice no event made (enqueueNotice) has no event: '' (the contract's eventId is a string).
      eventId: r.event_id ?? '',
      createdAt: r.created_at,
      attempts: r.attempts,
      quiet: r.quiet,
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/** The notice is acknowledged (or given up, in `db`'s transaction): gone, unless another process took it over. */
export async function sentNotice(db: Queryable, notice: Pick<Notice, 'id' | 'attempts'>): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM notices WHERE id = $1 AND attempts = $2', [notice.id, notice.attempts]);
  return rowCount === 1;
}

/** The attempt failed: the notice (and its queue behind it) waits `delaySeconds`, with why (no secret in it). */
export async function retryNotice(
  db: Queryable,
  notice: Pick<Notice, 'id' | 'attempts'>,
  delaySeconds: number,
  error: string,
): Promise<void> {
  await db.query(
    'UPDATE notices SET next_attempt_at = now() + make_interval(secs => $3), last_error = $4 WHERE id = $1 AND attempts = $2',
    [notice.id, notice.attempts, delaySeconds, error.slice(0, 1000)],
  );
}

/** A destination's queue, as the metrics show it. */
export interface NoticeQueue {
  kind: NoticeKindName;
  destination: string;
  waiting: number;
  /** Seconds since the oldest waiting notice was made. */
  oldestSeconds: number;
  /** The record the destination belongs to, as its notices' payloads name it (api/notices/kinds.ts metricsDestination), or null. */
  receiver: string | null;
}

/** Every destination with notices waiting. */
export async function noticeQueues(db: Queryable): Promise<NoticeQueue[]> {
  const { rows } = await db.query<{ kind: NoticeKindName; destination: string; n: string; oldest: number; receiver: string | null }>(
    `SELECT kind, destination, count(*) AS n, extract(epoch FROM now() - min(created_at))::float8 AS oldest,
            min(payload->>'receiver') AS receiver
     FROM notices GROUP BY kind, destination`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    destination: r.destination,
    waiting: Number(r.n),
    oldestSeconds: r.oldest,
    receiver: r.receiver,
  }));
}

/** The box_settings row of the ranges an administrator allowed receivers at (PUT /settings/notices): a JSON array of CIDRs. */
const ALLOWED_SETTING = 'notice_allowed_addresses';

/** The ranges allowed at runtime (CIDR strings as written), none when never set. */
export async function readNoticeAllowedAddresses(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ value: string }>('SELECT value FROM box_settings WHERE name = $1', [ALLOWED_SETTING]);
  return rows.length ? (JSON.parse(rows[0]!.value) as string[]) : [];
}

export async function writeNoticeAllowedAddresses(db: Queryable, cidrs: string[]): Promise<void> {
  await db.query('INSERT INTO box_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [
    ALLOWED_SETTING,
    JSON.stringify(cidrs),
  ]);
}
