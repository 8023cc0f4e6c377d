// Sessions: one row per access token. Tokens themselves are never stored, only
// their SHA-256 digests, so a copy of the database yields no live token.
import type { Queryable, Transaction } from '../db/pool.js';
import type { SeenProof } from './dpop-proofs.js';
import { randomBytesPooled } from '../random.js';
import type { Session } from '../types.js';
import { bigintId, columnOrderAndPage, columnWhere, type ColumnSearch, type SearchQuery } from './search.js';
import { grantLocks } from './box-locks.js';

export interface SessionRow {
  id: string;
  type: string;
  origin: string;
  clientId: string;
  userId: number | null;
  audience: string | null;
  scope: string | null;
  start: Date;
  exp: Date | null;
  accessTokenHash: Buffer | null;
  refreshTokenHash: Buffer | null;
  refreshTokenExp: Date | null;
  refreshUsedAt: Date | null;
  active: boolean;
  end: Date | null;
  parent: string | null;
  family: string;
  kid: string | null;
  details: Record<string, unknown> | null;
  /** DPoP (RFC 9449): the thumbprint of the key the access token is bound to. */
  jkt: string | null;
  /** DPoP: the key a public client's refresh token is bound to (RFC 9449 §5). */
  refreshJkt: string | null;
  /** Mutual TLS (RFC 8705 §3): the x5t#S256 of the client certificate the access token is bound to. */
  x5t: string | null;
}

interface DbRow {
  id: string;
  type: string;
  origin: string;
  client_id: string;
  user_id: number | null;
  audience: string | null;
  scope: string | null;
  start: Date;
  exp: Date | null;
  access_token_hash: Buffer | null;
  refresh_token_hash: Buffer | null;
  refresh_token_exp: Date | null;
  refresh_used_at: Date | null;
  active: boolean;
  end: Date | null;
  parent: string | null;
  family: string;
  kid: string | null;
  details: Record<string, unknown> | null;
  jkt: string | null;
  refresh_jkt: string | null;
  x5t: string | null;
}

function fromDb(r: DbRow): SessionRow {
  return {
    id: r.id,
    type: r.type,
    origin: r.origin,
    clientId: r.client_id,
    userId: r.user_id,
    audience: r.audience,
    scope: r.scope,
    start: r.start,
    exp: r.exp,
    accessTokenHash: r.access_token_hash,
    refreshTokenHash: r.refresh_token_hash,
    refreshTokenExp: r.refresh_token_exp,
    refreshUsedAt: r.refresh_used_at,
    active: r.active,
    end: r.end,
    parent: r.parent,
    family: r.family,
    kid: r.kid,
    details: r.details,
    jkt: r.jkt,
    refreshJkt: r.refresh_jkt,
    x5t: r.x5t,
  };
}

/** Time-ordered UUID (v7): new rows land at the right edge of the primary key index. */
export function newSessionId(now = Date.now()): string {
  const b = randomBytesPooled(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Whether the session's access token may be used at `now`. */
export function isUsable(s: Pick<SessionRow, 'active' | 'exp'>, now = Date.now()): boolean {
  return s.active && (s.exp === null || s.exp.getTime() > now);
}

const HOUR_MS = 3_600_000;

/**
 * When a row stops mattering: closed, or past both its expirations (null: not
 * while it can be used); it is deleted a retention period later. A sliding
 * refresh expiration is rounded up to the hour: refreshes within the hour then
 * leave every indexed column as it was, so PostgreSQL updates the row in place
 * (HOT) instead of adding an entry to each index on every refresh. The SQL of
 * applyRefreshes rounds the same way.
 */
function purgeAt(s: Pick<SessionRow, 'active' | 'end' | 'exp' | 'refreshTokenHash' | 'refreshTokenExp'>): Date | null {
  if (!s.active) return s.end ?? new Date();
  if (s.exp === null) return null;
  if (s.refreshTokenHash === null) return s.exp;
  if (s.refreshTokenExp === null) return null;
  const refreshEnd = new Date(Math.ceil(s.refreshTokenExp.getTime() / HOUR_MS) * HOUR_MS);
  return s.exp > refreshEnd ? s.exp : refreshEnd;
}

export function toSessionResource(s: SessionRow, now = Date.now()): Session {
  return {
    resourceType: 'Session',
    id: s.id,
    type: s.type,
    client: { id: s.clientId, resourceType: 'Client' },
    ...(s.userId !== null ? { user: { id: String(s.userId), resourceType: 'User' } } : {}),
    ...(s.audience !== null ? { audience: s.audience } : {}),
    ...(s.scope !== null ? { scope: s.scope } : {}),
    start: s.start.toISOString(),
    ...(s.exp ? { exp: s.exp.toISOString() } : {}),
    ...(s.refreshTokenExp && s.refreshTokenHash ? { refresh_token_exp: s.refreshTokenExp.toISOString() } : {}),
    active: isUsable(s, now),
    ...(s.end ? { end: s.end.toISOString() } : {}),
    ...(s.parent ? { parent: { id: s.parent, resourceType: 'Session' } } : {}),
    ...(s.details ? { details: s.details } : {}),
  };
}

// A new session's columns, and their types for unnest().
const NEW_COLUMNS = `id, type, origin, client_id, user_id, audience, scope, start, exp, access_token_hash,
  refresh_token_hash, refresh_token_exp, active, parent, family, kid, details, purge_at, jkt, refresh_jkt, x5t`;
const NEW_TYPES = [
  'uuid',
  'text',
  'text',
  'text',
  'bigint',
  'text',
  'text',
  'timestamptz',
  'timestamptz',
  'bytea',
  'bytea',
  'timestamptz',
  'boolean',
  'uuid',
  'uuid',
  'text',
  'jsonb',
  'timestamptz',
  'text',
  'text',
  'text',
];

/** New sessions as one row set (`unnest(...)`), its parameters numbered from `$first`; `param(column)` names one column's array. */
function newSessionRows(rows: SessionRow[], first: number): { sql: string; params: unknown[]; param: (column: string) => string } {
  const col = <K extends keyof SessionRow>(k: K): SessionRow[K][] => rows.map((r) => r[k]);
  const columns = NEW_COLUMNS.split(',').map((c) => c.trim());
  return {
    sql: `unnest(${NEW_TYPES.map((t, i) => `$${first + i}::${t}[]`).join(', ')})`,
    param: (column) => `$${first + columns.indexOf(column)}::${NEW_TYPES[columns.indexOf(column)]}[]`,
    params: [
      col('id'),
      col('type'),
      col('origin'),
      col('clientId'),
      col('userId'),
      col('audience'),
      col('scope'),
      col('start'),
      col('exp'),
      col('accessTokenHash'),
      col('refreshTokenHash'),
      col('refreshTokenExp'),
      col('active'),
      col('parent'),
      col('family'),
      col('kid'),
      rows.map((r) => r.details && JSON.stringify(r.details)),
      rows.map(purgeAt),
      col('jkt'),
      col('refreshJkt'),
      col('x5t'),
    ],
  };
}

/** Inserts many sessions in one statement (the group commit of SessionWriter). */
export async function insertSessions(db: Queryable, rows: SessionRow[]): Promise<void> {
  const values = newSessionRows(rows, 1);
  // A named (prepared) statement: each connection plans it once, not once per batch.
  await db.query({
    name: 'insert-sessions',
    text: `INSERT INTO sessions (${NEW_COLUMNS}) SELECT * FROM ${values.sql}`,
    values: values.params,
  });
}

/**
 * Inserts many sessions in one statement, each but those without one spending a client assertion's
 * jti in the replay ledger (./dpop-proofs.ts) in that same statement: a session whose jti was
 * already there (a replay, here or in another process) is not inserted. Returns, per row, whether
 * it was. One round trip and one commit where the ledger and the session took two each (make
 * bench: private_key_jwt); the unique digest still decides a race, and the jti is spent only with
 * the session it authenticated. A digest must appear at most once (../store/session-writer.ts).
 */
export async function insertSessionsSpending(db: Queryable, rows: SessionRow[], spends: (SeenProof | undefined)[]): Promise<boolean[]> {
  const values = newSessionRows(rows, 1);
  const next = values.params.length + 1;
  const { rows: inserted } = await db.query<{ id: string }>({
    name: 'insert-sessions-spending',
    text: `WITH spent AS (
       INSERT INTO dpop_proofs (digest, expires_at)
       SELECT * FROM unnest($${next}::bytea[], $${next + 1}::timestamptz[]) AS s(digest, expires_at) WHERE s.digest IS NOT NULL
       ON CONFLICT (digest) DO NOTHING RETURNING digest
     )
     INSERT INTO sessions (${NEW_COLUMNS})
     SELECT ${NEW_COLUMNS.split(',')
       .map((c) => `n.${c.trim()}`)
       .join(', ')}
     FROM ${values.sql} WITH ORDINALITY AS n(${NEW_COLUMNS}, i)
     LEFT JOIN unnest($${next}::bytea[]) WITH ORDINALITY AS s(digest, i) ON s.i = n.i
     WHERE s.digest IS NULL OR s.digest IN (SELECT digest FROM spent)
     RETURNING id`,
    values: [...values.params, spends.map((s) => s?.digest ?? null), spends.map((s) => s?.expiresAt ?? null)],
  });
  const ids = new Set(inserted.map((r) => r.id));
  return rows.map((r) => ids.has(r.id));
}

/** One use of a refresh token: the session it yields, and what becomes of the token. */
export interface Refresh {
  /** The new session; its `parent` is the session holding the refresh token. */
  session: SessionRow;
  /** Rotation marks the holder's token used and keeps its expiration. */
  rotate: boolean;
  /** Without rotation, the holder's next refresh expiration (sliding). */
  refreshTokenExp: Date | null;
}

/*
 * The lock of a grant (a session family) is a row of the box's locks (./box-locks.ts grantLocks:
 * the slot of the family), which serializes a grant's refreshes (applyRefreshes,
 * insertChildSessions, the slow path's lockRefreshHolder) with its closing, always in slot order
 * so that no two wait on each other crosswise.
 */

/**
 * The fewest rows a batch of applyRefreshes is sent with. PostgreSQL's plan cache
 * costs its generic plan for ten array elements (its default estimate of an array
 * parameter) and plans each execution afresh while a custom plan of the actual
 * arrays looks cheaper: make bench's batches of about three refreshes (two batches
 * in flight per process) were planned every time, planning 61 % of the statement's
 * time in PostgreSQL (alone: 0.29 ms of planning a batch of three beside 0.19 ms of
 * execution). Padded to ten with nulls, which match no holder and insert nothing, no
 * custom plan looks cheaper, and each connection plans the statement once.
 */
const PLANNED_BATCH = 10;

/** Pads each array of a batch of `count` rows with nulls up to PLANNED_BATCH (see above). */
function padToPlannedBatch(count: number): <T>(values: T[]) => (T | null)[] {
  const padding = Math.max(0, PLANNED_BATCH - count);
  return (values) => (padding ? [...values, ...new Array<null>(padding).fill(null)] : values);
}

/**
 * Applies many refreshes in one statement (the group commit of RefreshWriter):
 * each holder still usable (active, token unused and unexpired) is updated as
 * touchRefreshToken would and its new session inserted; the others are left
 * alone. Returns the holders updated. A holder must appear at most once.
 *
 * The grants' locks are taken first, in slot order (closeGrants waits
 * for them, so a close commits before or after this statement, never during),
 * keyed by the new rows' own `family`, not read from the holders: mint() gives a
 * refreshed session its holder's, and a holder is updated only if its family is
 * the one its new row names, so the lock held is always the holder's grant lock
 * (compared with IS NOT DISTINCT FROM, which no index serves: with `=` the generic
 * plan found the holders by the index on family, reading every session of a grant).
 * Then the UPDATE itself decides: it locks each holder it updates, and a holder
 * changed by a commit while it waited (a close that committed while this statement
 * waited for the grant's lock, a use of the same token from another process) is
 * read again after the wait and its WHERE checked on that newest version (READ
 * COMMITTED), so a closed holder or a spent token is left alone, as SELECT ... FOR
 * UPDATE did before it at the cost of a second read of each holder, a lock record
 * in the WAL and a third read to find it again. The holders come in id order, the
 * order the UPDATE meets and locks them (its plan reads them by primary key, one
 * per array element), so that concurrent batches wait for each other instead of
 * deadlocking; a deadlock all the same (with a close, whose locks are not in id
 * order) aborts the statement, and RefreshWriter decides each use again. purge_at
 * rounded up to the hour as purgeAt() does.
 */
export async function applyRefreshes(db: Queryable, refreshes: Refresh[]): Promise<Set<string>> {
  const ordered = [...refreshes].sort((a, b) =>
    a.session.parent! < b.session.parent! ? -1 : a.session.parent! > b.session.parent! ? 1 : 0,
  );
  const padded = padToPlannedBatch(ordered.length);
  const values = newSessionRows(
    ordered.map((r) => r.session),
    4,
  );
  const refreshExp = 'CASE WHEN u.rotate THEN s.refresh_token_exp ELSE u.refresh_token_exp END';
  const family = values.param('family');
  const { rows } = await db.query<{ parent: string }>({
    name: 'apply-refreshes',
    text: `WITH u AS (
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::boolean[], ${family}) AS u(id, refresh_token_exp, rotate, family)
     ), grants AS MATERIALIZED (
       SELECT ${grantLocks(family)} AS n
     ), touched AS (
       UPDATE sessions s SET refresh_token_exp = ${refreshExp},
         refresh_used_at = CASE WHEN u.rotate THEN now() END,
         purge_at = CASE WHEN s.exp IS NULL OR ${refreshExp} IS NULL THEN NULL
           ELSE greatest(s.exp, to_timestamp(ceil(extract(epoch FROM ${refreshExp}) / 3600) * 3600)) END
       FROM u WHERE s.id = u.id AND s.family IS NOT DISTINCT FROM u.family AND (SELECT n FROM grants) >= 0
         AND s.active AND s.refresh_used_at IS NULL AND (s.refresh_token_exp IS NULL OR s.refresh_token_exp > now())
       RETURNING s.id
     )
     INSERT INTO sessions (${NEW_COLUMNS})
     SELECT * FROM ${values.sql} AS n(${NEW_COLUMNS}) WHERE n.parent IN (SELECT id FROM touched)
     RETURNING parent`,
    values: [
      padded(ordered.map((r) => r.session.parent)),
      padded(ordered.map((r) => r.refreshTokenExp)),
      padded(ordered.map((r) => r.rotate)),
      ...values.params.map((column) => padded(column as unknown[])),
    ],
  });
  return new Set(rows.map((r) => r.parent));
}

/**
 * Inserts sessions made from others (token exchange, RFC 8693), in one statement
 * (the group commit of SessionWriter.insertChild): each row's `parent` is the
 * session of the exchanged token and its `family` the parent's, so closing the
 * parent closes the child. Returns the ids inserted: a row whose parent is closed
 * or expired is left out. The grants' locks are taken as applyRefreshes
 * takes them: a close (closeGrants) commits before or after this
 * statement, never during. Parents are locked FOR SHARE: one closed by a commit
 * while this statement waited is read again after the wait (READ COMMITTED) and
 * found closed; one closed later, by a close that waited for this statement, has
 * its children in that close's snapshot.
 *
 * The locks are keyed by the new rows' `family`, not read from the parents: one
 * read of `sessions` fewer, which lets PostgreSQL's plan cache keep one generic
 * plan from batches of about six rows on (the second read held it to a custom
 * plan, ~0.16 ms of planning a batch, below about eight); smaller batches are
 * padded to PLANNED_BATCH, as applyRefreshes' are (a null row has no parent and
 * is not inserted), so that no batch is planned afresh. A row is inserted only
 * if its family is its parent's, so the lock held is always the parent's grant lock.
 */
export async function insertChildSessions(db: Queryable, rows: SessionRow[]): Promise<Set<string>> {
  const values = newSessionRows(rows, 1);
  const padded = padToPlannedBatch(rows.length);
  const parents = [...new Set(rows.map((r) => r.parent))];
  const padParents = padToPlannedBatch(parents.length);
  const { rows: inserted } = await db.query<{ id: string }>({
    name: 'insert-child-sessions',
    text: `WITH grants AS MATERIALIZED (
       SELECT ${grantLocks(values.param('family'))} AS n
     ), parents AS MATERIALIZED (
       SELECT id, family FROM sessions WHERE id = ANY($${values.params.length + 1}::uuid[]) AND (SELECT n FROM grants) >= 0
         AND active AND (exp IS NULL OR exp > now())
       ORDER BY id FOR SHARE
     )
     INSERT INTO sessions (${NEW_COLUMNS})
     SELECT * FROM ${values.sql} AS n(${NEW_COLUMNS}) WHERE (n.parent, n.family) IN (SELECT id, family FROM parents)
     RETURNING id`,
    values: [...values.params.map((column) => padded(column as unknown[])), padParents(parents)],
  });
  return new Set(inserted.map((r) => r.id));
}

// What a session is read as (DbRow). Named, not `*`: a prepared `SELECT *` fails on every connection
// that prepared it ("cached plan must not change result type") once the next release adds a column
// while this one still serves (docs/operations/upgrades.md).
const READ_COLUMNS = `id, type, origin, client_id, user_id, audience, scope, start, exp, access_token_hash, refresh_token_hash,
  refresh_token_exp, refresh_used_at, active, "end", parent, family, kid, details, jkt, refresh_jkt, x5t`;

/** The prepared statement of each column a session is found by: one query, named once per column. */
const FOUND_BY = {
  id: 'session-by-id',
  access_token_hash: 'session-by-access-token',
  refresh_token_hash: 'session-by-refresh-token',
} as const;

async function findOneBy(db: Queryable, column: keyof typeof FOUND_BY, value: string | Buffer): Promise<SessionRow | undefined> {
  const { rows } = await db.query<DbRow>({
    name: FOUND_BY[column],
    text: `SELECT ${READ_COLUMNS} FROM sessions WHERE ${column} = $1`,
    values: [value],
  });
  return rows[0] && fromDb(rows[0]);
}

export async function findById(db: Queryable, id: string): Promise<SessionRow | undefined> {
  return UUID.test(id) ? findOneBy(db, 'id', id) : undefined;
}

export const findByAccessToken = (db: Queryable, hash: Buffer): Promise<SessionRow | undefined> => findOneBy(db, 'access_token_hash', hash);

export const findByRefreshToken = (db: Queryable, hash: Buffer): Promise<SessionRow | undefined> =>
  findOneBy(db, 'refresh_token_hash', hash);

/**
 * The sessions holding each of many refresh tokens, in one statement (the group read of
 * RefreshReader): per digest, in order, its holder or undefined. Padded to PLANNED_BATCH,
 * as the group commits' statements are, so that each connection plans it once.
 */
export async function findByRefreshTokens(db: Queryable, hashes: Buffer[]): Promise<(SessionRow | undefined)[]> {
  const { rows } = await db.query<DbRow>({
    name: 'sessions-by-refresh-tokens',
    text: `SELECT ${READ_COLUMNS} FROM sessions WHERE refresh_token_hash = ANY($1::bytea[])`,
    values: [padToPlannedBatch(hashes.length)(hashes)],
  });
  const holders = new Map(rows.map((r) => [r.refresh_token_hash!.toString('hex'), fromDb(r)]));
  return hashes.map((hash) => holders.get(hash.toString('hex')));
}

/**
 * The session holding a refresh token, locked for the rest of the transaction
 * `tx`, and its grant with it, as closeGrants takes it, since this slow
 * path may close the grant itself (reuse detection). Lock first, then the row:
 * a close that committed meanwhile is seen.
 */
export async function lockRefreshHolder(tx: Transaction, hash: Buffer): Promise<SessionRow | undefined> {
  await tx.query(`SELECT ${grantLocks('(SELECT array_agg(family) FROM sessions WHERE refresh_token_hash = $1)')}`, [hash]);
  const { rows } = await tx.query<DbRow>('SELECT * FROM sessions WHERE refresh_token_hash = $1 FOR UPDATE', [hash]);
  return rows[0] && fromDb(rows[0]);
}

/** Sliding refresh expiration: counted again from this use. */
export async function touchRefreshToken(db: Queryable, s: SessionRow, refreshTokenExp: Date | null, used: boolean): Promise<void> {
  const next = { ...s, refreshTokenExp };
  await db.query(
    `UPDATE sessions SET refresh_token_exp = $2, refresh_used_at = CASE WHEN $3 THEN now() ELSE refresh_used_at END,
       purge_at = $4 WHERE id = $1`,
    [s.id, refreshTokenExp, used, purgeAt(next)],
  );
}

const CLOSE = `active = false, "end" = now(), purge_at = now()`;

/** Which sessions a close ends. */
export type CloseSelector =
  /** A grant: its first session and every session refreshed from it. */
  | { family: string }
  /** A session and those refreshed from it. */
  | { tree: string }
  /** The grants issued through one signed-in browser (its sid). */
  | { sid: string }
  /** What one client was given through one signed-in browser (a SAML app's own logout). */
  | { sid: string; client: string }
  /** Every grant of a person. */
  | { user: number }
  /** Every grant of a client. */
  | { client: string }
  /** Every grant of a person to one client (a consent withdrawn). */
  | { user: number; client: string };

function selecting(selector: CloseSelector): { where: string; value: string | number | [number | string, string] } {
  if ('family' in selector) return { where: 'family = $1', value: selector.family };
  if ('tree' in selector) return { where: 'id = $1', value: selector.tree };
  if ('sid' in selector && 'client' in selector)
    return {
      where: "details ? 'sid' AND details->>'sid' = ($1::text[])[1] AND client_id = ($1::text[])[2]",
      value: [selector.sid, selector.client],
    };
  if ('sid' in selector) return { where: "details ? 'sid' AND details->>'sid' = $1", value: selector.sid };
  if ('user' in selector && 'client' in selector)
    return { where: 'user_id = ($1::text[])[1]::bigint AND client_id = ($1::text[])[2]', value: [selector.user, selector.client] };
  if ('user' in selector) return { where: 'user_id = $1', value: selector.user };
  return { where: 'client_id = $1', value: selector.client };
}

/**
 * Closes sessions in the transaction `tx`; returns the rows it closed. Closing
 * beats using (docs/architecture.md §7): a refresh racing this close either commits
 * first, and its new session is closed here too, or waits and finds its holder
 * closed. One UPDATE cannot promise that — its snapshot predates a refresh that
 * commits while it runs — so the grants' locks are taken first, exclusively
 * (waiting for refreshes in flight, keeping new ones out), and the UPDATE runs
 * as a statement of its own, whose snapshot holds what those refreshes committed.
 */
export async function closeGrants(tx: Transaction, selector: CloseSelector): Promise<SessionRow[]> {
  const { where, value } = selecting(selector);
  await tx.query(`SELECT ${grantLocks(`(SELECT array_agg(family) FROM sessions WHERE ${where} AND active)`)}`, [value]);
  // The sessions named and every session made from them (refreshed, or exchanged
  // by another client: a child shares its parent's family, so the locks above hold it too).
  const closing = `id IN (WITH RECURSIVE tree AS (
      SELECT id FROM sessions WHERE ${where} AND active
      UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id WHERE s.active) SELECT id FROM tree)`;
  const { rows } = await tx.query<DbRow>(`UPDATE sessions SET ${CLOSE} WHERE ${closing} AND active RETURNING *`, [value]);
  // The releases before migration 039 lock grants elsewhere (advisory locks), so while one serves beside
  // this one (a rolling update) its refresh may have held a holder this UPDATE waited for, and committed
  // a new session after the UPDATE's snapshot: whatever was made from the sessions closed is closed too,
  // by a statement that sees it. Once only that, in the common case: nothing is found.
  for (let parents = rows.map((r) => r.id), passes = 0; parents.length && passes < 3; passes++) {
    const { rows: made } = await tx.query<DbRow>(
      `UPDATE sessions SET ${CLOSE} WHERE id IN (WITH RECURSIVE tree AS (
         SELECT id FROM sessions WHERE parent = ANY($1::uuid[]) AND active
         UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id WHERE s.active) SELECT id FROM tree) AND active RETURNING *`,
      [parents],
    );
    rows.push(...made);
    parents = made.map((r) => r.id);
  }
  return rows.map(fromDb);
}

/** A person's grant to an app, as they and an administrator see it: one per family (a refresh keeps it). */
export interface PersonGrant {
  /** The grant's family: closing it ends the grant (CloseSelector family). */
  family: string;
  clientId: string;
  userId: number;
  email: string;
  /** When the grant was made, and when it was last refreshed. */
  since: Date;
  lastUsed: Date;
  scope: string | null;
  /** What the sign-in behind it proved (RFC 8176), when it came through a browser. */
  amr: string[];
  /** The signed-in browser it came through, and where that browser signed in from, while it is signed in. */
  sid: string | null;
  address: string | null;
  /** The client is an agent's (a Client ID Metadata Document's, a dynamic registration's: its Client's `registration`), or null. */
  agent: { kind: 'metadata-document' | 'dynamic'; clientName: string | null } | null;
}

/** Which grants to list: one person's, the box's of one client, or whose email holds `q`. */
export interface GrantFilter {
  user?: number;
  client?: string;
  /** Part of the person's email, as emailKey folds it. */
  q?: string;
  limit: number;
  offset: number;
}

/**
 * The live grants of people that `filter` names, newest first: a grant is live while a session
 * of it is open and its access or refresh token may still be used.
 */
export async function listPersonGrants(db: Queryable, filter: GrantFilter): Promise<{ total: number; rows: PersonGrant[] }> {
  const live = `s.active AND s.user_id IS NOT NULL
    AND ((s.exp IS NULL OR s.exp > now()) OR (s.refresh_token_hash IS NOT NULL AND (s.refresh_token_exp IS NULL OR s.refresh_token_exp > now())))
    AND ($1::bigint IS NULL OR s.user_id = $1) AND ($2::text IS NULL OR s.client_id = $2)
    AND ($3::text IS NULL OR strpos(COALESCE(u.email_key, lower(u.email)), $3) > 0)`;
  const params = [filter.user ?? null, filter.client ?? null, filter.q ?? null];
  const from = 'FROM sessions s JOIN users u ON u.id = s.user_id';
  const total = (await db.query<{ n: number }>(`SELECT count(DISTINCT s.family)::int AS n ${from} WHERE ${live}`, params)).rows[0]!.n;
  const { rows } = await db.query<{
    family: string;
    client_id: string;
    user_id: number;
    email: string;
    since: Date;
    last_used: Date;
    scope: string | null;
    amr: string[] | null;
    sid: string | null;
    address: string | null;
    agent_kind: 'metadata-document' | 'dynamic' | null;
    agent_name: string | null;
  }>(
    `SELECT g.*, b.address,
            c.resource->'registration'->>'kind' AS agent_kind, c.resource->'registration'->>'client_name' AS agent_name
     FROM (
       SELECT DISTINCT ON (s.family) s.family, s.client_id, s.user_id, u.email, s.scope,
              (SELECT min(f.start) FROM sessions f WHERE f.family = s.family) AS since, s.start AS last_used,
              CASE WHEN jsonb_typeof(s.details->'amr') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(s.details->'amr')) END AS amr,
              s.details->>'sid' AS sid
       ${from} WHERE ${live} ORDER BY s.family, s.start DESC) g
     LEFT JOIN browser_sessions b ON b.sid::text = g.sid AND b.expires_at > now()
     LEFT JOIN clients c ON c.id = g.client_id
     ORDER BY g.last_used DESC, g.family LIMIT $4 OFFSET $5`,
    [...params, filter.limit, filter.offset],
  );
  return {
    total,
    rows: rows.map((r) => ({
      family: r.family,
      clientId: r.client_id,
      userId: Number(r.user_id),
      email: r.email,
      since: r.since,
      lastUsed: r.last_used,
      scope: r.scope,
      amr: r.amr ?? [],
      sid: r.sid,
      address: r.address,
      agent: r.agent_kind ? { kind: r.agent_kind, clientName: r.agent_name } : null,
    })),
  };
}

/** Whether the grant `family` is `userId`'s and still open: an administrator ends a person's grant by its family only when it is. */
export async function isPersonsOpenGrant(db: Queryable, family: string, userId: number): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM sessions WHERE family = $1 AND user_id = $2 AND active LIMIT 1', [family, userId]);
  return rowCount === 1;
}

/** Sets the expirations PUT /Session may change. */
export async function setExpirations(
  db: Queryable,
  id: string,
  exp: Date | null,
  refreshTokenExp: Date | null,
): Promise<SessionRow | undefined> {
  const { rows } = await db.query<DbRow>(
    `UPDATE sessions SET exp = $2, refresh_token_exp = $3,
       purge_at = CASE WHEN NOT active THEN purge_at
                       WHEN $2::timestamptz IS NULL THEN NULL
                       WHEN refresh_token_hash IS NULL THEN $2
                       WHEN $3::timestamptz IS NULL THEN NULL
                       ELSE greatest($2, $3) END
     WHERE id = $1 RETURNING *`,
    [id, exp, refreshTokenExp],
  );
  return rows[0] && fromDb(rows[0]);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const uuid = (raw: string): string | undefined => (UUID.test(raw) ? raw.toLowerCase() : undefined);

/** Session's search parameters and sort fields, as SQL over its columns. */
const SESSION_SEARCH: ColumnSearch = {
  kind: 'Session',
  filters: {
    id: { sql: (p) => `id = ${p}`, value: uuid },
    type: { sql: (p) => `type = ${p}` },
    client: { sql: (p) => `client_id = ${p}` },
    user: { sql: (p) => `user_id = ${p}`, value: bigintId },
    audience: { sql: (p) => `audience = ${p}` },
    // scope holds space-separated tokens (RFC 6749 §3.3): a session matches when it holds the token asked for.
    scope: { sql: (p) => `${p} = ANY(string_to_array(scope, ' '))` },
    parent: { sql: (p) => `parent = ${p}`, value: uuid },
    active: { sql: (p) => `(${p} = (active AND (exp IS NULL OR exp > now()))::text)` },
  },
  sorts: { id: 'id', start: 'start', exp: 'exp', end: '"end"', type: 'type', client: 'client_id' },
  id: 'id',
};

export async function searchSessions(db: Queryable, q: SearchQuery): Promise<{ total: number; rows: SessionRow[] }> {
  const params: unknown[] = [];
  const where = columnWhere(SESSION_SEARCH, q, params);
  const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sessions ${where}`, params)).rows[0]!.n;
  const page = columnOrderAndPage(SESSION_SEARCH, q, params);
  const { rows } = await db.query<DbRow>(`SELECT * FROM sessions ${where} ${page}`, params);
  return { total, rows: rows.map(fromDb) };
}

/** Deletes rows that stopped mattering more than `retentionHours` ago; a batch at a time. */
export async function purgeSessions(db: Queryable, retentionHours: number, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM sessions WHERE id IN (
       SELECT id FROM sessions WHERE purge_at < now() - make_interval(hours => $1) LIMIT $2)`,
    [retentionHours, batch],
  );
  return rowCount ?? 0;
}

/** Key ids still needed to verify a live JWT (key retirement waits for these). */
/**
 * Until when a token signed with each of `kids` lives, as far as the sessions say: the latest
 * expiry of a live session holding one, or null when one of them never expires. A kid no live
 * session holds is absent.
 */
export async function kidsLiveUntil(db: Queryable, kids: string[]): Promise<Map<string, Date | null>> {
  if (!kids.length) return new Map();
  const { rows } = await db.query<{ kid: string; until: Date | null }>(
    `SELECT kid, CASE WHEN bool_or(exp IS NULL) THEN NULL ELSE max(exp) END AS until
       FROM sessions WHERE kid = ANY($1) AND active AND (exp IS NULL OR exp > now()) GROUP BY kid`,
    [kids],
  );
  return new Map(rows.map((r) => [r.kid, r.until]));
}

export async function kidsInUse(db: Queryable, kids: string[]): Promise<string[]> {
  if (!kids.length) return [];
  const { rows } = await db.query<{ kid: string }>(
    `SELECT DISTINCT kid FROM sessions WHERE kid = ANY($1) AND active AND (exp IS NULL OR exp > now())`,
    [kids],
  );
  return rows.map((r) => r.kid);
}
