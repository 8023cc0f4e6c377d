// The case files of `boxauth policy test` (docs/concepts/access-control.md, "Testing policies"):
// each case is one question the box's policies answer — who asks, and the request — with the
// decision expected. Read strictly: a key the format does not have, a value of the wrong type, a
// case without a kind or with two, a name given twice, are each the whole file's error (exit 2),
// naming the file, the line and column, and the path of the value, so that a typo never turns a
// case into one that passes without testing what its author meant.
import { isNode, LineCounter, parseAllDocuments } from 'yaml';
import { errorMessage } from '../errors.js';
import { readYaml } from '../yaml.js';
import { CliError } from './api.js';

type Json = Record<string, unknown>;
export type Path = (string | number)[];

/** A person as a case names them: what the box would know of them (their id, address and groups). */
export interface CasePerson {
  id: string;
  email: string;
  email_verified: boolean;
  /** Their groups: by name, or {id, name} when a policy links a group by its id. */
  groups: { id: string; name: string }[];
  /** What else request.user holds of them (issue 53: their data, SCIM attributes, upstream identities), when the case says. */
  more: { data?: Json; scim?: Json; identities?: { provider: string; subject: string }[] };
}

/** A request on the box's own API, as a client's token (and the person it speaks for) makes it. */
export interface ApiCase {
  kind: 'api';
  client: string;
  user: CasePerson | null;
  scope: string | null;
  /** The request object's own keys (request-method, uri, params, query-string, body); client, user and scope are the case's. */
  request: { 'request-method': string; uri: string; params: Json; 'query-string': string; body?: unknown };
}

/** A request at an app's gate, as its gateway sends it, and who calls (the token's client and person, their sign-in). */
export interface AppCase {
  kind: 'app';
  app: string;
  client: string | null;
  user: CasePerson | null;
  scope: string | null;
  audience: string | null;
  subject: { iss: string; sub: string } | null;
  act: Json | null;
  amr: string[] | null;
  acr: string | null;
  request: { method: string; host: string | undefined; path: string; headers: Record<string, string>; rpc: CaseRpc | null };
}

/**
 * What a case says of a request's JSON-RPC body (docs/guides/guard-your-apps.md, "Per-tool decisions
 * for MCP servers"): the calls as the gate reads them (`jsonrpc`: a call's method, and its tool for a
 * `tools/call`; a list for a batch), or the body itself (`body`: JSON text, or YAML the case gives as
 * a mapping or a list, sent as JSON), which is read as the gate reads it.
 */
export type CaseRpc = { calls: { method: string; tool: string | null }[] } | { body: string };

/** An AuthZEN evaluation as a PEP sends it to an app's decision point, and the person its user subject names. */
export interface AuthzenCase {
  kind: 'authzen';
  app: string;
  subject: { type: 'user' | 'client'; id: string; properties?: Json };
  action: { name: string; properties?: Json };
  resource: { type: string; id: string; properties?: Json };
  context: Json | undefined;
  user: CasePerson | null;
}

/** A token exchange (RFC 8693) a client asks for: the request object's `exchange`, as its policies see it. */
export interface ExchangeCase {
  kind: 'exchange';
  client: string;
  scope: string | null;
  exchange: Json & { subject: Json; actor: Json | null };
}

export type Question = ApiCase | AppCase | AuthzenCase | ExchangeCase;
export const KINDS = ['api', 'app', 'authzen', 'exchange'] as const;

export interface Case {
  name: string;
  /** Where the case is: `file:line:column`. */
  at: string;
  question: Question;
  /** The decision expected, and (optional) a policy expected among those that allow it. */
  expect: { allow: boolean; allowedBy?: string };
}

/** Reads a value at a path of the file, refusing (exit 2) what is not what the format says, with where it is. */
class Reader {
  constructor(
    private readonly file: string,
    private readonly where: (path: Path) => string,
  ) {}

  refuse(path: Path, message: string): CliError {
    const at = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');
    return new CliError(`${this.file}:${this.where(path)}: ${at ? `${at} ` : ''}${message}`, 2);
  }

  at(path: Path): string {
    return `${this.file}:${this.where(path)}`;
  }

  object(value: unknown, path: Path, keys: readonly string[]): Json {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.refuse(path, 'must be a mapping');
    const extra = Object.keys(value).find((k) => !keys.includes(k));
    if (extra !== undefined) throw this.refuse([...path, extra], `is not a key here (the keys: ${keys.join(', ')})`);
    return value as Json;
  }

  /** Any mapping (request bodies, properties, context): its keys are the request's. */
  mapping(value: unknown, path: Path): Json {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.refuse(path, 'must be a mapping');
    return value as Json;
  }

  string(value: unknown, path: Path): string {
    if (typeof value !== 'string' || value === '') throw this.refuse(path, 'must be a non-empty string');
    return value;
  }

  optionalString(value: unknown, path: Path): string | null {
    return value === undefined || value === null ? null : this.string(value, path);
  }

  strings(value: unknown, path: Path): string[] {
    if (!Array.isArray(value)) throw this.refuse(path, 'must be a list of strings');
    return value.map((v, i) => this.string(v, [...path, i]));
  }

  identities(value: unknown, path: Path): { provider: string; subject: string }[] {
    if (!Array.isArray(value)) throw this.refuse(path, 'must be a list of {provider, subject}');
    return value.map((v, i) => {
      const identity = this.object(v, [...path, i], ['provider', 'subject']);
      return {
        provider: this.string(identity.provider, [...path, i, 'provider']),
        subject: this.string(identity.subject, [...path, i, 'subject']),
      };
    });
  }

  person(value: unknown, path: Path): CasePerson {
    const p = this.object(value, path, ['id', 'email', 'email_verified', 'groups', 'data', 'scim', 'identities']);
    if (p.email_verified !== undefined && typeof p.email_verified !== 'boolean')
      throw this.refuse([...path, 'email_verified'], 'must be true or false');
    const groups = p.groups === undefined ? [] : p.groups;
    if (!Array.isArray(groups)) throw this.refuse([...path, 'groups'], 'must be a list of group names (or {id, name})');
    return {
      id: this.string(typeof p.id === 'number' ? String(p.id) : p.id, [...path, 'id']),
      email: p.email === undefined ? '' : this.string(p.email, [...path, 'email']),
      email_verified: p.email_verified === true,
      // A group named in a case has no id unless given: '' links to nothing, so only links by name match it.
      groups: groups.map((g: unknown, i) => {
        if (typeof g === 'string') return { id: '', name: this.string(g, [...path, 'groups', i]) };
        const group = this.object(g, [...path, 'groups', i], ['id', 'name']);
        const id = typeof group.id === 'number' ? String(group.id) : group.id;
        return { id: this.string(id, [...path, 'groups', i, 'id']), name: this.string(group.name, [...path, 'groups', i, 'name']) };
      }),
      more: {
        ...(p.data !== undefined ? { data: this.mapping(p.data, [...path, 'data']) } : {}),
        ...(p.scim !== undefined ? { scim: this.mapping(p.scim, [...path, 'scim']) } : {}),
        ...(p.identities !== undefined ? { identities: this.identities(p.identities, [...path, 'identities']) } : {}),
      },
    };
  }
}

function apiCase(r: Reader, v: unknown, path: Path): ApiCase {
  const c = r.object(v, path, ['client', 'user', 'scope', 'request']);
  const at = [...path, 'request'];
  const q = r.object(c.request, at, ['request-method', 'uri', 'params', 'query-string', 'body']);
  return {
    kind: 'api',
    client: r.string(c.client, [...path, 'client']),
    user: c.user === undefined || c.user === null ? null : r.person(c.user, [...path, 'user']),
    scope: r.optionalString(c.scope, [...path, 'scope']),
    request: {
      // As the box writes it: the HTTP method in lower case.
      'request-method': r.string(q['request-method'], [...at, 'request-method']).toLowerCase(),
      uri: r.string(q.uri, [...at, 'uri']),
      params: q.params === undefined ? {} : r.mapping(q.params, [...at, 'params']),
      'query-string': q['query-string'] === undefined ? '' : String(q['query-string']),
      ...(q.body !== undefined ? { body: q.body } : {}),
    },
  };
}

function appCase(r: Reader, v: unknown, path: Path): AppCase {
  const c = r.object(v, path, ['app', 'client', 'user', 'scope', 'audience', 'subject', 'act', 'amr', 'acr', 'request']);
  const at = [...path, 'request'];
  const q = r.object(c.request, at, ['method', 'host', 'path', 'headers', 'jsonrpc', 'body']);
  const headers = q.headers === undefined ? {} : r.mapping(q.headers, [...at, 'headers']);
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') throw r.refuse([...at, 'headers', name], 'must be a string');
  }
  const subject = c.subject === undefined || c.subject === null ? null : r.object(c.subject, [...path, 'subject'], ['iss', 'sub']);
  return {
    kind: 'app',
    app: r.string(c.app, [...path, 'app']),
    client: r.optionalString(c.client, [...path, 'client']),
    user: c.user === undefined || c.user === null ? null : r.person(c.user, [...path, 'user']),
    scope: r.optionalString(c.scope, [...path, 'scope']),
    audience: r.optionalString(c.audience, [...path, 'audience']),
    subject: subject && {
      iss: r.string(subject.iss, [...path, 'subject', 'iss']),
      sub: r.string(subject.sub, [...path, 'subject', 'sub']),
    },
    act: c.act === undefined || c.act === null ? null : r.mapping(c.act, [...path, 'act']),
    amr: c.amr === undefined || c.amr === null ? null : r.strings(c.amr, [...path, 'amr']),
    acr: r.optionalString(c.acr, [...path, 'acr']),
    request: {
      method: q.method === undefined ? 'GET' : r.string(q.method, [...at, 'method']),
      host: q.host === undefined ? undefined : r.string(q.host, [...at, 'host']),
      path: r.string(q.path, [...at, 'path']),
      headers: Object.fromEntries(Object.entries(headers).map(([k, h]) => [k.toLowerCase(), h as string])),
      rpc: rpcOf(r, q, at),
    },
  };
}

/** The JSON-RPC calls of an app case's request (CaseRpc): `jsonrpc` or `body`, not both; null for neither. */
function rpcOf(r: Reader, q: Json, at: Path): CaseRpc | null {
  if (q.jsonrpc !== undefined && q.body !== undefined) {
    throw r.refuse([...at, 'body'], 'goes without jsonrpc: give the calls as the gate reads them, or the body it reads them from');
  }
  if (q.body !== undefined) {
    if (typeof q.body === 'string') return { body: q.body };
    if (typeof q.body !== 'object' || q.body === null) throw r.refuse([...at, 'body'], 'must be JSON text, a mapping or a list');
    return { body: JSON.stringify(q.body) };
  }
  if (q.jsonrpc === undefined) return null;
  const batch = Array.isArray(q.jsonrpc);
  const calls: unknown[] = batch ? (q.jsonrpc as unknown[]) : [q.jsonrpc];
  if (!calls.length) throw r.refuse([...at, 'jsonrpc'], 'must name one call or more');
  return {
    calls: calls.map((v, i) => {
      const where = batch ? [...at, 'jsonrpc', i] : [...at, 'jsonrpc'];
      const call = r.object(v, where, ['method', 'tool']);
      const method = r.string(call.method, [...where, 'method']);
      // As the gate reads a call: a tools/call names its tool, no other method has one.
      if (method === 'tools/call') return { method, tool: r.string(call.tool, [...where, 'tool']) };
      if (call.tool !== undefined && call.tool !== null)
        throw r.refuse([...where, 'tool'], "is only a tools/call's (the gate reads null for other methods)");
      return { method, tool: null };
    }),
  };
}

/** An AuthZEN entity (§5): its REQUIRED string keys, and properties when given. */
function entity<K extends string>(r: Reader, v: unknown, path: Path, keys: readonly K[]): Record<K, string> & { properties?: Json } {
  const e = r.object(v, path, [...keys, 'properties']);
  const read = Object.fromEntries(keys.map((k) => [k, r.string(e[k], [...path, k])])) as Record<K, string>;
  return { ...read, ...(e.properties !== undefined ? { properties: r.mapping(e.properties, [...path, 'properties']) } : {}) };
}

function authzenCase(r: Reader, v: unknown, path: Path): AuthzenCase {
  const c = r.object(v, path, ['app', 'subject', 'action', 'resource', 'context', 'user']);
  const subject = entity(r, c.subject, [...path, 'subject'], ['type', 'id']);
  if (subject.type !== 'user' && subject.type !== 'client') {
    throw r.refuse(
      [...path, 'subject', 'type'],
      subject.type === 'token'
        ? 'token cannot be tested: a token names whoever it was issued to; name that user (with user:) or client instead'
        : 'must be user or client',
    );
  }
  if (subject.type === 'user' && (c.user === undefined || c.user === null)) {
    throw r.refuse([...path, 'user'], "is required with a user subject: the person the box finds for the subject's id (id, email, groups)");
  }
  if (subject.type === 'client' && c.user !== undefined)
    throw r.refuse([...path, 'user'], 'is for a user subject; a client subject is only itself');
  return {
    kind: 'authzen',
    app: r.string(c.app, [...path, 'app']),
    subject: { ...subject, type: subject.type },
    action: entity(r, c.action, [...path, 'action'], ['name']),
    resource: entity(r, c.resource, [...path, 'resource'], ['type', 'id']),
    context: c.context === undefined ? undefined : r.mapping(c.context, [...path, 'context']),
    user: subject.type === 'user' ? r.person(c.user, [...path, 'user']) : null,
  };
}

function exchangeCase(r: Reader, v: unknown, path: Path): ExchangeCase {
  const c = r.object(v, path, ['client', 'scope', 'exchange']);
  const at = [...path, 'exchange'];
  const e = r.object(c.exchange, at, ['subject', 'actor', 'delegation', 'audience', 'scope', 'requested_token_type', 'act']);
  const party = (value: unknown, where: Path): Json => {
    const p = r.mapping(value, where);
    for (const key of ['kind', 'iss', 'sub']) r.string(p[key], [...where, key]);
    return p;
  };
  const actor = e.actor === undefined || e.actor === null ? null : party(e.actor, [...at, 'actor']);
  return {
    kind: 'exchange',
    client: r.string(c.client, [...path, 'client']),
    scope: r.optionalString(c.scope, [...path, 'scope']),
    // What the box fills in when the exchange does not say (api/oauth/grants/token-exchange.ts exchangeRequest).
    exchange: {
      subject: party(e.subject, [...at, 'subject']),
      actor,
      delegation: actor !== null,
      audience: r.optionalString(e.audience, [...at, 'audience']),
      scope: e.scope === undefined ? [] : r.strings(e.scope, [...at, 'scope']),
      requested_token_type:
        e.requested_token_type === undefined
          ? 'urn:ietf:params:oauth:token-type:access_token'
          : r.string(e.requested_token_type, [...at, 'requested_token_type']),
      ...(e.act !== undefined ? { act: r.mapping(e.act, [...at, 'act']) } : {}),
    },
  };
}

const QUESTIONS = { api: apiCase, app: appCase, authzen: authzenCase, exchange: exchangeCase } as const;

function readCase(r: Reader, v: unknown, path: Path, names: Set<string>): Case {
  const c = r.object(v, path, ['name', ...KINDS, 'expect', 'allowedBy']);
  const name = r.string(c.name, [...path, 'name']);
  if (names.has(name)) throw r.refuse([...path, 'name'], `"${name}" names another case too: give each case its own name`);
  names.add(name);
  const kinds = KINDS.filter((k) => c[k] !== undefined);
  if (kinds.length !== 1) {
    throw r.refuse(path, `must ask one question: one of ${KINDS.join(', ')}${kinds.length ? ` (not ${kinds.join(' and ')})` : ''}`);
  }
  const kind = kinds[0]!;
  if (c.expect !== 'allow' && c.expect !== 'deny') throw r.refuse([...path, 'expect'], 'must be allow or deny');
  const allowedBy = c.allowedBy === undefined ? undefined : r.string(c.allowedBy, [...path, 'allowedBy']);
  if (allowedBy !== undefined && c.expect !== 'allow') throw r.refuse([...path, 'allowedBy'], 'goes with expect: allow');
  return {
    name,
    at: r.at(path),
    question: QUESTIONS[kind](r, c[kind], [...path, kind]),
    expect: { allow: c.expect === 'allow', ...(allowedBy !== undefined ? { allowedBy } : {}) },
  };
}

/** Where a path of the `doc`th document of a YAML (or JSON) text is, as line:column: the nearest of its parents that is there. */
export function yamlLocator(text: string): (doc: number, path: Path) => string {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, uniqueKeys: false });
  const all = Array.isArray(docs) ? docs : [];
  return (index, path) => {
    const doc = all[index];
    for (let n = path.length; doc && n >= 0; n--) {
      const node: unknown = n ? doc.getIn(path.slice(0, n), true) : doc.contents;
      if (isNode(node) && node.range) {
        const { line, col } = lines.linePos(node.range[0]);
        return `${line}:${col}`;
      }
    }
    return '1:1';
  };
}

/** The cases of a case file's text (YAML or JSON: one document, `cases:` a list); exit 2 with where, for a file that is not one. */
export function readCases(text: string, file: string): Case[] {
  let docs: unknown[];
  try {
    docs = readYaml(text);
  } catch (err) {
    throw new CliError(`${file}: ${errorMessage(err)}`, 2);
  }
  const where = yamlLocator(text);
  const r = new Reader(file, (path) => where(0, path));
  if (docs.length !== 1) throw r.refuse([], `must be one YAML document holding cases: (found ${docs.length})`);
  const top = r.object(docs[0], [], ['cases']);
  if (!Array.isArray(top.cases) || !top.cases.length) throw r.refuse(['cases'], 'must be a list of one case or more');
  const names = new Set<string>();
  return top.cases.map((c: unknown, i) => readCase(r, c, ['cases', i], names));
}
