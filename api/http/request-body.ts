// Reading a request's body, one way for every route: the OAuth endpoints
// (./oauth-endpoints.ts) and the other routes (./body.ts). The size
// limit, media types and their charset, compressed bodies, UTF-8, and the parse
// are all here; each use says what it takes (BodyRules) and what a body of another
// type is. What enters is then checked as every input is (api/input.ts) by the caller.
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ApiError, badRequest, errorMessage } from '../errors.js';
import { INPUT_LIMITS, percentDecode } from '../input.js';
import { readYaml, YamlError } from '../yaml.js';

/** Larger bodies get 413, before or after they are decompressed: nothing the box takes comes near it. */
export const BODY_LIMIT_BYTES = 256 * 1024;

export type BodyKind = 'form' | 'json' | 'yaml';

const MEDIA: Record<BodyKind, (media: string) => boolean> = {
  form: (m) => m === 'application/x-www-form-urlencoded',
  json: (m) => m === 'application/json' || /^application\/[^/]+\+json$/.test(m),
  yaml: (m) => ['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml'].includes(m),
};

export interface BodyRules {
  /** The kinds this use takes. */
  accept: readonly BodyKind[];
  /**
   * What a request whose type is not taken (or that has none) is: refused with
   * this error, `empty` (an empty form), or `none` (no body). `body`: whether it
   * has one at all.
   */
  otherType: (media: string | undefined, body: boolean) => ApiError | 'empty' | 'none';
  /** At most this many form parameters. */
  formParameters: number;
  /** A JSON body must be an object (parameters), or may be an array too (resources). */
  json: 'object' | 'object-or-array';
  /** Which error a refusal of the body carries: `invalid_request` (OAuth) or the resource API's codes. */
  unsupportedCode: 'invalid_request' | 'unsupported_media_type';
}

/** Whether the request has a body at all (a length other than 0, or chunks coming). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

const tooLarge = (): ApiError =>
  new ApiError(413, 'payload_too_large', `the request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`);

/** The media type of the body, and whether its charset (if named) is UTF-8. */
function mediaOf(req: IncomingMessage, rules: BodyRules): string | undefined {
  const type = req.headers['content-type'];
  if (type === undefined) return undefined;
  const [media, ...params] = type
    .toLowerCase()
    .split(';')
    .map((s) => s.trim());
  for (const param of params) {
    const [name, value] = param.split('=').map((s) => s.trim());
    if (name === 'charset' && value?.replace(/"/g, '') !== 'utf-8') {
      throw new ApiError(415, rules.unsupportedCode, `charset ${value} is not supported: send UTF-8`);
    }
  }
  return media;
}

const DECODERS: Record<string, (buf: Buffer, options: zlib.ZlibOptions) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

/** The body as sent, decompressed (within the same limit) when Content-Encoding says so. */
async function decoded(req: IncomingMessage, raw: Buffer, rules: BodyRules): Promise<Buffer> {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return raw;
  const decode = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding] : undefined;
  if (!decode) throw new ApiError(415, rules.unsupportedCode, `Content-Encoding ${encoding} is not supported (gzip, deflate, br or none)`);
  try {
    return await decode(raw, { maxOutputLength: BODY_LIMIT_BYTES });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw badRequest(`the body is not valid ${encoding} data`);
  }
}

/** The raw bytes, refusing more than the limit as soon as they pass it. */
function readRaw(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        reject(tooLarge());
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', () => reject(badRequest('request aborted')));
  });
}

/**
 * An application/x-www-form-urlencoded body. Repeated names become lists (which
 * the parameter readers refuse where a parameter must be given once); malformed
 * percent-encoding is refused rather than guessed at.
 */
export function parseForm(text: string, maxParameters: number): Record<string, string | string[]> {
  const form = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    if (++count > maxParameters) throw badRequest(`more than ${maxParameters} form parameters`);
    const eq = pair.indexOf('=');
    const name = percentDecode(eq === -1 ? pair : pair.slice(0, eq), true);
    const value = percentDecode(eq === -1 ? '' : pair.slice(eq + 1), true);
    if (name === undefined || value === undefined) throw badRequest('the form holds malformed percent-encoding');
    const prior = form[name];
    form[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
  }
  return form;
}

function parseJson(text: string, rules: BodyRules): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`malformed JSON: ${errorMessage(err)}`);
  }
  const object = body !== null && typeof body === 'object';
  if (rules.json === 'object' ? !object || Array.isArray(body) : !object) {
    throw badRequest(
      rules.json === 'object' ? 'the JSON body must be an object of parameters' : 'the JSON body must be an object or an array',
    );
  }
  return body;
}

/** One YAML document, read within INPUT_LIMITS (api/yaml.ts says why YAML needs limits of its own). */
function parseYaml(text: string): unknown {
  try {
    const docs = readYaml(text, { tokens: INPUT_LIMITS.yamlTokens, flowDepth: INPUT_LIMITS.bodyDepth });
    if (docs.length > 1) throw new YamlError('send one document, not several');
    return docs[0] ?? null;
  } catch (err) {
    if (!(err instanceof YamlError)) throw err;
    if (err.reason === 'too-many-tokens') {
      throw new ApiError(413, 'payload_too_large', `the YAML body holds ${err.message}; send a resource this large as JSON`);
    }
    throw badRequest(
      `malformed YAML: ${err.reason === 'too-deep' ? `body is nested deeper than ${INPUT_LIMITS.bodyDepth} levels` : err.message}`,
    );
  }
}

/**
 * The body of `req` as `rules` take it: undefined when there is none (an empty
 * form, for rules that read other types as one), else the parsed value. Refusals
 * are ApiErrors: 413 past the limit, 415 for a charset or coding not taken, 400
 * for what does not parse.
 */
export async function readBody(req: IncomingMessage, rules: BodyRules): Promise<unknown> {
  const media = mediaOf(req, rules);
  const kind = media === undefined ? undefined : rules.accept.find((k) => MEDIA[k](media));
  if (!kind) {
    const other = rules.otherType(media, hasBody(req));
    if (other instanceof ApiError) throw other;
    req.resume();
    return other === 'empty' ? {} : undefined;
  }
  if (!hasBody(req)) return undefined;
  const body = await decoded(req, await readRaw(req), rules);
  if (!isUtf8(body)) throw badRequest('the body is not valid UTF-8');
  const text = body.toString('utf8');
  if (kind === 'form') return parseForm(text, rules.formParameters);
  if (text === '') return undefined;
  return kind === 'json' ? parseJson(text, rules) : parseYaml(text);
}
