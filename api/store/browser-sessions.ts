// Signed-in browsers: the box's own sign-in sessions behind its cookie.
import type { Queryable, Transaction } from '../db/pool.js';

/**
 * A signed-in browser: who, since when (the ID token's auth_time), what the sign-in proved (amr),
 * and its session id (`sid`). A session's proof is what it proved at its own time: a step-up, a
 * factor enrolled in it, or the session a password change continues keep its sign-in's time, its
 * end and its last proof (api/http/browser-session.ts says which way each is made).
 */
export interface BrowserSession {
  userId: number;
  sid: string;
  /** When its person signed in: a sign-in page's proof, never a step-up or an enrolment since. */
  authTime: Date;
  amr: string[];
  /** Its amr was all given (at its sign-in, or a factor in a step-up), none of it enrolled in the session since. */
  proven: boolean;
  /** The IdentityProvider it signed in through; null: the box's own sign-in. */
  provider: string | null;
  /** When its person last gave a proof in it (a password or a factor): what a credential change asks to be recent. */
  proofAt: Date;
  expiresAt: Date;
}

/** What a new browser session holds besides its cookie's hash; `sid` (a step-up's, an enrolment's) keeps the session it replaces. */
export interface NewBrowserSession {
  userId: number;
  amr: readonly string[];
  provider: string | null;
  proven: boolean;
  /** A sign-in's are its own time; a continued session keeps those of the one it continues. */
  authTime: Date;
  proofAt: Date;
  expiresAt: Date;
  sid?: string;
  from: { address: string; userAgent: string | null };
}

/**
 * Records a signed-in browser. `sid`: the session a step-up replaces keeps its sid (what was
 * issued through it stays tied to it, and its sign-out still ends all of it); the old row was
 * deleted before, in the same transaction (endForStepUp).
 */
export async function createBrowserSession(db: Queryable, idHash: Buffer, s: NewBrowserSession): Promise<void> {
  await db.query(
    `INSERT INTO browser_sessions (id_hash, user_id, expires_at, amr, sid, address, user_agent, proven, provider, auth_time, proof_at)
     VALUES ($1, $2, $3, $4, COALESCE($5, gen_random_uuid()), $6, $7, $8, $9, $10, $11)`,
    [idHash, s.userId, s.expiresAt, s.amr, s.sid ?? null, s.from.address, s.from.userAgent, s.proven, s.provider, s.authTime, s.proofAt],
  );
}

/** A signed-in browser as its person and an administrator see it: when, from where, with what. */
export interface BrowserSignIn {
  sid: string;
  userId: number;
  email: string;
  since: Date;
  expiresAt: Date;
  amr: string[];
  address: string | null;
  userAgent: string | null;
}

/** Which signed-in browsers to list: one person's, or the box's whose email holds `q`. */
export interface SignInFilter {
  user?: number;
  /** Part of the person's email, as emailKey folds it. */
  q?: string;
  limit: number;
  offset: number;
}

/** The signed-in browsers `filter` names, newest first, with how many there are in all. */
export async function listBrowserSignIns(db: Queryable, filter: SignInFilter): Promise<{ total: number; rows: BrowserSignIn[] }> {
  const where = `b.expires_at > now() AND ($1::bigint IS NULL OR b.user_id = $1)
    AND ($2::text IS NULL OR strpos(COALESCE(u.email_key, lower(u.email)), $2) > 0)`;
  const params = [filter.user ?? null, filter.q ?? null];
  const from = 'FROM browser_sessions b JOIN users u ON u.id = b.user_id';
  const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n ${from} WHERE ${where}`, params)).rows[0]!.n;
  const { rows } = await db.query<{
    sid: string;
    user_id: number;
    email: string;
    created_at: Date;
    expires_at: Date;
    amr: string[];
    address: string | null;
    user_agent: string | null;
  }>(
    `SELECT b.sid, b.user_id, u.email, COALESCE(b.auth_time, b.created_at) AS created_at, b.expires_at, b.amr, b.address, b.user_agent ${from}
     WHERE ${where} ORDER BY b.created_at DESC, b.sid LIMIT $3 OFFSET $4`,
    [...params, filter.limit, filter.offset],
  );
  return {
    total,
    rows: rows.map((r) => ({
      sid: r.sid,
      userId: Number(r.user_id),
      email: r.email,
      since: r.created_at,
      expiresAt: r.expires_at,
      amr: r.amr,
      address: r.address,
      userAgent: r.user_agent,
    })),
  };
}

/** Ends the signed-in browser `sid` (of `userId`, when given: a person ends only their own); its person, when there was one. */
export async function deleteBrowserSignIn(db: Queryable, sid: string, userId?: number): Promise<{ userId: number } | undefined> {
  const { rows } = await db.query<{ user_id: number }>(
    'DELETE FROM browser_sessions WHERE sid = $1 AND ($2::bigint IS NULL OR user_id = $2) RETURNING user_id',
    [sid, userId ?? null],
  );
  return rows[0] && { userId: Number(rows[0].user_id) };
}

/**
 * What a session continued in another (a step-up, an enrolment, a new password) keeps of the one it
 * replaces, and what that one proved (`amr`: what the continuation's audit event says it rose from).
 */
export type Kept = Pick<BrowserSession, 'authTime' | 'proofAt' | 'proven' | 'expiresAt' | 'amr'>;

/**
 * Ends the browser session `sid` of `userId` so that a step-up or an enrolment can take its sid
 * over; what the new one keeps of it, or undefined when it is gone (signed out, ended, expired meanwhile).
 */
export async function endForStepUp(db: Queryable, sid: string, userId: number): Promise<Kept | undefined> {
  const { rows } = await db.query<{ auth_time: Date; proof_at: Date; proven: boolean; expires_at: Date; amr: string[] }>(
    `DELETE FROM browser_sessions WHERE sid = $1 AND user_id = $2 AND expires_at > now()
     RETURNING COALESCE(auth_time, created_at) AS auth_time, COALESCE(proof_at, created_at) AS proof_at, proven, expires_at, amr`,
    [sid, userId],
  );
  const r = rows[0];
  return r && { authTime: r.auth_time, proofAt: r.proof_at, proven: r.proven, expiresAt: r.expires_at, amr: r.amr };
}

/** Records a proof given `at` in the browser session `sid` (the account page's "confirm it is you"); false when it is gone. */
export async function recordProof(db: Queryable, sid: string, userId: number, at: Date): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE browser_sessions SET proof_at = $3 WHERE sid = $1 AND user_id = $2 AND expires_at > now()', [
    sid,
    userId,
    at,
  ]);
  return rowCount === 1;
}

/**
 * Says that the sign-ins of `userId`'s browsers proved `amr`: what a sign-in with a factor
 * records, for tests of what follows from it (the decision point's step-up) without its pages.
 */
export async function setBrowserSessionsAmr(db: Queryable, userId: number, amr: readonly string[]): Promise<number> {
  const { rowCount } = await db.query('UPDATE browser_sessions SET amr = $2 WHERE user_id = $1', [userId, amr]);
  return rowCount ?? 0;
}

/** The browser session of this cookie, if it is still valid. */
export async function findBrowserSession(db: Queryable, idHash: Buffer): Promise<BrowserSession | undefined> {
  const { rows } = await db.query<{
    user_id: number;
    sid: string;
    auth_time: Date;
    amr: string[];
    proven: boolean;
    provider: string | null;
    proof_at: Date;
    expires_at: Date;
  }>(
    `SELECT user_id, sid, COALESCE(auth_time, created_at) AS auth_time, amr, proven, provider,
            COALESCE(proof_at, created_at) AS proof_at, expires_at
     FROM browser_sessions WHERE id_hash = $1 AND expires_at > now()`,
    [idHash],
  );
  const r = rows[0];
  return (
    r && {
      userId: r.user_id,
      sid: r.sid,
      authTime: r.auth_time,
      amr: r.amr,
      proven: r.proven,
      provider: r.provider,
      proofAt: r.proof_at,
      expiresAt: r.expires_at,
    }
  );
}

/** Ends a browser session; its sid and person, when it existed. */
export async function deleteBrowserSession(db: Queryable, idHash: Buffer): Promise<Pick<BrowserSession, 'sid' | 'userId'> | undefined> {
  const { rows } = await db.query<{ sid: string; user_id: number }>(
    'DELETE FROM browser_sessions WHERE id_hash = $1 RETURNING sid, user_id',
    [idHash],
  );
  const r = rows[0];
  return r && { sid: r.sid, userId: r.user_id };
}

/** Ends the browsers of `userId` that signed in through `provider`, but `keep` (a sid); their sids. */
export async function deleteBrowserSessionsThrough(db: Queryable, userId: number, provider: string, keep?: string): Promise<string[]> {
  const { rows } = await db.query<{ sid: string }>(
    'DELETE FROM browser_sessions WHERE user_id = $1 AND provider = $2 AND sid IS DISTINCT FROM $3 RETURNING sid',
    [userId, provider, keep ?? null],
  );
  return rows.map((r) => r.sid);
}

export async function deleteBrowserSessionsOfUser(db: Queryable, userId: number): Promise<void> {
  await db.query('DELETE FROM browser_sessions WHERE user_id = $1', [userId]);
}

/**
 * Whether the browser session `sid` is still signed in, holding it so (FOR SHARE)
 * until `tx` ends: what is issued through it in `tx` commits before a sign-out or
 * password change ends it (they wait), or sees it gone.
 */
export async function holdBrowserSession(tx: Transaction, sid: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM browser_sessions WHERE sid = $1 AND expires_at > now() FOR SHARE', [sid]);
  return rowCount === 1;
}

/** Deletes expired browser sessions. */
export async function purgeBrowserSessions(db: Queryable): Promise<void> {
  await db.query('DELETE FROM browser_sessions WHERE expires_at < now()');
}
