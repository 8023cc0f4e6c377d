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

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next) => {
    const known = err instanceof ApiError ? err : fromParser(err as ParserError, req.path.startsWith('/auth/'));
    if (res.headersSent) return;
    if (known) {
      res.set(known.headers);
      send(req, res, known.status, known.body());
      return;
    }
    log.error({ err, method: req.method, path: req.path }, 'request failed');
    send(req, res, 500, { error: 'server_error', error_description: 'internal error; see the server log' });
  };
}
