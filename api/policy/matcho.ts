// matcho: does a value match a pattern? Aidbox's matcho semantics:
// - an object pattern matches an object holding at least its keys, each matching;
// - an array pattern matches an array element by element (the value may be longer);
// - a string starting with "#" is a regular expression (RE2 syntax, see regex.ts) the string
//   value must contain a match of (unanchored, as RegExp.test);
// - "present?" matches any value but null/undefined, "nil?" only those;
// - a string starting with "." is a reference to another field of the request, by its path
//   (".user.id", ".resource.properties.ownerID"): the value must equal the value there, and a
//   field that is missing (or null) there matches nothing, not even a missing value. Aidbox's
//   matcho reads such strings so; there is no literal starting with "." (one is written
//   {"$enum": [".literal"]}), and a "." string that names no field a request can have is
//   refused at write time (patternErrors), so no string is read both ways;
// - {"$enum": [...]} matches one of the listed values (compared as written: never a pattern nor
//   a reference), {"$one-of": [...]} any of the patterns, {"$contains": p} an array with some
//   element matching p;
// - anything else matches by equality.
//
// Every step is charged to the running evaluation (./budget.ts): a pattern or sub-pattern tried
// against a value, each value of an $enum compared, each value a reference compares (issue 81: six
// policies of 990 `$contains` over 1,850 strings held the loop for a second, and cost nothing).

import { isDeepStrictEqual } from 'node:util';
import { charge } from './budget.js';
import { policyRegex, regexError } from './regex.js';
import type { CelShape } from './cel/shapes.js';

export type Pattern = unknown;

const isReference = (pattern: string): boolean => pattern.startsWith('.');

/** A field of a list: its index. */
const INDEX = /^(0|[1-9]\d{0,5})$/;

const MAX_CACHED = 1000;
const referencePaths = new Map<string, string[]>();

/** A reference's path, its fields in order (".user.data.team" → user, data, team); an empty one where two dots meet. */
function referencePath(reference: string): string[] {
  let path = referencePaths.get(reference);
  if (!path) {
    path = reference.slice(1).split('.');
    if (referencePaths.size >= MAX_CACHED) referencePaths.clear();
    referencePaths.set(reference, path);
  }
  return path;
}

/** The value at `path` in the request, by own fields only (a list by index); undefined where there is none. */
function valueAt(root: unknown, path: string[]): unknown {
  let at = root;
  for (const field of path) {
    if (Array.isArray(at)) at = INDEX.test(field) ? at[Number(field)] : undefined;
    else if (isObject(at) && Object.hasOwn(at, field)) at = at[field];
    else return undefined;
  }
  return at;
}

/** The referenced value, or undefined where the request has none (a null counts as none). */
function referenced(root: unknown, reference: string): unknown {
  const there = valueAt(root, referencePath(reference));
  return there === null ? undefined : there;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Charges a unit for each value in `v` (what comparing it deeply may visit), as it goes: a value past the budget stops the count. */
function chargeValues(v: unknown): void {
  charge(1);
  if (v === null || typeof v !== 'object') return;
  for (const item of Array.isArray(v) ? v : Object.values(v)) chargeValues(item);
}

/** Whether `value` matches `pattern`; `root` is the whole request, which references read. */
export function matcho(value: unknown, pattern: Pattern, root: unknown = value): boolean {
  charge(1);
  if (typeof pattern === 'string') {
    if (pattern === 'present?') return value !== null && value !== undefined;
    if (pattern === 'nil?') return value === null || value === undefined;
    if (pattern.startsWith('#')) return typeof value === 'string' && policyRegex(pattern.slice(1)).test(value);
    if (isReference(pattern)) {
      const other = referenced(root, pattern);
      if (other === undefined) return false;
      chargeValues(other);
      return isDeepStrictEqual(value, other);
    }
    return value === pattern;
  }
  if (Array.isArray(pattern)) {
    return Array.isArray(value) && pattern.every((p, i) => matcho(value[i], p, root));
  }
  if (isObject(pattern)) {
    if ('$enum' in pattern) {
      if (!Array.isArray(pattern.$enum)) return false;
      charge(Math.ceil(pattern.$enum.length / 10)); // a comparison of identity each, as cel-go's `in` costs a list
      return pattern.$enum.some((e) => e === value);
    }
    if ('$one-of' in pattern) return Array.isArray(pattern['$one-of']) && pattern['$one-of'].some((p) => matcho(value, p, root));
    if ('$contains' in pattern) return Array.isArray(value) && value.some((v) => matcho(v, pattern.$contains, root));
    if (!isObject(value)) return false;
    // Own fields only: a pattern key such as "toString" must not find Object.prototype's.
    return Object.entries(pattern).every(([k, p]) => matcho(Object.hasOwn(value, k) ? value[k] : undefined, p, root));
  }
  return value === pattern;
}

const shown = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 200));

/**
 * Why `value` does not match `pattern`: the first place it fails, by path, and
 * what was there (`boxauth explain`); undefined when it matches. The twin of
 * matcho(), which the hot path runs.
 */
export function mismatch(value: unknown, pattern: Pattern, path = '', root: unknown = value): string | undefined {
  const at = path || '(the request)';
  if (matcho(value, pattern, root)) return undefined;
  if (Array.isArray(pattern) && Array.isArray(value)) {
    for (const [i, p] of pattern.entries()) {
      const why = mismatch(value[i], p, `${path}[${i}]`, root);
      if (why) return why;
    }
  }
  if (isObject(pattern) && !('$enum' in pattern) && !('$one-of' in pattern) && !('$contains' in pattern) && isObject(value)) {
    for (const [k, p] of Object.entries(pattern)) {
      const why = mismatch(Object.hasOwn(value, k) ? value[k] : undefined, p, path ? `${path}.${k}` : k, root);
      if (why) return why;
    }
  }
  if (typeof pattern === 'string' && isReference(pattern)) {
    const other = referenced(root, pattern);
    return other === undefined
      ? `${at}: ${shown(value)} does not equal ${pattern}, which the request does not have`
      : `${at}: ${shown(value)} does not equal ${pattern} (${shown(other)})`;
  }
  return `${at}: ${shown(value)} does not match ${shown(pattern)}`;
}

/**
 * Why `reference` cannot be read in a request of `shape` (undefined when it can): a path with an
 * empty field, or one that no request of that kind can hold. Read so, a "." string that was
 * meant as a literal (".example.com", ".pdf") is refused, never compared with nothing.
 */
function referenceError(reference: string, shape: CelShape): string | undefined {
  const path = referencePath(reference);
  if (path.some((field) => field === '')) return 'has an empty field (two dots, or a dot at the end)';
  let at: CelShape = shape;
  for (const [i, field] of path.entries()) {
    if (at === 'dyn') return undefined; // whatever was sent or stored: any field may be read under it
    const named = path.slice(0, i + 1).join('.');
    if (typeof at === 'string') return `names .${named}, but .${path.slice(0, i).join('.')} holds no fields`;
    if ('list' in at) {
      if (!INDEX.test(field)) return `names .${named}, but .${path.slice(0, i).join('.')} is a list (a field of it is an index: 0, 1, …)`;
      at = at.list;
    } else if ('map' in at) {
      at = at.map;
    } else {
      const next: CelShape | undefined = Object.hasOwn(at.fields, field) ? at.fields[field] : at.rest;
      if (next === undefined) return `names .${named}, which no request this policy decides has`;
      at = next;
    }
  }
  return undefined;
}

/**
 * Problems with a pattern that would make it fail at request time (bad regex, bad operator) or
 * read what its author did not mean (a reference to a field no request of `shape` has).
 */
export function patternErrors(pattern: Pattern, shape: CelShape, path = 'matcho'): string[] {
  if (typeof pattern === 'string' && pattern.startsWith('#')) {
    const error = regexError(pattern.slice(1));
    return error === undefined ? [] : [`${path} ${error}`];
  }
  if (typeof pattern === 'string' && isReference(pattern)) {
    const error = referenceError(pattern, shape);
    return error === undefined
      ? []
      : [
          `${path} "${pattern}" starts with ".", which makes it a reference to another field of the request, and it ${error}; ` +
            `a literal that starts with "." is written {"$enum": ["${pattern}"]}`,
        ];
  }
  if (Array.isArray(pattern)) return pattern.flatMap((p, i) => patternErrors(p, shape, `${path}[${i}]`));
  if (isObject(pattern)) {
    if ('$enum' in pattern) return Array.isArray(pattern.$enum) ? [] : [`${path}.$enum must be an array`];
    if ('$one-of' in pattern) {
      const options = pattern['$one-of'];
      return Array.isArray(options)
        ? options.flatMap((p, i) => patternErrors(p, shape, `${path}.$one-of[${i}]`))
        : [`${path}.$one-of must be an array`];
    }
    if ('$contains' in pattern) return patternErrors(pattern.$contains, shape, `${path}.$contains`);
    return Object.entries(pattern).flatMap(([k, p]) => patternErrors(p, shape, `${path}.${k}`));
  }
  return [];
}
