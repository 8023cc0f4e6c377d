// The decision point's HTTP front doors, and the sign-in of people at apps. Each
// door reads its gateway's way of sending the original request into a GateRequest
// and writes the one decision (api/decision/engine.ts) back in its gateway's terms:
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
// - <app url>/.boxauth/start, /callback, /sign-out: routed here by the gateway, with
//   the app's Host (api/decision/app-sign-in.ts).
// AuthZEN (api/http/routes/authzen.ts) is the fourth door; Envoy's gRPC (api/grpc/ext-authz.ts) the fifth.
import type { Request, Response, Router } from 'express';
import { ApiError } from '../../errors.js';
import {
  appCookieAttributes,
  CALLBACK_PATH,
  challengeOf,
  finishFlow,
  safeReturnPath,
  SIGN_OUT_PATH,
  START_PATH,
  startFlow,
  verifierOf,
} from '../../decision/app-sign-in.js';
import { audienceOf } from '../../decision/apps.js';
import { appCookieName, credentialFrom, decide, originOf, type Decision, type GateRequest } from '../../decision/engine.js';
import { refusalOf } from '../../decision/refusal.js';
import { checkAccessToken } from '../../oauth/access-tokens.js';
import { closeGrants } from '../../oauth/closing.js';
import { authorizationCode } from '../../oauth/grants/authorization-code.js';
import type { Services } from '../../services.js';
import type { App } from '../../types.js';
import { messagePage } from '../../ui/pages.js';
import { cookies } from '../browser-session.js';
import { renderPage } from '../pages.js';
import { strictRouter } from '../router.js';

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

const headersOf = (req: Request): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, first(v)]));

/** Writes a decision back as an HTTP gate answers: 200 and headers, or the refusal for the client. */
function answer(
  svc: Pick<Services, 'config' | 'decisions'>,
  req: Request,
  res: Response,
  d: Decision,
  started: bigint,
  signIn401: boolean,
): void {
  svc.decisions.record(d, Number(process.hrtime.bigint() - started) / 1e9);
  res.set('X-Boxauth-Decision', d.id).set('Cache-Control', 'no-store');
  if (d.clearCookie) res.append('Set-Cookie', `${d.clearCookie}=${appCookieAttributes(d.clearCookie.startsWith('__Host-'), 0)}`);
  if (d.allowed) {
    res.status(200).set(d.upstream).end();
    return;
  }
  if (d.challenge) res.set('WWW-Authenticate', d.challenge);
  if (d.location) {
    res.set('X-Boxauth-Sign-In', d.location);
    if (!signIn401) {
      res.redirect(302, d.location);
      return;
    }
  }
  const refusal = refusalOf(svc.config.box, d, (req.headers.accept ?? '').includes('text/html'), d.status === 302 ? 401 : d.status);
  if (refusal.kind === 'html') renderPage(res, refusal.status, refusal.body);
  else res.status(refusal.status).type('json').send(refusal.body);
}

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

/**
 * The original request as forward-auth gateways send it, each in headers of its own: Traefik and
 * Caddy in X-Forwarded-Uri (with X-Forwarded-Method, -Host, -Proto); NGINX as docs/guides/guard-your-apps.md configures
 * it in X-Original-URI (with X-Original-Method, and Host); ingress-nginx in X-Original-URL (with
 * X-Original-Method). A gateway sets its own and passes the client's other headers on as they
 * came, so only the headers of the one that names the request are read, and a request named by
 * two is refused: one of them is the client's, and nothing says which.
 */
function forwarded(req: Request): { method: string; host: string; scheme?: string | undefined; target: string } {
  const h = (name: string): string | undefined => first(req.headers[name]);
  const named = ['X-Forwarded-Uri', 'X-Original-URI', 'X-Original-URL'].filter((name) => h(name.toLowerCase()) !== undefined);
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
        method: (h('x-forwarded-method') ?? 'GET').toUpperCase(),
        host: h('x-forwarded-host') ?? h('host') ?? '',
        scheme: h('x-forwarded-proto'),
        target: h('x-forwarded-uri')!,
      };
    case 'X-Original-URI':
      return { method: (h('x-original-method') ?? 'GET').toUpperCase(), host: h('host') ?? '', target: h('x-original-uri')! };
    case 'X-Original-URL': {
      const original = originalUrl(h('x-original-url')!);
      if (!original) throw new ApiError(400, 'invalid_request', 'X-Original-URL is not an http(s) URL: <scheme>://<host[:port]><path>');
      return { method: (h('x-original-method') ?? 'GET').toUpperCase(), ...original };
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
 * The original path and query that follow `prefix` in the request line, exactly as the gateway
 * sent them. Not the router's parameter: that is percent-decoded, and readTarget() decodes once
 * more, so `/public%3F/../admin` would be tested as `/public` (its `?` ending the path) while the
 * app serves `/admin`, and `%2F` would pass as `/`. Read once, here as at the other doors.
 */
function rawTarget(originalUrl: string, prefix: string): string {
  // origin-form (/authz/…) or absolute-form (http://host/authz/…, RFC 9112 §3.2.2)
  const start = originalUrl.startsWith('/') ? 0 : originalUrl.indexOf('/', originalUrl.indexOf('//') + 2);
  const rest = originalUrl.slice(start + prefix.length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

export function gateRouter(
  svc: Pick<
    Services,
    | 'apps'
    | 'audit'
    | 'clients'
    | 'config'
    | 'csrfKey'
    | 'decisions'
    | 'keyring'
    | 'log'
    | 'policies'
    | 'pool'
    | 'refreshHolders'
    | 'refreshWriter'
    | 'sessionWriter'
    | 'sessions'
    | 'users'
  >,
): Router {
  const router = strictRouter();
  const box = svc.config.box;

  const gate = async (
    req: Request,
    res: Response,
    door: GateRequest['door'],
    app: string | undefined,
    original: ReturnType<typeof forwarded>,
  ) => {
    const started = process.hrtime.bigint();
    const decision = await decide(svc, {
      door,
      app,
      ...original,
      headers: headersOf(req),
      credential: credentialFrom(req.headers.authorization, req.headers.cookie),
    });
    answer(svc, req, res, decision, started, req.query.signin === '401');
  };

  // Envoy's HTTP service (and Gateway API ExternalAuth): the original path follows the prefix.
  router.all(/^\/authz\/http\/([a-z0-9][-a-z0-9]*)(?:\/.*)?$/, async (req, res) => {
    const app = (req.params as Record<string, string>)[0]!;
    req.resume(); // the original body, when the gateway sends it, is not needed
    await gate(req, res, 'http', app, {
      method: req.method,
      host: req.headers.host ?? '',
      scheme: first(req.headers['x-forwarded-proto']),
      target: rawTarget(req.originalUrl, `/authz/http/${app}`),
    });
  });

  const forwardAuth = async (req: Request, res: Response): Promise<void> => {
    req.resume();
    await gate(req, res, 'forward-auth', (req.params as Record<string, string | undefined>).app, forwarded(req));
  };
  router.all('/authz/forward-auth', forwardAuth);
  router.all('/authz/forward-auth/:app', forwardAuth);

  // --- people at apps: the gateway routes <app url>/.boxauth/* here, with the app's Host

  async function appOf(req: Request): Promise<App> {
    const app = await svc.apps.byHost(req.headers.host ?? '');
    if (!app) throw new ApiError(404, 'not_found', `no app is reached at ${req.headers.host ?? 'this host'}`);
    return app;
  }
  const page = (res: Response, status: number, title: string, message: string): void =>
    renderPage(res, status, messagePage(box, title, message));
  const stateCookie = (app: App, https: boolean): string => `${appCookieName(app, https)}-state`;

  router.get(START_PATH, async (req, res) => {
    const app = await appOf(req);
    const origin = originOf(app, req.headers.host ?? '');
    const https = origin.startsWith('https:');
    const client = app.signIn && (await svc.clients.get(app.signIn.client));
    if (!client) return page(res, 404, 'Sign-in is not set up', `The app ${app.id} has no sign-in client. Tell its administrator.`);
    const flow = startFlow(svc.csrfKey, app, safeReturnPath(req.query.rd));
    const authorize = new URL(`${svc.config.baseUrl}/auth/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.resource.id,
      redirect_uri: `${origin}${CALLBACK_PATH}`,
      scope: 'openid',
      state: flow.state,
      code_challenge: challengeOf(flow.verifier),
      code_challenge_method: 'S256',
      resource: audienceOf(app),
    }).toString();
    res.append('Set-Cookie', `${stateCookie(app, https)}=${flow.nonce}${appCookieAttributes(https, 600)}`);
    res.set('Cache-Control', 'no-store').redirect(302, authorize.toString());
  });

  router.get(CALLBACK_PATH, async (req, res) => {
    const app = await appOf(req);
    const origin = originOf(app, req.headers.host ?? '');
    const https = origin.startsWith('https:');
    const nonce = cookies(req)[stateCookie(app, https)];
    const back = finishFlow(svc.csrfKey, app, req.query.state, nonce);
    if (!back)
      return page(
        res,
        400,
        'This sign-in link is not valid',
        'It was not started in this browser, or it is too old. Go back to the app and try again.',
      );
    res.append('Set-Cookie', `${stateCookie(app, https)}=${appCookieAttributes(https, 0)}`);
    if (typeof req.query.error === 'string') return page(res, 403, 'Not signed in', `The sign-in ended: ${req.query.error}.`);
    const client = app.signIn && (await svc.clients.get(app.signIn.client));
    if (!client || typeof req.query.code !== 'string')
      return page(res, 400, 'This sign-in link is not valid', 'Go back to the app and try again.');
    // The box exchanges its own code: the code is bound to the client, the redirect and the PKCE verifier.
    const issued = await authorizationCode.handle({
      svc,
      params: { code: req.query.code, redirect_uri: `${origin}${CALLBACK_PATH}`, code_verifier: verifierOf(svc.csrfKey, nonce!) },
      client,
    });
    svc.audit.record({
      event: 'token_issued',
      client: client.resource.id,
      grant: 'authorization_code',
      session: issued.session.id,
      ...(issued.session.userId !== null ? { user: String(issued.session.userId) } : {}),
    });
    const maxAge = issued.response.expires_in;
    res.append('Set-Cookie', `${appCookieName(app, https)}=${issued.response.access_token}${appCookieAttributes(https, maxAge)}`);
    res.set('Cache-Control', 'no-store').redirect(302, `${origin}${back.rd}`);
  });

  router.all(SIGN_OUT_PATH, async (req, res) => {
    const app = await appOf(req);
    const https = originOf(app, req.headers.host ?? '').startsWith('https:');
    const token = cookies(req)[appCookieName(app, https)];
    const check = token === undefined ? undefined : await checkAccessToken(svc, token);
    // Only the app's own session: a cookie of this name holding another token ends nothing.
    if (check && 'session' in check && check.session.audience === audienceOf(app)) {
      const { session } = check;
      await closeGrants(svc, { tree: session.id }, { how: 'sign-out', by: { client: session.clientId, session: session.id } });
    }
    res.append('Set-Cookie', `${appCookieName(app, https)}=${appCookieAttributes(https, 0)}`);
    page(
      res,
      200,
      'Signed out',
      `You are signed out of ${app.description ?? app.id}. To sign out of every app, sign out of the box at ${svc.config.baseUrl}/auth/sign-out.`,
    );
  });

  return router;
}
