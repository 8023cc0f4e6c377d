// The box's one HTTP layer: the request and response every handler sees, and the router that
// picks the handlers of a request. It replaces express (docs/performance.md, "One HTTP layer"):
// the profile of `GET /Client/<id>` put express's router at 17 % of its busy samples, walking a
// regular expression per layer for every request. Here the layers are flattened once, at the first
// request, and a request whose path names a route outright (most do) visits only the layers that
// can match it.
//
// What it keeps of express, because the handlers were written to it: the order of layers is the
// order they were added; a handler calls next() to go on, next(err) (or throws, or rejects) to
// skip to the next error handler (four parameters); GET routes answer HEAD. Every path is matched
// case-sensitively and strictly: /Client/x is served, /client/x, /Client/x/ and //Client/x are not
// (404). A policy sees the path that was routed, so no second spelling of a path may reach the
// same handler.
import { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { ApiError, badRequest } from '../errors.js';
import { preferredMediaType } from './negotiation.js';
import { whenClosed } from '../response-over.js';

/** The named segments of a route's path (`/users/:id/sessions/:sid` → id, sid). */
type ParamNames<P extends string> = P extends `${string}/:${infer Name}/${infer Rest}`
  ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}/:${infer Name}`
    ? Name
    : never;

/** What req.params holds on a route of `P`: each named segment when the path is known as it is written, else anything. */
export type ParamsOf<P> = P extends string ? (string extends P ? Params : { readonly [N in ParamNames<P>]: string }) : Params;
export type Params = Readonly<Record<string, string | undefined>>;

export type NextFunction = (err?: unknown) => void;
export type RequestHandler<P = Params> = (req: Request<P>, res: Response, next: NextFunction) => unknown;
export type ErrorRequestHandler = (err: unknown, req: Request, res: Response, next: NextFunction) => unknown;
type Handler = RequestHandler | ErrorRequestHandler;
/** What a route takes: handlers, or lists of them (a body reader and its check). */
export type Handlers<P = Params> = (RequestHandler<P> | readonly RequestHandler[])[];

const NO_PARAMS: Params = Object.freeze({});

/** A request as the handlers see it: node's, with what routing found and a few readings of its headers. */
export class Request<P = Params> extends IncomingMessage {
  // A server's request always has both.
  declare method: string;
  declare url: string;
  /** The route's named segments (`/users/:id`), percent-decoded. */
  params: P = NO_PARAMS as P;
  /** The parsed body, once a body reader ran (./body.ts); undefined before. */
  body: any = undefined;
  /** The route that matched, as it was declared (`/users/:id`); undefined for middleware. */
  route: { path: string } | undefined = undefined;
  /** The query once read (`query`). */
  parsedQuery: ParsedUrlQuery | undefined = undefined;

  /** The path of the request target, as sent (percent-encoded), without its query. */
  get path(): string {
    return pathOf(this.url);
  }

  /** The request target as sent. */
  get originalUrl(): string {
    return this.url;
  }

  /** The query's parameters (node:querystring: a repeated name is an array); the edge checked them (./edge.ts). */
  get query(): ParsedUrlQuery {
    if (this.parsedQuery === undefined) {
      const url = this.url;
      const q = url.indexOf('?');
      this.parsedQuery = parseQuery(q === -1 ? '' : url.slice(q + 1));
    }
    return this.parsedQuery;
  }

  /** A header's value, its list joined (Set-Cookie aside, which a request does not carry). */
  get(name: string): string | undefined {
    const value = this.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /** Which of `types` the Accept header prefers (RFC 9110 §12.5.1); the first with no header; false if it takes none. */
  accepts(types: readonly string[]): string | false {
    return preferredMediaType(this.headers.accept, types);
  }
}

/** The box's branding and whatever else a page needs of the app that routed it (./pages.ts). */
export interface AppLocals {
  locals: Record<string, unknown>;
}

/** A response with the helpers the handlers use; each returns the response, to chain. */
export class Response extends ServerResponse<Request> {
  /** The app that routed the request (set by Router.listener). */
  app: AppLocals | undefined = undefined;
  /** Made by the first read of `gone`. */
  goneController: AbortController | undefined = undefined;

  /**
   * Aborted once the client has gone (its connection closed) before this answer was sent: what is
   * queued for the request alone (an argon2 run) may be dropped. Made when first asked for: a
   * request that never asks pays nothing. Watched on the connection, not the response: a response
   * waiting behind another on a connection (pipelined) is never told that the connection closed.
   */
  get gone(): AbortSignal {
    if (this.goneController === undefined) {
      const gone = (this.goneController = new AbortController());
      const connection = this.req.socket;
      if (connection.destroyed) {
        if (!this.writableFinished) gone.abort();
      } else
        this.once(
          'finish',
          whenClosed(connection, () => gone.abort()),
        );
    }
    return this.goneController.signal;
  }

  status(code: number): this {
    this.statusCode = code;
    return this;
  }

  /** Sets headers; a text or JSON Content-Type without a charset gets utf-8. */
  set(field: string | Readonly<Record<string, string | readonly string[]>>, value?: string | readonly string[]): this {
    if (typeof field !== 'string') {
      for (const [name, v] of Object.entries(field)) this.set(name, v);
      return this;
    }
    if (field.toLowerCase() === 'content-type' && typeof value === 'string') this.setHeader(field, withCharset(value));
    else this.setHeader(field, value ?? '');
    return this;
  }

  /** Adds a value to a header (Set-Cookie) without dropping the ones before. */
  append(field: string, value: string): this {
    const before = this.getHeader(field);
    const values = before === undefined ? [] : Array.isArray(before) ? before : [String(before)];
    this.setHeader(field, [...values, value]);
    return this;
  }

  /** Content-Type by media type, or by a short name (html, json). */
  type(type: string): this {
    return this.set('Content-Type', SHORT_TYPES[type] ?? type);
  }

  /** Adds a request header to Vary, once. */
  vary(field: string): this {
    const before = this.getHeader('Vary');
    const fields = before === undefined ? [] : String(before).split(/\s*,\s*/);
    if (!fields.some((f) => f.toLowerCase() === field.toLowerCase())) this.setHeader('Vary', [...fields, field].join(', '));
    return this;
  }

  /** The Location header, its characters that a URL may not hold percent-encoded (what is encoded already stays). */
  location(url: string): this {
    this.setHeader('Location', encodeUrl(url));
    return this;
  }

  /** A redirect: 302 unless a status is given, with a short text body for whoever does not follow it. */
  redirect(statusOrUrl: number | string, maybeUrl?: string): void {
    const [status, url] = typeof statusOrUrl === 'number' ? [statusOrUrl, maybeUrl ?? '/'] : [302, statusOrUrl];
    this.location(url)
      .status(status)
      .type('text/plain')
      .send(`Redirecting to ${encodeUrl(url)}`);
  }

  json(body: unknown): void {
    if (!this.hasHeader('Content-Type')) this.setHeader('Content-Type', 'application/json; charset=utf-8');
    this.send(JSON.stringify(body) ?? '');
  }

  /** Ends the response with `body`: text (HTML unless a type was set), bytes, or JSON for anything else. */
  send(body?: string | Buffer | object | number | boolean | null): void {
    if (body !== undefined && body !== null && typeof body !== 'string' && !Buffer.isBuffer(body)) return this.json(body);
    let chunk: string | Buffer = body ?? '';
    if (typeof chunk === 'string') {
      const type = this.getHeader('Content-Type');
      this.setHeader('Content-Type', typeof type === 'string' ? setCharset(type) : 'text/html; charset=utf-8');
    } else if (!this.hasHeader('Content-Type')) this.setHeader('Content-Type', 'application/octet-stream');
    if (this.statusCode === 204 || this.statusCode === 304) {
      this.removeHeader('Content-Type');
      this.removeHeader('Content-Length');
      this.removeHeader('Transfer-Encoding');
      chunk = '';
    } else this.setHeader('Content-Length', Buffer.byteLength(chunk));
    this.end(this.req.method === 'HEAD' ? undefined : chunk);
  }
}

const SHORT_TYPES: Record<string, string> = { html: 'text/html', json: 'application/json', text: 'text/plain' };

/** The charset a media type's text takes when none is named: utf-8 for text and JSON (as mime-types says), none for the rest. */
function withCharset(type: string): string {
  if (/;\s*charset=/i.test(type)) return type;
  return /^\s*(text\/[^;\s]+|application\/(json|javascript))\s*(;|$)/i.test(type) ? `${type}; charset=utf-8` : type;
}

/** A string body is sent as UTF-8, whatever charset the type named. */
function setCharset(type: string): string {
  const bare = type.replace(/;\s*charset=[^;]*/i, '');
  return `${bare}; charset=utf-8`;
}

/** Percent-encodes what a URL may not hold as it is (RFC 3986), leaving %XX escapes alone. */
export function encodeUrl(url: string): string {
  return url.replace(/(?:[^\x21\x23-\x3B\x3D\x3F-\x5F\x61-\x7A\x7C\x7E]|%(?:[^0-9A-Fa-f]|[0-9A-Fa-f][^0-9A-Fa-f]|$))+/g, (run) =>
    // A lone surrogate cannot be encoded; it becomes U+FFFD, as the WHATWG URL parser does.
    encodeURI(run.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')),
  );
}

/** A request target in absolute form: its scheme, its authority (any userinfo apart), and the rest. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?([^/?#@]*)([^#]*)/i;

/**
 * RFC 9112 §3.2.2: "A server MUST accept the absolute-form in requests" (what a client sends to a
 * proxy), and "the origin server MUST ignore the received Host header field (if any) and instead use
 * the host information of the request-target". The request becomes the origin-form one it stands
 * for (its Host the target's), so that the routes and the tenants' host (which picks a box by Host)
 * read one form. Idempotent: an origin-form target is left as it is.
 */
export function inOriginForm(req: IncomingMessage): void {
  const url = req.url;
  if (url === undefined || url.startsWith('/')) return;
  const absolute = ABSOLUTE_FORM.exec(url);
  if (!absolute) return;
  const [, authority, rest] = absolute as unknown as [string, string, string];
  req.headers.host = authority;
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
}

const pathOf = (url: string): string => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

/** A path pattern, compiled: which paths it takes, and the named segments it reads from them. */
interface Matcher {
  /** The path this pattern names outright, if it has no named segment. */
  exact: string | undefined;
  /** The parameters of `path`, or undefined if it does not match. */
  match(path: string): Params | undefined;
}

const ANY_PATH: Matcher = { exact: undefined, match: () => NO_PARAMS };

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw badRequest(`the path segment ${JSON.stringify(raw.slice(0, 64))} is not valid percent-encoding`);
  }
}

/**
 * `pattern`: a path whose segments are literal, or `:name` for one non-empty segment; or a
 * regular expression over the whole path, whose groups become params 0, 1…
 */
function routeMatcher(pattern: string | RegExp): Matcher {
  if (pattern instanceof RegExp) {
    return {
      exact: undefined,
      match: (path) => {
        const found = pattern.exec(path);
        if (!found) return undefined;
        return found.length === 1 ? NO_PARAMS : Object.fromEntries(found.slice(1).map((v, i) => [String(i), v ? decodeParam(v) : '']));
      },
    };
  }
  const written = pattern.split('/');
  const names = written.map((s) => (s.startsWith(':') ? s.slice(1) : undefined));
  const segments = written.map((s) => (s.startsWith('\\') ? s.slice(1) : s));
  if (names.every((n) => n === undefined)) {
    const exact = segments.join('/');
    return { exact, match: (path) => (path === exact ? NO_PARAMS : undefined) };
  }
  return {
    exact: undefined,
    match: (path) => {
      const parts = path.split('/');
      if (parts.length !== segments.length) return undefined;
      const params: Record<string, string> = {};
      for (let i = 0; i < parts.length; i++) {
        const name = names[i];
        if (name === undefined) {
          if (parts[i] !== segments[i]) return undefined;
        } else if (parts[i] === '') return undefined;
        else params[name] = decodeParam(parts[i]!);
      }
      return params;
    },
  };
}

/** `prefix` and every path below it (Router.use with a path). */
function prefixMatcher(prefix: string): Matcher {
  return { exact: undefined, match: (path) => (path === prefix || path.startsWith(`${prefix}/`) ? NO_PARAMS : undefined) };
}

interface Layer {
  /** The method it takes (GET takes HEAD too); undefined: any. */
  method: string | undefined;
  matcher: Matcher;
  /** The route as declared, for req.route (metrics, logs, policies); undefined for middleware. */
  route: string | undefined;
  handler: Handler;
  /** An error handler: it has four parameters, and runs only once a handler failed. */
  catches: boolean;
}

type Entry = Layer | Router;

/** A route's path: literal segments and `:name`s (`\\:` for a segment that starts with a colon), or a regular expression. */
type Path = string | RegExp;

/** The layers a request can meet: those of its path when a route names it outright, else every pattern's. */
interface Table {
  byPath: Map<string, Layer[]>;
  patterns: Layer[];
}

export class Router implements AppLocals {
  /** What the app's pages read (./pages.ts): the box's branding. */
  readonly locals: Record<string, unknown> = {};
  readonly #entries: Entry[] = [];
  #table: Table | undefined;

  get<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route('GET', path, handlers);
  }
  post<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route('POST', path, handlers);
  }
  put<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route('PUT', path, handlers);
  }
  patch<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route('PATCH', path, handlers);
  }
  delete<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route('DELETE', path, handlers);
  }
  /** Every method. */
  all<P extends Path>(path: P | readonly P[], ...handlers: Handlers<ParamsOf<P>>): this {
    return this.#route(undefined, path, handlers);
  }

  /** Middleware for every path, or `path` and below; routers mounted in place. */
  use(...handlers: (RequestHandler | readonly RequestHandler[] | Router)[]): this;
  use(path: string, ...handlers: (RequestHandler | readonly RequestHandler[])[]): this;
  /** An error handler: it runs once a handler before it failed. */
  use(errors: ErrorRequestHandler): this;
  use(...args: (string | Handler | readonly RequestHandler[] | Router)[]): this {
    const matcher = typeof args[0] === 'string' ? prefixMatcher(args.shift() as string) : ANY_PATH;
    for (const item of args.flat()) {
      if (typeof item === 'string') throw new TypeError('a path goes first in use()');
      if (item instanceof Router) {
        if (matcher !== ANY_PATH) throw new TypeError('a router is mounted at the root: its routes name their whole paths');
        this.#entries.push(item);
      } else this.#entries.push({ method: undefined, matcher, route: undefined, handler: item, catches: item.length === 4 });
    }
    this.#table = undefined;
    return this;
  }

  #route<P>(method: string | undefined, paths: Path | readonly Path[], handlers: Handlers<P>): this {
    for (const path of Array.isArray(paths) ? (paths as readonly Path[]) : [paths as Path]) {
      const matcher = routeMatcher(path);
      const route = String(path);
      for (const handler of handlers.flat()) this.#entries.push({ method, matcher, route, handler: handler as Handler, catches: false });
    }
    this.#table = undefined;
    return this;
  }

  /** The methods the routes of `path` take (an OPTIONS answer's Allow). */
  methodsOf(path: string): string[] {
    const methods = new Set<string>();
    for (const layer of this.#layers()) {
      if (layer.route !== undefined && layer.method !== undefined && layer.matcher.match(path)) methods.add(layer.method);
    }
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods];
  }

  #layers(): Layer[] {
    return this.#entries.flatMap((entry) => (entry instanceof Router ? entry.#layers() : [entry]));
  }

  /** The layers flattened, and indexed by the paths routes name outright. */
  #tableOf(): Table {
    if (this.#table) return this.#table;
    const layers = this.#layers();
    const patterns = layers.filter((layer) => layer.matcher.exact === undefined);
    const byPath = new Map<string, Layer[]>();
    for (const path of new Set(layers.map((layer) => layer.matcher.exact).filter((p) => p !== undefined))) {
      byPath.set(
        path,
        layers.filter((layer) => (layer.matcher.exact === undefined ? safeMatch(layer.matcher, path) : layer.matcher.exact === path)),
      );
    }
    this.#table = { byPath, patterns };
    return this.#table;
  }

  /** Runs the layers of `req` in order; `done` gets what no layer answered (an error, or nothing: 404). */
  handle(req: Request, res: Response, done: (err?: unknown) => void): void {
    const table = this.#tableOf();
    const path = req.path;
    const layers = table.byPath.get(path) ?? table.patterns;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    let index = 0;
    const next: NextFunction = (failure) => {
      let err: unknown = failure ?? undefined;
      while (index < layers.length) {
        const layer = layers[index++]!;
        if (layer.catches !== (err !== undefined)) continue;
        if (layer.method !== undefined && layer.method !== method) continue;
        let params: Params | undefined;
        try {
          params = layer.matcher.match(path);
        } catch (badPath) {
          err = badPath;
          continue;
        }
        if (!params) continue;
        req.params = params;
        if (layer.route !== undefined) req.route = { path: layer.route };
        call(layer, err, req, res, next);
        return;
      }
      done(err);
    };
    next();
  }

  /** A node:http request listener for this router as the app; what no layer answers is 404, an error 500, both bare. */
  listener(): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      inOriginForm(req);
      const [request, response] = adopted(req, res);
      response.app = this;
      this.handle(request, response, (err) => {
        if (response.headersSent) return void response.end();
        response.statusCode = err === undefined ? 404 : err instanceof ApiError ? err.status : 500;
        response.end();
      });
    };
  }
}

function safeMatch(matcher: Matcher, path: string): boolean {
  try {
    return matcher.match(path) !== undefined;
  } catch {
    return true;
  }
}

/** Calls a layer's handler: what it throws or rejects goes to next(), as express 5 did. */
function call(layer: Layer, err: unknown, req: Request, res: Response, next: NextFunction): void {
  try {
    const result = layer.catches
      ? (layer.handler as ErrorRequestHandler)(err, req, res, next)
      : (layer.handler as RequestHandler)(req, res, next);
    if (result instanceof Promise) result.then(undefined, (failure: unknown) => next(failure ?? new Error('a handler rejected')));
  } catch (failure) {
    next(failure);
  }
}

/** The classes node:http builds for each request (`http.createServer(SERVER_CLASSES, …)`), so that no request needs adopting. */
export const SERVER_CLASSES = { IncomingMessage: Request, ServerResponse: Response } as const;

/** A request and response as the router's classes; a server made without SERVER_CLASSES pays for this per request. */
function adopted(req: IncomingMessage, res: ServerResponse): [Request, Response] {
  if (req instanceof Request && res instanceof Response) return [req, res];
  Object.setPrototypeOf(req, Request.prototype);
  Object.setPrototypeOf(res, Response.prototype);
  const request = req as Request;
  const response = res as Response;
  Object.assign(request, { params: NO_PARAMS, body: undefined, route: undefined, parsedQuery: undefined });
  Object.assign(response, { app: undefined, goneController: undefined });
  return [request, response];
}
