// Workload tokens as client authentication (RFC 7523): what an app sends, through
// openid-client or as a plain form.
import * as oauth from 'openid-client';
import { JWT_BEARER } from '../../api/credentials/workload/assertion.js';
import type { Box, JsonResponse } from './box.js';

/** openid-client client authentication that sends a ready-made assertion (the pod's token). */
export function assertionAuth(assertion: () => string): oauth.ClientAuth {
  return (_as, _client, body) => {
    body.set('client_assertion_type', JWT_BEARER);
    body.set('client_assertion', assertion());
  };
}

/** A client_credentials request authenticated by a workload token, as a form. */
export function assertionRequest(box: Box, assertion: string, clientId?: string): Promise<JsonResponse> {
  return box.form('/auth/token', {
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER,
    client_assertion: assertion,
    ...(clientId ? { client_id: clientId } : {}),
  });
}

/** The claims of a JWT, unverified (to find a session by its jti). */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
}
