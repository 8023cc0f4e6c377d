// STUB until helper OAUTH's module lands (branch idp-oauth): the declared contract only.
import type { IdentityProvider } from '../../types.js';
import { UpstreamError, type UpstreamProfile } from './profile.js';

export interface UpstreamRequest {
  state: string;
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
}

export async function authorizationUrl(_provider: IdentityProvider, _request: UpstreamRequest): Promise<URL> {
  throw new UpstreamError('unavailable', 'not built yet');
}

export async function finishAuthorization(
  _provider: IdentityProvider,
  _secret: string | undefined,
  _request: UpstreamRequest,
  _callback: URL,
  _now?: () => number,
): Promise<UpstreamProfile> {
  throw new UpstreamError('unavailable', 'not built yet');
}
