// Authorization codes: issued at the authorization endpoint, exchanged once at the token endpoint.
import type { Queryable } from '../db/pool.js';

/** Claims a relying party asked for by name (Core §5.5), per where it wants them: kept with a code. */
export interface RequestedClaims {
  userinfo: string[];
  id_token: string[];
}

export interface AuthorizationCode {
  clientId: string;
  userId: number;
  redirectUri: string;
  scope: string | null;
  codeChallenge: string | null;
  expiresAt: Date;
  usedAt: Date | null;
  sessionId: string | null;
  /** OpenID Connect: the request's nonce, the claims it asked for by name, and the browser session the code was issued in. */
  nonce: string | null;
  claims: RequestedClaims | null;
  /** The audience its tokens will carry (RFC 8707 resource), or null. */
  audience: string | null;
  authTime: Date | null;
  sid: string | null;
  /** What the sign-in behind it proved (RFC 8176); null for codes from before the box recorded it. */
  amr: string[] | null;
  /** The DPoP key the code is bound to (RFC 9449 §10: its JWK SHA-256 thumbprint), or null. */
  dpopJkt: string | null;
}

export async function createAuthorizationCode(
  db: Queryable,
  hash: Buffer,
  code: Omit<AuthorizationCode, 'usedAt' | 'sessionId'>,
): Promise<void> {
  await db.query(
    `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, code_challenge, expires_at, nonce, auth_time, sid, claims, audience, dpop_jkt, amr)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      hash,
      code.clientId,
      code.userId,
      code.redirectUri,
      code.scope,
      code.codeChallenge,
      code.expiresAt,
      code.nonce,
      code.authTime,
      code.sid,
      code.claims,
      code.audience,
      code.dpopJkt,
      code.amr,
    ],
  );
}

/** The client a code was issued to, whatever became of the code since. */
export async function authorizationCodeClient(db: Queryable, hash: Buffer): Promise<string | undefined> {
  const { rows } = await db.query<{ client_id: string }>('SELECT client_id FROM authorization_codes WHERE code_hash = $1', [hash]);
  return rows[0]?.client_id;
}

/** The code, locked for the rest of the transaction (concurrent exchanges of one code queue here). */
export async function findAuthorizationCodeForUpdate(db: Queryable, hash: Buffer): Promise<AuthorizationCode | undefined> {
  return findAuthorizationCode(db, hash, true);
}

/**
 * The code as it is now, without a lock: what an exchange is about to issue, read before its
 * transaction (the box's Hooks are asked about it, api/oauth/token-hooks.ts); the exchange reads it
 * again under its lock.
 */
export async function peekAuthorizationCode(db: Queryable, hash: Buffer): Promise<AuthorizationCode | undefined> {
  return findAuthorizationCode(db, hash, false);
}

async function findAuthorizationCode(db: Queryable, hash: Buffer, lock: boolean): Promise<AuthorizationCode | undefined> {
  const { rows } = await db.query<{
    client_id: string;
    user_id: number;
    redirect_uri: string;
    scope: string | null;
    code_challenge: string | null;
    expires_at: Date;
    used_at: Date | null;
    session_id: string | null;
    nonce: string | null;
    auth_time: Date | null;
    sid: string | null;
    claims: RequestedClaims | null;
    audience: string | null;
    dpop_jkt: string | null;
    amr: string[] | null;
  }>(`SELECT * FROM authorization_codes WHERE code_hash = $1${lock ? ' FOR UPDATE' : ''}`, [hash]);
  const r = rows[0];
  return (
    r && {
      clientId: r.client_id,
      userId: r.user_id,
      redirectUri: r.redirect_uri,
      scope: r.scope,
      codeChallenge: r.code_challenge,
      expiresAt: r.expires_at,
      usedAt: r.used_at,
      sessionId: r.session_id,
      nonce: r.nonce,
      authTime: r.auth_time,
      sid: r.sid,
      claims: r.claims,
      audience: r.audience,
      dpopJkt: r.dpop_jkt,
      amr: r.amr,
    }
  );
}

/** A code is used once, whatever the outcome; `sessionId` is what it was exchanged for. */
export async function markCodeUsed(db: Queryable, hash: Buffer, sessionId: string | null): Promise<void> {
  await db.query('UPDATE authorization_codes SET used_at = now(), session_id = $2 WHERE code_hash = $1', [hash, sessionId]);
}

/** Whose pending (unexchanged) codes to end: one browser's, or a person's. */
export type CodeOwner = { sid: string } | { user: number };

/** Deletes pending authorization codes (a sign-out, a password change): exchanging one later finds nothing. */
export async function deletePendingCodes(db: Queryable, owner: CodeOwner): Promise<void> {
  const [column, value] = 'sid' in owner ? ['sid', owner.sid] : ['user_id', owner.user];
  await db.query(`DELETE FROM authorization_codes WHERE ${column} = $1 AND used_at IS NULL`, [value]);
}

/** Deletes codes that expired more than an hour ago. */
export async function purgeAuthorizationCodes(db: Queryable): Promise<void> {
  await db.query("DELETE FROM authorization_codes WHERE expires_at < now() - interval '1 hour'");
}
