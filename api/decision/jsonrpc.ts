// The JSON-RPC 2.0 envelope of a request's body, as an app's policies see it
// (docs/guides/guard-your-apps.md, "Per-tool decisions for MCP servers"): an MCP client
// speaks JSON-RPC in the body of its POSTs, so which method it calls, and for `tools/call`
// which tool, is read from the body the gateway sends the gate. Only the envelope is kept
// (`method`, `params.name` of a `tools/call`, the `id` for the refusal's answer): the
// arguments are the app's, and the body goes into no record and no log.
//
// Pure, and strict where the gate and the app could read one body two ways, since a policy
// decides what the gate read and the app acts on what it reads:
// - A body the gate cannot read whole (longer than BOXAUTH_GATE_BODY_BYTES, cut by the
//   gateway, or sent compressed) is refused: deciding it as if it were not JSON-RPC would
//   let a `tools/call` through a rule that allows other POSTs.
// - A body that looks like JSON (its first character after white space and a byte order
//   mark is `{` or `[`, or its Content-Type is JSON) must be JSON-RPC, or it is refused:
//   the app would read it as JSON too.
// - A name twice in one object is refused (RFC 8259 §4: "The names within an object SHOULD
//   be unique", and when they are not "implementations differ"): JSON.parse keeps the last
//   `name`, other parsers the first, so the gate could decide one tool while the app runs
//   another.
// - A batch (an array, JSON-RPC 2.0 §6) is read call by call; the decision point decides
//   each (api/decision/engine.ts), and any refused call refuses the request.

/** What an app's policies see of one JSON-RPC call (AppRequest.jsonrpc). */
export interface JsonRpcEnvelope {
  /** The method called (`tools/call`, `tools/list`, `initialize`, `notifications/initialized`…); RESPONSE for a response the client sends the server. */
  method: string;
  /** For `tools/call`: the tool, `params.name`; null for every other method. */
  tool: string | null;
}

/** One call of a request's body: its envelope, and its id as sent (raw JSON text), or null for a notification (no id). */
export interface JsonRpcCall extends JsonRpcEnvelope {
  id: string | null;
}

/** What a gateway sent of a request's body. */
export interface GateBody {
  /** The bytes the gate read: at most its limit. */
  bytes: Uint8Array;
  /** False when the body is longer than what the gate read (over the limit, or cut by the gateway: Envoy's allow_partial_message). */
  whole: boolean;
}

/** Why a body is refused: the JSON-RPC error code (§5.1) and HTTP status it is answered with, and words for the client. */
export interface BodyRefused {
  refused: string;
  status: 400 | 413;
  code: typeof PARSE_ERROR | typeof INVALID_REQUEST | typeof INVALID_PARAMS;
  /** Whether the body is JSON, or sent as JSON (its refusal is then told as a JSON-RPC error). */
  json: boolean;
}

/** The calls of a JSON-RPC body: one, or a batch's. */
export interface JsonRpcBody {
  calls: JsonRpcCall[];
  batch: boolean;
}

// JSON-RPC 2.0 §5.1.
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
/**
 * A call a policy refused. The AuthZEN MCP binding (COAZ-MCP, draft 1, "Authorization Denial"):
 * "When one or more decisions are deny, the PEP MUST return an error response with code
 * `-32001`", from the range -32000 to -32099 that JSON-RPC 2.0 reserves for the server.
 */
export const ACCESS_DENIED = -32001;

/**
 * The method a response from the client to the server (an answer to the server's
 * sampling/createMessage, elicitation/create or roots/list) is decided as. JSON-RPC 2.0 §4:
 * "Method names that begin with the word rpc followed by a period character […] are reserved
 * for rpc-internal methods and extensions and MUST NOT be used for anything else": no request
 * may call it, so a policy that allows it allows responses and nothing else.
 */
export const RESPONSE = 'rpc.response';

/** A batch of more calls than this is refused: each is a decision (AuthZEN's own bound, MAX_EVALUATIONS, is the same). */
export const MAX_BATCH = 100;
/** Nesting deeper than this is refused (a parser's stack is the app's too). */
export const MAX_DEPTH = 64;
/** A method or tool name longer than this is refused: MCP's tool names are 1 to 128 characters, and every name goes into the decision's record. */
export const MAX_NAME = 256;

const refused = (
  refused: string,
  code: BodyRefused['code'] = INVALID_REQUEST,
  status: BodyRefused['status'] = 400,
  json = true,
): BodyRefused => ({ refused, status, code, json });

/** A Content-Type of JSON: application/json, or any `+json` type (RFC 6839). */
const isJsonType = (type: string | undefined): boolean => type !== undefined && /^\s*application\/(?:[^;\s]*\+)?json\s*(?:;|$)/i.test(type);

/**
 * The JSON-RPC calls of a request's body, null when the body is not JSON (nor sent as JSON),
 * or why it is refused. `headers`: the request's (lower-case names), for its Content-Type and
 * Content-Encoding.
 */
export function readJsonRpc(body: GateBody | undefined, headers: Record<string, string | undefined>): JsonRpcBody | BodyRefused | null {
  if (!body || (body.whole && body.bytes.length === 0)) return null;
  const json = isJsonType(headers['content-type']);
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    const why = `the gate does not read a body sent with Content-Encoding "${encoding.slice(0, 32)}": send it unencoded`;
    return refused(why, INVALID_REQUEST, 400, json);
  }
  if (!body.whole) {
    const why =
      'the body is larger than the gate reads (BOXAUTH_GATE_BODY_BYTES), or the gateway sent only part of it: it cannot be decided';
    return refused(why, INVALID_REQUEST, 413, json);
  }
  const bytes = body.bytes;
  if (!looksLikeJson(bytes) && !json) return null;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); // drops a leading byte order mark
  } catch {
    return refused('the body is not UTF-8 (RFC 8259 §8.1: JSON "MUST be encoded using UTF-8")', PARSE_ERROR);
  }
  return envelopeOf(text);
}

/** Whether the first byte after a UTF-8 byte order mark and JSON's white space opens an object or an array. */
function looksLikeJson(bytes: Uint8Array): boolean {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i++;
  return bytes[i] === 0x7b || bytes[i] === 0x5b;
}

/** What was kept of a value: a scalar as its raw JSON text, an object's kept members, or what kind of value it was. */
type Kept =
  | { raw: string; kind: 'string' | 'number' | 'literal' }
  | { kind: 'object'; members: Map<string, Kept> }
  | { kind: 'array'; items: Kept[] };

/** Which members of an object are kept, and, for each, what of its value (null: the value's kind and raw text only). */
type Keep = { readonly [member: string]: Keep | null };

const CALL: Keep = { jsonrpc: null, method: null, id: null, params: { name: null }, result: null, error: null };

class Malformed extends Error {}

/** RFC 8259 §3 and §6: a literal name or a number. */
const LITERAL = /(?:true|false|null)|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** RFC 8259 §7: a string, its control characters escaped. */
const STRING = /"(?:[^"\\\u0000-\u001f]+|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

/**
 * A strict JSON reader (RFC 8259) that keeps only what `keep` names, refusing a name twice in an
 * object and nesting deeper than MAX_DEPTH. Strings and numbers are read by JSON.parse itself, so
 * `"\u0064elete"` is `delete` here as it is for the app.
 */
class Reader {
  private at = 0;
  constructor(private readonly text: string) {}

  document(keep: Keep): Kept {
    const value = this.value(0, keep, true);
    this.space();
    if (this.at !== this.text.length) throw new Malformed(`unexpected text after the JSON value at ${this.at}`);
    return value;
  }

  private space(): void {
    const t = this.text;
    while (this.at < t.length) {
      const c = t.charCodeAt(this.at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.at++;
    }
  }

  /** A value; an array at the top is a batch, whose items are kept as calls. */
  private value(depth: number, keep: Keep | null, top = false): Kept {
    if (depth > MAX_DEPTH) throw new Malformed(`the body nests deeper than ${MAX_DEPTH} levels`);
    this.space();
    const c = this.text[this.at];
    if (c === '{') return this.object(depth, keep);
    if (c === '[') return this.array(depth, top ? keep : null);
    if (c === '"') return { kind: 'string', raw: this.string() };
    LITERAL.lastIndex = this.at;
    const match = LITERAL.exec(this.text);
    if (!match) throw new Malformed(`unexpected ${c === undefined ? 'end of the body' : `"${c}"`} at ${this.at}`);
    this.at += match[0].length;
    return { kind: /^[tfn]/.test(match[0]) ? 'literal' : 'number', raw: match[0] };
  }

  /** A string token, as its raw text (quotes included); its characters checked by JSON.parse when it has escapes. */
  private string(): string {
    STRING.lastIndex = this.at;
    const match = STRING.exec(this.text);
    if (!match) throw new Malformed(`a string at ${this.at} is not JSON`);
    this.at += match[0].length;
    return match[0];
  }

  private object(depth: number, keep: Keep | null): Kept {
    this.at++; // {
    const members = new Map<string, Kept>();
    const names = new Set<string>();
    this.space();
    if (this.text[this.at] === '}') {
      this.at++;
      return { kind: 'object', members };
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') throw new Malformed(`a member name was expected at ${this.at}`);
      const raw = this.string();
      const name = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      if (names.has(name)) throw new Malformed(`the name ${JSON.stringify(name.slice(0, 64))} appears twice in one object`);
      names.add(name);
      this.space();
      if (this.text[this.at] !== ':') throw new Malformed(`":" was expected at ${this.at}`);
      this.at++;
      const kept = keep !== null && Object.hasOwn(keep, name);
      const value = this.value(depth + 1, kept ? keep[name]! : null);
      if (kept) members.set(name, value);
      this.space();
      const next = this.text[this.at++];
      if (next === '}') return { kind: 'object', members };
      if (next !== ',') throw new Malformed(`"," or "}" was expected at ${this.at - 1}`);
    }
  }

  private array(depth: number, keep: Keep | null): Kept {
    this.at++; // [
    const items: Kept[] = [];
    this.space();
    if (this.text[this.at] === ']') {
      this.at++;
      return { kind: 'array', items };
    }
    for (;;) {
      const item = this.value(depth + 1, keep);
      if (keep !== null) {
        if (items.length === MAX_BATCH) throw new Malformed(`a batch of more than ${MAX_BATCH} calls`);
        items.push(item);
      }
      this.space();
      const next = this.text[this.at++];
      if (next === ']') return { kind: 'array', items };
      if (next !== ',') throw new Malformed(`"," or "]" was expected at ${this.at - 1}`);
    }
  }
}

/** The calls of a JSON text, or why it is refused. */
export function envelopeOf(text: string): JsonRpcBody | BodyRefused {
  let top: Kept;
  try {
    top = new Reader(text).document(CALL);
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    return refused(`the body is not JSON the gate can read: ${err.message}`, PARSE_ERROR);
  }
  if (top.kind === 'array') {
    // §6: "If the batch rpc call itself fails to be recognized as an valid JSON or as an Array with at least one value, the response from the Server MUST be a single Response object."
    if (top.items.length === 0) return refused('an empty batch is not a JSON-RPC request');
    const calls: JsonRpcCall[] = [];
    for (const [i, item] of top.items.entries()) {
      const call = callOf(item);
      if ('refused' in call) return { ...call, refused: `call ${i + 1} of the batch: ${call.refused}` };
      calls.push(call);
    }
    return { calls, batch: true };
  }
  const call = callOf(top);
  return 'refused' in call ? call : { calls: [call], batch: false };
}

const stringOf = (kept: Kept | undefined): string | undefined =>
  kept?.kind === 'string' ? (kept.raw.includes('\\') ? (JSON.parse(kept.raw) as string) : kept.raw.slice(1, -1)) : undefined;

/** One call of the body (§4 a Request or Notification; §5 a Response, which the client sends to answer the server). */
function callOf(kept: Kept): JsonRpcCall | BodyRefused {
  if (kept.kind !== 'object') return refused('a JSON-RPC call is an object');
  const m = kept.members;
  // §4: "jsonrpc: A String specifying the version of the JSON-RPC protocol. MUST be exactly "2.0"."
  if (stringOf(m.get('jsonrpc')) !== '2.0') return refused('"jsonrpc" must be exactly "2.0"');
  // §4: "id: An identifier established by the Client that MUST contain a String, Number, or NULL value if included."
  const id = m.get('id');
  if (id !== undefined && id.kind !== 'string' && id.kind !== 'number' && !(id.kind === 'literal' && id.raw === 'null')) {
    return refused('"id" must be a string, a number or null');
  }
  const rawId = id && 'raw' in id ? id.raw : null;
  if (!m.has('method')) {
    if (id !== undefined && (m.has('result') || m.has('error'))) return { method: RESPONSE, tool: null, id: rawId };
    return refused('a JSON-RPC request names its "method"');
  }
  const method = stringOf(m.get('method'));
  if (method === undefined || method === '') return refused('"method" must be a non-empty string');
  if (method.length > MAX_NAME) return refused(`"method" is longer than ${MAX_NAME} characters`);
  if (method.startsWith('rpc.')) return refused('method names beginning with "rpc." are reserved (JSON-RPC 2.0 §4)');
  if (method !== 'tools/call') return { method, tool: null, id: rawId };
  // MCP: a tools/call's params are an object naming the tool ("name": string).
  const params = m.get('params');
  const name = params?.kind === 'object' ? stringOf(params.members.get('name')) : undefined;
  if (name === undefined || name === '') return refused('a "tools/call" names its tool in "params.name" (a string)', INVALID_PARAMS);
  if (name.length > MAX_NAME) return refused(`"params.name" is longer than ${MAX_NAME} characters`, INVALID_PARAMS);
  return { method, tool: name, id: rawId };
}

/**
 * The JSON-RPC call an AuthZEN evaluation is about, as the AuthZEN MCP binding (COAZ-MCP,
 * draft 1, "Default Mappings") maps one: `tools/call` is the action `tools/call` on the
 * resource of type `tool` whose id is the tool's name; the methods on the server as a whole
 * (initialize, tools/list…) are their method's action on the resource of type `mcp_server`.
 * A PEP that asks so is decided as the gate decides the same call; any other resource is no
 * JSON-RPC call (null).
 */
export function coazCall(action: string, resource: { type: string; id: string }): JsonRpcEnvelope | null {
  if (resource.type === 'tool') return { method: action, tool: action === 'tools/call' ? resource.id : null };
  if (resource.type === 'mcp_server') return { method: action, tool: null };
  return null;
}
