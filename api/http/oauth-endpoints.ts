// The OAuth endpoints that take a body (POST /auth/token, /auth/introspect,
// /auth/revoke, /auth/device, /auth/par, /auth/register): the first routes of the box's router
// (./router.ts), each answering its request whole, with no middleware before it. They are what
// every in-cluster app calls, often once per request of its own. This is their one entry path: the
// request line is read here; the body (its size, content type, charset and
// compression) by ./request-body.ts, the one body reading of every route,
// under the rules below (PARAMETERS); their parameters in api/oauth/params.ts.
// Discovery and JWKS are ordinary routes (./routes/oauth.ts).
import { ApiError } from '../errors.js';
import type { OAuthRequest } from '../oauth/client-auth.js';
import { deviceAuthorization, type DeviceServices } from '../oauth/device.js';
import { invalidRequest, OAuthError } from '../credentials/errors.js';
import { introspect, revoke, type IntrospectionServices } from '../oauth/introspection.js';
import { pushAuthorizationRequest, type ParServices } from '../oauth/par.js';
import { registerClient } from '../oauth/registration.js';
import { LIMITS } from '../oauth/params.js';
import { tokenRequest, type TokenEndpointServices } from '../oauth/token-endpoint.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { AddressOf } from './client-address.js';
import { readBody, type BodyRules } from './request-body.js';
import { errorAnswer } from './errors.js';
import { COMMON_HEADERS, NO_STORE, PREFLIGHT_HEADERS } from './headers.js';
import type { RequestHandler, Router } from './router.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  metrics: Metrics;
  addressOf: AddressOf;
}

/** What the endpoints use, and the request's address and its errors (logged, counted). */
export type OAuthEndpointServices = TokenEndpointServices &
  IntrospectionServices &
  DeviceServices &
  ParServices &
  Pick<Needs, 'addressOf' | 'log' | 'metrics'>;

type Endpoint = (svc: OAuthEndpointServices, request: OAuthRequest, body: unknown) => Promise<unknown>;

/** The endpoints by path, which is also their route in metrics and logs. */
const ENDPOINTS = new Map<string, Endpoint>([
  ['/auth/token', tokenRequest],
  ['/auth/introspect', introspect],
  [
    '/auth/revoke',
    async (svc, request, body) => {
      await revoke(svc, request, body);
      return {};
    },
  ],
  ['/auth/device', deviceAuthorization],
  ['/auth/par', pushAuthorizationRequest],
  ['/auth/register', registerClient],
]);

/** Endpoints that answer 201: RFC 9126 §2.2, "the authorization server [...] returns a JSON response with the [...] HTTP status code 201". */
const CREATED = new Set(['/auth/par', '/auth/register']);

const RESPONSE_HEADERS = { ...COMMON_HEADERS, ...NO_STORE, 'Content-Type': 'application/json; charset=utf-8' };

/** Parameters as a form or as a JSON object; no body at all is no parameters (RFC 6749 §4.1.3 and its kin). */
const PARAMETERS: BodyRules = {
  accept: ['form', 'json'],
  otherType: (media, body) =>
    media === undefined && !body
      ? 'none'
      : invalidRequest(
          `send parameters as application/x-www-form-urlencoded or application/json (${media === undefined ? 'no Content-Type was sent' : `got ${media}`})`,
        ),
  formParameters: LIMITS.parameters,
  json: 'object',
  unsupportedCode: 'invalid_request',
};

/** RFC 7591 §3.1: "the client sends an HTTP POST to the client registration endpoint with a content type of "application/json"". */
const REGISTRATION: BodyRules = {
  ...PARAMETERS,
  accept: ['json'],
  otherType: (media) =>
    new OAuthError(
      'invalid_client_metadata',
      `send the client metadata as application/json (${media === undefined ? 'no Content-Type was sent' : `got ${media}`})`,
    ),
};

/**
 * The OAuth endpoints above as the first routes of `router` (./app.ts), each for every method: it
 * answers the request whole (its headers, its log line), and no handler after it runs.
 */
export function mountOAuthEndpoints(
  router: Router,
  svc: OAuthEndpointServices,
  logRequest: (method: string, url: string, route: string, status: number, seconds: number) => void,
): void {
  const handler: RequestHandler = (req, res) => {
    const url = req.url ?? '/';
    const route = req.path;
    const endpoint = ENDPOINTS.get(route)!;
    const method = req.method ?? 'GET';
    const started = process.hrtime.bigint();
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      const json = body === undefined ? '' : JSON.stringify(body);
      res.writeHead(status, { ...RESPONSE_HEADERS, ...headers, 'Content-Length': Buffer.byteLength(json) }).end(json);
      logRequest(method, url, route, status, Number(process.hrtime.bigint() - started) / 1e9);
    };
    const fail = (err: unknown): void => {
      const error = errorAnswer(err, svc, { method, path: route });
      answer(error.status, error.body, error.headers);
    };
    if (method === 'OPTIONS' && req.headers['access-control-request-method']) {
      req.resume();
      answer(204, undefined, PREFLIGHT_HEADERS);
      return;
    }
    if (method !== 'POST') {
      req.resume();
      fail(new ApiError(405, 'invalid_request', `${route} takes POST only`, { Allow: 'POST, OPTIONS' }));
      return;
    }
    const request: OAuthRequest = {
      authorization: req.headers.authorization,
      address: svc.addressOf(req),
      method,
      // The URL a DPoP proof names (RFC 9449 §4.3 step 9): the box's, as its clients address it.
      url: `${svc.config.baseUrl}${route}`,
      dpop: req.headersDistinct.dpop,
      certificate: () => svc.clientCertificates.of(req),
    };
    // RFC 9449 §8: with nonces required, an answer to a proof carries the nonce of the next.
    const nonce = request.dpop ? svc.dpop.freshNonce() : undefined;
    readBody(req, route === '/auth/register' ? REGISTRATION : PARAMETERS)
      .then((body = {}) => endpoint(svc, request, body))
      .then((body) => answer(CREATED.has(route) ? 201 : 200, body, nonce ? { 'DPoP-Nonce': nonce } : {}), fail);
  };
  for (const path of ENDPOINTS.keys()) router.all(path, handler);
}
