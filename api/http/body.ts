// Request bodies of the resource API (JSON and YAML) under one size limit (the
// OAuth endpoints read theirs in ./oauth-endpoints.ts). A body of another type is
// refused before any handler runs; a parsed body is checked like every input
// (api/input.ts) before any handler sees it.
import express, { type RequestHandler } from 'express';
import { ApiError, badRequest } from '../errors.js';
import { bodyProblem, INPUT_LIMITS } from '../input.js';
import { readYaml, YamlError } from '../yaml.js';

/** Larger bodies get 413: nothing the API takes comes near it. */
export const BODY_LIMIT_BYTES = 256 * 1024;

const YAML_TYPES = ['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml'];
const JSON_TYPES = ['application/json', 'application/*+json'];

const json = express.json({ limit: BODY_LIMIT_BYTES, type: JSON_TYPES });
const yamlText = express.text({ limit: BODY_LIMIT_BYTES, type: YAML_TYPES });

const tooLarge = (description: string): ApiError => new ApiError(413, 'payload_too_large', description);

/** One YAML document, read within INPUT_LIMITS (api/yaml.ts says why YAML needs limits of its own). */
const parseYamlBody: RequestHandler = (req, _res, next) => {
  if (typeof req.body !== 'string') return next();
  try {
    const docs = readYaml(req.body, { tokens: INPUT_LIMITS.yamlTokens, flowDepth: INPUT_LIMITS.bodyDepth });
    if (docs.length > 1) throw new YamlError('send one document, not several');
    req.body = docs[0] ?? null;
    next();
  } catch (err) {
    if (!(err instanceof YamlError)) return next(err);
    if (err.reason === 'too-many-tokens') return next(tooLarge(`the YAML body holds ${err.message}; send a resource this large as JSON`));
    next(
      badRequest(
        `malformed YAML: ${err.reason === 'too-deep' ? `body is nested deeper than ${INPUT_LIMITS.bodyDepth} levels` : err.message}`,
      ),
    );
  }
};

/** 400 for a parsed body that is not input the box takes (NUL, lone surrogates, prototype keys, deep nesting); 413 for too many values. */
export const checkedBody: RequestHandler = (req, _res, next) => {
  const found = bodyProblem(req.body);
  if (!found) return next();
  const description = `${found.at} ${found.problem}`;
  next(found.tooLarge ? tooLarge(description) : badRequest(description));
};

const hasBody = (req: express.Request): boolean =>
  req.headers['content-length'] !== '0' && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined);

/** The forms of the box's own pages (sign-in, consent, logout…), checked like every body. */
export const pageForm: RequestHandler[] = [
  express.urlencoded({ extended: false, limit: BODY_LIMIT_BYTES, parameterLimit: 50 }),
  // No body, or one of another type, is an empty form: express leaves req.body unset then.
  (req, _res, next) => {
    req.body ??= {};
    next();
  },
  checkedBody,
];

/** JSON or YAML resource bodies (PUT/POST of the resource API). */
export const resourceBody: RequestHandler[] = [
  (req, _res, next) => {
    if (!hasBody(req)) return next();
    if (req.is([...JSON_TYPES, ...YAML_TYPES])) return next();
    next(
      new ApiError(
        415,
        'unsupported_media_type',
        `send the resource as application/json or application/yaml (got ${req.headers['content-type'] ?? 'no Content-Type'})`,
      ),
    );
  },
  json,
  yamlText,
  parseYamlBody,
  checkedBody,
];
