// The one regular-expression engine of policies (matcho "#regex" strings, json-schema
// `pattern` / `patternProperties`). Policy patterns are written by people and run against
// what any client sends, so they run on RE2 (re2js): time linear in the input, whatever the
// pattern. A backtracking engine lets `^(a+)+$` and 30 characters hold the event loop for
// seconds. RE2 has no lookaround and no backreferences (they cannot run in linear time):
// such a pattern does not compile, and the policy is refused at write time.
//
// Linear is not yet cheap: RE2 steps through its whole program at each character, and re2js
// is JavaScript. `(?:a?){999}a{999}` is 17 characters and 2,999 instructions, and one match
// over 4,000 characters took a second of the event loop (issue 63). So a pattern compiles to at
// most EVALUATION_LIMITS.program instructions (RE2's own bound is its max_mem), and each match is
// charged its bound, program × (input + 1), before it runs (./budget.ts): one past what the
// evaluation has left is not run, and the policy is stopped (it denies).
import { errorMessage } from '../errors.js';
import type { Options } from 'ajv';
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { charge, EVALUATION_LIMITS, matchCost } from './budget.js';

type Re2js = typeof import('re2js');
let re2js: Re2js | undefined;
/**
 * re2js, required (its CommonJS build: compiling stays synchronous) at the first pattern a process
 * compiles, never at the start: a box whose policies have none never loads it.
 */
const re2 = (): Re2js => (re2js ??= createRequire(import.meta.url)('re2js') as Re2js);

/** A pattern that compiles to a program larger than EVALUATION_LIMITS.program. */
export class RegexTooLarge extends Error {
  constructor(size: string) {
    super(
      `${size} instructions of RE2's program, over the limit of ${EVALUATION_LIMITS.program.toLocaleString('en')} ` +
        '(each repetition counts: x{100} is a hundred x; write a shorter repetition, or test a shorter field)',
    );
    this.name = 'RegexTooLarge';
  }
}

/** A compiled pattern whose every match is charged to the running evaluation (./budget.ts) before it runs. */
export class PolicyRegex {
  constructor(
    readonly source: string,
    private readonly re: RE2JS,
    /** Its program's instructions. */
    readonly size: number,
  ) {}

  /** Whether `input` contains a match (RegExp.test); throws OverBudget when the match could cost more than what is left. */
  test(input: string): boolean {
    // A string's length in UTF-16 units is at least its length in code points, which RE2 steps through.
    charge(matchCost(this.size, input.length));
    return this.re.test(input);
  }

  // ajv keys compiled patterns by toString().
  toString(): string {
    return this.source;
  }
}

/**
 * A bound on the size of `source`'s program, read from its text without compiling it: compiling
 * is what is slow (a 2,000-character pattern of `a{1000}`s took re2js 6 s), so a pattern far over
 * the limit is refused before. Counted as RE2's parser counts (its calcSize): one a character or
 * class, a repetition its operand times its count; an overestimate where the text is unusual
 * (an escaped brace), never far under.
 */
export function programBound(source: string): number {
  // Each open group: the sizes of its alternatives so far, and of the last atom (what a repetition repeats).
  const stack: { done: number; current: number; last: number }[] = [{ done: 0, current: 0, last: 0 }];
  const top = () => stack[stack.length - 1]!;
  const atom = (n: number) => {
    top().current += n;
    top().last = n;
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      const next = source[i + 1];
      if (next === 'Q') {
        const end = source.indexOf('\\E', i + 2);
        const quoted = end < 0 ? source.length - i - 2 : end - i - 2;
        top().current += quoted;
        top().last = 1;
        i = end < 0 ? source.length : end + 1;
        continue;
      }
      // \p{Greek}, \x{10FFFF}: one class, one character.
      if ((next === 'p' || next === 'P' || next === 'x') && source[i + 2] === '{') i = Math.max(i + 1, source.indexOf('}', i));
      else i += 1;
      atom(1);
    } else if (c === '[') {
      // A class is one instruction: skip to its closing bracket (a "]" first in it is a member).
      let j = i + 1;
      if (source[j] === '^') j++;
      if (source[j] === ']') j++;
      for (; j < source.length && source[j] !== ']'; j++) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[' && source[j + 1] === ':') j = Math.max(j, source.indexOf(':]', j + 2) + 1);
      }
      i = j;
      atom(1);
    } else if (c === '(') {
      // (?flags) alone sets flags and is no group; (?:…), (?P<name>…), (?i:…) are.
      const flags = /^\(\?[a-zA-Z-]*\)/.exec(source.slice(i, i + 12));
      if (flags) i += flags[0].length - 1;
      else stack.push({ done: 0, current: 0, last: 0 });
    } else if (c === ')' && stack.length > 1) {
      const group = stack.pop()!;
      atom(group.done + group.current + 2);
    } else if (c === '|') {
      top().done += top().current + 1;
      top().current = 0;
      top().last = 0;
    } else if (c === '*' || c === '+' || c === '?') {
      top().current += 2;
      top().last += 2;
    } else if (c === '{') {
      const repeat = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i, i + 12));
      if (!repeat) {
        atom(1);
        continue;
      }
      const count = Math.max(Number(repeat[1]), Number(repeat[3] || 0), 1);
      top().current += top().last * (count - 1) + count;
      top().last = top().last * count + count;
      i += repeat[0].length - 1;
    } else {
      atom(1);
    }
  }
  while (stack.length > 1) {
    const group = stack.pop()!;
    atom(group.done + group.current + 2);
  }
  return top().done + top().current;
}

const MAX_CACHED = 1000;
const cache = new Map<string, PolicyRegex>();

/**
 * The compiled pattern; throws (RE2JSSyntaxException) when RE2 cannot run it, RegexTooLarge
 * when its program is over the limit, OverBudget when `charged` and compiling it costs more than
 * the running evaluation has left. A long pattern that comes from a request (a CEL `matches`
 * whose pattern is a request's field) is compiled and not kept (`keep` false): a thousand
 * distinct ones sent in turn would stay in the cache.
 */
export function policyRegex(source: string, keep = true, charged = false): PolicyRegex {
  let re = cache.get(source);
  if (!re) {
    // Four times the limit: the bound overestimates, and compiling that much takes some 50 ms.
    const bound = programBound(source);
    if (bound > 4 * EVALUATION_LIMITS.program) throw new RegexTooLarge(`would compile to some ${bound.toLocaleString('en')}`);
    // A request's pattern (`charged`) is compiled as the request is decided: its evaluation pays for it first.
    if (charged) charge(bound * EVALUATION_LIMITS.compileUnitsPerInstruction);
    const compiled = re2().RE2JS.compile(source);
    const size = compiled.programSize();
    if (size > EVALUATION_LIMITS.program) throw new RegexTooLarge(`compiles to ${size.toLocaleString('en')}`);
    re = new PolicyRegex(source, compiled, size);
    if (!keep) return re;
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(source, re);
  }
  return re;
}

/** What to tell the author of a pattern RE2 refused or that is too large; undefined for any other error. */
export function regexRefusal(err: unknown): string | undefined {
  if (err instanceof RegexTooLarge) return err.message;
  if (!re2js || !(err instanceof re2js.RE2JSSyntaxException)) return undefined; // never compiled, never refused by RE2
  return `is not a regular expression in RE2 syntax (no lookaround, no backreferences): ${err.message}`;
}

/** Why the pattern cannot run, or undefined when it compiles. */
export function regexError(source: string): string | undefined {
  try {
    policyRegex(source);
    return undefined;
  } catch (err) {
    return regexRefusal(err) ?? errorMessage(err);
  }
}

// ajv passes its flags ("u" or ""): RE2 always matches by code point, which is what "u" asks.
// ajv keys compiled patterns by toString(), which is the source for a PolicyRegex: distinct per pattern.
export const re2Engine: NonNullable<NonNullable<Options['code']>['regExp']> = Object.assign((source: string) => policyRegex(source), {
  code: 'policyRegex',
});
