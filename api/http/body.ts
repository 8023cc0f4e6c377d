// Request bodies: JSON and YAML for resources, form and JSON for the OAuth
// endpoints, all under one size limit. A body of another type is refused before
// any handler runs.
import express, { type RequestHandler } from 'express';
import { parse as parseYaml } from 'yaml';
import { ApiError, badRequest } from '../errors.js';
import { invalidRequest } from '../oauth/errors.js';

/** Larger bodies get 413: nothing the API takes comes near it. */
export const BODY_LIMIT_BYTES = 256 * 1024;
/** More form parameters than this is not an OAuth request. */
export const MAX_FORM_PARAMETERS = 100;

const YAML_TYPES = ['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml'];
const JSON_TYPES = ['application/json', 'application/*+json'];

const json = express.json({ limit: BODY_LIMIT_BYTES, type: JSON_TYPES });
const form = express.urlencoded({ extended: false, limit: BODY_LIMIT_BYTES, parameterLimit: MAX_FORM_PARAMETERS });
const yamlText = express.text({ limit: BODY_LIMIT_BYTES, type: YAML_TYPES });

const parseYamlBody: RequestHandler = (req, _res, next) => {
  if (typeof req.body !== 'string') return next();
  try {
    req.body = parseYaml(req.body, { maxAliasCount: 100, uniqueKeys: true }) as unknown;
    next();
  } catch (err) {
    next(badRequest(`malformed YAML: ${(err as Error).message.split('\n')[0]}`));
  }
};

const hasBody = (req: express.Request): boolean => req.headers['content-length'] !== '0' && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined);

/** JSON or YAML resource bodies (PUT/POST of the resource API). */
export const resourceBody: RequestHandler[] = [
  (req, _res, next) => {
    if (!hasBody(req)) return next();
    if (req.is([...JSON_TYPES, ...YAML_TYPES])) return next();
    next(new ApiError(415, 'unsupported_media_type',
      `send the resource as application/json or application/yaml (got ${req.headers['content-type'] ?? 'no Content-Type'})`));
  },
  json, yamlText, parseYamlBody,
];

/** Form or JSON bodies of the OAuth endpoints; errors in RFC 6749 form. */
export const oauthBody: RequestHandler[] = [
  (req, _res, next) => {
    if (!hasBody(req) || req.is(['application/x-www-form-urlencoded', ...JSON_TYPES])) return next();
    next(invalidRequest(`send parameters as application/x-www-form-urlencoded or application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`));
  },
  form, json,
];
