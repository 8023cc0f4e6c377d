// RFC 7662 introspection and RFC 7009 revocation. Both need an authenticated
// client. A client introspects its own tokens, and others' only where an
// AccessPolicy allows it (a token is a credential: whoever learns that it is
// active, and whose, learns something); anything else is {"active": false}.
// Revocation only touches tokens issued to that client.
import type { BoxApiRequest } from '../policy/requests.js';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Policies } from '../policy/evaluate.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Audit } from '../audit.js';
import { findByRefreshToken, type SessionRow } from '../store/sessions.js';
import type { Client, PrincipalUser } from '../types.js';
import { checkAccessToken } from '../credentials/access-tokens.js';
import { confirmation } from '../credentials/tokens.js';
import { closeGrants } from '../credentials/closing.js';
import { authenticateClient, presentedClient, type OAuthRequest, type ClientAuthServices } from './client-auth.js';
import { actOf, subjectOf } from '../credentials/exchange/parties.js';
import { required, tokenParams } from './params.js';
import { tokenHash } from '../credentials/tokens.js';
import { signInOf } from '../credentials/acr.js';
import { shapedClaimsOfSession } from './shaped-claims.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  keyring: Keyring;
  policies: Policies;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
  /** The people as decisions see them: the person whose claims a client shapes. */
  users: RecordCache<PrincipalUser>;
}

/** What introspection and revocation need: the token checks, client authentication and closing. */
export type IntrospectionServices = Pick<Needs, 'config' | 'policies' | 'pool' | 'keyring' | 'sessions' | 'audit' | 'users'> &
  ClientAuthServices;

const refreshHolder = (svc: IntrospectionServices, token: string): Promise<SessionRow | undefined> =>
  findByRefreshToken(svc.pool, tokenHash(token));

const INACTIVE = { active: false };

/** The request object a policy sees for introspecting a token of client `owner` (docs/concepts/access-control.md). */
export function introspectionRequest(caller: Client, owner: string): BoxApiRequest {
  return {
    'request-method': 'post',
    uri: '/auth/introspect',
    params: { 'token/client': owner },
    'query-string': '',
    client: { ...caller },
    user: null,
    scope: null,
  };
}

async function mayIntrospect(svc: IntrospectionServices, caller: Client, owner: string): Promise<boolean> {
  if (owner === caller.id) return true;
  return (await svc.policies.decide({ clientId: caller.id, user: null }, introspectionRequest(caller, owner))).allowed;
}

/**
 * `sub`, and for an exchanged token whose subject is another issuer's, its `sub_id` (RFC 9493) and
 * `act` (RFC 8693 §4.1); for a person's sign-in, what it proved (RFC 9470 §6.2: "acr", "auth_time";
 * RFC 8176 "amr").
 */
function introspectedSubject(s: SessionRow): Record<string, unknown> {
  const subject = subjectOf(s);
  const act = actOf(s.details);
  const signIn = signInOf(s);
  return {
    sub: subject.sub,
    ...(subject.iss ? { sub_id: { format: 'iss_sub', iss: subject.iss, sub: subject.sub } } : {}),
    ...(act ? { act } : {}),
    ...(signIn ? { acr: signIn.acr, amr: signIn.amr, ...(signIn.authTime !== null ? { auth_time: signIn.authTime } : {}) } : {}),
  };
}

export async function introspect(svc: IntrospectionServices, request: OAuthRequest, body: unknown): Promise<Record<string, unknown>> {
  const params = tokenParams(body);
  const { resource: caller } = await authenticateClient(svc, presentedClient(request, params), 'required');
  const token = required(params, 'token');
  const check = await checkAccessToken(svc, token);
  if ('session' in check) {
    const s = check.session;
    if (!(await mayIntrospect(svc, caller, s.clientId))) return INACTIVE;
    return {
      // First: the claims the token's client shapes (Client.claims) never replace those below.
      ...(await shapedClaimsOfSession(svc, s)),
      active: true,
      // RFC 9449 §6.2: a bound token is introspected as DPoP, with the key it is bound to.
      token_type: s.jkt ? 'DPoP' : 'Bearer',
      // RFC 8705 §3.2: an introspection response carries the certificate's thumbprint as the JWT would.
      ...(s.jkt || s.x5t ? { cnf: confirmation(s) } : {}),
      client_id: s.clientId,
      ...introspectedSubject(s),
      iss: svc.config.baseUrl,
      iat: Math.floor(s.start.getTime() / 1000),
      ...(s.exp ? { exp: Math.floor(s.exp.getTime() / 1000) } : {}),
      ...(s.audience ? { aud: s.audience } : {}),
      ...(s.scope ? { scope: s.scope } : {}),
      jti: s.id,
    };
  }
  if (params.token_type_hint === 'refresh_token' || !token.includes('.')) {
    const holder = await refreshHolder(svc, token);
    const now = Date.now();
    if (holder && !(await mayIntrospect(svc, caller, holder.clientId))) return INACTIVE;
    if (holder?.active && !holder.refreshUsedAt && (!holder.refreshTokenExp || holder.refreshTokenExp.getTime() > now)) {
      return {
        active: true,
        token_type: 'refresh_token',
        client_id: holder.clientId,
        ...(holder.refreshTokenExp ? { exp: Math.floor(holder.refreshTokenExp.getTime() / 1000) } : {}),
      };
    }
  }
  return INACTIVE;
}

export async function revoke(svc: IntrospectionServices, request: OAuthRequest, body: unknown): Promise<void> {
  const params = tokenParams(body);
  const { resource: client } = await authenticateClient(svc, presentedClient(request, params), 'required');
  const token = required(params, 'token');
  const check = await checkAccessToken(svc, token);
  const session = 'session' in check ? check.session : await refreshHolder(svc, token);
  // RFC 7009 §2.2: an unknown token, or another client's, is answered as success.
  if (!session || session.clientId !== client.id) return;
  // RFC 7009 §2.1: revoking a refresh token SHOULD end the access tokens of the same grant too;
  // revoking an access token ends its session and those refreshed from it.
  const selector = 'session' in check ? { tree: session.id } : { family: session.family };
  await closeGrants(svc, selector, { how: 'revoke', by: { client: client.id } });
}
