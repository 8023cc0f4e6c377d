// What the decision scenarios of `make bench` and `make bench-peers` ask: one App
// guarded by 20 policies, the tokens its callers present, and the question — may
// this caller GET /reports/7 of the app (or, TOOL_CALL, call an MCP tool) — as each
// door carries it: Traefik's forward-auth headers over HTTP, Envoy's CheckRequest
// over gRPC.
//
// The policies are a mix a real app would have, chosen so that deciding is not
// trivial: of the 20, 18 apply to the bench's callers (global ones, and ones linked
// to their clients) and are all evaluated, with RE2 regexes and JSON Schemas; only
// the last two allow the read; two are linked to other clients, so the index
// passes them by. test/bench/peers/opa-policy.rego says the same in Rego.
//
// A second App (CEL_APP, on its own host) says the same 20 rules as `cel` policies, so the
// decision rows with CEL (decide_*_jwt_cel) stand beside the same rows with matcho and JSON
// Schema, asked the same question with the same kind of token.
//
// A second question (TOOL_CALL, for decide_*_jwt_body) is an MCP client's: a POST to /mcp whose
// JSON-RPC body calls the tool `search`. The gateway sends the body with the check, the box reads
// its envelope (api/decision/jsonrpc.ts), and policy 15 (linked to the callers) allows that tool:
// the same 18 policies are evaluated as for the read, one allows instead of two. Without the body
// no policy allows a POST to /mcp, so a run whose every request is allowed has had every body read.
import { basic, type Box } from '../support/box.js';
import type { BenchRequest } from './load.js';
import { AUDIENCE } from './scenarios.js';

export const APP = 'bench-app';
export const APP_POLICIES = 20;
/** The clients whose tokens the decision scenarios present (scenarios.ts, tokenClients). */
export const CALLERS = ['bench-jwt', 'bench-opaque'];
/** The original request a gateway asks about: its method and path, and the body it sends with the check, if any. */
export interface Asked {
  method: 'GET' | 'POST';
  path: string;
  /** JSON, one line (load.ts). */
  body?: string;
}
/** What is asked: a read of one report. */
export const ASKED = { method: 'GET', path: '/reports/7', host: new URL(AUDIENCE).host } as const;
/** The tool TOOL_CALL calls, which policy 15 allows the callers. */
export const TOOL = 'search';
/** An MCP client's call of a tool (MCP 2025-11-25, "Calling Tools"): a small JSON-RPC request in a POST's body. */
export const TOOL_CALL: Asked = {
  method: 'POST',
  path: '/mcp',
  body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: TOOL, arguments: { query: 'reports 2026' } } }),
};
/** The App whose 20 policies are the same rules in CEL: its own host (two Apps may not share one), so its own tokens. */
export const CEL_APP = 'bench-app-cel';
export const CEL_AUDIENCE = 'https://cel.bench.example';

/** An App the decision rows ask about: its name and its audience (tokens for it, and the host asked). */
export interface BenchApp {
  name: string;
  audience: string;
}
export const MATCHO_APP: BenchApp = { name: APP, audience: AUDIENCE };
export const CEL_BENCH_APP: BenchApp = { name: CEL_APP, audience: CEL_AUDIENCE };

const callers = CALLERS.map((id) => ({ id, resourceType: 'Client' }));
const READ_AREAS = ['billing', 'payroll', 'admin', 'audit', 'exports', 'imports', 'search', 'uploads'];
const WRITTEN = ['orders', 'invoices', 'tickets', 'notes'];
const CALLER_RULES = [
  { path: '#^/metrics/', 'request-method': 'get' },
  { path: '#^/reports/[0-9]+/(edit|delete)$' },
  // An MCP server's tool (TOOL_CALL): the callers may call `search` and `read_file`.
  { 'request-method': 'post', path: '#^/mcp$', jsonrpc: { method: 'tools/call', tool: '#^(search|read_file)$' } },
  { scope: '#\\breports:admin\\b' },
];

/** A JSON Schema policy: the request's client, method and path each as given. */
const schemaPolicy = (client: object, method: object, pathPattern: string): Record<string, unknown> => ({
  engine: 'json-schema',
  schema: {
    type: 'object',
    required: ['client', 'request-method', 'path'],
    properties: { client, 'request-method': method, path: { type: 'string', pattern: pathPattern } },
  },
});

/** The app's policies, by id: sorted by id, the two that allow come last. */
export function appPolicies(): Record<string, Record<string, unknown>> {
  const policies: Record<string, Record<string, unknown>> = {};
  let n = 0;
  const id = (): string => `${APP}-${String(++n).padStart(2, '0')}`;
  // 01-08, global: anyone may read these areas (the request is for none of them).
  for (const area of READ_AREAS) {
    policies[id()] = { engine: 'matcho', matcho: { path: `#^/${area}(/|$)`, 'request-method': { $enum: ['get', 'head'] } } };
  }
  // 09-12, global: any client may write these collections.
  for (const collection of WRITTEN) {
    policies[id()] = schemaPolicy({ type: 'string' }, { enum: ['post', 'put', 'delete'] }, `^/${collection}/`);
  }
  // 13-16, linked to the bench's callers: other things they may do.
  for (const matcho of CALLER_RULES) policies[id()] = { engine: 'matcho', link: callers, matcho };
  // 17-18, linked to other clients: not evaluated for these callers.
  for (let i = 0; i < 2; i++) {
    policies[id()] = { engine: 'matcho', link: [{ id: `other-client-${i + 1}`, resourceType: 'Client' }], matcho: { path: '#^/reports/' } };
  }
  // 19-20: the two that allow, one linked to the callers, one global naming them.
  policies[id()] = { engine: 'matcho', link: callers, matcho: { 'request-method': 'get', path: '#^/reports/[0-9]+$', audience: AUDIENCE } };
  policies[id()] = schemaPolicy({ enum: CALLERS }, { const: 'get' }, '^/reports/');
  return policies;
}

const cel = (link: object[] | undefined, expression: string): Record<string, unknown> => ({
  engine: 'cel',
  ...(link ? { link } : {}),
  cel: expression,
});
const method = 'request["request-method"]';
const names = (list: string[]): string => `[${list.map((x) => JSON.stringify(x)).join(', ')}]`;

/** appPolicies' rules, one for one, as CEL expressions (ids `bench-app-cel-NN`, in the same order). */
export function celAppPolicies(): Record<string, Record<string, unknown>> {
  const policies: Record<string, Record<string, unknown>> = {};
  let n = 0;
  const id = (): string => `${CEL_APP}-${String(++n).padStart(2, '0')}`;
  for (const area of READ_AREAS) policies[id()] = cel(undefined, `request.path.matches("^/${area}(/|$)") && ${method} in ["get", "head"]`);
  for (const collection of WRITTEN) {
    policies[id()] = cel(
      undefined,
      `type(request.client) == string && ${method} in ["post", "put", "delete"] && request.path.matches("^/${collection}/")`,
    );
  }
  policies[id()] = cel(callers, `request.path.matches("^/metrics/") && ${method} == "get"`);
  policies[id()] = cel(callers, 'request.path.matches("^/reports/[0-9]+/(edit|delete)$")');
  policies[id()] = cel(
    callers,
    `${method} == "post" && request.path.matches("^/mcp$") && request.jsonrpc.method == "tools/call" && request.jsonrpc.tool.matches("^(search|read_file)$")`,
  );
  policies[id()] = cel(callers, 'request.scope.matches("\\breports:admin\\b")');
  for (let i = 0; i < 2; i++)
    policies[id()] = cel([{ id: `other-client-${i + 1}`, resourceType: 'Client' }], 'request.path.matches("^/reports/")');
  policies[id()] = cel(callers, `${method} == "get" && request.path.matches("^/reports/[0-9]+$") && request.audience == "${CEL_AUDIENCE}"`);
  policies[id()] = cel(undefined, `request.client in ${names(CALLERS)} && ${method} == "get" && request.path.matches("^/reports/")`);
  return policies;
}

/** Creates the Apps and their policies through the API, as a cluster admin's resources would. */
export async function seedApp(box: Box): Promise<void> {
  const root = await box.rootToken();
  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await box.json('PUT', path, body, root);
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${res.text}`);
  };
  await put(`/App/${APP}`, { urls: [AUDIENCE] });
  for (const [id, policy] of Object.entries(appPolicies())) await put(`/AccessPolicy/${id}`, { app: APP, ...policy });
  await put(`/App/${CEL_APP}`, { urls: [CEL_AUDIENCE] });
  for (const [id, policy] of Object.entries(celAppPolicies())) await put(`/AccessPolicy/${id}`, { app: CEL_APP, ...policy });
}

/** An access token for the app (its audience), as each caller would obtain one: an ES256 JWT and an opaque token. */
export async function appTokens(
  box: Box,
  clients: { jwt: { id: string; secret: string }; opaque: { id: string; secret: string } },
): Promise<{ jwt: string; opaque: string; celJwt: string }> {
  const token = async (client: { id: string; secret: string }, audience = AUDIENCE): Promise<string> => {
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', audience },
      { Authorization: basic(client.id, client.secret) },
    );
    if (res.status !== 200) throw new Error(`a token for ${APP}: ${res.status} ${res.text}`);
    return res.body.access_token as string;
  };
  return { jwt: await token(clients.jwt), opaque: await token(clients.opaque), celJwt: await token(clients.jwt, CEL_AUDIENCE) };
}

// Headers a gateway passes on from a typical API client, beside the token: the same on both doors.
const CLIENT_HEADERS = { accept: 'application/json', 'user-agent': 'bench-client/1.0', 'x-request-id': 'bench' };

/** The HTTP headers a gateway passes on of a request with a body: its type (the length is the door's own). */
const bodyHeaders = (asked: Asked): Record<string, string> => (asked.body === undefined ? {} : { 'content-type': 'application/json' });

/**
 * The HTTP door: forward-auth as Traefik asks it (GET /authz/forward-auth/<app>, the original request in
 * X-Forwarded-*). With a body, as Traefik's forwardAuth with `forwardBody: true` sends it: the same GET,
 * with the original request's body and Content-Type (wrk adds its Content-Length).
 */
export function forwardAuthRequest(bearer: string, app: BenchApp = MATCHO_APP, asked: Asked = ASKED): BenchRequest {
  return {
    method: 'GET',
    path: `/authz/forward-auth/${app.name}`,
    headers: {
      ...CLIENT_HEADERS,
      ...bodyHeaders(asked),
      'X-Forwarded-Method': asked.method,
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': new URL(app.audience).host,
      'X-Forwarded-Uri': asked.path,
      Authorization: `Bearer ${bearer}`,
    },
    ...(asked.body === undefined ? {} : { body: asked.body }),
  };
}

/**
 * The gRPC door: the CheckRequest Envoy's ext_authz filter sends (protojson), the app named by the route.
 * With a body, as Envoy sends it with `with_request_body: {pack_as_bytes: true}` (the guide's setting):
 * the bytes in `raw_body` (base64 in protojson), the request's size, and its Content-Type and -Length.
 */
export function checkRequest(bearer: string, app: BenchApp = MATCHO_APP, asked: Asked = ASKED): Record<string, unknown> {
  const host = new URL(app.audience).host;
  const body = asked.body === undefined ? undefined : Buffer.from(asked.body);
  return {
    attributes: {
      request: {
        http: {
          id: '1',
          method: asked.method,
          path: asked.path,
          host,
          scheme: 'https',
          protocol: 'HTTP/1.1',
          headers: {
            ':authority': host,
            ':method': asked.method,
            ':path': asked.path,
            ':scheme': 'https',
            ...CLIENT_HEADERS,
            ...bodyHeaders(asked),
            ...(body ? { 'content-length': String(body.length) } : {}),
            authorization: `Bearer ${bearer}`,
          },
          ...(body ? { size: String(body.length), rawBody: body.toString('base64') } : {}),
        },
      },
      contextExtensions: { app: app.name },
    },
  };
}
