// Request bodies of the router's routes: the resource API's JSON and YAML, and the
// forms of the box's own pages. Both are read by ./request-body.ts (as the OAuth
// endpoints' are), before any handler runs; a parsed body is then checked like
// every input (api/input.ts).
import type { Request, RequestHandler } from './router.js';
import { ApiError, badRequest } from '../errors.js';
import { bodyProblem } from '../input.js';
import { readBody, type BodyRules } from './request-body.js';

const tooLarge = (description: string): ApiError => new ApiError(413, 'payload_too_large', description);

/** 400 for a parsed body that is not input the box takes (NUL, lone surrogates, prototype keys, deep nesting); 413 for too many values. */
export const checkedBody: RequestHandler = (req, _res, next) => {
  const found = bodyProblem(req.body);
  if (!found) return next();
  const description = `${found.at} ${found.problem}`;
  next(found.tooLarge ? tooLarge(description) : badRequest(description));
};

/** Sets req.body as `rules` read it. */
const reading =
  (rules: BodyRules): RequestHandler =>
  (req: Request, _res, next) => {
    readBody(req, rules).then((body) => {
      req.body = body;
      next();
    }, next);
  };

const RESOURCE: BodyRules = {
  accept: ['json', 'yaml'],
  otherType: (media, body) =>
    body
      ? new ApiError(
          415,
          'unsupported_media_type',
          `send the resource as application/json or application/yaml (got ${media ?? 'no Content-Type'})`,
        )
      : 'none',
  formParameters: 0,
  json: 'object-or-array',
  unsupportedCode: 'unsupported_media_type',
};

/** No body, or one of another type, is an empty form. */
const PAGE_FORM: BodyRules = {
  accept: ['form'],
  otherType: () => 'empty',
  formParameters: 50,
  json: 'object',
  unsupportedCode: 'unsupported_media_type',
};

/** The forms of the box's own pages (sign-in, consent, logout…), checked like every body. */
export const pageForm: RequestHandler[] = [
  reading(PAGE_FORM),
  (req, _res, next) => {
    req.body ??= {};
    next();
  },
  checkedBody,
];

/** JSON or YAML resource bodies (PUT/POST of the resource API). */
export const resourceBody: RequestHandler[] = [reading(RESOURCE), checkedBody];

/**
 * AuthZEN requests (api/http/routes/authzen.ts): JSON only — "Requests MUST include
 * a Content-Type header with the value application/json" (AuthZEN 1.0 §10.1) —,
 * anything else a 400, the spec's status for a bad request (§10.1.2).
 */
const AUTHZEN: BodyRules = {
  accept: ['json'],
  otherType: (media) => badRequest(`send the request as application/json (got ${media ?? 'no Content-Type'})`),
  formParameters: 0,
  json: 'object',
  unsupportedCode: 'invalid_request',
};

export const authzenBody: RequestHandler[] = [reading(AUTHZEN), checkedBody];

/**
 * The stream management API of Shared Signals (api/http/routes/ssf.ts): JSON only, anything else
 * a 400, SSF 1.0 §8.1.1.1's status for a request that cannot be parsed. No body reads as none.
 */
const SSF: BodyRules = {
  accept: ['json'],
  otherType: (media, body) => (body ? badRequest(`send the request as application/json (got ${media ?? 'no Content-Type'})`) : 'none'),
  formParameters: 0,
  json: 'object',
  unsupportedCode: 'invalid_request',
};

export const ssfBody: RequestHandler[] = [reading(SSF), checkedBody];

/** The JSON the box's own page scripts send (the passkeys script: api/http/routes/passkeys.ts); anything else a 415. */
const PAGE_JSON: BodyRules = {
  accept: ['json'],
  otherType: (media) => new ApiError(415, 'unsupported_media_type', `send application/json (got ${media ?? 'no Content-Type'})`),
  formParameters: 0,
  json: 'object',
  unsupportedCode: 'unsupported_media_type',
};

export const pageJson: RequestHandler[] = [reading(PAGE_JSON), checkedBody];

/** SCIM's JSON (application/scim+json, RFC 7644 §3.1, or application/json); anything else a 415 the SCIM door words as SCIM does. */
const SCIM: BodyRules = {
  accept: ['json'],
  otherType: (media, body) =>
    body ? new ApiError(415, 'unsupported_media_type', `send application/scim+json (got ${media ?? 'no Content-Type'})`) : 'none',
  formParameters: 0,
  json: 'object',
  unsupportedCode: 'unsupported_media_type',
};

export const scimBody: RequestHandler[] = [reading(SCIM), checkedBody];
