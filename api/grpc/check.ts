// Envoy's ext_authz v3 CheckRequest read into a GateRequest, and a Decision written
// back as a CheckResponse (envoy/service/auth/v3/external_auth.proto). Pure: the
// server (./ext-authz.ts) only moves these over gRPC.
//
// Which app: the route's context extension `app` (Envoy's per-route
// check_settings.context_extensions), else the request's host, as the HTTP doors do.
// A client cannot name the app: context extensions are the gateway's own.
import { appCookieAttributes } from '../decision/app-sign-in.js';
import type { Decision, GateRequest } from '../decision/engine.js';
import type { GateBody } from '../decision/jsonrpc.js';
import { credentialFrom } from '../http/gate-credential.js';
import { forwardedCertificate } from '../http/client-certificate.js';
import { refusalOf } from '../http/refusal.js';
import { errorFields, errorMessage } from '../errors.js';
import { UNANSWERED } from '../http/errors.js';
import { PAGE_HEADERS } from '../http/pages.js';

/** The fields of a CheckRequest the decision reads (as protobufjs decodes it: proto names; unset strings are empty). */
export interface CheckRequest {
  attributes?: {
    request?: {
      http?: {
        method?: string;
        /** Lower-case names, values of one name joined; absent when Envoy's encode_raw_headers is set. */
        headers?: Record<string, string>;
        /** With encode_raw_headers: each header as sent, values as bytes. */
        header_map?: { headers?: { key?: string; value?: string; raw_value?: Buffer | Uint8Array }[] };
        /** Path and query, as the gateway sends them on. */
        path?: string;
        host?: string;
        scheme?: string;
        /** The original request's size in bytes, -1 when unknown (int64: a number or a Long). */
        size?: number | { toString(): string } | null;
        /** With Envoy's with_request_body: the body (or its first max_request_bytes), as a string… */
        body?: string;
        /** …or, with pack_as_bytes, as bytes. */
        raw_body?: Buffer | Uint8Array;
      };
    };
    context_extensions?: Record<string, string>;
    /** The downstream peer: the client the gateway served. */
    source?: {
      /** With the filter's include_peer_certificate: its client certificate, URL-encoded PEM (AttributeContext.Peer.certificate). */
      certificate?: string;
    };
  };
}

interface HeaderValueOption {
  header: { key: string; value: string };
  append_action: number;
}

export interface CheckResponse {
  /** google.rpc.Status: 0 OK lets the request through; anything else refuses it. */
  status: { code: number; message?: string };
  ok_response?: {
    headers: HeaderValueOption[];
    headers_to_remove: string[];
    response_headers_to_add: HeaderValueOption[];
  };
  denied_response?: {
    status: { code: number };
    headers: HeaderValueOption[];
    body: string;
  };
}

/** Where a CheckRequest carries the client's certificate (read as NGINX's URL-encoded PEM is), as refusals name it. */
const PEER_CERTIFICATE = 'attributes.source.certificate';

// google.rpc.Code
const OK = 0;
const INVALID_ARGUMENT = 3;
const PERMISSION_DENIED = 7;
const UNAVAILABLE = 14;
const UNAUTHENTICATED = 16;
// envoy.config.core.v3.HeaderValueOption.HeaderAppendAction: the gate's value replaces the client's.
const OVERWRITE_IF_EXISTS_OR_ADD = 2;

const RPC_CODES: Record<Decision['status'], number> = {
  200: OK,
  302: UNAUTHENTICATED,
  400: INVALID_ARGUMENT,
  401: UNAUTHENTICATED,
  403: PERMISSION_DENIED,
  413: INVALID_ARGUMENT,
  503: UNAVAILABLE,
};

const option = (key: string, value: string): HeaderValueOption => ({
  header: { key, value },
  append_action: OVERWRITE_IF_EXISTS_OR_ADD,
});

type HttpAttributes = NonNullable<NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http']>;

/** The request's headers, lower-case names, whichever way Envoy encoded them (the first of a name when raw). */
function headersOf(http: HttpAttributes): Record<string, string> {
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(http.headers ?? {})) headers[name.toLowerCase()] = value;
  for (const h of http.header_map?.headers ?? []) {
    const name = (h.key ?? '').toLowerCase();
    if (!name || name in headers) continue;
    headers[name] = h.raw_value && h.raw_value.length > 0 ? Buffer.from(h.raw_value).toString('utf8') : (h.value ?? '');
  }
  return headers;
}

/**
 * The body Envoy sent with the check (with_request_body), or none. It is whole unless it is
 * longer than `limit`, shorter than the request's size, or Envoy says it cut it: with
 * allow_partial_message it sends the first max_request_bytes and the header
 * x-envoy-auth-partial-body: true.
 */
function bodyOf(http: HttpAttributes, headers: Record<string, string>, limit: number): GateBody | undefined {
  const raw = http.raw_body && http.raw_body.length > 0 ? http.raw_body : http.body ? Buffer.from(http.body, 'utf8') : undefined;
  if (!raw) return undefined;
  const size = typeof http.size === 'number' ? http.size : Number(http.size?.toString() ?? -1);
  const cut = (headers['x-envoy-auth-partial-body'] ?? '').toLowerCase().includes('true');
  const whole = !cut && raw.length <= limit && !(size > raw.length);
  return { bytes: raw.subarray(0, limit), whole };
}

/** The GateRequest a CheckRequest asks about, or why there is none; `bodyLimit`: the most of a body the gate reads (BOXAUTH_GATE_BODY_BYTES). */
export function gateRequestOf(check: CheckRequest, bodyLimit: number): GateRequest | { refused: string } {
  const http = check.attributes?.request?.http;
  if (!http) return { refused: 'the CheckRequest has no attributes.request.http: only HTTP requests are decided' };
  const headers = headersOf(http);
  const target = http.path || headers[':path'];
  if (!target) return { refused: 'the CheckRequest names no path (attributes.request.http.path)' };
  // As at forward-auth: deciding a request of no method as a GET would let a DELETE through a read-only policy.
  const method = http.method || headers[':method'];
  if (!method) return { refused: 'the CheckRequest names no method (attributes.request.http.method)' };
  const app = check.attributes?.context_extensions?.app;
  // Envoy's own word, as the context extensions are: the certificate of its TLS with the client
  // (ext_authz include_peer_certificate), never a header the client could have written.
  const peerCertificate = check.attributes?.source?.certificate;
  let certificate: GateRequest['certificate'];
  try {
    certificate = peerCertificate ? forwardedCertificate(PEER_CERTIFICATE, peerCertificate, PEER_CERTIFICATE) : undefined;
  } catch (err) {
    return { refused: errorMessage(err) };
  }
  return {
    door: 'grpc',
    app: app || undefined,
    method: method.toUpperCase(),
    host: http.host || headers[':authority'] || headers.host || '',
    scheme: http.scheme || headers[':scheme'] || undefined,
    target,
    headers,
    credential: credentialFrom(headers.authorization, headers.cookie),
    body: bodyOf(http, headers, bodyLimit),
    certificate,
    // Envoy joins the values of a repeated header with commas, which no JWT holds: each is a proof.
    ...(headers.dpop !== undefined ? { proofs: headers.dpop.split(',').map((p) => p.trim()) } : {}),
  };
}

/** A header's name as CGI, PHP, WSGI and Rack servers see it: every character but a letter or digit is `_`. */
const cgiName = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '_');

/**
 * The request's headers that are another spelling of one of `upstream` (x_auth_request_user,
 * x.auth.request.user): Envoy passes them on (headers_with_underscores_action is ALLOW by
 * default), and CGI, PHP, WSGI and Rack servers read them all as HTTP_X_AUTH_REQUEST_USER — a
 * client's own would speak for the gate, alone when the gate's is removed, or beside it.
 */
function lookalikes(upstream: string[], sent: string[]): string[] {
  const names = new Set(upstream.map((name) => name.toLowerCase()));
  const aliased = new Set([...names].map(cgiName));
  return sent.filter((name) => !names.has(name) && aliased.has(cgiName(name)));
}

/**
 * A decision as Envoy applies it. Allowed: the caller's headers replace whatever the client
 * sent under those names (`sent`: the request's header names), an empty one is removed, and so
 * is a look-alike of either (the client cannot speak for the gate).
 * Refused: the status, challenge or sign-in address, and a body for the client; the decision id
 * travels both ways in X-Boxauth-Decision.
 */
export function checkResponseOf(box: string, d: Decision, wantsHtml: boolean, sent: string[] = []): CheckResponse {
  const id = option('X-Boxauth-Decision', d.id);
  const clear = d.clearCookie
    ? [option('Set-Cookie', `${d.clearCookie}=${appCookieAttributes(d.clearCookie.startsWith('__Host-'), 0)}`)]
    : [];
  if (d.allowed) {
    const upstream = Object.entries(d.upstream);
    return {
      status: { code: OK },
      ok_response: {
        headers: [id, ...upstream.filter(([, v]) => v !== '').map(([k, v]) => option(k, v))],
        headers_to_remove: [
          ...upstream.filter(([, v]) => v === '').map(([k]) => k.toLowerCase()),
          ...lookalikes(Object.keys(d.upstream), sent),
        ],
        response_headers_to_add: [id, ...clear],
      },
    };
  }
  const refusal = refusalOf(box, d, wantsHtml);
  const headers = [
    id,
    option('Cache-Control', 'no-store'),
    ...clear,
    ...(d.challenge ? [option('WWW-Authenticate', d.challenge)] : []),
    ...(d.dpopNonce ? [option('DPoP-Nonce', d.dpopNonce)] : []),
    ...(d.retryAfter ? [option('Retry-After', String(d.retryAfter))] : []),
    ...(d.location ? [option('Location', d.location), option('X-Boxauth-Sign-In', d.location)] : []),
    ...(refusal.kind === 'html'
      ? [option('Content-Type', 'text/html; charset=utf-8'), ...Object.entries(PAGE_HEADERS).map(([k, v]) => option(k, v))]
      : [option('Content-Type', 'application/json')]),
  ];
  return {
    status: { code: RPC_CODES[d.status], message: d.description },
    // envoy.type.v3.StatusCode's values are the HTTP statuses themselves.
    denied_response: { status: { code: refusal.status }, headers, body: refusal.body },
  };
}

/** A refusal without a decision: `status` and its RFC 6749-style error, with `why` for the client. */
function bareRefusal(code: number, status: number, error: string, why: string): CheckResponse {
  return {
    status: { code, message: why },
    denied_response: {
      status: { code: status },
      headers: [option('Content-Type', 'application/json'), option('Cache-Control', 'no-store')],
      body: JSON.stringify(errorFields(error, why)),
    },
  };
}

/** A CheckRequest no decision can be made about: refused as a bad request, recording nothing. */
export const malformedResponse = (why: string): CheckResponse => bareRefusal(INVALID_ARGUMENT, 400, 'invalid_request', why);

/** A check the box could not answer (the error is logged): refused, 503, as a decision that failed is. */
export const unansweredResponse = (): CheckResponse => bareRefusal(UNAVAILABLE, 503, 'temporarily_unavailable', UNANSWERED);
