// The request line of every request, checked before any router sees it
// (api/input.ts says what input must be): a path segment or query parameter that
// is not valid percent-encoded UTF-8, holds a NUL or a lone surrogate, is too
// long, or names an object's prototype is refused here with 400, so no handler,
// policy or SQL statement ever meets one.
import type { RequestHandler } from './router.js';
import { ApiError, badRequest } from '../errors.js';
import { INPUT_LIMITS, isPrototypeKey, percentDecode, textProblem } from '../input.js';

/** A raw name as an error message may quote it. */
const quoted = (raw: string): string => JSON.stringify(raw.length > 64 ? `${raw.slice(0, 64)}…` : raw);

function pathProblem(rawPath: string): ApiError | undefined {
  if (rawPath.length > INPUT_LIMITS.path)
    return new ApiError(414, 'uri_too_long', `the path is longer than ${INPUT_LIMITS.path} characters`);
  for (const segment of rawPath.split('/')) {
    const decoded = percentDecode(segment, false);
    if (decoded === undefined) return badRequest(`the path segment ${quoted(segment)} is not valid percent-encoded UTF-8`);
    const problem = textProblem(decoded, Number.MAX_SAFE_INTEGER);
    if (problem) return badRequest(`the path segment ${quoted(segment)} ${problem}`);
  }
  return undefined;
}

function queryProblem(rawQuery: string): ApiError | undefined {
  const pairs = rawQuery.split('&').filter(Boolean);
  if (pairs.length > INPUT_LIMITS.queryParameters) return badRequest(`more than ${INPUT_LIMITS.queryParameters} query parameters`);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const name = percentDecode(rawName, true);
    const value = percentDecode(eq === -1 ? '' : pair.slice(eq + 1), true);
    if (name === undefined || value === undefined)
      return badRequest(`query parameter ${quoted(rawName)} is not valid percent-encoded UTF-8`);
    const nameProblem = textProblem(name, INPUT_LIMITS.queryName);
    if (nameProblem) return badRequest(`a query parameter name ${nameProblem}`);
    if (isPrototypeKey(name)) return badRequest(`query parameter ${quoted(name)} is not allowed`);
    const valueProblem = textProblem(value, INPUT_LIMITS.queryValue);
    if (valueProblem) return badRequest(`query parameter ${quoted(name)} ${valueProblem}`);
  }
  return undefined;
}

/** What is wrong with a request line's target (path and query), if anything. */
export function requestLineProblem(url: string): ApiError | undefined {
  const q = url.indexOf('?');
  return pathProblem(q === -1 ? url : url.slice(0, q)) ?? (q === -1 ? undefined : queryProblem(url.slice(q + 1)));
}

export const checkedRequestLine: RequestHandler = (req, _res, next) => {
  next(requestLineProblem(req.originalUrl));
};
