// The app of one box: one router (./router.ts) for every path. Reading order of a request: the
// gateways' doors and the OAuth endpoints that take a body, each answering its request whole; then
// logging and security headers; the public endpoints (discovery, health, sign-out); then, for
// everything else, authentication and authorization before the resource routers.
import { samlRouter } from './routes/saml.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../errors.js';
import { redactUrl } from '../log.js';
import { nameRequestSpan, requestSpan } from '../tracing.js';
import { observeLatency } from '../metrics.js';
import type { Services } from '../services.js';
import { authenticate, authorize } from './auth.js';
import { checkedRequestLine } from './edge.js';
import { setBranding } from './pages.js';
import { errorHandler } from './errors.js';
import { COMMON_HEADERS, PREFLIGHT_HEADERS, strictTransportSecurity } from './headers.js';
import { gateEndpoints } from './gate-endpoints.js';
import { mountOAuthEndpoints } from './oauth-endpoints.js';
import { Router, type RequestHandler } from './router.js';

export { SERVER_CLASSES } from './router.js';
import { adminRouter } from './routes/admin.js';
import { authorizationEndpointRouter } from './routes/authorization-endpoint.js';
import { authzenRouter } from './routes/authzen.js';
import { appSignInRouter } from './routes/app-sign-in.js';
import { factorRouter } from './routes/factors.js';
import { accountRouter } from './routes/account.js';
import { accountLinkRouter } from './routes/account-links.js';
import { auditEventRouter } from './routes/audit-events.js';
import { explainRouter } from './routes/explain.js';
import { samlAppRouter } from './routes/saml-apps.js';
import { healthRouter, type Readiness } from './routes/health.js';
import { keyRouter } from './routes/keys.js';
import { oauthRouter } from './routes/oauth.js';
import { protectedResourceRouter } from './routes/protected-resource.js';
import { deviceRouter } from './routes/device.js';
import { openidRouter } from './routes/openid.js';
import { passkeyRouter } from './routes/passkeys.js';
import { peopleRouter } from './routes/people.js';
import { providerCheckRouter } from './routes/provider-check.js';
import { scimRouter } from './routes/scim.js';
import { peopleSessionsRouter } from './routes/people-sessions.js';
import { resourceRouter } from './routes/resources.js';
import { RESOURCE_KINDS } from '../record-kinds.js';
import { sessionRouter, signOut } from './routes/sessions.js';
import { settingsRouter } from './routes/settings.js';
import { signInRouter } from './routes/sign-in.js';
import { ssfMetadataRouter, ssfRouter } from './routes/ssf.js';
import { upstreamRouter } from './routes/upstream.js';

type LogRequest = (method: string, url: string, route: string, status: number, seconds: number) => void;

/** Metrics and the log line of one answered request. */
function requestLogger(svc: Services): LogRequest {
  return (method, url, route, status, seconds) => {
    nameRequestSpan(method, route);
    svc.metrics.requests.inc({ method, route, status });
    observeLatency(svc.metrics.duration, { method, route }, seconds);
    svc.requestLog.info({ method, url: redactUrl(url), status, ms: Math.round(seconds * 1e4) / 10 }, 'request');
  };
}

function requestLog(logRequest: LogRequest): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const route = req.route ? req.route.path : 'unmatched';
      logRequest(req.method, req.originalUrl, route, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

const commonHeaders: RequestHandler = (_req, res, next) => {
  res.set(COMMON_HEADERS);
  next();
};

/**
 * A CORS preflight is answered here; any other OPTIONS request at a path the box routes, with the
 * methods it takes (RFC 9110 §9.3.7: "the Allow header field … indicating the methods supported").
 */
const optionsAnswer =
  (app: Router): RequestHandler =>
  (req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    if (req.headers['access-control-request-method']) return void res.set(PREFLIGHT_HEADERS).status(204).end();
    const methods = app.methodsOf(req.path);
    if (methods.length === 0) return next();
    res
      .set('Allow', [...methods, 'OPTIONS'].join(', '))
      .status(204)
      .end();
  };

/** What the composition root tells the app of the process (readiness). */
export type AppOptions = Readiness;

/** The box's request listener: its one router (./router.ts), whose classes the server builds (SERVER_CLASSES). */
export function createRequestListener(svc: Services, options: AppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const listener = createApp(svc, options, requestLogger(svc)).listener();
  const sts = strictTransportSecurity(svc.config);
  // Set before either path runs, so every answer carries them (writeHead keeps headers set earlier).
  return (req, res) => {
    if (sts !== undefined) res.setHeader('Strict-Transport-Security', sts);
    // Stopping: a keep-alive connection ends after its answer, so that its client's next request opens
    // a connection that the load balancer sends to another replica (api/server.ts, stop()).
    if (options.draining()) res.setHeader('Connection', 'close');
    // One span per request, a child of the caller's traceparent (api/tracing.ts; off: listener alone).
    requestSpan(req, res, () => listener(req, res));
  };
}

function createApp(svc: Services, options: AppOptions, logRequest: LogRequest): Router {
  const app = new Router();
  setBranding(app, svc.config.branding);
  // Ahead of everything: each answers its request whole, with its own headers and log line.
  app.use('/authz', gateEndpoints(svc, logRequest));
  mountOAuthEndpoints(app, svc, logRequest);
  app.use(requestLog(logRequest), commonHeaders, optionsAnswer(app), checkedRequestLine);

  app.use(healthRouter(svc, options));
  app.use(oauthRouter(svc), ssfMetadataRouter(svc));
  app.delete('/Session', signOut(svc));
  const upstream = upstreamRouter(svc);
  app.use(
    authorizationEndpointRouter(svc),
    signInRouter(svc, upstream.signInThroughDirectory),
    upstream.router,
    factorRouter(svc),
    accountRouter(svc),
    accountLinkRouter(svc),
    passkeyRouter(svc),
    openidRouter(svc),
    deviceRouter(svc),
    adminRouter(svc),
    samlRouter(svc),
  );
  // People signing in at an app, the apps' metadata (RFC 9728), and AuthZEN (the gateways' doors are ./gate-endpoints.ts).
  app.use(appSignInRouter(svc), protectedResourceRouter(svc), authzenRouter(svc, authenticate(svc), authorize(svc)));

  // SCIM (RFC 7644): its own door, so that every answer under /scim/v2, refusals too, is SCIM's.
  const scim = scimRouter(svc);
  app.use(scim.router).use(scim.errors);

  // Authentication for everything below; each route then checks policies itself,
  // once it has matched, so that the policy sees what the router decided.
  const guarded = new Router();
  const guard = authorize(svc);
  guarded.use(authenticate(svc));
  guarded.use(
    ...RESOURCE_KINDS.map((kind) => resourceRouter(svc, kind, guard)),
    providerCheckRouter(svc, guard),
    samlAppRouter(svc, guard),
    explainRouter(svc, guard),
    auditEventRouter(svc, guard),
    sessionRouter(svc, guard),
    peopleRouter(svc, guard),
    peopleSessionsRouter(svc, guard),
    keyRouter(svc, guard),
    settingsRouter(svc, guard),
    ssfRouter(svc, guard),
  );
  app.use(guarded);

  app.use(() => {
    throw new ApiError(404, 'not_found', 'no such endpoint');
  });
  app.use(errorHandler(svc));
  return app;
}
