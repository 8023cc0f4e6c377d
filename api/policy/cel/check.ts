// The write-time check of a CEL expression against the shape of the request object it will see
// (./shapes.ts): every field it names must be one an object of that shape can have, every function
// it calls one of CEL's standard ones with arguments of types it takes, and its worst-case cost over
// the largest request object the box lets in must stay under a limit. @bufbuild/cel has a parser
// and an evaluator but no checker of selections or of cost, so this walk is both, in one pass.
//
// The cost estimate follows Kubernetes' (k8s.io/apiserver/pkg/apis/cel, cel-go's checker/cost.go):
// each node costs 1, a function on a string or list costs 1 plus a tenth of its length (cel-go's
// StringTraversalCostFactor, 0.1), a regex match RE2's bound (its program's size times the
// string's length: cel-go's quarter of the pattern's length prices `(?:a?){999}a{999}` by its 17
// characters, when its program has 2,999 instructions and took re2js a second over a path), and a comprehension the cost of its body times the largest
// size of the list or map it ranges over. Where a schema gives no maxItems or maxLength, Kubernetes
// bounds them by the largest request (MaxRequestSizeBytes); the box bounds them by what it lets in
// (api/input.ts INPUT_LIMITS, the request body's limit): see SIZES.
import type { Expr } from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import type { CelEnv } from '@bufbuild/cel';
import { errorMessage } from '../../errors.js';
import { EVALUATION_LIMITS, matchCost } from '../budget.js';
import { policyRegex, regexRefusal } from '../regex.js';
import { isObjectShape, type CelObjectShape, type CelShape } from './shapes.js';

/**
 * The largest sizes a value of the request object can have, as the box admits them. A body holds
 * at most 2,000 values (INPUT_LIMITS.bodyValues), so no list or map in it is longer; the person's
 * groups and identities are counted the same. A string the shapes declare (an id, an address, a
 * path, a header, a query value) is at most 4,096 characters (INPUT_LIMITS.queryValue, the longest
 * of them); any other (inside a body, an AuthZEN resource or context) at most the body's limit.
 */
export const SIZES = { items: 2000, declaredString: 4096, anyString: 256 * 1024 } as const;

/**
 * Kubernetes' limits: an expression whose estimated cost is over StaticEstimatedCostLimit
 * (10,000,000, apiextensions' validation rules) is refused when written; an evaluation that spends
 * more than PerCallLimit (1,000,000, k8s.io/apiserver/pkg/apis/cel/config.go) is stopped, and
 * the evaluations of one request together stop at RuntimeCELCostBudget (10,000,000).
 */
export const COST_LIMITS = {
  estimated: 10_000_000,
  perCall: EVALUATION_LIMITS.perPolicy,
  perRequest: EVALUATION_LIMITS.perRequest,
} as const;

/** The type of a sub-expression, as far as it is known before evaluation. */
type T =
  | { k: 'bool' | 'int' | 'uint' | 'double' | 'string' | 'bytes' | 'null' | 'dyn' | 'type' | 'timestamp' | 'duration' }
  | { k: 'list'; of: T; each?: number }
  /** A map; `key` is its keys' type when they may be other than strings (a map literal's). */
  | { k: 'map'; of: T; key?: T }
  | { k: 'object'; shape: CelObjectShape; path: string };

const DYN: T = { k: 'dyn' };

/** CEL's names of types, values of type `type` (`type(x) == string`); a variable of the same name would hide one. */
const TYPE_DENOTATIONS = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type', 'type']);
const BOOL: T = { k: 'bool' };

interface Typed {
  t: T;
  /** The worst-case cost of evaluating it. */
  cost: number;
  /** Its largest size: characters of a string, items of a list, entries of a map. */
  size: number;
}

const name = (t: T): string =>
  t.k === 'list' ? `list(${name(t.of)})` : t.k === 'map' ? `map(string, ${name(t.of)})` : t.k === 'object' ? 'map(string, dyn)' : t.k;

function fromShape(shape: CelShape, path: string): Typed {
  if (shape === 'dyn') return { t: DYN, cost: 0, size: SIZES.anyString };
  if (shape === 'string') return { t: { k: 'string' }, cost: 0, size: SIZES.declaredString };
  if (shape === 'bool' || shape === 'int' || shape === 'double') return { t: { k: shape }, cost: 0, size: 1 };
  if (isObjectShape(shape)) return { t: { k: 'object', shape, path }, cost: 0, size: SIZES.items };
  if ('list' in shape) {
    const element = fromShape(shape.list, `${path}[]`);
    return { t: { k: 'list', of: element.t, each: element.size }, cost: 0, size: SIZES.items };
  }
  return { t: { k: 'map', of: fromShape(shape.map, `${path}[]`).t }, cost: 0, size: SIZES.items };
}

/** The largest size of an element of a value of type `t`. */
const elementSize = (t: T, list?: T): number =>
  list?.k === 'list' && list.each !== undefined
    ? list.each
    : t.k === 'string' || t.k === 'bytes'
      ? SIZES.anyString
      : t.k === 'list' || t.k === 'map' || t.k === 'object' || t.k === 'dyn'
        ? SIZES.items
        : 1;

const sizeOf = (t: T): number =>
  t.k === 'string' || t.k === 'bytes'
    ? SIZES.anyString
    : t.k === 'list' || t.k === 'map' || t.k === 'object' || t.k === 'dyn'
      ? SIZES.items
      : 1;

const traversal = (size: number): number => Math.ceil(0.1 * size);

/** Whether a value of type `t` may be passed where CEL's standard library declares `declared` (a type name of @bufbuild/cel). */
function fits(t: T, declared: string): boolean {
  if (t.k === 'dyn' || declared === 'dyn') return true;
  if (declared.startsWith('list(')) return t.k === 'list';
  if (declared.startsWith('map(')) return t.k === 'map' || t.k === 'object';
  if (declared === 'google.protobuf.Timestamp') return t.k === 'timestamp';
  if (declared === 'google.protobuf.Duration') return t.k === 'duration';
  if (declared === 'null_type') return t.k === 'null';
  return t.k === declared;
}

function fromDeclared(declared: string): T {
  if (declared.startsWith('list(')) return { k: 'list', of: DYN };
  if (declared.startsWith('map(')) return { k: 'map', of: DYN };
  if (declared === 'google.protobuf.Timestamp') return { k: 'timestamp' };
  if (declared === 'google.protobuf.Duration') return { k: 'duration' };
  const scalars = ['bool', 'int', 'uint', 'double', 'string', 'bytes', 'null', 'type'] as const;
  return scalars.find((s) => s === declared) ? { k: declared as (typeof scalars)[number] } : DYN;
}

const same = (a: T, b: T): boolean => name(a) === name(b);

export interface Checked {
  /** What the expression yields: bool, or dyn when only its evaluation can tell. */
  type: string;
  cost: number;
}

/** Checks `expr` in an environment whose variables are `roots`; returns its type and cost, or the problems found. */
export function checkExpr(
  expr: Expr,
  roots: Record<string, CelShape>,
  env: CelEnv,
  yields: 'bool' | 'any',
): Checked | { problems: string[] } {
  const problems: string[] = [];
  const scopes: Map<string, Typed>[] = [];

  const lookup = (ident: string): Typed | undefined => {
    for (let i = scopes.length - 1; i >= 0; i--) {
      const found = scopes[i]!.get(ident);
      if (found) return found;
    }
    const root = roots[ident];
    return root ? fromShape(root, ident) : undefined;
  };

  /** A field of an object, a map's value: `operand.field` and `operand["field"]` alike. */
  const field = (operand: Typed, key: string, testOnly: boolean): Typed => {
    const t = operand.t;
    const cost = operand.cost + 1;
    if (t.k === 'object') {
      const declared = Object.hasOwn(t.shape.fields, key) ? t.shape.fields[key] : t.shape.rest;
      if (!declared) {
        problems.push(`${t.path}.${key}: no such field (${t.path} has ${Object.keys(t.shape.fields).join(', ')})`);
        return { t: DYN, cost, size: SIZES.anyString };
      }
      const f = fromShape(declared, `${t.path}.${key}`);
      return testOnly ? { t: BOOL, cost, size: 1 } : { ...f, cost };
    }
    if (t.k === 'map' || t.k === 'dyn')
      return testOnly ? { t: BOOL, cost, size: 1 } : { t: t.k === 'map' ? t.of : DYN, cost, size: SIZES.anyString };
    problems.push(`.${key}: a ${name(t)} has no fields`);
    return { t: DYN, cost, size: 1 };
  };

  const walk = (e: Expr): Typed => {
    const kind = e.exprKind;
    switch (kind.case) {
      case 'constExpr': {
        const c = kind.value.constantKind;
        switch (c.case) {
          case 'stringValue':
            return { t: { k: 'string' }, cost: 0, size: c.value.length };
          case 'bytesValue':
            return { t: { k: 'bytes' }, cost: 0, size: c.value.length };
          case 'boolValue':
            return { t: BOOL, cost: 0, size: 1 };
          case 'int64Value':
            return { t: { k: 'int' }, cost: 0, size: 1 };
          case 'uint64Value':
            return { t: { k: 'uint' }, cost: 0, size: 1 };
          case 'doubleValue':
            return { t: { k: 'double' }, cost: 0, size: 1 };
          case 'nullValue':
            return { t: { k: 'null' }, cost: 0, size: 1 };
          default:
            return { t: DYN, cost: 0, size: 1 };
        }
      }
      case 'identExpr': {
        const found = lookup(kind.value.name);
        if (found) return { ...found, cost: 1 };
        if (TYPE_DENOTATIONS.has(kind.value.name)) return { t: { k: 'type' }, cost: 1, size: 1 };
        problems.push(`${kind.value.name}: no such variable (the expression sees ${Object.keys(roots).join(', ')})`);
        return { t: DYN, cost: 1, size: 1 };
      }
      case 'selectExpr': {
        if (!kind.value.operand) return { t: DYN, cost: 1, size: 1 };
        return field(walk(kind.value.operand), kind.value.field, kind.value.testOnly);
      }
      case 'listExpr': {
        const items = kind.value.elements.map(walk);
        const first = items[0]?.t;
        const of = first && items.every((i) => same(i.t, first)) ? first : DYN;
        return { t: { k: 'list', of }, cost: 1 + items.reduce((s, i) => s + i.cost, 0), size: items.length };
      }
      case 'structExpr': {
        if (kind.value.messageName) {
          problems.push(`${kind.value.messageName}{…}: messages are not available, only the request object`);
          return { t: DYN, cost: 1, size: 1 };
        }
        const entries = kind.value.entries.flatMap((en) => [
          ...(en.keyKind.case === 'mapKey' ? [walk(en.keyKind.value)] : []),
          ...(en.value ? [walk(en.value)] : []),
        ]);
        return { t: { k: 'map', of: DYN, key: DYN }, cost: 1 + entries.reduce((s, i) => s + i.cost, 0), size: kind.value.entries.length };
      }
      case 'comprehensionExpr': {
        const c = kind.value;
        if (!c.iterRange || !c.accuInit || !c.loopCondition || !c.loopStep || !c.result) return { t: DYN, cost: 1, size: 1 };
        const range = walk(c.iterRange);
        const init = walk(c.accuInit);
        const r = range.t;
        const element: Typed =
          r.k === 'list'
            ? { t: r.of, cost: 1, size: elementSize(r.of, r) }
            : r.k === 'map' || r.k === 'object'
              ? { t: (r.k === 'map' && r.key) || { k: 'string' }, cost: 1, size: SIZES.anyString }
              : { t: DYN, cost: 1, size: SIZES.anyString };
        if (r.k !== 'list' && r.k !== 'map' && r.k !== 'object' && r.k !== 'dyn') problems.push(`cannot range over a ${name(r)}`);
        const scope = new Map<string, Typed>([[c.accuVar, { ...init, cost: 1, size: range.size }]]);
        if (c.iterVar) scope.set(c.iterVar, element);
        if (c.iterVar2) scope.set(c.iterVar2, { t: DYN, cost: 1, size: SIZES.anyString });
        scopes.push(scope);
        const cond = walk(c.loopCondition);
        const step = walk(c.loopStep);
        scopes.pop();
        scopes.push(new Map([[c.accuVar, { ...init, cost: 1, size: range.size }]]));
        const result = walk(c.result);
        scopes.pop();
        return {
          t: result.t,
          cost: range.cost + init.cost + range.size * (cond.cost + step.cost) + result.cost,
          size: result.t.k === 'list' ? range.size : result.size,
        };
      }
      case 'callExpr':
        return call(kind.value.function, kind.value.target ? walk(kind.value.target) : undefined, kind.value.args);
      default:
        problems.push('an expression the box cannot read');
        return { t: DYN, cost: 1, size: 1 };
    }
  };

  const call = (fn: string, target: Typed | undefined, argExprs: Expr[]): Typed => {
    // `x["field"]`: for the check a selection, so `request["request-method"]` is checked as a field.
    const first = argExprs[0];
    const second = argExprs[1];
    if (fn === '_[_]' && first && second) {
      const operand = walk(first);
      if (second.exprKind.case === 'constExpr' && second.exprKind.value.constantKind.case === 'stringValue')
        return field(operand, second.exprKind.value.constantKind.value, false);
      const key = walk(second);
      const cost = operand.cost + key.cost + 1;
      const t = operand.t;
      if (t.k === 'list') return { t: t.of, cost, size: elementSize(t.of, t) };
      if (t.k === 'map') return { t: t.of, cost, size: elementSize(t.of) };
      if (t.k === 'object') return { t: t.shape.rest ? fromShape(t.shape.rest, `${t.path}[]`).t : DYN, cost, size: SIZES.anyString };
      if (t.k !== 'dyn') problems.push(`cannot index a ${name(t)}`);
      return { t: DYN, cost, size: SIZES.anyString };
    }
    const args = argExprs.map(walk);
    const argCost = args.reduce((s, a) => s + a.cost, target?.cost ?? 0);
    // The logical operators are the evaluator's own, not functions of the library.
    if (fn === '_&&_' || fn === '_||_' || fn === '@not_strictly_false') {
      for (const a of args) if (!fits(a.t, 'bool')) problems.push(`${fn.replace(/_/g, ' ').trim()} takes bools, not a ${name(a.t)}`);
      return { t: BOOL, cost: argCost + 1, size: 1 };
    }
    if (fn === '_?_:_') {
      const [cond, yes, no] = args;
      if (cond && !fits(cond.t, 'bool')) problems.push(`a condition must be a bool, not a ${name(cond.t)}`);
      const t = yes && no && same(yes.t, no.t) ? yes.t : DYN;
      return { t, cost: argCost + 1, size: Math.max(yes?.size ?? 1, no?.size ?? 1) };
    }
    const group = env.funcs.find(fn);
    const overloads = [...(group ?? [])].filter(
      (o) =>
        (o.target === undefined) === (target === undefined) &&
        o.arguments.length === args.length &&
        (target === undefined || (o.target !== undefined && fits(target.t, o.target.toString()))) &&
        o.arguments.every((a, i) => fits(args[i]!.t, a.toString())),
    );
    const shown = `${target ? `${name(target.t)}.` : ''}${fn}(${args.map((a) => name(a.t)).join(', ')})`;
    if (!group) problems.push(`${fn}: no such function`);
    else if (!overloads.length) problems.push(`${shown}: no such overload`);
    const results = [...new Set(overloads.map((o) => o.result.toString()))];
    const t = results.length === 1 ? fromDeclared(results[0]!) : DYN;
    const sizes = [target, ...args].filter((a): a is Typed => a !== undefined).map((a) => a.size);
    const largest = Math.max(1, ...sizes);
    const size = resultSize(fn, t, sizes, largest);
    const making = MAKERS.has(fn) ? traversal(size) : 0;
    if (fn === 'matches') {
      const matching = matchesCost(target ?? args[0], target ? argExprs[0] : argExprs[1]);
      if ('problem' in matching) problems.push(matching.problem);
      return { t, cost: argCost + 1 + ('cost' in matching ? matching.cost : 0), size };
    }
    return { t, cost: argCost + callCost(fn, target, args) + making, size };
  };

  const result = walk(expr);
  if (yields === 'bool' && !fits(result.t, 'bool'))
    problems.push(`the expression is a ${name(result.t)}: a policy allows only when it is true`);
  if (result.cost > COST_LIMITS.estimated)
    problems.push(
      `its estimated cost, ${result.cost.toLocaleString('en')}, is over the limit of ${COST_LIMITS.estimated.toLocaleString('en')} ` +
        '(ranging over lists within lists, or building strings in a loop, over the largest request the box lets in)',
    );
  return problems.length ? { problems: [...new Set(problems)] } : { type: name(result.t), cost: result.cost };
}

/**
 * What a `matches` of the string `on` costs beyond its arguments: RE2's bound, its program's size
 * times the string's length (../budget.ts matchCost), as the meter charges it. A literal pattern
 * is compiled now, and one RE2 cannot run or whose program is too large is a problem; any other
 * pattern (a request's field) is priced at the largest program, and its compiling (a quarter of
 * its length, as cel-go prices a match) at the longest pattern.
 */
function matchesCost(on: Typed | undefined, pattern: Expr | undefined): { cost: number } | { problem: string } {
  const length = on?.size ?? 1;
  if (pattern?.exprKind.case === 'constExpr' && pattern.exprKind.value.constantKind.case === 'stringValue') {
    const source = pattern.exprKind.value.constantKind.value;
    try {
      return { cost: 1 + Math.ceil(0.25 * source.length) + matchCost(policyRegex(source).size, length) };
    } catch (err) {
      return { problem: `matches(${JSON.stringify(source.slice(0, 100))}): the pattern ${regexRefusal(err) ?? errorMessage(err)}` };
    }
  }
  return { cost: 1 + Math.ceil(0.25 * SIZES.declaredString) + matchCost(EVALUATION_LIMITS.program, length) };
}

/** What one call costs beyond its arguments (see the top of this file). */
function callCost(fn: string, target: Typed | undefined, args: Typed[]): number {
  const on = target ?? args[0];
  switch (fn) {
    case '_+_':
      return 1 + traversal(args.reduce((s, a) => s + a.size, 0));
    case 'contains':
      return 1 + traversal(on?.size ?? 1);
    case 'startsWith':
    case 'endsWith':
      return 1 + traversal(args[0]?.size ?? 1);
    case '_==_':
    case '_!=_':
    case '_<_':
    case '_<=_':
    case '_>_':
    case '_>=_':
      // Two values differ by their first difference: comparing costs the shorter's length.
      return 1 + traversal(Math.min(...args.map((a) => a.size)));
    case '@in':
      return 1 + (args[1]?.t.k === 'list' || args[1]?.t.k === 'dyn' ? (args[1]?.size ?? 1) : 1);
    case 'string':
    case 'bytes':
      return 1 + traversal(sizeOf(args[0]?.t ?? DYN));
    default:
      return 1;
  }
}

/** The strings extension's functions that make a string (or list) longer than their inputs: each costs what it makes. */
const MAKERS = new Set(['replace', 'join', 'format', 'quote', 'split', 'lowerAscii', 'upperAscii']);

/** The largest size of a call's result; `sizes` are its target's and arguments'. */
function resultSize(fn: string, t: T, sizes: number[], largest: number): number {
  const [first = 1, second = 1, third = 1] = sizes;
  if (fn === '_+_') return sizes.reduce((s, n) => s + n, 0);
  // Every character replaced by the replacement; every item joined at its longest, with separators.
  if (fn === 'replace') return first * Math.max(1, third);
  if (fn === 'join') return first * (SIZES.declaredString + (sizes.length > 1 ? second : 0));
  if (fn === 'format') return first + second * SIZES.declaredString;
  if (fn === 'quote') return 2 * first + 2;
  if (t.k === 'string' || t.k === 'bytes' || t.k === 'list' || t.k === 'map') return largest;
  return 1;
}
