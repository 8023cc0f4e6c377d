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
  | 'expired_token';

export class OAuthError extends ApiError {
  constructor(code: OAuthErrorCode, description: string, options: { basicAuthUsed?: boolean } = {}) {
    const status = code === 'invalid_client' || code === 'invalid_token' ? 401 : code === 'server_error' ? 500 : 400;
    const headers: Record<string, string> = {};
    // RFC 6749 §5.2: a failed Basic authentication answers with the scheme the client used.
    if (code === 'invalid_client' && options.basicAuthUsed) headers['WWW-Authenticate'] = 'Basic realm="boxauth"';
    super(status, code, description, headers);
  }
}

export const invalidRequest = (d: string): OAuthError => new OAuthError('invalid_request', d);
export const invalidGrant = (d: string): OAuthError => new OAuthError('invalid_grant', d);
