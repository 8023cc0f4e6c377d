// The one place errors become responses. ApiError subclasses carry their status,
// headers and body; body-parser errors are mapped to the same shapes; anything
// else is logged and answered with a bare 500 that leaks nothing.
import type { ErrorRequestHandler, Request, Response } from 'express';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import { OAuthError } from '../oauth/errors.js';
import { BODY_LIMIT_BYTES } from './body.js';
import { send } from './respond.js';

interface ParserError extends Error {
  type?: string;
  status?: number;
}

/** Body-parser failures, as the endpoint's kind of error. */
function fromParser(err: ParserError, oauth: boolean): ApiError | undefined {
  const make = (status: number, code: string, description: string): ApiError =>
    oauth && status === 400 ? new OAuthError('invalid_request', description) : new ApiError(status, code, description);
  switch (err.type) {
    case 'entity.parse.failed': return make(400, 'invalid_request', `malformed JSON: ${err.message}`);
    case 'entity.too.large': return new ApiError(413, 'payload_too_large', `the request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`);
    case 'charset.unsupported':
    case 'encoding.unsupported': return new ApiError(415, 'unsupported_media_type', err.message);
    case 'parameters.too.many': return make(400, 'invalid_request', 'too many form parameters');
    case 'request.aborted': return new ApiError(400, 'invalid_request', 'request aborted');
    default: return undefined;
  }
}

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The answer to an error: an ApiError's own, or (logged) a bare 500. Also used by the OAuth fast path. */
export function errorAnswer(err: unknown, log: Logger, request: { method: string; path: string }): ErrorAnswer {
  if (err instanceof ApiError) return { status: err.status, headers: err.headers, body: err.body() };
  log.error({ err, method: request.method, path: request.path }, 'request failed');
  return { status: 500, headers: {}, body: { error: 'server_error', error_description: 'internal error; see the server log' } };
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next) => {
    const known = err instanceof ApiError ? err : fromParser(err as ParserError, req.path.startsWith('/auth/'));
    if (res.headersSent) return;
    const answer = errorAnswer(known ?? err, log, req);
    res.set(answer.headers);
    send(req, res, answer.status, answer.body);
  };
}
