// Whether an error means the database cannot be reached or cannot keep up right now
// (as opposed to a query the database refused): those are answered 503
// temporarily_unavailable with Retry-After, since the same request will work once
// it is back or the load has passed. A query cut short by the database's own
// statement_timeout or lock_timeout (a managed PostgreSQL often sets them) is one
// of those: under heavy load it answered 500.
import { CommitUnconfirmed } from './located-client.js';
import { DatabaseUnreachable } from './locator.js';

/** How long a client should wait before trying again while the database is unreachable (Retry-After). */
export const UNAVAILABLE_RETRY_SECONDS = 5;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
  // No connection can be opened now: local ports or file descriptors used up under load.
  'EADDRNOTAVAIL',
  'EMFILE',
  'ENFILE',
]);

// SQLSTATE: class 08 (connection exception), 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now),
// 25006 (read-only transaction: a write reached a server that became a standby; the locator looks again),
// class 53 (insufficient resources: too many connections, out of memory, disk full), 57014 (query canceled:
// statement_timeout, or an administrator), 55P03 (lock not available: lock_timeout).
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|25006|53...|57014|55P03)$/;

// What node-postgres says when a pooled connection dies or none comes in time.
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error/,
];

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  // No host fits (./locator.ts), or a commit PostgreSQL could not confirm durable (./located-client.ts).
  if (err instanceof DatabaseUnreachable || err instanceof CommitUnconfirmed) return true;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.test(e.code))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((m) => m.test(e.message as string))) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true; // AggregateError
  return isDatabaseUnavailable(e.cause, depth + 1);
}
