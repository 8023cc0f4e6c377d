// grant_type=client_credentials (RFC 6749 §4.4): a confidential client gets a token for itself.
import { authenticateClient } from '../client-auth.js';
import { grantedAudience, grantedScope } from '../entitlements.js';
import { OAuthError } from '../errors.js';
import { audienceParam, scopeParam } from '../params.js';
import { mint } from '../tokens.js';
import type { GrantHandler } from './grant.js';

export const clientCredentials: GrantHandler = async ({ svc, params, presented }) => {
  const { resource: client, workload } = await authenticateClient(svc, presented, true);
  if (!client.grant_types.includes('client_credentials')) {
    throw new OAuthError('unauthorized_client', `client "${client.id}" may not use the client_credentials grant (see its grant_types)`);
  }
  const settings = client.auth?.client_credentials ?? {};
  const { session, response } = mint({
    type: 'client_credentials',
    origin: 'client_credentials',
    client,
    settings,
    audience: grantedAudience(client, audienceParam(params.audience)),
    scope: grantedScope(client, scopeParam(params.scope)),
    refresh: settings.refresh_token === true,
    // The session records which ServiceAccount (and Pod) obtained a workload's token.
    details: workload ? { workload } : null,
  }, svc.config.baseUrl, svc.keyring.active);
  // The answer leaves only once the session is committed: a token we sent always works.
  await svc.sessionWriter.insert(session);
  return response;
};
