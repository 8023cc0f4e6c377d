// What every string that enters the box must be, checked once at the edge (the
// HTTP middleware in api/http/edge.ts, the OAuth parameters in api/oauth/params.ts,
// the bodies in api/http/body.ts): no NUL (PostgreSQL text cannot hold one: a
// NUL that got as far as a shared INSERT failed other clients' requests), no lone
// surrogate (not Unicode: it would be stored as something else than was sent),
// bounded in length, and no key that reaches for an object's prototype.

/** Upper bounds, in characters (UTF-16 code units), of what enters through HTTP. */
export const INPUT_LIMITS = {
  /** The request path, as sent (still percent-encoded). */
  path: 2048,
  /** One query parameter's name, and its value (decoded). */
  queryName: 128,
  queryValue: 4096,
  /** Query parameters in one request. */
  queryParameters: 100,
  /** A key of a JSON/YAML/form body, and nesting depth of a body. */
  bodyKey: 256,
  bodyDepth: 32,
} as const;

/** Keys that mean something to JavaScript objects themselves: never a field of ours. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export const isPrototypeKey = (key: string): boolean => PROTOTYPE_KEYS.has(key);

/** What is wrong with a string as input, or undefined when it is fine. */
export function textProblem(value: string, maxLength: number): string | undefined {
  if (value.length > maxLength) return `is longer than ${maxLength} characters`;
  if (value.includes('\u0000')) return 'holds a NUL character';
  if (!value.isWellFormed()) return 'is not well-formed Unicode (a lone surrogate)';
  return undefined;
}

/** decodeURIComponent, or undefined for malformed percent-encoding or bytes that are not UTF-8. */
export function percentDecode(raw: string, plusIsSpace: boolean): string | undefined {
  try {
    return decodeURIComponent(plusIsSpace ? raw.replace(/\+/g, ' ') : raw);
  } catch {
    return undefined;
  }
}

/**
 * The first problem of a parsed body (JSON, YAML, form), as [field path, what is
 * wrong], or undefined: keys and strings as above, nesting at most
 * INPUT_LIMITS.bodyDepth, plain objects and arrays only. String lengths are the
 * schemas' business (and the body limit's).
 */
export function bodyProblem(value: unknown, path = 'body', depth = 0): [string, string] | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value, Number.MAX_SAFE_INTEGER);
    return problem ? [path, problem] : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= INPUT_LIMITS.bodyDepth) return [path, `is nested deeper than ${INPUT_LIMITS.bodyDepth} levels`];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = bodyProblem(value[i], `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return [path, 'is not a plain object'];
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const at = `${path}.${key}`;
    if (isPrototypeKey(key)) return [at, 'is not an allowed field name'];
    const keyProblem = textProblem(key, INPUT_LIMITS.bodyKey);
    if (keyProblem) return [`${path}.<key>`, `a field name ${keyProblem}`];
    const problem = bodyProblem(item, at, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}
