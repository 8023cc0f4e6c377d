// The OAuth endpoints that take a body (POST /auth/token, /auth/introspect,
// /auth/revoke) answer here, on node:http, ahead of express; express never sees
// them. They are what every in-cluster app calls, often once per request of its
// own, and the profile of `make bench` put express's router, body parsers and
// response helpers at a third of their time. This is their one entry path: the
// request line, content types, charsets and compressed bodies are all read here,
// and their parameters in api/oauth/params.ts. Discovery and JWKS stay in
// express (./routes/oauth.ts).
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ApiError, errorMessage } from '../errors.js';
import { percentDecode } from '../input.js';
import type { OAuthRequest } from '../oauth/client-auth.js';
import { deviceAuthorization } from '../oauth/device.js';
import { invalidRequest } from '../oauth/errors.js';
import { introspect, revoke } from '../oauth/introspection.js';
import { LIMITS } from '../oauth/params.js';
import { tokenRequest } from '../oauth/token-endpoint.js';
import type { Services } from '../services.js';
import { BODY_LIMIT_BYTES } from './body.js';
import { errorAnswer } from './errors.js';
import { COMMON_HEADERS, NO_STORE, PREFLIGHT_HEADERS } from './headers.js';

type Endpoint = (svc: Services, request: OAuthRequest, body: unknown) => Promise<unknown>;

/** The endpoints by path, which is also their route in metrics and logs. */
const ENDPOINTS = new Map<string, Endpoint>([
  ['/auth/token', tokenRequest],
  ['/auth/introspect', introspect],
  [
    '/auth/revoke',
    async (svc, request, body) => {
      await revoke(svc, request, body);
      return {};
    },
  ],
  ['/auth/device', deviceAuthorization],
]);

const RESPONSE_HEADERS = { ...COMMON_HEADERS, ...NO_STORE, 'Content-Type': 'application/json; charset=utf-8' };

type BodyKind = 'form' | 'json' | 'none';

const unsupportedMedia = (description: string): ApiError => new ApiError(415, 'invalid_request', description);

/** How the body is to be read, from Content-Type; an ApiError for anything else. */
function bodyKind(req: IncomingMessage): BodyKind {
  const type = req.headers['content-type'];
  if (type === undefined) {
    if (req.headers['content-length'] === undefined || req.headers['content-length'] === '0') {
      if (req.headers['transfer-encoding'] === undefined) return 'none';
    }
    throw invalidRequest('send parameters as application/x-www-form-urlencoded or application/json (no Content-Type was sent)');
  }
  const [media, ...params] = type
    .toLowerCase()
    .split(';')
    .map((s) => s.trim());
  for (const param of params) {
    const [name, value] = param.split('=').map((s) => s.trim());
    if (name === 'charset' && value?.replace(/"/g, '') !== 'utf-8') throw unsupportedMedia(`charset ${value} is not supported: send UTF-8`);
  }
  if (media === 'application/x-www-form-urlencoded') return 'form';
  if (media === 'application/json' || /^application\/[^/]+\+json$/.test(media ?? '')) return 'json';
  throw invalidRequest(`send parameters as application/x-www-form-urlencoded or application/json (got ${media})`);
}

const DECODERS: Record<string, (buf: Buffer, options: zlib.ZlibOptions) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

const tooLarge = (): ApiError =>
  new ApiError(413, 'payload_too_large', `the request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`);

/** The body as sent, decompressed (within the same limit) when Content-Encoding says so. */
async function decodedBody(req: IncomingMessage, raw: Buffer): Promise<Buffer> {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return raw;
  const decode = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding] : undefined;
  if (!decode) throw unsupportedMedia(`Content-Encoding ${encoding} is not supported (gzip, deflate, br or none)`);
  try {
    return await decode(raw, { maxOutputLength: BODY_LIMIT_BYTES });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw invalidRequest(`the body is not valid ${encoding} data`);
  }
}

function parseBody(kind: BodyKind, text: string): unknown {
  if (kind === 'none' || text === '') return {};
  if (kind === 'json') {
    let body: unknown;
    try {
      body = JSON.parse(text) as unknown;
    } catch (err) {
      throw invalidRequest(`malformed JSON: ${errorMessage(err)}`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw invalidRequest('the JSON body must be an object of parameters');
    return body;
  }
  return parseForm(text);
}

/**
 * An application/x-www-form-urlencoded body. Repeated names become lists, which
 * tokenParams refuses; malformed percent-encoding is refused rather than guessed at.
 */
function parseForm(text: string): Record<string, string | string[]> {
  const form = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    if (++count > LIMITS.parameters) throw invalidRequest(`more than ${LIMITS.parameters} form parameters`);
    const eq = pair.indexOf('=');
    const name = percentDecode(eq === -1 ? pair : pair.slice(0, eq), true);
    const value = percentDecode(eq === -1 ? '' : pair.slice(eq + 1), true);
    if (name === undefined || value === undefined) throw invalidRequest('the form holds malformed percent-encoding');
    const prior = form[name];
    form[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
  }
  return form;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
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
    req.on('error', reject);
  });
}

async function parameters(req: IncomingMessage): Promise<unknown> {
  const kind = bodyKind(req);
  const body = await decodedBody(req, await readBody(req));
  if (!isUtf8(body)) throw invalidRequest('the body is not valid UTF-8');
  return parseBody(kind, body.toString('utf8'));
}

/**
 * A request listener for the box's HTTP server: the OAuth endpoints above, and
 * everything else handed to `fallback` (the express app).
 */
export function withOAuthEndpoints(
  svc: Services,
  fallback: (req: IncomingMessage, res: ServerResponse) => void,
  logRequest: (method: string, url: string, route: string, status: number, seconds: number) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const route = query === -1 ? url : url.slice(0, query);
    const endpoint = ENDPOINTS.get(route);
    if (!endpoint) {
      fallback(req, res);
      return;
    }
    const method = req.method ?? 'GET';
    const started = process.hrtime.bigint();
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      const json = body === undefined ? '' : JSON.stringify(body);
      res.writeHead(status, { ...RESPONSE_HEADERS, ...headers, 'Content-Length': Buffer.byteLength(json) }).end(json);
      logRequest(method, url, route, status, Number(process.hrtime.bigint() - started) / 1e9);
    };
    const fail = (err: unknown): void => {
      const error = errorAnswer(err, svc, { method, path: route });
      answer(error.status, error.body, error.headers);
    };
    if (method === 'OPTIONS' && req.headers['access-control-request-method']) {
      req.resume();
      answer(204, undefined, PREFLIGHT_HEADERS);
      return;
    }
    if (method !== 'POST') {
      req.resume();
      fail(new ApiError(405, 'invalid_request', `${route} takes POST only`, { Allow: 'POST, OPTIONS' }));
      return;
    }
    parameters(req)
      .then((body) => endpoint(svc, { authorization: req.headers.authorization, address: svc.addressOf(req) }, body))
      .then((body) => answer(200, body), fail);
  };
}
