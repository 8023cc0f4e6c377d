// JSON-lines logger. Tokens, secrets and passwords never reach a log line: known
// field names are censored by pino, and URLs are logged without their query string
// values for credential-bearing parameters. One list of names serves both.
import { pino, type Logger } from 'pino';
import { LogBatches } from './log-batches.js';
import { logFields } from './tracing.js';

export { droppedLogLines } from './log-batches.js';

export type { Logger };

/**
 * The names whose values are credentials: as fields of a log line, and as query (or fragment)
 * parameters of a logged URL, where a name is judged decoded and in any case. Whatever lets its
 * holder in, or stands for a person or a grant while one is being made, is here; what only names
 * or points (client_id, redirect_uri, scope, login_hint) is not.
 */
const CREDENTIALS = [
  // secrets and passwords
  'password',
  'secret',
  'client_secret',
  'client_assertion',
  'assertion',
  'privateKey',
  'signingKeyPem',
  // tokens: OAuth's, OpenID Connect's, token exchange's (RFC 8693), DPoP proofs (RFC 9449)
  'access_token',
  'refresh_token',
  'token',
  'id_token',
  'id_token_hint',
  'subject_token',
  'actor_token',
  'dpop',
  // what a grant or a browser flow is redeemed or continued with
  'code',
  'code_verifier',
  'device_code',
  'user_code',
  'request_uri',
  'state',
  // SAML's, which carries the handle of a sign-out's way through the apps (api/saml/logout-chains.ts)
  'RelayState',
  // HTTP headers that carry one
  'authorization',
  'cookie',
  // an app's own, in the URLs the decision point's HTTP door logs (Envoy appends the app's query)
  'api_key',
  'apikey',
];

/**
 * The most characters a field of a log line keeps of a string: a URL, a path, a name a request
 * carried. Past it the string is cut, and says how much was cut: a line never carries a request's
 * 14 KB query whole (issue 81: that filled the 4 MB the writer keeps for a stalled reader in 320
 * requests), and reads the same to a person.
 */
export const LOGGED_STRING_CHARS = 1024;

/** `value` as a log line keeps it: a string cut to LOGGED_STRING_CHARS, each string of an object or a list too. */
function capped(value: unknown, depth = 0): unknown {
  if (typeof value === 'string')
    return value.length <= LOGGED_STRING_CHARS
      ? value
      : `${value.slice(0, LOGGED_STRING_CHARS)}…[${(value.length - LOGGED_STRING_CHARS).toLocaleString('en')} more characters]`;
  if (value === null || typeof value !== 'object' || depth > 4 || value instanceof Error) return value;
  if (Array.isArray(value))
    return value.length > 100
      ? [...value.slice(0, 100).map((v) => capped(v, depth + 1)), `…[${value.length - 100} more]`]
      : value.map((v) => capped(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = capped(v, depth + 1);
  return out;
}

const options = (level: string, base: Record<string, unknown>): pino.LoggerOptions => ({
  level,
  base: { ...base, pid: process.pid },
  timestamp: pino.stdTimeFunctions.isoTime,
  // A line logged while a traced request is served names its trace and span (api/tracing.ts).
  mixin: logFields,
  formatters: { level: (label) => ({ level: label }), log: (object) => capped(object) as Record<string, unknown> },
});

/**
 * One writer per file descriptor (./log-batches.ts): the lines of every logger of the process go
 * out in the order they were logged, in whole lines, and none of them waits for the log's reader.
 */
const destinations = new Map<number, LogBatches>();
function destinationOf(fd: number): LogBatches {
  let destination = destinations.get(fd);
  if (!destination) {
    const made = new LogBatches(fd);
    destinations.set(fd, (destination = made));
    setInterval(() => made.flush(), ACCESS_LOG_FLUSH_MS).unref();
    process.once('exit', () => made.flushSync());
  }
  return destination;
}

/**
 * The logger of everything but the access log: each line's write begins at once (on a thread of
 * libuv, with what waits before it), not at the next flush. `fd`: where the lines go (stdout).
 */
export function createLogger(level: string, base: Record<string, unknown> = {}, fd = 1): Logger {
  const destination = destinationOf(fd);
  return pino(
    {
      ...options(level, base),
      redact: {
        paths: [...CREDENTIALS, ...CREDENTIALS.map((f) => `*.${f}`), 'req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
    },
    {
      write: (line: string) => {
        destination.write(line);
        destination.flush();
      },
    },
  );
}

/** How long an access log line may wait in the buffer. */
const ACCESS_LOG_FLUSH_MS = 100;

/**
 * The logger of the one-line-per-request access log (and of the token and decision audit lines,
 * api/audit.ts). Writing each line to stdout on its own cost a token request a third of its CPU
 * time (`make bench` with and without it), so these lines are buffered and written together
 * (./log-batches.ts), at least every 100 ms and at exit; other log lines are written at once. A
 * process killed outright loses at most that last 100 ms of access lines, never anything it
 * acknowledged. Its fields are fixed (method, URL through redactUrl, status, time), none of them a
 * secret, so it skips pino's censoring pass too. `fd`: where the lines go (stdout; a test's file).
 */
export function createRequestLogger(level: string, base: Record<string, unknown> = {}, fd = 1): Logger {
  return pino(options(level, base), destinationOf(fd));
}

// Query (and fragment) parameters whose values are credentials, by decoded name, any case.
const CREDENTIAL_PARAMS = new Set(CREDENTIALS.map((name) => name.toLowerCase()));

/**
 * The URL as it may be logged: credential-bearing parameter values replaced, the rest kept
 * as it came. A name is judged decoded (percent-encoding, '+'), as the query parser reads
 * it: `?access%5Ftoken=…` is the access token to the router. A name that does not decode is
 * judged secret: better a lost value in a log than a leaked token.
 */
export function redactUrl(url: string): string {
  const hash = url.indexOf('#');
  const beforeHash = hash < 0 ? url : url.slice(0, hash);
  const fragment = hash < 0 ? '' : `#${redactParams(url.slice(hash + 1))}`;
  const query = beforeHash.indexOf('?');
  if (query < 0) return beforeHash + fragment;
  return `${beforeHash.slice(0, query)}?${redactParams(beforeHash.slice(query + 1))}${fragment}`;
}

function redactParams(params: string): string {
  return params.split('&').map(redactParam).join('&');
}

function redactParam(param: string): string {
  const eq = param.indexOf('=');
  if (eq < 0) return param;
  const name = decodedName(param.slice(0, eq));
  return name === undefined || CREDENTIAL_PARAMS.has(name.toLowerCase()) ? `${param.slice(0, eq)}=[redacted]` : param;
}

function decodedName(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}
