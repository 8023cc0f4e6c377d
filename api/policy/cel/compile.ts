// A CEL expression compiled once, when its policy (or claim) is written or loaded, never per
// request: parsed, checked against the request object's shape (./check.ts), and planned with a
// meter that stops an evaluation past its cost limit.
import type { CelEnv, CelFunc, CelValue } from '@bufbuild/cel';
import type { Expr } from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import { errorMessage } from '../../errors.js';
import { charge, metered, stopMessage } from '../budget.js';
import { policyRegex, type PolicyRegex } from '../regex.js';
import { checkExpr, COST_LIMITS, SIZES } from './check.js';
import { cel } from './library.js';
import { CEL_ENVIRONMENTS, isObjectShape, type CelEnvironmentName, type CelShape } from './shapes.js';

/** An expression that cannot be used: it does not parse or type-check, names a field that cannot exist, or costs too much. */
export class CelCompileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'CelCompileError';
  }
}

export type CelOutcome = { kind: 'value'; value: unknown } | { kind: 'error'; message: string };

/** A sub-expression and what it evaluated to (`boxauth explain`). */
export interface CelPart {
  expression: string;
  value: string;
}

export interface CompiledCel {
  readonly source: string;
  /** bool, or dyn when only the evaluation can tell. */
  readonly type: string;
  /** The estimated worst-case cost (./check.ts). */
  readonly estimatedCost: number;
  evaluate(bindings: Record<string, unknown>): CelOutcome;
  /** The environment it was planned in (for explain's sub-expressions). */
  readonly env: CelEnv;
}

export interface CelOptions {
  /** What the expression must yield: a bool (a policy's, the default), or any value (a claim's). */
  yields?: 'bool' | 'any';
  /** The run-time limit of one evaluation (default COST_LIMITS.perCall). */
  perCallLimit?: number;
}

// The request's budget (../budget.ts), by the names the doors know it by.
export { budgetSpent as celBudgetSpent, withBudget as withCelBudget } from '../budget.js';

function lengthOf(v: CelValue): number {
  const { isCelList, isCelMap } = cel();
  return typeof v === 'string' || v instanceof Uint8Array ? v.length : isCelList(v) ? v.size : isCelMap(v) ? v.size : 0;
}

const TICK = 'boxauth.tick';
const CHARGE = 'boxauth.charge';

function meterFuncs(): CelFunc[] {
  const { celFunc, CelScalar } = cel();
  return [
    celFunc(TICK, [CelScalar.DYN], CelScalar.DYN, (v) => (charge(1), v)),
    celFunc(CHARGE, [CelScalar.DYN], CelScalar.DYN, (v) => (charge(1 + Math.ceil(0.1 * lengthOf(v))), v)),
  ];
}

/** The longest string an expression may make: the longest the box lets in (a body's limit). */
const LONGEST_MADE = SIZES.anyString;

/** A string an expression makes, refused (an error of the evaluation, so a denial) past LONGEST_MADE before it is made. */
function checkMade(length: number): void {
  if (length > LONGEST_MADE)
    throw new Error(
      `the expression would make a string of ${length.toLocaleString('en')} characters, over its limit of ${LONGEST_MADE.toLocaleString('en')}`,
    );
}

/**
 * The strings extension's `replace`, as cel-go's (Go's strings.Replace: `n` < 0 replaces every
 * match, an empty `old` matches before each character and at the end), in linear time and with
 * the size of its result checked before it is made. @bufbuild/cel's own rebuilds the whole string
 * at each match: five chained replaces of "" in a 1,000-character string took 16 s of the event
 * loop, which the meter, charging after each call, could not stop.
 */
function replace(s: string, old: string, repl: string, limit?: bigint): string {
  const n = limit === undefined ? -1 : Number(limit);
  if (n === 0) return s;
  if (old === '') {
    const chars = Array.from(s);
    const k = n < 0 ? chars.length + 1 : Math.min(n, chars.length + 1);
    checkMade(s.length + k * repl.length);
    return (
      chars
        .slice(0, k)
        .map((c) => repl + c)
        .join('') +
      (k > chars.length ? repl : '') +
      chars.slice(k).join('')
    );
  }
  const parts = s.split(old);
  const k = n < 0 ? parts.length - 1 : Math.min(n, parts.length - 1);
  checkMade(s.length + k * (repl.length - old.length));
  const replaced = parts.slice(0, k + 1).join(repl);
  return k < parts.length - 1 ? replaced + old + parts.slice(k + 1).join(old) : replaced;
}

/** The strings extension's `join`, with the size of its result checked before it is made. */
function join(list: unknown, separator = ''): string {
  const items = [...(list as Iterable<string>)];
  checkMade(items.reduce((sum, item) => sum + item.length, 0) + Math.max(0, items.length - 1) * separator.length);
  return items.join(separator);
}

/** What the box puts in place of the strings extension's functions that make strings. */
function madeStrings(): CelFunc[] {
  const { celMethod, CelScalar, listType } = cel();
  const STRING_LIST = listType(CelScalar.STRING);
  return [
    celMethod('replace', CelScalar.STRING, [CelScalar.STRING, CelScalar.STRING], CelScalar.STRING, function (old, repl) {
      return replace(this, old, repl);
    }),
    celMethod('replace', CelScalar.STRING, [CelScalar.STRING, CelScalar.STRING, CelScalar.INT], CelScalar.STRING, function (old, repl, n) {
      return replace(this, old, repl, n);
    }),
    celMethod('join', STRING_LIST, [], CelScalar.STRING, function () {
      return join(this);
    }),
    celMethod('join', STRING_LIST, [CelScalar.STRING], CelScalar.STRING, function (separator) {
      return join(this, separator);
    }),
  ];
}

/**
 * The longest pattern `matches` takes, and the longest one kept compiled. A pattern may be a
 * request's field (`request.resource.id.matches(request.context.allowed)`), which the write-time
 * estimate cannot bound and the meter would charge one call for: compiling 200,000 characters
 * takes most of a second and some 80 MB. So compiling is charged as cel-go charges a match (a
 * quarter of the pattern's length), a pattern is at most as long as a declared string, and only
 * short ones, as written in expressions, are cached.
 */
export const PATTERN_LIMITS = { length: 4096, cached: 512 } as const;

function celRegex(source: string): PolicyRegex {
  charge(1 + Math.ceil(0.25 * source.length));
  if (source.length > PATTERN_LIMITS.length)
    throw new Error(
      `the pattern is ${source.length.toLocaleString('en')} characters long, over the limit of ${PATTERN_LIMITS.length.toLocaleString('en')}`,
    );
  return policyRegex(source, source.length <= PATTERN_LIMITS.cached, true);
}

/** One environment per set of variables (each a map of JSON as the bindings are), made once: @bufbuild/cel plans against it. */
const envs = new Map<string, CelEnv>();
function envOf(variables: string[]): CelEnv {
  const key = variables.join('\n');
  let env = envs.get(key);
  if (!env) {
    // The standard library, and cel-go's strings extension (substring, split, join, lowerAscii…), as Kubernetes offers both.
    const { celEnv, strings, mapType, CelScalar } = cel();
    env = celEnv({
      funcs: [...strings.filter((f) => f.name !== 'replace' && f.name !== 'join'), ...madeStrings(), ...meterFuncs()],
      // `matches` on the policies' one RE2 (../regex.ts), whose compiled patterns are cached:
      // @bufbuild/cel's own compiles the pattern again on every call.
      re2: { compile: celRegex },
      variables: Object.fromEntries(variables.map((v) => [v, mapType(CelScalar.STRING, CelScalar.DYN)])),
    });
    envs.set(key, env);
  }
  return env;
}

/** The meter's call around `e`, with an id of its own (the planner keys what it resolves by id): the parser's ids are small. */
const wrap = (fn: string, e: Expr): Expr =>
  cel().create(cel().ExprSchema, {
    id: e.id + (fn === TICK ? 1n << 40n : 1n << 41n),
    exprKind: { case: 'callExpr', value: { function: fn, args: [e] } },
  });

/** `e` with the meter around every call, every field a call reads and every iteration; the expression means the same. */
function meteredExpr(e: Expr): Expr {
  const { create, ExprSchema } = cel();
  const kind = e.exprKind;
  switch (kind.case) {
    case 'selectExpr':
      return create(ExprSchema, {
        id: e.id,
        exprKind: { case: 'selectExpr', value: { ...kind.value, operand: kind.value.operand && meteredExpr(kind.value.operand) } },
      });
    case 'listExpr':
      return create(ExprSchema, {
        id: e.id,
        exprKind: { case: 'listExpr', value: { ...kind.value, elements: kind.value.elements.map(meteredExpr) } },
      });
    case 'structExpr':
      return create(ExprSchema, {
        id: e.id,
        exprKind: {
          case: 'structExpr',
          value: {
            ...kind.value,
            entries: kind.value.entries.map((en) => ({
              ...en,
              keyKind: en.keyKind.case === 'mapKey' ? { case: 'mapKey' as const, value: meteredExpr(en.keyKind.value) } : en.keyKind,
              value: en.value && meteredExpr(en.value),
            })),
          },
        },
      });
    case 'comprehensionExpr': {
      const c = kind.value;
      const value = {
        ...c,
        iterRange: c.iterRange && meteredExpr(c.iterRange),
        accuInit: c.accuInit && meteredExpr(c.accuInit),
        loopCondition: c.loopCondition && wrap(TICK, meteredExpr(c.loopCondition)),
        loopStep: c.loopStep && meteredExpr(c.loopStep),
        result: c.result && meteredExpr(c.result),
      };
      return create(ExprSchema, { id: e.id, exprKind: { case: 'comprehensionExpr', value } });
    }
    case 'callExpr': {
      // A call costs what it makes (its result) and what it reads: the fields of the request it is
      // handed (`"x" in request.list` ranges over the list, and makes a bool). What another call
      // made was charged when it was made.
      const read = (a: Expr): Expr =>
        a.exprKind.case === 'selectExpr' || a.exprKind.case === 'identExpr' ? wrap(CHARGE, a) : meteredExpr(a);
      const value = { ...kind.value, target: kind.value.target && read(kind.value.target), args: kind.value.args.map(read) };
      return wrap(CHARGE, create(ExprSchema, { id: e.id, exprKind: { case: 'callExpr', value } }));
    }
    default:
      return e;
  }
}

/** The variables an environment declares: `request` for the request objects, or a shape's fields. */
function rootsOf(environment: CelEnvironmentName | CelShape): Record<string, CelShape> {
  if (typeof environment === 'string' && Object.hasOwn(CEL_ENVIRONMENTS, environment))
    return { request: CEL_ENVIRONMENTS[environment as CelEnvironmentName] };
  if (typeof environment === 'object' && isObjectShape(environment)) return environment.fields;
  throw new Error(`not a CEL environment: ${JSON.stringify(environment)}`);
}

/**
 * cel-go's parser limits (its ExpressionSizeCodePointLimit and MaxRecursionDepth defaults, which
 * Kubernetes keeps): the checker, the meter and @bufbuild/cel's planner each walk an expression
 * by recursion, so a source nested thousands deep (`1 + 1 + … + 1`) would overflow the stack
 * after the parser accepted it, a 500 when written and a policy that cannot load.
 */
export const SOURCE_LIMITS = { codePoints: 100_000, depth: 250 } as const;

/** The depth of the deepest node of `e`, walked without recursion (the tree may be too deep to recurse over). */
function depthOf(e: Expr): number {
  let deepest = 0;
  const pending: [Expr, number][] = [[e, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth] = next;
    deepest = Math.max(deepest, depth);
    const kind = node.exprKind;
    const children: (Expr | undefined)[] =
      kind.case === 'selectExpr'
        ? [kind.value.operand]
        : kind.case === 'callExpr'
          ? [kind.value.target, ...kind.value.args]
          : kind.case === 'listExpr'
            ? kind.value.elements
            : kind.case === 'structExpr'
              ? kind.value.entries.flatMap((en) => [en.keyKind.case === 'mapKey' ? en.keyKind.value : undefined, en.value])
              : kind.case === 'comprehensionExpr'
                ? [kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result]
                : [];
    for (const child of children) if (child) pending.push([child, depth + 1]);
  }
  return deepest;
}

function parsed(source: string): Expr {
  const codePoints = [...source].length;
  if (codePoints > SOURCE_LIMITS.codePoints)
    throw new CelCompileError([
      `the expression is ${codePoints.toLocaleString('en')} characters long, over the limit of ${SOURCE_LIMITS.codePoints.toLocaleString('en')}`,
    ]);
  let expr: Expr;
  try {
    expr = cel().parse(source).expr;
  } catch (err) {
    // The parser recurses too: an expression nested deeper than the stack is refused here.
    throw new CelCompileError([`does not parse: ${errorMessage(err)}`]);
  }
  // Macros (`all`, `map` …) add a level or two of their own: the limit is on the parsed tree.
  if (depthOf(expr) > SOURCE_LIMITS.depth)
    throw new CelCompileError([`the expression is nested more than ${SOURCE_LIMITS.depth} deep (operators, calls, selections)`]);
  return expr;
}

/** Values celValue converted so far: what a decision's conversion of its request object costs (../engines.ts). */
let converted = 0;
export const convertedValues = (): number => converted;

/**
 * A JSON value (a request object) as CEL values, converted once: @bufbuild/cel converts a plain
 * object to a map again on every reading of it, so a request object handed to twenty policies
 * as it is would be converted at each of their `request.…`. A key whose value is undefined is left
 * out (reading it is an error either way); an object without a prototype is a map as any other.
 */
export function celValue(v: unknown): unknown {
  converted += 1;
  const { celList, celMap, isCelList, isCelMap, isCelUint } = cel();
  if (Array.isArray(v)) return celList(v.map(celValue) as never);
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array || isCelList(v) || isCelMap(v) || isCelUint(v)) return v;
  const entries = new Map<string, unknown>();
  for (const [key, value] of Object.entries(v)) if (value !== undefined) entries.set(key, celValue(value));
  return celMap(entries as never);
}

/** A CEL value as a person reads it in a decision record. */
export function showCel(v: unknown): string {
  if (cel().isCelError(v)) return `error (${v.message})`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return v.toString();
  if (cel().isCelUint(v)) return `${v.value}u`;
  if (cel().isCelList(v)) return `[${[...v].map(showCel).join(', ')}]`;
  if (cel().isCelMap(v)) return `{${[...v].map(([k, x]) => `${showCel(k)}: ${showCel(x)}`).join(', ')}}`;
  if (v instanceof Uint8Array) return `b"${Buffer.from(v).toString('base64')}"`;
  if (v === null) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * Compiles `source` for `environment` (a request object's, or a shape whose fields are the
 * variables). Throws a CelCompileError naming every problem found.
 */
export function compileCel(source: string, environment: CelEnvironmentName | CelShape, options: CelOptions = {}): CompiledCel {
  const roots = rootsOf(environment);
  const expr = parsed(source);
  const env = envOf(Object.keys(roots));
  const checked = checkExpr(expr, roots, env, options.yields ?? 'bool');
  if ('problems' in checked) throw new CelCompileError(checked.problems);
  // Every expression is metered as it runs, loops or not (issue 81: twenty loop-free expressions a
  // decision, each reading a list of 1,850 strings, spent nothing, and a batch of them held the
  // loop for a second): what the meter costs, about a sixth of an evaluation, is the price of a
  // count that is true.
  const run = cel().plan(env, meteredExpr(expr));
  const limit = options.perCallLimit ?? COST_LIMITS.perCall;
  return {
    source,
    type: checked.type,
    estimatedCost: checked.cost,
    env,
    evaluate(bindings) {
      const { value, stopped } = withoutStacks(() => metered(() => run(bindings as never), limit));
      if (stopped) return { kind: 'error', message: stopMessage(stopped, limit) };
      return cel().isCelError(value) ? { kind: 'error', message: value.message } : { kind: 'value', value };
    },
  };
}

/**
 * `run`, its Errors made without a stack. An error is a value of a CEL evaluation (`null.matches(…)`,
 * a key that is not there: an expression over a request without a scope), which @bufbuild/cel makes
 * as a JS Error, and whose message alone is read: its stack, captured across the planner's
 * recursion, cost more than the rest of the evaluation (17-21 µs against 6-7 µs for three
 * policies, one of them erring; `make bench`'s CEL rows err once a decision).
 */
function withoutStacks<T>(run: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return run();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * The sub-expressions behind a value, for explanations only (never on the hot path): under an
 * `&&` or `||` the operands with their values, under a `!` or a comparison its operands, down to
 * what it compares. Parts inside a comprehension (which need its variables) are not shown.
 */
export function explainCel(compiled: CompiledCel, bindings: Record<string, unknown>): { value: string; parts: CelPart[] } {
  const expr = cel().parse(compiled.source).expr;
  const valueOf = (e: Expr): unknown => {
    const { value, stopped } = metered(() => cel().plan(compiled.env, meteredExpr(e))(bindings as never));
    return stopped ? new Error('over the cost limit') : value;
  };
  const parts: CelPart[] = [];
  const visit = (e: Expr, depth: number): void => {
    if (depth > 6 || e.exprKind.case !== 'callExpr') return;
    const { function: fn, args } = e.exprKind.value;
    const operands = ['_&&_', '_||_', '!_', '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '@in'].includes(fn) ? args : [];
    for (const a of operands) {
      parts.push({ expression: cel().unparse(a), value: showCel(valueOf(a)) });
      visit(a, depth + 1);
    }
  };
  visit(expr, 0);
  const outcome = compiled.evaluate(bindings);
  return { value: outcome.kind === 'value' ? showCel(outcome.value) : `error (${outcome.message})`, parts };
}
