// Headers on every answer of the box, from the routes or from the OAuth endpoints (./oauth-endpoints.ts).
// Bearer tokens, not cookies, authorize API calls, so any origin may call the API
// and the OAuth endpoints from a browser app (no credentials are ever allowed).
import type { Config } from '../config.js';

export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "frame-ancestors 'none'",
  'Access-Control-Allow-Origin': '*',
};

/** The answer to a CORS preflight (OPTIONS with Access-Control-Request-Method), wherever it is asked. */
export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept',
  'Access-Control-Max-Age': '600',
};

/** RFC 6749 §5.1: answers of the OAuth endpoints must not be cached. */
export const NO_STORE: Readonly<Record<string, string>> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * Strict-Transport-Security for a box whose base URL is https (RFC 6797), or
 * undefined. It goes on every answer, also when TLS ends at a proxy in front:
 * the browser reads it over https, and a user agent ignores it over plain HTTP
 * (§8.1: "If an HTTP response is received over insecure transport, the UA MUST
 * ignore any present STS header field(s)"). includeSubDomains only when asked:
 * it binds every host under the box's name, which the box cannot speak for.
 */
export function strictTransportSecurity(config: Pick<Config, 'baseUrl' | 'hsts'>): string | undefined {
  if (!config.baseUrl.startsWith('https:')) return undefined;
  return `max-age=${config.hsts.maxAgeSeconds}${config.hsts.includeSubDomains ? '; includeSubDomains' : ''}`;
}
