// The one place errors become responses. ApiError subclasses carry their status,
// headers and body; anything else is logged and answered with a bare 500 that leaks nothing.
import type { ErrorRequestHandler, Request, Response } from './router.js';
import { isDatabaseUnavailable, UNAVAILABLE_RETRY_SECONDS } from '../db/unavailable.js';
import { ApiError, errorMessage, ValidationError } from '../errors.js';
import { shownEntity } from '../schema/write-only.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Page } from '../ui/frame.js';
import { words, type MessageKey } from '../ui/language.js';
import { messagePage } from '../ui/pages.js';
import { renderPage } from './pages.js';
import { send } from './respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  metrics: Metrics;
}

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * The answer to an error: an ApiError's own; 503 temporarily_unavailable with Retry-After when the database
 * cannot be reached or cannot keep up (RFC 6749 §4.1.2.1 names the error; the request will work once it is back); else (logged)
 * a bare 500. Counted by its code either way.
 */
export function errorAnswer(err: unknown, svc: Pick<Needs, 'log' | 'metrics'>, request: { method: string; path: string }): ErrorAnswer {
  const { log } = svc;
  if (err instanceof ApiError) {
    svc.metrics.refusals.inc({ error: err.code });
    // A 422 echoes what was sent, but never a secret or a password in it (api/schema/write-only.ts).
    const body = err instanceof ValidationError ? err.bodyShowing(shownEntity) : err.body();
    return { status: err.status, headers: err.headers, body };
  }
  if (isDatabaseUnavailable(err)) {
    svc.metrics.refusals.inc({ error: 'temporarily_unavailable' });
    log.warn({ err: errorMessage(err), method: request.method, path: request.path }, 'the database is unreachable or overloaded');
    const unavailable = new ApiError(
      503,
      'temporarily_unavailable',
      'the service cannot reach its database or it is overloaded right now; try again shortly',
      {
        'Retry-After': String(UNAVAILABLE_RETRY_SECONDS),
      },
    );
    return { status: unavailable.status, headers: unavailable.headers, body: unavailable.body() };
  }
  svc.metrics.refusals.inc({ error: 'server_error' });
  log.error({ err, method: request.method, path: request.path }, 'request failed');
  return { status: 500, headers: {}, body: { error: 'server_error', error_description: 'internal error; see the server log' } };
}

/** What a decision point's door answers when answering failed: 503, so that its gateway or PEP fails closed. */
export const UNANSWERED = 'the decision point could not answer this request; see the server log';

/**
 * What a decision point's door (forward-auth, Envoy's HTTP and gRPC, AuthZEN) answers `err` with:
 * an ApiError as it is (a bad request), the database out of reach as errorAnswer() says; anything
 * else ends this request only, logged here, as 503 temporarily_unavailable — never a crash,
 * never an allow.
 */
export function doorError(svc: Pick<Needs, 'log'>, err: unknown, where: Record<string, unknown>): unknown {
  if (err instanceof ApiError || isDatabaseUnavailable(err)) return err;
  svc.log.error({ err, ...where }, 'answering a decision point request failed; it is refused');
  return new ApiError(503, 'temporarily_unavailable', UNANSWERED);
}

/**
 * Where a browser brings a SAML message (the IdP's SSO and SLO, the upstream providers' ACS): only a browser
 * is ever sent there, by a redirect or a form the app's page posts, whatever Accept it sends; no program reads
 * the answer, so even a refusal before the route (a query value or a body over the limits) is a page.
 */
const SAML_BROWSER_PATH = /^\/auth\/(?:saml\/(?:sso|slo)|upstream\/[^/]+\/saml\/acs)$/;

/** A browser navigating (it prefers HTML to JSON): errors are a page for a person, not a body for a program. */
export function wantsPage(req: Request): boolean {
  if (SAML_BROWSER_PATH.test(req.path)) return true;
  return req.headers.accept !== undefined && req.accepts(['application/json', 'text/html']) === 'text/html';
}

const TITLES: Record<number, MessageKey> = {
  401: 'error.signInNeeded',
  403: 'error.notAllowed',
  404: 'error.notFound',
  429: 'error.tooMany',
  503: 'error.unavailable',
};

/** What the page tells a person of each status, in their language. */
const MESSAGES: Record<number, MessageKey> = {
  400: 'error.badRequestMessage',
  401: 'error.signInNeededMessage',
  403: 'error.notAllowedMessage',
  404: 'error.notFoundMessage',
  409: 'error.conflictMessage',
  413: 'error.tooLargeMessage',
  414: 'error.tooLongMessage',
  422: 'error.invalidMessage',
  429: 'error.tooManyMessage',
  503: 'error.unavailableMessage',
};

function errorPage(box: string, answer: ErrorAnswer): Page {
  const { error_description: description, error } = answer.body as { error?: string; error_description?: string };
  const server = answer.status >= 500;
  const title = TITLES[answer.status] ?? (server ? 'error.wentWrong' : 'error.cannotAnswer');
  const said = words(MESSAGES[answer.status] ?? (server ? 'error.wentWrongMessage' : 'error.cannotAnswerMessage'));
  const retryAfter = answer.headers['Retry-After'];
  const message = retryAfter ? words('error.retry', { message: said, seconds: retryAfter }) : said;
  // The API's own reason, in English as every program reads it, follows as a value: for whoever builds the app that sent the person here.
  return messagePage(box, words(title), words('error.detail', { message, detail: description ?? error ?? 'error' }));
}

const BARE_500 = '{"error":"server_error","error_description":"internal error; see the server log"}';

/**
 * The router's last handler (./app.ts). It never throws and never passes the error on: the
 * router's own answer then would be a bare 500 with no body.
 */
export function errorHandler(svc: Pick<Needs, 'log' | 'metrics' | 'config'>): ErrorRequestHandler {
  const { log } = svc;
  return (err: unknown, req: Request, res: Response, _next) => {
    if (res.headersSent) return;
    try {
      const answer = errorAnswer(err, svc, req);
      if (wantsPage(req)) return renderPage(res, answer.status, errorPage(svc.config.box, answer), answer.headers);
      res.set(answer.headers);
      send(req, res, answer.status, answer.body);
    } catch (failure) {
      log.error({ err: failure, method: req.method, path: req.path }, 'answering an error failed');
      if (!res.headersSent) res.status(500).type('application/json').send(BARE_500);
    }
  };
}
