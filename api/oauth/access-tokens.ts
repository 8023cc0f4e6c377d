// From a presented access token to its session. The session decides, for opaque
// tokens and JWTs alike: a closed or expired session's token is refused at once,
// however long the JWT's own `exp` would have let it live.
import type { Services } from '../services.js';
import { closeTree, isUsable, type SessionRow } from '../store/sessions.js';
import { JwtError, looksLikeJwt, verifyJwt } from './jwt.js';
import { tokenHash } from './tokens.js';

export type TokenCheck = { session: SessionRow } | { problem: string };

export async function checkAccessToken(svc: Services, token: string, now = Date.now()): Promise<TokenCheck> {
  let session: SessionRow | undefined;
  if (looksLikeJwt(token)) {
    let claims: Record<string, unknown>;
    try {
      claims = verifyJwt(token, svc.keyring.find);
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

/** Closes a session and its refreshed descendants. */
export async function closeSessions(svc: Services, id: string): Promise<SessionRow[]> {
  const closed = await closeTree(svc.pool, id);
  for (const s of closed) forgetSession(svc, s);
  return closed;
}
