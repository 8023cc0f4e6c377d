// POST /auth/token: one endpoint, a small handler per grant.
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { presentedClient, type OAuthRequest } from './client-auth.js';
import { OAuthError, invalidRequest } from './errors.js';
import { authorizationCode } from './grants/authorization-code.js';
import { clientCredentials } from './grants/client-credentials.js';
import type { GrantHandler } from './grants/grant.js';
import { refreshToken } from './grants/refresh-token.js';
import { tokenParams } from './params.js';
import type { TokenResponse } from './tokens.js';

export const grants = new Map<string, GrantHandler>([
  ['client_credentials', clientCredentials],
  ['refresh_token', refreshToken],
  ['authorization_code', authorizationCode],
]);

/** Answers a token request, counting tokens issued and errors by kind (the token metrics). */
export async function tokenRequest(svc: Services, request: OAuthRequest, body: unknown): Promise<TokenResponse> {
  try {
    const { grantType, response } = await grant(svc, request, body);
    svc.metrics.tokens.inc({ grant: grantType });
    return response;
  } catch (err) {
    if (err instanceof ApiError) svc.metrics.tokenErrors.inc({ error: err.code });
    throw err;
  }
}

async function grant(svc: Services, request: OAuthRequest, body: unknown): Promise<{ grantType: string; response: TokenResponse }> {
  const params = tokenParams(body);
  const grantType = params.grant_type;
  if (!grantType) throw invalidRequest('grant_type is required');
  const handler = grants.get(grantType);
  if (!handler) throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported (supported: ${[...grants.keys()].join(', ')})`);
  return { grantType, response: await handler({ svc, params, presented: presentedClient(request, params) }) };
}
