// matcho: does a value match a pattern? Aidbox's matcho semantics:
// - an object pattern matches an object holding at least its keys, each matching;
// - an array pattern matches an array element by element (the value may be longer);
// - a string starting with "#" is a regular expression (RE2 syntax, see regex.ts) the string
//   value must contain a match of (unanchored, as RegExp.test);
// - "present?" matches any value but null/undefined, "nil?" only those;
// - {"$enum": [...]} matches one of the listed values, {"$one-of": [...]} any of the
//   patterns, {"$contains": p} an array with some element matching p;
// - anything else matches by equality.

import { policyRegex, regexError } from './regex.js';

export type Pattern = unknown;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function matcho(value: unknown, pattern: Pattern): boolean {
  if (typeof pattern === 'string') {
    if (pattern === 'present?') return value !== null && value !== undefined;
    if (pattern === 'nil?') return value === null || value === undefined;
    if (pattern.startsWith('#')) return typeof value === 'string' && policyRegex(pattern.slice(1)).test(value);
    return value === pattern;
  }
  if (Array.isArray(pattern)) {
    return Array.isArray(value) && pattern.every((p, i) => matcho(value[i], p));
  }
  if (isObject(pattern)) {
    if ('$enum' in pattern) return Array.isArray(pattern.$enum) && pattern.$enum.some((e) => e === value);
    if ('$one-of' in pattern) return Array.isArray(pattern['$one-of']) && pattern['$one-of'].some((p) => matcho(value, p));
    if ('$contains' in pattern) return Array.isArray(value) && value.some((v) => matcho(v, pattern.$contains));
    if (!isObject(value)) return false;
    // Own fields only: a pattern key such as "toString" must not find Object.prototype's.
    return Object.entries(pattern).every(([k, p]) => matcho(Object.hasOwn(value, k) ? value[k] : undefined, p));
  }
  return value === pattern;
}

const shown = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 200));

/**
 * Why `value` does not match `pattern`: the first place it fails, by path, and
 * what was there (`boxauth explain`); undefined when it matches. The twin of
 * matcho(), which the hot path runs.
 */
export function mismatch(value: unknown, pattern: Pattern, path = ''): string | undefined {
  const at = path || '(the request)';
  if (matcho(value, pattern)) return undefined;
  if (Array.isArray(pattern) && Array.isArray(value)) {
    for (const [i, p] of pattern.entries()) {
      const why = mismatch(value[i], p, `${path}[${i}]`);
      if (why) return why;
    }
  }
  if (isObject(pattern) && !('$enum' in pattern) && !('$one-of' in pattern) && !('$contains' in pattern) && isObject(value)) {
    for (const [k, p] of Object.entries(pattern)) {
      const why = mismatch(Object.hasOwn(value, k) ? value[k] : undefined, p, path ? `${path}.${k}` : k);
      if (why) return why;
    }
  }
  return `${at}: ${shown(value)} does not match ${shown(pattern)}`;
}

/** Problems with a pattern that would make it fail at request time (bad regex, bad operator). */
export function patternErrors(pattern: Pattern, path = 'matcho'): string[] {
  if (typeof pattern === 'string' && pattern.startsWith('#')) {
    const error = regexError(pattern.slice(1));
    return error === undefined ? [] : [`${path} ${error}`];
  }
  if (Array.isArray(pattern)) return pattern.flatMap((p, i) => patternErrors(p, `${path}[${i}]`));
  if (isObject(pattern)) {
    if ('$enum' in pattern) return Array.isArray(pattern.$enum) ? [] : [`${path}.$enum must be an array`];
    if ('$one-of' in pattern) {
      const options = pattern['$one-of'];
      return Array.isArray(options)
        ? options.flatMap((p, i) => patternErrors(p, `${path}.$one-of[${i}]`))
        : [`${path}.$one-of must be an array`];
    }
    if ('$contains' in pattern) return patternErrors(pattern.$contains, `${path}.$contains`);
    return Object.entries(pattern).flatMap(([k, p]) => patternErrors(p, `${path}.${k}`));
  }
  return [];
}
