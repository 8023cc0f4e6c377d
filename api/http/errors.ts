// The one place errors become responses. ApiError subclasses carry their status,
// headers and body; express's own 4xx errors are mapped to the same shape; anything
// else is logged and answered with a bare 500 that leaks nothing.
import type { ErrorRequestHandler, Request, Response } from 'express';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { send } from './respond.js';

interface ExpressError extends Error {
  status?: number;
}

/** Any 4xx that express or its router raised (e.g. a route parameter that is not valid percent-encoding), as an ApiError. */
function fromExpress(err: ExpressError): ApiError | undefined {
  if (typeof err.status === 'number' && err.status >= 400 && err.status < 500)
    return new ApiError(err.status, 'invalid_request', 'malformed request');
  return undefined;
}

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The answer to an error: an ApiError's own, or (logged) a bare 500; counted by its code either way. */
export function errorAnswer(err: unknown, svc: Pick<Services, 'log' | 'metrics'>, request: { method: string; path: string }): ErrorAnswer {
  const { log } = svc;
  if (err instanceof ApiError) {
    svc.metrics.refusals.inc({ error: err.code });
    return { status: err.status, headers: err.headers, body: err.body() };
  }
  svc.metrics.refusals.inc({ error: 'server_error' });
  log.error({ err, method: request.method, path: request.path }, 'request failed');
  return { status: 500, headers: {}, body: { error: 'server_error', error_description: 'internal error; see the server log' } };
}

const BARE_500 = '{"error":"server_error","error_description":"internal error; see the server log"}';

/**
 * Express's last handler. It never throws and never passes the error on: what
 * express would do then is its own HTML page, with a stack trace outside
 * production.
 */
export function errorHandler(svc: Pick<Services, 'log' | 'metrics'>): ErrorRequestHandler {
  const { log } = svc;
  return (err: unknown, req: Request, res: Response, _next) => {
    if (res.headersSent) return;
    try {
      const known = err instanceof ApiError ? err : err && typeof err === 'object' ? fromExpress(err as ExpressError) : undefined;
      const answer = errorAnswer(known ?? err, svc, req);
      res.set(answer.headers);
      send(req, res, answer.status, answer.body);
    } catch (failure) {
      log.error({ err: failure, method: req.method, path: req.path }, 'answering an error failed');
      if (!res.headersSent) res.status(500).type('application/json').send(BARE_500);
    }
  };
}
