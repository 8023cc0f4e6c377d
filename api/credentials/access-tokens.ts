// From a presented access token to its session. The session decides, for opaque
// tokens and JWTs alike: a closed or expired session's token is refused at once,
// however long the JWT's own `exp` would have let it live.
import type { Config } from '../config.js';
import type { Keyring } from './keyring.js';
import type { RecordCache } from '../cache/record-cache.js';
import { isUsable, type SessionRow } from '../store/sessions.js';
import { JwtError, looksLikeJwt, verifyJwtOnce } from './jwt.js';
import { tokenHashHex } from './tokens.js';
import { TXN_TOKEN_TYP } from './txn-tokens.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
  sessions: RecordCache<SessionRow>;
}

/** What checking an access token needs. */
export type TokenCheckServices = Pick<Needs, 'config' | 'keyring' | 'sessions'>;

export type TokenCheck = { session: SessionRow } | { problem: string };

export async function checkAccessToken(svc: TokenCheckServices, token: string, now = Date.now()): Promise<TokenCheck> {
  let session: SessionRow | undefined;
  if (looksLikeJwt(token)) {
    let claims: Record<string, unknown>;
    try {
      const verified = verifyJwtOnce(token, svc.keyring.find);
      // draft-ietf-oauth-transaction-tokens-10 §13.13: "A workload MUST NOT use a transaction token as an OAuth 2.0 Access Token."
      if (verified.header.typ === TXN_TOKEN_TYP) {
        return { problem: 'a Txn-Token is not an access token: send it in the Txn-Token header, beside an access token' };
      }
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
    session = await svc.sessions.get(tokenHashHex(token));
  }
  if (!session) return { problem: 'access token is unknown' };
  if (!session.active) return { problem: 'access token belongs to a closed session' };
  if (!isUsable(session, now)) return { problem: 'access token has expired' };
  return { session };
}
