// The decision point's HTTP doors for gateways, mounted at /authz ahead of every other handler
// (as ./oauth-endpoints.ts is for the token endpoint: a gateway asks once per request of every
// app it guards), each answering its request whole. Each reads its gateway's way of sending the original request into a
// GateRequest and writes the one decision (api/decision/engine.ts) back:
//
// - HTTP external authorization (Envoy's http_service, Gateway API ExternalAuth):
//   ANY /authz/http/<app>/<original path>; allow is exactly 200, with the caller in
//   headers; no or a bad token 401 with WWW-Authenticate; refused 403.
// - forward-auth (Traefik forwardAuth, Caddy forward_auth, NGINX auth_request):
//   /authz/forward-auth[/<app>], the original request in X-Forwarded-Method/-Proto/
//   -Host/-Uri (Traefik, Caddy), X-Original-URI/-Method (NGINX) or X-Original-URL/
//   -Method (ingress-nginx): one of the three, never two (see forwarded()).
//   A person without a session gets 302 to the app's sign-in; with `?signin=401`
//   (NGINX, whose auth_request cannot pass a redirect on) 401 and the address in
//   X-Boxauth-Sign-In.
//
// Both read the client certificate the gateway terminated (mutual TLS, RFC 8705 §3: what a
// certificate-bound token is checked against) from BOXAUTH_CLIENT_CERT_HEADER, believed from
// BOXAUTH_TRUSTED_PROXIES only (./client-certificate.ts).
//
// Both read the original request's body when the gateway sends it (Envoy's http_service
// with_request_body; NGINX with its body read first, proxy_pass_request_body on), up to
// BOXAUTH_GATE_BODY_BYTES, for its JSON-RPC envelope (api/decision/jsonrpc.ts): an MCP
// client's tool calls are decided one by one.
//
// No CORS preflight is answered here: an OPTIONS request at an app is the app's, and
// its policies decide it like any other. The people's side of an app (sign-in at
// <app>/.boxauth/*) is in ./routes/app-sign-in.ts; AuthZEN in ./routes/authzen.ts;
// Envoy's gRPC door in api/grpc/ext-authz.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../errors.js';
import { appCookieAttributes } from '../decision/app-sign-in.js';
import { decide, type Credential, type Decision, type GateRequest } from '../decision/engine.js';
import type { GateBody } from '../decision/jsonrpc.js';
import { credentialFrom } from './gate-credential.js';
import { refusalOf } from './refusal.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { Decisions } from '../decision/record.js';
import { requestLineProblem } from './edge.js';
import { doorError, errorAnswer } from './errors.js';
import { COMMON_HEADERS } from './headers.js';
import { PAGE_HEADERS } from './pages.js';
import type { RequestHandler } from './router.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  metrics: Metrics;
  decisions: Decisions;
}

export type GateEndpointServices = Parameters<typeof decide>[0] & Pick<Needs, 'config' | 'decisions' | 'metrics'>;

type LogRequest = (method: string, url: string, route: string, status: number, seconds: number) => void;

const HTTP_DOOR = /^\/authz\/http\/([a-z0-9][-a-z0-9]*)(\/[^?]*)?(\?.*)?$/;
const FORWARD_AUTH = /^\/authz\/forward-auth(?:\/([^/?]+))?(\?.*)?$/;

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function headersOf(req: IncomingMessage): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) out[name] = first(value);
  return out;
}

type Original = Pick<GateRequest, 'method' | 'host' | 'scheme' | 'target'>;

/**
 * ingress-nginx's X-Original-URL (`$scheme://$host$request_uri`) split into its origin and its
 * path and query as sent. Not through `new URL()`: WHATWG parsing resolves `..` and `%2e%2e`,
 * turns `\` into `/`, so the policies would test a path other than the one the app is sent
 * (`/admin/%2e%2e/public` as `/public`); readTarget() refuses such a path instead.
 */
function originalUrl(value: string): { scheme: string; host: string; target: string } | undefined {
  const match = /^(https?):\/\/([A-Za-z0-9.-]+(?::\d{1,5})?|\[[0-9A-Fa-f:.]+\](?::\d{1,5})?)([/?#].*)?$/i.exec(value);
  if (!match) return undefined;
  const scheme = match[1]!.toLowerCase();
  let host: string;
  try {
    host = new URL(`${scheme}://${match[2]!}`).host; // lower case, without the default port
  } catch {
    return undefined;
  }
  const rest = match[3] ?? '/';
  return { scheme, host, target: rest.startsWith('/') ? rest : `/${rest}` };
}

/** RFC 9110 §9.1: a method is a token. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;

/**
 * The original request's method, from `header`, which the gateway that sends `uriHeader` sets
 * (Traefik and Caddy always, NGINX as the guide configures it). Without it the box cannot know
 * what is asked: deciding as if GET would let a DELETE through a read-only policy, so it is
 * refused as a missing URI is.
 */
function methodIn(h: Record<string, string | undefined>, header: string, uriHeader: string): string {
  const method = h[header.toLowerCase()];
  if (method === undefined) {
    throw new ApiError(
      400,
      'invalid_request',
      `send the original request's method in ${header}, beside ${uriHeader} (Traefik and Caddy send X-Forwarded-Method; NGINX: proxy_set_header X-Original-Method $request_method)`,
    );
  }
  if (!METHOD.test(method)) throw new ApiError(400, 'invalid_request', `${header} is not an HTTP method (a token, such as GET)`);
  return method.toUpperCase();
}

/**
 * The original request as forward-auth gateways send it, each in headers of its own: Traefik and
 * Caddy in X-Forwarded-Uri (with X-Forwarded-Method, -Host, -Proto); NGINX as docs/guides/guard-your-apps.md configures
 * it in X-Original-URI (with X-Original-Method, and Host); ingress-nginx in X-Original-URL (with
 * X-Original-Method). A gateway sets its own and passes the client's other headers on as they
 * came, so only the headers of the one that names the request are read, and a request named by
 * two is refused: one of them is the client's, and nothing says which.
 */
function forwarded(h: Record<string, string | undefined>): Original {
  const named = ['X-Forwarded-Uri', 'X-Original-URI', 'X-Original-URL'].filter((name) => h[name.toLowerCase()] !== undefined);
  if (named.length > 1) {
    throw new ApiError(
      400,
      'invalid_request',
      `the original request is named both in ${named.join(' and in ')}: a gateway sends one of them (X-Forwarded-Uri: Traefik, Caddy; X-Original-URI: NGINX; X-Original-URL: ingress-nginx), another came from the client`,
    );
  }
  switch (named[0]) {
    case 'X-Forwarded-Uri':
      return {
        method: methodIn(h, 'X-Forwarded-Method', named[0]),
        host: h['x-forwarded-host'] ?? h.host ?? '',
        scheme: h['x-forwarded-proto'],
        target: h['x-forwarded-uri']!,
      };
    case 'X-Original-URI':
      return { method: methodIn(h, 'X-Original-Method', named[0]), host: h.host ?? '', target: h['x-original-uri']! };
    case 'X-Original-URL': {
      const original = originalUrl(h['x-original-url']!);
      if (!original) throw new ApiError(400, 'invalid_request', 'X-Original-URL is not an http(s) URL: <scheme>://<host[:port]><path>');
      return { method: methodIn(h, 'X-Original-Method', named[0]), ...original };
    }
    default:
      throw new ApiError(
        400,
        'invalid_request',
        'send the original request: X-Forwarded-Uri (Traefik, Caddy), X-Original-URI (NGINX) or X-Original-URL (ingress-nginx), with its method and host',
      );
  }
}

/**
 * The body the gateway sent with the check, read up to `limit` bytes (the rest is drained, not
 * kept); none when the request has none. Not whole when it is longer than `limit`, or when Envoy
 * says it sent only part of it (allow_partial_message: x-envoy-auth-partial-body: true).
 */
function readBody(req: IncomingMessage, limit: number): Promise<GateBody | undefined> {
  const length = req.headers['content-length'];
  if ((length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined) {
    req.resume();
    return Promise.resolve(undefined);
  }
  const cut = (first(req.headers['x-envoy-auth-partial-body']) ?? '').toLowerCase().includes('true');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let read = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      if (read + chunk.length > limit) {
        over = true; // decided now: what follows is drained unread
        chunks.push(chunk.subarray(0, limit - read));
        resolve({ bytes: Buffer.concat(chunks), whole: false });
        return;
      }
      chunks.push(chunk);
      read += chunk.length;
    });
    req.on('end', () => {
      if (!over) resolve({ bytes: Buffer.concat(chunks), whole: !cut });
    });
    req.on('error', reject);
  });
}

/** A decision as an HTTP gate answers it: 200 and the caller's headers, or the refusal for the client. Returns the status. */
function writeDecision(box: string, res: ServerResponse, d: Decision, wantsHtml: boolean, signIn401: boolean): number {
  const headers: Record<string, string | string[]> = { ...COMMON_HEADERS, 'X-Boxauth-Decision': d.id, 'Cache-Control': 'no-store' };
  if (d.clearCookie) headers['Set-Cookie'] = `${d.clearCookie}=${appCookieAttributes(d.clearCookie.startsWith('__Host-'), 0)}`;
  if (d.allowed) {
    res.writeHead(200, { ...headers, ...d.upstream, 'Content-Length': 0 }).end();
    return 200;
  }
  if (d.challenge) headers['WWW-Authenticate'] = d.challenge;
  if (d.dpopNonce) headers['DPoP-Nonce'] = d.dpopNonce;
  if (d.retryAfter) headers['Retry-After'] = String(d.retryAfter);
  if (d.location) {
    headers['X-Boxauth-Sign-In'] = d.location;
    if (!signIn401) {
      res.writeHead(302, { ...headers, Location: d.location, 'Content-Length': 0 }).end();
      return 302;
    }
  }
  const refusal = refusalOf(box, d, wantsHtml, d.status === 302 ? 401 : d.status);
  const type =
    refusal.kind === 'html'
      ? { ...PAGE_HEADERS, 'Content-Type': 'text/html; charset=utf-8' }
      : { 'Content-Type': 'application/json; charset=utf-8' };
  res.writeHead(refusal.status, { ...headers, ...type, 'Content-Length': Buffer.byteLength(refusal.body) }).end(refusal.body);
  return refusal.status;
}

/** The door a request line is for, with its app and the original request; undefined: not a gate's. */
function doorOf(
  req: IncomingMessage,
  url: string,
): { route: string; door: GateRequest['door']; app: string | undefined; original: () => Original; signIn401: boolean } | undefined {
  const http = HTTP_DOOR.exec(url);
  if (http) {
    const host = first(req.headers.host) ?? '';
    return {
      route: '/authz/http/:app',
      door: 'http',
      app: http[1],
      // Envoy appends the original path and query to the prefix.
      original: () => ({
        method: req.method ?? 'GET',
        host,
        scheme: first(req.headers['x-forwarded-proto']),
        target: `${http[2] ?? '/'}${http[3] ?? ''}`,
      }),
      signIn401: false,
    };
  }
  const forward = FORWARD_AUTH.exec(url);
  if (forward) {
    return {
      route: forward[1] === undefined ? '/authz/forward-auth' : '/authz/forward-auth/:app',
      door: 'forward-auth',
      app: forward[1],
      original: () => forwarded(headersOf(req)),
      signIn401: new URLSearchParams(forward[2] ?? '').get('signin') === '401',
    };
  }
  return undefined;
}

/** The gate's doors above, for `router.use('/authz', …)`: what is not one of them goes on to the next handler. */
export function gateEndpoints(svc: GateEndpointServices, logRequest: LogRequest): RequestHandler {
  return (req, res, next) => {
    const url = req.url ?? '/';
    const door = doorOf(req, url);
    if (!door) {
      next();
      return;
    }
    const method = req.method ?? 'GET';
    const started = process.hrtime.bigint();
    const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9;
    // Whatever fails while this request is read or answered ends this request only, never the
    // process: what the box meant to answer (an ApiError: 400) or else 503 — the gate could not
    // answer, and a gateway fails closed on it. If even that cannot be written, the connection is cut.
    const fail = (err: unknown): void => {
      req.resume(); // a body not read yet is not needed
      try {
        const refusal = doorError(svc, err, { door: door.door, app: door.app });
        if (res.headersSent) throw new Error('the answer was already under way', { cause: err });
        const error = errorAnswer(refusal, svc, { method, path: door.route });
        const json = JSON.stringify(error.body);
        res
          .writeHead(error.status, {
            ...COMMON_HEADERS,
            'Cache-Control': 'no-store',
            ...error.headers,
            'Content-Type': 'application/json; charset=utf-8',
            'Content-Length': Buffer.byteLength(json),
          })
          .end(json);
        logRequest(method, url, door.route, error.status, seconds());
      } catch (failure) {
        res.destroy();
        svc.log.error({ err: failure, door: door.door }, 'a gate request could not be answered; its connection is closed');
      }
    };
    let original: Original;
    let app: string | undefined;
    let headers: Record<string, string | undefined>;
    let credential: Credential;
    let certificate: GateRequest['certificate'];
    try {
      const problem = requestLineProblem(url); // after which the app's segment decodes
      if (problem) throw problem;
      original = door.original();
      app = door.app === undefined ? undefined : decodeURIComponent(door.app);
      headers = headersOf(req);
      credential = credentialFrom(headers.authorization, headers.cookie);
      // The client certificate the gateway terminated, in BOXAUTH_CLIENT_CERT_HEADER from a trusted
      // proxy only (from anyone else: 400); never this connection's own, which is the gateway's.
      certificate = svc.clientCertificates.forwarded(req);
    } catch (err) {
      fail(err);
      return;
    }
    readBody(req, svc.config.gateBodyBytes)
      .then((body) =>
        decide(svc, { door: door.door, app, ...original, headers, credential, proofs: req.headersDistinct.dpop, certificate, body }),
      )
      .then((d) => {
        svc.decisions.record(d, seconds());
        const status = writeDecision(svc.config.box, res, d, (headers.accept ?? '').includes('text/html'), door.signIn401);
        logRequest(method, url, door.route, status, seconds());
      })
      .catch(fail);
  };
}
