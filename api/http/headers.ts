// Headers on every answer of the box, from express or from the OAuth endpoints (./oauth-endpoints.ts).
// Bearer tokens, not cookies, authorize API calls, so any origin may call the API
// and the OAuth endpoints from a browser app (no credentials are ever allowed).
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
