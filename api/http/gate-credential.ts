// The credential of a request at a gate, read by the doors that take it from HTTP headers
// (./gate-endpoints.ts for the gateways, api/grpc/check.ts for Envoy's ext_authz) and handed
// to the decision point (api/decision/engine.ts), which reads no header itself.
import { parseCookies } from '../cookies.js';
import { presentedIn } from '../credentials/dpop/resource.js';
import type { Credential } from '../decision/engine.js';

/**
 * A token in Authorization (RFC 6750 §2.1 "Authorization: Bearer", RFC 9449 §7.1 "Authorization:
 * DPoP"), else the request's cookies (RFC 6265 §5.4), the app's sign-in cookie among them.
 */
export function credentialFrom(authorization: string | undefined, cookieHeader: string | undefined): Credential {
  const presented = authorization === undefined ? undefined : presentedIn(authorization);
  if (presented) return presented.scheme === 'DPoP' ? { dpop: presented.token } : { bearer: presented.token };
  return { cookies: parseCookies(cookieHeader) };
}
