// POST /auth/token: one endpoint, a small module per grant (./grants/). Every
// request takes the same steps (node-oidc-provider's token action does the same):
// the grant by grant_type, its required parameters, client authentication as the
// grant declares it, whether the client may use the grant; then the grant's own
// handler. Metrics count issued tokens and refusals here, once for all grants.
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { authenticateClient, presentedClient, type OAuthRequest } from './client-auth.js';
import { deviceCode } from './device.js';
import { OAuthError, invalidRequest } from './errors.js';
import { authorizationCode } from './grants/authorization-code.js';
import { clientCredentials } from './grants/client-credentials.js';
import type { Grant } from './grants/grant.js';
import { refreshToken } from './grants/refresh-token.js';
import { required, tokenParams } from './params.js';
import type { TokenResponse } from './tokens.js';

export const grants = new Map<string, Grant>([clientCredentials, refreshToken, authorizationCode, deviceCode].map((g) => [g.type, g]));

/** Answers a token request, counting tokens issued and errors by kind (the token metrics). */
export async function tokenRequest(svc: Services, request: OAuthRequest, body: unknown): Promise<TokenResponse> {
  try {
    const { grant, response } = await issue(svc, request, body);
    svc.metrics.tokens.inc({ grant: grant.type });
    return response;
  } catch (err) {
    if (err instanceof ApiError) svc.metrics.tokenErrors.inc({ error: err.code });
    throw err;
  }
}

async function issue(svc: Services, request: OAuthRequest, body: unknown): Promise<{ grant: Grant; response: TokenResponse }> {
  const params = tokenParams(body);
  const grantType = params.grant_type;
  if (!grantType) throw invalidRequest('grant_type is required');
  const grant = grants.get(grantType);
  if (!grant)
    throw new OAuthError(
      'unsupported_grant_type',
      `grant_type "${grantType}" is not supported (supported: ${[...grants.keys()].join(', ')})`,
    );
  for (const name of grant.requiredParameters) required(params, name);
  const client = await authenticateClient(svc, presentedClient(request, params), grant.clientAuthentication);
  if (!grant.permits(client.resource)) {
    throw new OAuthError('unauthorized_client', `client "${client.resource.id}" may not use the ${grant.type} grant (see its grant_types)`);
  }
  return { grant, response: await grant.handle({ svc, params, client }) };
}
