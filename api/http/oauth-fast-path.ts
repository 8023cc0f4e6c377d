// The token and introspection endpoints answer here, on node:http, ahead of
// express. They are what every in-cluster app calls, often once per request of
// its own, and the profile of `make bench` put express's router, body parsers and
// response helpers at a third of their time. The same handlers run
// (tokenRequest, introspect) with the same errors, headers, metrics and log line;
// anything unusual (another method, a compressed or non-UTF-8 body, another
// content type) goes to express, which answers it as before.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { ApiError } from '../errors.js';
import { invalidRequest } from '../oauth/errors.js';
import { introspect } from '../oauth/introspection.js';
import { tokenRequest } from '../oauth/token-endpoint.js';
import type { Services } from '../services.js';
import { BODY_LIMIT_BYTES, MAX_FORM_PARAMETERS } from './body.js';
import { errorAnswer } from './errors.js';
import { COMMON_HEADERS, NO_STORE } from './headers.js';

type Endpoint = (svc: Services, authorization: string | undefined, body: unknown) => Promise<unknown>;

/** The endpoints by path, which is also their route in metrics and logs. */
const ENDPOINTS = new Map<string, Endpoint>([['/auth/token', tokenRequest], ['/auth/introspect', introspect]]);

const RESPONSE_HEADERS = { ...COMMON_HEADERS, ...NO_STORE, 'Content-Type': 'application/json; charset=utf-8' };

/** The body parser this request needs, or undefined when express should take it. */
function bodyKind(req: IncomingMessage): 'form' | 'json' | 'none' | undefined {
  if (req.headers['content-encoding'] && req.headers['content-encoding'] !== 'identity') return undefined;
  const type = req.headers['content-type'];
  if (type === undefined) return req.headers['content-length'] === undefined || req.headers['content-length'] === '0' ? 'none' : undefined;
  const [media, ...params] = type.toLowerCase().split(';').map((s) => s.trim());
  if (params.some((p) => p.startsWith('charset=') && p !== 'charset=utf-8')) return undefined;
  if (media === 'application/x-www-form-urlencoded') return 'form';
  if (media === 'application/json') return 'json';
  return undefined;
}

function parseBody(kind: 'form' | 'json' | 'none', text: string): unknown {
  if (kind === 'none' || text === '') return {};
  if (kind === 'json') {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw invalidRequest(`malformed JSON: ${(err as Error).message}`);
    }
  }
  // Parsing stops one name past the limit; repeated names become arrays, which the handlers refuse.
  const form = parseQuery(text, '&', '=', { maxKeys: MAX_FORM_PARAMETERS + 1 });
  if (Object.keys(form).length > MAX_FORM_PARAMETERS) throw invalidRequest('too many form parameters');
  return form;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        reject(new ApiError(413, 'payload_too_large', `the request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * A request listener for the box's HTTP server: the OAuth hot path itself, and
 * everything else handed to `fallback` (the express app).
 */
export function withOAuthFastPath(
  svc: Services,
  fallback: (req: IncomingMessage, res: ServerResponse) => void,
  logRequest: (method: string, url: string, route: string, status: number, seconds: number) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const route = req.url!;
    const endpoint = req.method === 'POST' ? ENDPOINTS.get(route) : undefined;
    const kind = endpoint && bodyKind(req);
    if (!endpoint || !kind) {
      fallback(req, res);
      return;
    }
    const started = process.hrtime.bigint();
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      const json = JSON.stringify(body);
      res.writeHead(status, { ...RESPONSE_HEADERS, ...headers, 'Content-Length': Buffer.byteLength(json) }).end(json);
      logRequest('POST', route, route, status, Number(process.hrtime.bigint() - started) / 1e9);
    };
    readBody(req)
      .then((text) => endpoint(svc, req.headers.authorization, parseBody(kind, text)))
      .then((body) => answer(200, body), (err: unknown) => {
        const error = errorAnswer(err, svc.log, { method: 'POST', path: route });
        answer(error.status, error.body, error.headers);
      });
  };
}
