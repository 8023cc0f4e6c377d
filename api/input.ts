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
  /**
   * Values (objects, arrays, strings, numbers, booleans, nulls) in one body. Every
   * value is work for the validators (an array of 130,000 wrong items took 2 s and
   * answered 22 MB of errors); the largest resource the schemas allow holds under 1,000.
   */
  bodyValues: 2000,
  /**
   * Tokens of a YAML body (keys, values, indicators, spaces, line breaks), counted
   * before it is parsed: yaml spends microseconds on each. An AccessPolicy linking
   * the most subjects its schema allows takes under 5,000.
   */
  yamlTokens: 8000,
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

export interface BodyProblem {
  /** The field, as a path from `body`. */
  at: string;
  problem: string;
  /** More values than INPUT_LIMITS.bodyValues: the body is too large (413), not malformed. */
  tooLarge?: true;
}

/**
 * The first problem of a parsed body (JSON, YAML, form), or undefined: keys and
 * strings as above, nesting at most INPUT_LIMITS.bodyDepth, at most
 * INPUT_LIMITS.bodyValues values, plain objects and arrays only. String lengths
 * are the schemas' business (and the body limit's).
 */
export function bodyProblem(value: unknown): BodyProblem | undefined {
  let values = 0;
  const walk = (item: unknown, path: string, depth: number): BodyProblem | undefined => {
    if (++values > INPUT_LIMITS.bodyValues) {
      return { at: 'body', problem: `holds more than ${INPUT_LIMITS.bodyValues} values (objects, arrays and scalars)`, tooLarge: true };
    }
    if (typeof item === 'string') {
      const problem = textProblem(item, Number.MAX_SAFE_INTEGER);
      return problem ? { at: path, problem } : undefined;
    }
    if (item === null || typeof item !== 'object') return undefined;
    if (depth >= INPUT_LIMITS.bodyDepth) return { at: path, problem: `is nested deeper than ${INPUT_LIMITS.bodyDepth} levels` };
    if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) {
        const problem = walk(item[i], `${path}[${i}]`, depth + 1);
        if (problem) return problem;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(item) as unknown;
    if (proto !== Object.prototype && proto !== null) return { at: path, problem: 'is not a plain object' };
    for (const [key, child] of Object.entries(item as Record<string, unknown>)) {
      const at = `${path}.${key}`;
      if (isPrototypeKey(key)) return { at, problem: 'is not an allowed field name' };
      const keyProblem = textProblem(key, INPUT_LIMITS.bodyKey);
      if (keyProblem) return { at: `${path}.<key>`, problem: `a field name ${keyProblem}` };
      const problem = walk(child, at, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  };
  return walk(value, 'body', 0);
}

/**
 * What a name a person reads (an email, a group name) must not hold: controls (C0,
 * DEL, C1: a terminal, a log or a gateway's header reads them as commands), format
 * characters (bidi overrides and isolates reorder what is shown; zero-width spaces
 * and joiners hide a difference), line and paragraph separators, and whatever else
 * Unicode says to draw as nothing (fillers, variation selectors, tags). Such a name
 * looks like another one, or like something else than it is.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

/** What is wrong with a name a person reads, or undefined when it shows what it is. */
export function invisibleProblem(value: string): string | undefined {
  const found = INVISIBLE.exec(value)?.[0];
  if (found === undefined) return undefined;
  return `holds a control or invisible character (U+${found.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`;
}

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * What makes two emails the same account: the one key of every lookup and of the
 * unique index (api/store/users.ts). It is NFKC with full case folding (Unicode's
 * NFKC_Casefold, as near as JavaScript gets): NFKC, not NFC, because the Kelvin
 * sign and fullwidth letters are compatibility twins of ASCII ones and must collide
 * with them; case folding of every script, because PostgreSQL's lower() without a
 * locale folds only A–Z. Lower, upper, lower again folds what lower alone leaves
 * (ß and ẞ to ss, final sigma to σ); it also folds dotless ı to i, which only
 * makes more addresses collide. The stored email keeps what the person typed (NFC).
 */
export function emailKey(email: string): string {
  return email.replace(DEFAULT_IGNORABLE, '').normalize('NFKD').toLowerCase().toUpperCase().toLowerCase().normalize('NFKC');
}

/**
 * Whether two addresses are one mailbox, for what is proven about it (a verified address, a
 * link still its holder's): the same characters (NFC), letters in any case. Stricter than
 * emailKey, which folds characters that name other domains (`gıthub.com`, `faß.de`) together to
 * keep look-alike accounts apart, and must never carry a proof from one to the other.
 */
export function sameAddress(a: string, b: string): boolean {
  return a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase();
}
