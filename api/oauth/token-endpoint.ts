// POST /auth/token: one endpoint, a small module per grant (./grants/). Every
// request takes the same steps (node-oidc-provider's token action does the same):
// the grant by grant_type, its required parameters, client authentication as the
// grant declares it, whether the client may use the grant; then the grant's own
// handler. Metrics count issued tokens and refusals here, once for all grants.
import { noteRequest } from '../tracing.js';
import { ApiError } from '../errors.js';
import type { Audit } from '../audit.js';
import type { RefreshHolders } from '../cache/refresh-holders.js';
import { observeLatency, type Metrics } from '../metrics.js';
import { type Dpop, keyOfProof } from '../credentials/dpop/check.js';
import {
  addressAttempt,
  authenticateClient,
  type AuthenticatedClient,
  confidential,
  namedOnly,
  presentedClient,
  type ClientAuthServices,
  type OAuthRequest,
} from './client-auth.js';
import { certificateBinding } from './certificate-auth.js';
import { dpopAlgRefusal, mustSendDpopProof } from './fapi2.js';
import { OAuthError, invalidRequest } from '../credentials/errors.js';
import { notListedInGrantTypes } from './grant-types.js';
import { sectorRefusal } from './sector-identifier.js';
import { authorizationCode } from './grants/authorization-code.js';
import { clientCredentials } from './grants/client-credentials.js';
import { deviceCode } from './grants/device-code.js';
import { notIssuedToClient, type DpopBinding, type Grant, type GrantServices, type Issued } from './grants/grant.js';
import { refreshToken } from './grants/refresh-token.js';
import { tokenExchange } from './grants/token-exchange.js';
import { required, tokenParams } from './params.js';
import type { TokenResponse } from '../credentials/tokens.js';
import type { SessionRow } from '../store/sessions.js';
import { hookedClaims, type TokenHookServices } from './token-hooks.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  audit: Audit;
  metrics: Metrics;
  refreshHolders: RefreshHolders;
  dpop: Dpop;
}

/** What the token endpoint uses: client authentication, the grants, and the token metrics. */
export type TokenEndpointServices = ClientAuthServices & GrantServices & Pick<Needs, 'metrics' | 'dpop'> & Pick<TokenHookServices, 'hooks'>;

export const grants = new Map<string, Grant>(
  [clientCredentials, refreshToken, authorizationCode, deviceCode, tokenExchange].map((g) => [g.type, g]),
);

/** What is known of a token request so far, for the audit of a refusal: its grant, and the client it names. */
export interface TokenAttempt {
  grant?: string;
  client?: string;
}

/** What the token path counts and records with. */
export type TokenPathServices = Pick<Needs, 'audit' | 'metrics' | 'refreshHolders'>;

/** Answers a token request through the token path. */
export async function tokenRequest(svc: TokenEndpointServices, request: OAuthRequest, body: unknown): Promise<TokenResponse> {
  const attempt: TokenAttempt = {};
  return issuedThroughTokenPath(svc, attempt, request.address, () => issue(svc, request, body, attempt));
}

/**
 * Issues a token the way every grant does, counted (the token metrics) and recorded (the audit:
 * who got which session, or who was refused and why; never the token) once: for the token
 * endpoint, and for the box's own code exchange at an app's sign-in (api/http/routes/app-sign-in.ts).
 * `attempt` is filled by `issuing` as it learns the request (`grant` before anything is issued).
 */
export async function issuedThroughTokenPath(
  svc: TokenPathServices,
  attempt: TokenAttempt,
  address: string,
  issuing: () => Promise<Issued>,
): Promise<TokenResponse> {
  const started = process.hrtime.bigint();
  try {
    const { session, response } = await issuing();
    const grant = attempt.grant!;
    svc.metrics.tokens.inc({ grant });
    observeLatency(svc.metrics.tokenDuration, { grant }, Number(process.hrtime.bigint() - started) / 1e9);
    svc.refreshHolders.remember(session); // when it holds a refresh token: its first use needs no read
    svc.audit.record({
      event: 'token_issued',
      client: session.clientId,
      grant,
      session: session.id,
      ...(session.userId !== null ? { user: String(session.userId) } : {}),
      ...clientAuthOf(session),
    });
    return response;
  } catch (err) {
    if (err instanceof ApiError) {
      svc.metrics.tokenErrors.inc({ error: err.code });
      svc.audit.record({ event: 'token_refused', ...attempt, error: err.code, address });
    }
    throw err;
  }
}

/** How the session's client proved who it is (its details keep it, ../credentials/tokens.ts mint), for the audit. */
function clientAuthOf(session: SessionRow): { client_auth_method?: string } {
  const method = session.details?.client_auth_method;
  return typeof method === 'string' ? { client_auth_method: method } : {};
}

/** Issues what the request asks for; fills `attempt` with what it learnt of the request, for the audit of a refusal. */
async function issue(
  svc: ClientAuthServices & GrantServices & Pick<Needs, 'dpop'> & Pick<TokenHookServices, 'hooks'>,
  request: OAuthRequest,
  body: unknown,
  attempt: TokenAttempt,
): Promise<Issued> {
  const params = tokenParams(body);
  const grantType = params.grant_type;
  if (!grantType) throw invalidRequest('grant_type is required');
  const grant = grants.get(grantType);
  if (!grant)
    throw new OAuthError(
      'unsupported_grant_type',
      `grant_type "${grantType}" is not supported (supported: ${[...grants.keys()].join(', ')})`,
    );
  attempt.grant = grant.type;
  noteRequest({ 'oauth.grant_type': grant.type });
  for (const name of grant.requiredParameters) required(params, name);
  const presented = presentedClient(request, params);
  if (presented.clientId) attempt.client = presented.clientId;
  if (grant.credential && namedOnly(presented)) {
    // client_id alone authenticates nobody. Until the code or token presented
    // proves to be that client's, the answer is the one for a code or token of
    // another client (RFC 6749 §5.2: invalid_grant, "issued to another client"),
    // whether the client exists, has a secret or may use the grant, or not: else
    // the answers would tell which ids exist and what they are. A miss counts
    // against the address, as a wrong secret does.
    const { name, issuedTo } = grant.credential;
    const clientId = presented.clientId;
    const own = await addressAttempt(svc, presented.address, async () => ((await issuedTo(svc, params)) === clientId ? true : undefined));
    if (!own) throw notIssuedToClient(name);
  }
  const client = await authenticateClient(svc, presented, grant.clientAuthentication, undefined, grant.assertionSpending);
  if (!grant.permits(client.resource)) throw notListedInGrantTypes(client.resource, grant.type);
  // Every grant but the client's own token may carry a person's sub: a pairwise client's comes from
  // its sector, which its sector_identifier_uri must vouch for first (./sector-identifier.ts).
  const sector = grant.type === clientCredentials.type ? undefined : await sectorRefusal(svc, client.resource);
  if (sector) throw invalidRequest(sector);
  const certificate = certificateBinding(request, client);
  const dpop = await proofOf(svc, request, client, certificate !== undefined);
  const unproven = namedOnly(presented) && confidential(client);
  // The Hooks are asked before the grant's transaction: no connection waits for them.
  const hooked = await hookedClaims(
    svc,
    grant.type,
    client.resource,
    async () =>
      grant.prospect ? grant.prospect(svc, params, client.resource) : { userId: null, scope: null, audience: null, details: null },
    grant.hookRefusal,
    { access: true, id: grant.issuesIdTokens !== false },
  );
  return grant.handle({
    svc,
    params,
    client,
    ...(dpop ? { dpop } : {}),
    ...(certificate ? { certificate } : {}),
    ...(unproven ? { unproven } : {}),
    ...(hooked ? { hooked } : {}),
  });
}

/**
 * The key of the request's DPoP proof (RFC 9449 §5), once the proof is checked: what the
 * tokens issued are bound to. No proof, no binding; unless the client must send one
 * (dpop_bound_access_tokens: "the authorization server MUST reject token requests from
 * this client that do not contain the DPoP header", §5.2). Checked after the client is
 * authenticated: a stranger's proof costs no write to the replay cache.
 */
async function proofOf(
  svc: Pick<Needs, 'dpop'>,
  request: OAuthRequest,
  client: AuthenticatedClient,
  certificateBound: boolean,
): Promise<DpopBinding | undefined> {
  const jkt = await keyOfProof(svc.dpop, request);
  if (jkt === undefined) {
    if (!mustSendDpopProof(client.resource, certificateBound)) return undefined;
    const nonce = svc.dpop.freshNonce();
    const why = client.resource.dpop_bound_access_tokens
      ? 'its dpop_bound_access_tokens is true'
      : 'it is held to FAPI 2.0, whose access tokens are sender-constrained, and sent no client certificate';
    throw new OAuthError(
      'invalid_dpop_proof',
      `client "${client.resource.id}" must send a DPoP proof (the DPoP header): ${why}`,
      nonce ? { dpopNonce: nonce } : {},
    );
  }
  const algRefusal = dpopAlgRefusal(client.resource, request.dpop);
  if (algRefusal) throw algRefusal;
  // RFC 9449 §5: a public client's refresh token is bound to its key; a client that authenticates has its credentials.
  return { jkt, bindsRefresh: client.method === 'none' };
}
