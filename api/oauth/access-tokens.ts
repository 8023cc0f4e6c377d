// From a presented access token to its session. The session decides, for opaque
// tokens and JWTs alike: a closed or expired session's token is refused at once,
// however long the JWT's own `exp` would have let it live.
import type { Actor } from '../audit.js';
import type { Services } from '../services.js';
import type { Queryable } from '../db/pool.js';
import { closeFamily, closeForBrowser, closeTree, isUsable, type SessionRow } from '../store/sessions.js';
import { JwtError, looksLikeJwt, verifyJwt } from './jwt.js';
import { tokenHash } from './tokens.js';

export type TokenCheck = { session: SessionRow } | { problem: string };

export async function checkAccessToken(svc: Services, token: string, now = Date.now()): Promise<TokenCheck> {
  let session: SessionRow | undefined;
  if (looksLikeJwt(token)) {
    let claims: Record<string, unknown>;
    try {
      const verified = verifyJwt(token, svc.keyring.find);
      // An ID token (typ JWT) is for the client to read, never a credential for the API.
      if (verified.header.typ !== 'at+jwt') return { problem: 'the JWT is not an access token (typ at+jwt)' };
      claims = verified.claims;
    } catch (err) {
      return { problem: err instanceof JwtError ? err.message : 'malformed JWT' };
    }
    if (claims.iss !== svc.config.baseUrl) return { problem: 'JWT was issued by another issuer' };
    if (typeof claims.exp === 'number' && claims.exp * 1000 <= now) return { problem: 'access token has expired' };
    if (typeof claims.jti !== 'string') return { problem: 'JWT has no session (jti)' };
    session = await svc.sessions.get(claims.jti);
    if (session?.accessTokenHash) session = undefined; // that session's token is not a JWT
  } else {
    session = await svc.sessions.get(tokenHash(token).toString('hex'));
  }
  if (!session) return { problem: 'access token is unknown' };
  if (!session.active) return { problem: 'access token belongs to a closed session' };
  if (!isUsable(session, now)) return { problem: 'access token has expired' };
  return { session };
}

/**
 * Drops a session from this process's cache at once; other processes hear of the
 * change through the change feed.
 */
export function forgetSession(svc: Services, s: SessionRow): void {
  svc.sessions.invalidate(s.id, ...(s.accessTokenHash ? [s.accessTokenHash.toString('hex')] : []));
}

/** Why sessions are closed, and by whom: what the audit records of it. */
export interface Closing {
  how: 'sign-out' | 'revoke' | 'logout' | 'api' | 'refresh-token-reuse' | 'code-replay';
  by: Actor;
}

/** What every close does after the database: the caches forget the sessions, the audit records them. */
function closed(svc: Services, rows: SessionRow[], closing: Closing): SessionRow[] {
  for (const s of rows) forgetSession(svc, s);
  if (rows.length) svc.audit.record({ event: 'session_closed', sessions: rows.map((s) => s.id), ...closing });
  return rows;
}

/** Closes a session and its refreshed descendants. */
export async function closeSessions(svc: Services, id: string, closing: Closing, db: Queryable = svc.pool): Promise<SessionRow[]> {
  return closed(svc, await closeTree(db, id), closing);
}

/** Closes the token sessions issued through a signed-in browser session (sign-out, RP-initiated logout). */
export async function closeBrowserSessions(svc: Services, sid: string, closing: Closing): Promise<SessionRow[]> {
  return closed(svc, await closeForBrowser(svc.pool, sid), closing);
}

/**
 * Closes every session of a family: the grant's first session and all refreshed from it.
 * The refresh token may be held by any of them (the first one, without rotation), so this
 * is what ends a grant, whichever of its access tokens was presented.
 */
export async function closeFamilySessions(
  svc: Services,
  family: string,
  closing: Closing,
  db: Queryable = svc.pool,
): Promise<SessionRow[]> {
  return closed(svc, await closeFamily(db, family), closing);
}
