// The parameters of the OAuth endpoints (token, introspection, revocation), read
// once, as single strings, within limits. Every grant and endpoint takes its
// parameters from here, so a limit holds everywhere or nowhere.
import { isPrototypeKey, textProblem } from '../input.js';
import { OAuthError, invalidRequest } from '../credentials/errors.js';

export type Params = Record<string, string | undefined>;

/** Upper bounds of the values the endpoints accept (characters). */
export const LIMITS = {
  /** Parameters in one request, a parameter's name, and any value (a client assertion is the longest). */
  parameters: 100,
  name: 128,
  value: 8192,
  /** One audience: a URI or a name (RFC 8707 §2 has the resource be a URI; `audience` is looser). */
  audience: 512,
  /** The whole scope parameter, and one scope token in it (RFC 6749 §3.3). */
  scope: 1024,
  scopeToken: 128,
} as const;

/** The request parameters as strings; anything else is a malformed request (RFC 6749 §3.2). */
export function tokenParams(body: unknown): Params {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('the request body must be a form or a JSON object');
  const entries = Object.entries(body as Record<string, unknown>);
  if (entries.length > LIMITS.parameters) throw invalidRequest(`more than ${LIMITS.parameters} parameters`);
  const params: Params = Object.create(null) as Params;
  for (const [name, value] of entries) {
    const nameProblem = textProblem(name, LIMITS.name);
    if (nameProblem || isPrototypeKey(name)) throw invalidRequest(`a parameter name ${nameProblem ?? 'is not allowed'}`);
    if (Array.isArray(value) && name === 'resource') throw severalResources();
    if (Array.isArray(value)) throw invalidRequest(`parameter ${name} was sent more than once`);
    if (typeof value !== 'string') throw invalidRequest(`parameter ${name} must be a string`);
    const problem = textProblem(value, LIMITS.value);
    if (problem) throw invalidRequest(`parameter ${name} ${problem}`);
    params[name] = value;
  }
  return params;
}

export function required(params: Params, name: string): string {
  const value = params[name];
  if (value === undefined || value === '') throw invalidRequest(`${name} is required`);
  return value;
}

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** The scope parameter as its tokens (RFC 6749 §3.3), or null when absent or empty. */
export function scopeParam(value: string | undefined): string[] | null {
  if (value === undefined || value.trim() === '') return null;
  if (value.length > LIMITS.scope) throw new OAuthError('invalid_scope', `scope is longer than ${LIMITS.scope} characters`);
  const tokens = [...new Set(value.split(' ').filter(Boolean))];
  for (const token of tokens) {
    if (token.length > LIMITS.scopeToken) throw new OAuthError('invalid_scope', `a scope is longer than ${LIMITS.scopeToken} characters`);
    if (!SCOPE_TOKEN.test(token)) {
      throw new OAuthError(
        'invalid_scope',
        'scope must be scope tokens separated by single spaces, each of printable ASCII without " or \\',
      );
    }
  }
  return tokens;
}

// C0/C1 controls and DEL: no audience of a real service holds one.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** A target parameter (audience or resource) within its limits, or null when absent or empty. */
function targetParam(name: 'audience' | 'resource', value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (value.length > LIMITS.audience) throw new OAuthError('invalid_target', `${name} is longer than ${LIMITS.audience} characters`);
  if (CONTROL.test(value)) throw new OAuthError('invalid_target', `${name} must not hold control characters`);
  return value;
}

/** The audience parameter, or null when absent or empty. */
export function audienceParam(value: string | undefined): string | null {
  return targetParam('audience', value);
}

// RFC 3986 §4.3: absolute-URI = scheme ":" hier-part [ "?" query ], of the URI characters only
// (unreserved, reserved, and "%" starting a percent-encoding); "#" starts a fragment.
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~:/?[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

/**
 * The resource parameter (RFC 8707 §2, RFC 8693 §2.1), or null when absent or empty: "MUST be an
 * absolute URI [...] MUST NOT include a fragment component". Its query "SHOULD NOT" be there, but
 * "it is recognized that there are cases that make a query component a useful and necessary part
 * of the resource parameter": one is taken. Anything else is invalid_target, at every endpoint that
 * reads it, before it becomes an audience.
 */
export function resourceParam(value: string | undefined): string | null {
  const resource = targetParam('resource', value);
  if (resource === null) return null;
  if (resource.includes('#')) throw new OAuthError('invalid_target', 'resource must not have a fragment (#…) (RFC 8707 §2)');
  if (!ABSOLUTE_URI.test(resource) || !URL.canParse(resource)) {
    throw new OAuthError('invalid_target', 'resource must be an absolute URI, such as https://api.example.com (RFC 8707 §2)');
  }
  return resource;
}

/**
 * Several `resource` parameters in one request. RFC 8707 §2: "Multiple resource parameters MAY be
 * used to indicate that the requested token is intended to be used at multiple resources"; but
 * §3: "using only a single resource parameter is encouraged. If a bearer token has multiple
 * intended recipients (audiences), then the token is valid at more than one protected resource
 * and can be used by any one of those resources to access any of the others. [...] Furthermore,
 * an authorization server may be unwilling or unable to fulfill a token request with multiple
 * resources." A box token has one audience (its session keeps one), and each App's gate must be
 * able to trust that a token it accepts was meant for it alone: one resource per request, the
 * same at the authorization endpoint, PAR and the token endpoint, so that a grant never holds
 * resources a token request would then have to choose between.
 */
export const severalResources = (): OAuthError =>
  new OAuthError(
    'invalid_target',
    'name one resource per request: each token is for one resource (RFC 8707 §3); ask for a token per resource',
  );
