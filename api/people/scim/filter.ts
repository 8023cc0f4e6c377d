// SCIM filters and PATCH paths (RFC 7644 §3.4.2.2 and §3.5.2), read once into the attributes
// the schemas define (./schemas.ts), refused rather than guessed: an unknown attribute, an operator
// its type has no meaning for, or a filter past the limits below is a 400 invalidFilter (or
// invalidPath), before anything reaches the database. The same filter is evaluated in memory on
// a multi-valued attribute's elements by PATCH (`evaluate`).
import type { AttrRef, CompareOp, ScimFilter } from '../../store/scim-search.js';
import { invalidFilter, invalidPath } from './errors.js';
import { COMMON, lookup, schemaOf, type Attribute, type ResourceType } from './schemas.js';

/** Limits on one filter: enough for any directory's query, too little to make a search costly. */
export const FILTER_LIMITS = { length: 2000, comparisons: 20, depth: 8 };

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

const COMPARE = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

type Token = { kind: 'word'; text: string } | { kind: 'string'; text: string } | { kind: 'punct'; text: '(' | ')' | '[' | ']' };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < input.length && input[j] !== '"') j += input[j] === '\\' ? 2 : 1;
      if (j >= input.length) throw invalidFilter(`a string in the filter is not closed: ${input.slice(i, i + 40)}`);
      let text: string;
      try {
        text = JSON.parse(input.slice(i, j + 1)) as string;
      } catch {
        throw invalidFilter(`a string in the filter is not a JSON string: ${input.slice(i, j + 1).slice(0, 60)}`);
      }
      // "\u0000" spelt out in a query: PostgreSQL takes no NUL in text, and no value the box keeps holds one.
      if (text.includes('\u0000')) throw invalidFilter('a string in the filter holds a NUL character');
      tokens.push({ kind: 'string', text });
      i = j + 1;
    } else {
      let j = i;
      while (j < input.length && !/[\s()[\]"]/.test(input[j]!)) j++;
      tokens.push({ kind: 'word', text: input.slice(i, j) });
      i = j;
    }
  }
  return tokens;
}

/** An attribute path resolved against a resource type: where it is, and what it is. */
export interface Resolved {
  /** The top attribute (`emails` of `emails.value`, `name` of `name.givenName`). */
  top: Attribute;
  /** Its path in the resource's JSON: [name], or [extension URN, name]. */
  topPath: string[];
  /** The sub-attribute named after a dot, if any. */
  sub?: Attribute;
}

/**
 * Resolves `raw` ("userName", "name.givenName", "emails.value", "meta.lastModified", or with a
 * schema URN in front: "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department")
 * to the schemas' attributes; undefined when it names none.
 */
export function resolvePath(type: ResourceType, raw: string): Resolved | undefined {
  let rest = raw;
  let schemaUrn: string | undefined;
  if (/^urn:/i.test(raw)) {
    const schema = [type.core, ...type.extensions]
      .filter((s) => raw.toLowerCase().startsWith(`${s.id.toLowerCase()}:`))
      .sort((a, b) => b.id.length - a.id.length)[0];
    if (!schema) return undefined;
    rest = raw.slice(schema.id.length + 1);
    if (schema !== type.core) schemaUrn = schema.id;
  }
  const [name, subName, ...more] = rest.split('.');
  if (!name || more.length) return undefined;
  const schema = schemaUrn ? schemaOf(type, schemaUrn)! : type.core;
  const top = lookup(schema.attributes, name) ?? (schemaUrn ? undefined : lookup(COMMON, name));
  if (!top) return undefined;
  const topPath = schemaUrn ? [schemaUrn, top.name] : [top.name];
  if (subName === undefined) return { top, topPath };
  const sub = lookup(top.subAttributes, subName);
  return sub && { top, topPath, sub };
}

class Parser {
  private at = 0;
  private comparisons = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly type: ResourceType,
  ) {}

  private peek(): Token | undefined {
    return this.tokens[this.at];
  }

  private next(what: string): Token {
    const t = this.tokens[this.at++];
    if (!t) throw invalidFilter(`the filter ends where ${what} was expected`);
    return t;
  }

  private expect(text: string): void {
    const t = this.next(`"${text}"`);
    if (t.text !== text || t.kind === 'string') throw invalidFilter(`"${text}" expected, not "${t.text}"`);
  }

  private isWord(word: string): boolean {
    const t = this.peek();
    return t?.kind === 'word' && t.text.toLowerCase() === word;
  }

  parse(): ScimFilter {
    const f = this.or(0, undefined);
    const left = this.peek();
    if (left) throw invalidFilter(`unexpected "${left.text}" in the filter`);
    return f;
  }

  /** `or` binds looser than `and`, `and` looser than `not` (RFC 7644 §3.4.2.2). */
  private or(depth: number, within: Resolved | undefined): ScimFilter {
    return this.joined('or', () => this.joined('and', () => this.unary(depth, within)));
  }

  private joined(op: 'and' | 'or', operand: () => ScimFilter): ScimFilter {
    let left = operand();
    while (this.isWord(op)) {
      this.at++;
      left = { op, left, right: operand() };
    }
    return left;
  }

  private unary(depth: number, within: Resolved | undefined): ScimFilter {
    if (depth > FILTER_LIMITS.depth) throw invalidFilter(`the filter nests deeper than ${FILTER_LIMITS.depth} levels`);
    if (this.isWord('not')) {
      this.at++;
      this.expect('(');
      const filter = this.or(depth + 1, within);
      this.expect(')');
      return { op: 'not', filter };
    }
    if (this.peek()?.text === '(' && this.peek()?.kind === 'punct') {
      this.at++;
      const inner = this.or(depth + 1, within);
      this.expect(')');
      return inner;
    }
    return this.attributeExpression(depth, within);
  }

  private attributeExpression(depth: number, within: Resolved | undefined): ScimFilter {
    const t = this.next('an attribute');
    if (t.kind !== 'word') throw invalidFilter(`an attribute name expected, not "${t.text}"`);
    if (this.peek()?.text === '[' && this.peek()?.kind === 'punct') {
      if (within) throw invalidFilter('a filter in brackets cannot hold another');
      const resolved = resolvePath(this.type, t.text);
      if (!resolved || resolved.sub || !resolved.top.multiValued || resolved.top.type !== 'complex')
        throw invalidFilter(`"${t.text}" is not a multi-valued attribute that brackets can filter`);
      this.at++;
      const filter = this.or(depth + 1, resolved);
      this.expect(']');
      const after = this.peek();
      if (after?.kind !== 'word' || !after.text.startsWith('.')) return { op: 'has', multi: resolved.topPath, filter };
      // Entra ID's `emails[type eq "work"].value eq "x"` (outside RFC 7644's grammar, in its tutorial):
      // read as the RFC's `emails[type eq "work" and value eq "x"]`.
      this.at++;
      return {
        op: 'has',
        multi: resolved.topPath,
        filter: { op: 'and', left: filter, right: this.comparison(after.text.slice(1), resolved) },
      };
    }
    return this.comparison(t.text, within);
  }

  /** `<attribute> pr`, or `<attribute> <op> <value>`. */
  private comparison(raw: string, within: Resolved | undefined): ScimFilter {
    const attr = this.attribute(raw, within);
    const opToken = this.next('an operator');
    const op = opToken.text.toLowerCase();
    if (opToken.kind !== 'word' || (op !== 'pr' && !COMPARE.has(op))) throw invalidFilter(`"${opToken.text}" is not a filter operator`);
    if (++this.comparisons > FILTER_LIMITS.comparisons)
      throw invalidFilter(`the filter has more than ${FILTER_LIMITS.comparisons} comparisons`);
    if (op === 'pr') return { op: 'pr', attr };
    return { op: op as CompareOp, attr, value: this.value(raw, attr, op as CompareOp) };
  }

  /** The attribute `raw` names (inside brackets: a sub-attribute of the bracketed one) as the store reads it. */
  private attribute(raw: string, within: Resolved | undefined): AttrRef {
    if (within) {
      const sub = lookup(within.top.subAttributes, raw.includes('.') ? raw.slice(raw.lastIndexOf('.') + 1) : raw);
      if (!sub) throw invalidFilter(`"${raw}" is not an attribute of ${within.top.name}`);
      return { path: [sub.name], type: sub.type, caseExact: sub.caseExact };
    }
    const resolved = resolvePath(this.type, raw);
    if (!resolved) throw invalidFilter(`"${raw}" is not an attribute of a ${this.type.kind}`);
    const { top, topPath, sub } = resolved;
    if (resolved.top.returned === 'never') throw invalidFilter(`"${raw}" cannot be searched`);
    if (top.multiValued) {
      // `emails` alone stands for its elements' values (RFC 7644 §3.4.2.2).
      const leaf = sub ?? lookup(top.subAttributes, 'value') ?? top;
      return { multi: topPath, path: [leaf.name], type: leaf.type, caseExact: leaf.caseExact };
    }
    const leaf = sub ?? top;
    return { path: sub ? [...topPath, sub.name] : topPath, type: leaf.type, caseExact: leaf.caseExact };
  }

  private value(raw: string, attr: AttrRef, op: CompareOp): string | boolean {
    const t = this.next('a value');
    if (t.kind === 'punct') throw invalidFilter(`a value expected after ${raw} ${op}, not "${t.text}"`);
    const literal = t.kind === 'word' ? t.text.toLowerCase() : undefined;
    if (attr.type === 'complex') throw invalidFilter(`"${raw}" is complex: compare one of its sub-attributes`);
    if (literal === 'null') throw invalidFilter(`compare with null is not supported: use "not (${raw} pr)"`);
    if (attr.type === 'boolean') {
      if (op !== 'eq' && op !== 'ne') throw invalidFilter(`"${raw}" is true or false: only eq and ne compare it`);
      const text = (t.text ?? '').toLowerCase();
      if (text !== 'true' && text !== 'false') throw invalidFilter(`"${raw}" is compared with true or false, not ${t.text}`);
      return text === 'true';
    }
    if (t.kind === 'word' && !/^-?\d+(\.\d+)?$/.test(t.text) && literal !== 'true' && literal !== 'false')
      throw invalidFilter(`a value expected after ${raw} ${op}, not "${t.text}" (strings are in double quotes)`);
    if (attr.type === 'dateTime') {
      // Date.parse alone guesses at anything ("1" is 2001-01-01): only an RFC 3339 date-time is one.
      const time = RFC3339.test(t.text) ? Date.parse(t.text) : NaN;
      if (Number.isNaN(time)) throw invalidFilter(`"${raw}" is a time: "${t.text}" is not one (RFC 3339)`);
      // JavaScript's times reach years PostgreSQL's timestamptz does not ("+275760-…", year 0): RFC 3339's 0001–9999 only.
      const iso = new Date(time).toISOString();
      if (!/^\d{4}-/.test(iso) || iso.startsWith('0000'))
        throw invalidFilter(`"${raw}" is a time of the years 0001 to 9999, not "${t.text}"`);
      return iso;
    }
    return t.text;
  }
}

/** Reads a `filter` query parameter (or a SearchRequest's) for `type`; a ScimError 400 invalidFilter when it is not one. */
export function parseFilter(type: ResourceType, raw: string): ScimFilter {
  if (raw.length > FILTER_LIMITS.length) throw invalidFilter(`the filter is longer than ${FILTER_LIMITS.length} characters`);
  const tokens = tokenize(raw);
  if (!tokens.length) throw invalidFilter('the filter is empty');
  return new Parser(tokens, type).parse();
}

/** A PATCH path (RFC 7644 §3.5.2): an attribute, or a multi-valued one with a filter and perhaps a sub-attribute. */
export interface PatchPath extends Resolved {
  /** The elements of `top` the operation is on, when the path filters them. */
  filter?: ScimFilter;
}

export function parsePatchPath(type: ResourceType, raw: string): PatchPath {
  if (raw.length > FILTER_LIMITS.length) throw invalidPath(`the path is longer than ${FILTER_LIMITS.length} characters`);
  const open = raw.indexOf('[');
  if (open === -1) {
    const resolved = resolvePath(type, raw);
    if (!resolved) throw invalidPath(`"${raw}" is not an attribute of a ${type.kind}`);
    return resolved;
  }
  const close = raw.lastIndexOf(']');
  if (close < open) throw invalidPath(`"${raw}": a "[" without its "]"`);
  const resolved = resolvePath(type, raw.slice(0, open));
  if (!resolved || resolved.sub || !resolved.top.multiValued) throw invalidPath(`"${raw.slice(0, open)}" is not a multi-valued attribute`);
  const after = raw.slice(close + 1);
  let sub: Attribute | undefined;
  if (after) {
    sub = after.startsWith('.') ? lookup(resolved.top.subAttributes, after.slice(1)) : undefined;
    if (!sub) throw invalidPath(`"${after}" after the brackets of "${raw}" is not a sub-attribute of ${resolved.top.name}`);
  }
  const tokens = tokenize(raw.slice(open + 1, close));
  if (!tokens.length) throw invalidPath(`"${raw}": the brackets hold no filter`);
  let filter: ScimFilter;
  try {
    filter = new Parser(
      [{ kind: 'word', text: raw.slice(0, open) }, { kind: 'punct', text: '[' }, ...tokens, { kind: 'punct', text: ']' }],
      type,
    ).parse();
  } catch (err) {
    throw invalidPath(`"${raw}": ${(err as Error).message}`);
  }
  return { ...resolved, ...(sub ? { sub } : {}), filter: (filter as Extract<ScimFilter, { op: 'has' }>).filter };
}

/** Whether the JSON `element` (an element of a multi-valued attribute, or a resource) satisfies `f`. */
export function evaluate(f: ScimFilter, element: unknown): boolean {
  switch (f.op) {
    case 'and':
      return evaluate(f.left, element) && evaluate(f.right, element);
    case 'or':
      return evaluate(f.left, element) || evaluate(f.right, element);
    case 'not':
      return !evaluate(f.filter, element);
    case 'has': {
      const list = at(element, f.multi);
      return Array.isArray(list) && list.some((e) => evaluate(f.filter, e));
    }
    default:
      // `emails co "x"` outside brackets: any element's value (RFC 7644 §3.4.2.2), as the store reads it.
      if (f.attr.multi) {
        const list = at(element, f.attr.multi);
        return Array.isArray(list) && list.some((e) => holds(f, at(e, f.attr.path)));
      }
      return holds(f, at(element, f.attr.path));
  }
}

function holds(f: Extract<ScimFilter, { attr: AttrRef }>, actual: unknown): boolean {
  if (f.op === 'pr') return actual !== undefined && actual !== null && actual !== '' && !(Array.isArray(actual) && !actual.length);
  return compare(f.op, actual, f.value, f.attr);
}

function at(value: unknown, path: string[]): unknown {
  let v = value;
  for (const name of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    const key = Object.keys(v).find((k) => k.toLowerCase() === name.toLowerCase());
    v = key === undefined ? undefined : (v as Record<string, unknown>)[key];
  }
  return v;
}

function compare(op: CompareOp, actual: unknown, expected: string | boolean, attr: AttrRef): boolean {
  if (actual === undefined || actual === null) return false;
  if (typeof expected === 'boolean') return op === 'eq' ? actual === expected : actual !== expected;
  const fold = (s: string): string => (attr.caseExact ? s : s.toLowerCase());
  const a = fold(String(actual));
  const b = fold(expected);
  switch (op) {
    case 'eq':
      return a === b;
    case 'ne':
      return a !== b;
    case 'co':
      return a.includes(b);
    case 'sw':
      return a.startsWith(b);
    case 'ew':
      return a.endsWith(b);
    case 'gt':
      return a > b;
    case 'ge':
      return a >= b;
    case 'lt':
      return a < b;
    case 'le':
      return a <= b;
  }
}
