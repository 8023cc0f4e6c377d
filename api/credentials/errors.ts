// Protocol errors of the token endpoint as typed objects (RFC 6749 §5.2). The
// status and headers follow from the code, so handlers only say what went wrong.
import { ApiError } from '../errors.js';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'invalid_token'
  | 'invalid_target'
  // RFC 8628 §3.5: the device grant's answers while a person has not decided
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  // RFC 9449 §5: a DPoP proof the token endpoint refuses, or one without its nonce
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce';

export class OAuthError extends ApiError {
  constructor(code: OAuthErrorCode, description: string, options: { basicAuthUsed?: boolean; dpopNonce?: string } = {}) {
    const status = code === 'invalid_client' || code === 'invalid_token' ? 401 : code === 'server_error' ? 500 : 400;
    const headers: Record<string, string> = {};
    // RFC 6749 §5.2: a failed Basic authentication answers with the scheme the client used.
    if (code === 'invalid_client' && options.basicAuthUsed) headers['WWW-Authenticate'] = 'Basic realm="boxauth"';
    // RFC 9449 §8: the nonce to use next, with use_dpop_nonce (and with other answers to a proof).
    if (options.dpopNonce) headers['DPoP-Nonce'] = options.dpopNonce;
    super(status, code, description, headers);
  }
}

export const invalidRequest = (d: string): OAuthError => new OAuthError('invalid_request', d);
export const invalidGrant = (d: string): OAuthError => new OAuthError('invalid_grant', d);
