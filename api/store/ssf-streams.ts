// The Shared Signals transmitter's streams (migration 031; api/ssf/ decides about them): a stream
// belongs to one receiver, and every read or write of one names that receiver, so a receiver never
// reads, changes or learns of another's stream (a stream of another receiver is "not found").
import type { Queryable, Transaction } from '../db/pool.js';
import { lockForTransaction } from './box-locks.js';

export type DeliveryMethod = 'urn:ietf:rfc:8935' | 'urn:ietf:rfc:8936';
export type StreamStatus = 'enabled' | 'paused' | 'disabled';

/** What a receiver sets of a stream (SSF 1.0 §8.1.1): the rest is the transmitter's. */
export interface StreamFields {
  description: string | null;
  eventsRequested: string[];
  deliveryMethod: DeliveryMethod;
  endpointUrl: string | null;
  authorizationHeader: string | null;
}

export interface StreamRow extends StreamFields {
  id: string;
  clientId: string;
  status: StreamStatus;
  statusReason: string | null;
  createdAt: Date;
}

interface DbRow {
  id: string;
  client_id: string;
  description: string | null;
  events_requested: string[];
  delivery_method: DeliveryMethod;
  endpoint_url: string | null;
  authorization_header: string | null;
  status: StreamStatus;
  status_reason: string | null;
  created_at: Date;
}

const COLUMNS =
  'id, client_id, description, events_requested, delivery_method, endpoint_url, authorization_header, status, status_reason, created_at';

const fromDb = (r: DbRow): StreamRow => ({
  id: r.id,
  clientId: r.client_id,
  description: r.description,
  eventsRequested: r.events_requested,
  deliveryMethod: r.delivery_method,
  endpointUrl: r.endpoint_url,
  authorizationHeader: r.authorization_header,
  status: r.status,
  statusReason: r.status_reason,
  createdAt: r.created_at,
});

/**
 * Makes a stream for `clientId` unless it has `limit` already. A lock of the receiver's is taken
 * first (a lock of the box's for the transaction, ./box-locks.ts), so that concurrent creations of one receiver count
 * one after another: a flood of them makes `limit` streams, never more. Undefined when the limit is reached.
 */
export async function createStream(
  tx: Transaction,
  id: string,
  clientId: string,
  fields: StreamFields,
  limit: number,
): Promise<StreamRow | undefined> {
  await lockForTransaction(tx, 'ssf_stream', clientId);
  const { rows: counted } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM ssf_streams WHERE client_id = $1', [clientId]);
  if ((counted[0]?.n ?? 0) >= limit) return undefined;
  const { rows } = await tx.query<DbRow>(
    `INSERT INTO ssf_streams (id, client_id, description, events_requested, delivery_method, endpoint_url, authorization_header)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [id, clientId, fields.description, fields.eventsRequested, fields.deliveryMethod, fields.endpointUrl, fields.authorizationHeader],
  );
  return fromDb(rows[0]!);
}

/** The receiver's stream `id`; undefined when it has none of that id (another receiver's too). */
export async function getStream(db: Queryable, clientId: string, id: string): Promise<StreamRow | undefined> {
  const { rows } = await db.query<DbRow>(`SELECT ${COLUMNS} FROM ssf_streams WHERE id = $1 AND client_id = $2`, [id, clientId]);
  return rows[0] && fromDb(rows[0]);
}

/** A stream by its id alone: for the sender, which acts for no receiver. */
export async function streamById(db: Queryable, id: string): Promise<StreamRow | undefined> {
  const { rows } = await db.query<DbRow>(`SELECT ${COLUMNS} FROM ssf_streams WHERE id = $1`, [id]);
  return rows[0] && fromDb(rows[0]);
}

/** Every stream of the receiver, oldest first. */
export async function streamsOf(db: Queryable, clientId: string): Promise<StreamRow[]> {
  const { rows } = await db.query<DbRow>(`SELECT ${COLUMNS} FROM ssf_streams WHERE client_id = $1 ORDER BY created_at, id`, [clientId]);
  return rows.map(fromDb);
}

/** The streams not disabled that asked for any of `eventTypes`: those an event may be for (a paused one keeps it). */
export async function streamsWanting(db: Queryable, eventTypes: string[]): Promise<StreamRow[]> {
  const { rows } = await db.query<DbRow>(
    `SELECT ${COLUMNS} FROM ssf_streams WHERE status <> 'disabled' AND events_requested && $1 ORDER BY created_at, id`,
    [eventTypes],
  );
  return rows.map(fromDb);
}

/** Writes the receiver's fields of its stream; undefined when it has none of that id. */
export async function updateStream(db: Queryable, clientId: string, id: string, fields: StreamFields): Promise<StreamRow | undefined> {
  const { rows } = await db.query<DbRow>(
    `UPDATE ssf_streams SET description = $3, events_requested = $4, delivery_method = $5, endpoint_url = $6,
            authorization_header = $7, updated_at = now()
      WHERE id = $1 AND client_id = $2 RETURNING ${COLUMNS}`,
    [id, clientId, fields.description, fields.eventsRequested, fields.deliveryMethod, fields.endpointUrl, fields.authorizationHeader],
  );
  return rows[0] && fromDb(rows[0]);
}

/** Records a verification request unless the last was less than `interval` seconds ago: false then (SSF 1.0 §8.1.4.2). */
export async function markVerificationRequested(db: Queryable, clientId: string, id: string, interval: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE ssf_streams SET verification_requested_at = now()
      WHERE id = $1 AND client_id = $2
        AND (verification_requested_at IS NULL OR verification_requested_at <= now() - make_interval(secs => $3))`,
    [id, clientId, interval],
  );
  return (rowCount ?? 0) > 0;
}

export async function setStreamStatus(
  db: Queryable,
  clientId: string,
  id: string,
  status: StreamStatus,
  reason: string | null,
): Promise<StreamRow | undefined> {
  const { rows } = await db.query<DbRow>(
    `UPDATE ssf_streams SET status = $3, status_reason = $4, updated_at = now() WHERE id = $1 AND client_id = $2 RETURNING ${COLUMNS}`,
    [id, clientId, status, reason],
  );
  return rows[0] && fromDb(rows[0]);
}

/** Deletes the receiver's stream, its subjects and its waiting SETs; false when it had none of that id. */
export async function deleteStream(db: Queryable, clientId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM ssf_streams WHERE id = $1 AND client_id = $2', [id, clientId]);
  return (rowCount ?? 0) > 0;
}

/** Records that the stream's receiver added (included) or removed a person. */
export async function setStreamSubject(db: Queryable, streamId: string, userId: number, included: boolean): Promise<void> {
  await db.query(
    `INSERT INTO ssf_stream_subjects (stream_id, user_id, included) VALUES ($1, $2, $3)
     ON CONFLICT (stream_id, user_id) DO UPDATE SET included = EXCLUDED.included`,
    [streamId, userId, included],
  );
}

/** The streams among `streamIds` whose receiver removed `userId`. */
export async function streamsExcluding(db: Queryable, streamIds: string[], userId: number): Promise<Set<string>> {
  if (!streamIds.length) return new Set();
  const { rows } = await db.query<{ stream_id: string }>(
    'SELECT stream_id FROM ssf_stream_subjects WHERE stream_id = ANY($1) AND user_id = $2 AND NOT included',
    [streamIds, userId],
  );
  return new Set(rows.map((r) => r.stream_id));
}

/** Keeps a SET of a poll stream until its receiver acknowledges it (a retry keeps it once: same jti). */
export async function keepPollSet(db: Queryable, streamId: string, jti: string, token: string): Promise<void> {
  await db.query('INSERT INTO ssf_poll_sets (stream_id, jti, token) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [streamId, jti, token]);
}

/**
 * Drops, a batch at a time, the SETs of poll streams no receiver fetched and acknowledged within
 * `hours` (the upkeep, api/jobs/purge.ts): as a push is given up after that time, so is a poll
 * SET, and a receiver that never polls does not grow the table without bound. Answers how many.
 */
export async function purgePollSets(db: Queryable, hours: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ssf_poll_sets WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM ssf_poll_sets WHERE created_at < now() - make_interval(hours => $1) LIMIT 1000))`,
    [hours],
  );
  return rowCount ?? 0;
}

/** Drops the SETs the receiver acknowledged (RFC 8936 §2.4 `ack`); unknown ones are ignored. */
export async function acknowledgePollSets(db: Queryable, streamId: string, jtis: string[]): Promise<void> {
  if (jtis.length) await db.query('DELETE FROM ssf_poll_sets WHERE stream_id = $1 AND jti = ANY($2)', [streamId, jtis]);
}

/** Up to `max` SETs waiting on the stream, oldest first, and whether more wait. */
export async function waitingPollSets(
  db: Queryable,
  streamId: string,
  max: number,
): Promise<{ sets: { jti: string; token: string }[]; more: boolean }> {
  const { rows } = await db.query<{ jti: string; token: string }>(
    'SELECT jti, token FROM ssf_poll_sets WHERE stream_id = $1 ORDER BY created_at, jti LIMIT $2',
    [streamId, max + 1],
  );
  return { sets: rows.slice(0, max), more: rows.length > max };
}
