// The one regular-expression engine of policies (matcho "#regex" strings, json-schema
// `pattern` / `patternProperties`). Policy patterns are written by people and run against
// what any client sends, so they run on RE2 (re2js): time linear in the input, whatever the
// pattern. A backtracking engine lets `^(a+)+$` and 30 characters hold the event loop for
// seconds. RE2 has no lookaround and no backreferences (they cannot run in linear time):
// such a pattern does not compile, and the policy is refused at write time.
import { errorMessage } from '../errors.js';
import type { Options } from 'ajv';
import { RE2JS, RE2JSSyntaxException } from 're2js';

const MAX_CACHED = 1000;
const cache = new Map<string, RE2JS>();

/**
 * The compiled pattern; throws (RE2JSSyntaxException) when RE2 cannot run it. A pattern that
 * comes from a request (a CEL `matches` whose pattern is a request's field) is compiled and not
 * kept (`keep` false): a compiled pattern of 200,000 characters takes some 80 MB, and a thousand
 * distinct ones sent in turn would stay in the cache.
 */
export function policyRegex(source: string, keep = true): RE2JS {
  let re = cache.get(source);
  if (!re) {
    re = RE2JS.compile(source);
    if (!keep) return re;
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(source, re);
  }
  return re;
}

/** What to tell the author of a pattern RE2 refused; undefined for any other error. */
export function regexRefusal(err: unknown): string | undefined {
  if (!(err instanceof RE2JSSyntaxException)) return undefined;
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
// ajv keys compiled patterns by toString(), which is the source for an RE2JS: distinct per pattern.
export const re2Engine: NonNullable<NonNullable<Options['code']>['regExp']> = Object.assign((source: string) => policyRegex(source), {
  code: 'policyRegex',
});
