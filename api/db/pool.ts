// The connection pool and the two ways to hold one of its connections: withClient
// (several statements on one connection) and withTransaction (BEGIN … COMMIT).
// Connections go to the host of the database URL that fits its target_session_attrs
// (./locator.ts), and keep a deadline per statement (./located-client.ts).
import pg from 'pg';
import { locatedClientClass, type ConnectionBudget } from './located-client.js';

export { ConnectionBudget } from './located-client.js';
import { HostLocator } from './locator.js';
import { parseDatabaseUrl } from '../database-url.js';
import { bindToContext, tracingOn } from '../tracing.js';

export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;
export type Pool = pg.Pool;
/** A connection inside BEGIN … COMMIT (withTransaction): what needs several statements to be one. */
export type Transaction = pg.PoolClient;

// bigint columns (user and group ids) fit in a JS number for any realistic box.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

// bytea (token digests) as a Buffer of its own memory: pg's parser slices Node's shared
// 8 KB buffer pool, and a 32-byte digest kept by a cache (a session, a refresh holder)
// kept its whole slab alive, up to 8 KB per cached row.
const parseBytea = pg.types.getTypeParser(pg.types.builtins.BYTEA);
pg.types.setTypeParser(pg.types.builtins.BYTEA, (v) => {
  const pooled = parseBytea(v) as Buffer;
  const own = Buffer.allocUnsafeSlow(pooled.length);
  pooled.copy(own);
  return own;
});

/** Errors a connection reports that nothing else hears: heard, and given no further thought. */
const ignore = (): void => undefined;

/** How long a connection may take, by default: a database that takes longer is answered 503. */
export const CONNECT_TIMEOUT_MS = 5000;

export interface PoolOptions {
  /** A box served from a shared database lives in its own schema (the operator's pools). */
  schema?: string;
  /** The longest one statement may run before it is canceled (0: no deadline, as for migrations). */
  statementTimeoutMs?: number;
  /** The longest a statement waits for a lock (PostgreSQL's lock_timeout), when shorter than its deadline matters. */
  lockTimeoutMs?: number;
  /** false through a transaction pooler: statements are parsed at each use (./located-client.ts). */
  namedStatements?: boolean;
  /** How long an idle connection stays open (default 30 s; a host's boxes and the operator's let go sooner). */
  idleMs?: number;
  /** Connections this pool shares with others (the operator's box pools): at most its max open at once. */
  budget?: ConnectionBudget;
}

/** A locator of its own for a URL (no watch: whoever needs one watches its own locator). */
export function locatorFor(url: string, timeoutMs = CONNECT_TIMEOUT_MS): HostLocator {
  return new HostLocator(parseDatabaseUrl(url), { timeoutMs });
}

export function createPool(database: string | HostLocator, max: number, options: PoolOptions = {}): pg.Pool {
  const locator = typeof database === 'string' ? locatorFor(database) : database;
  const pool = new pg.Pool({
    // The first host's URL gives every connection its user, database and parameters; its host is the locator's choice.
    connectionString: locator.url.forHost(locator.url.hosts[0]!),
    Client: locatedClientClass(locator, {
      statementTimeoutMs: options.statementTimeoutMs ?? 0,
      namedStatements: options.namedStatements ?? true,
      ...(options.budget ? { budget: options.budget } : {}),
    }),
    max,
    idleTimeoutMillis: options.idleMs ?? 30_000,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(startupOptions(options) ? { options: startupOptions(options) } : {}),
  });
  // A connection that dies (PostgreSQL stopped, crashed, failed over) emits 'error' on its
  // client, and an 'error' nobody listens to ends the process. The pool listens only while a
  // client is idle (and re-emits it here); a client checked out (pool.connect(): transactions,
  // migrations, the purge job) has no listener of the pool's. So every client gets one as soon
  // as it is connected, for good: the error itself reaches whoever uses the client (its query in flight fails, a later
  // one fails as "not queryable", and the pool drops it when it comes back), and the next query
  // reports any lasting problem (503, api/db/unavailable.ts).
  pool.on('connect', (client) => client.on('error', ignore));
  pool.on('error', ignore);
  // pool.query's statement runs in the callback pg-pool calls when a connection is free, which may be
  // from another request's release: bound to its own request, its span is a child of that one.
  const connect = pool.connect.bind(pool) as (callback?: (...args: never[]) => unknown) => unknown;
  pool.connect = ((callback?: (...args: never[]) => unknown) =>
    callback && tracingOn() ? connect(bindToContext(callback)) : connect(callback)) as typeof pool.connect;
  return pool;
}

/** The settings a connection of the pool starts with (libpq's `options`). */
function startupOptions(options: PoolOptions): string {
  return [
    ...(options.schema ? [`-c search_path=${options.schema}`] : []),
    ...(options.lockTimeoutMs ? [`-c lock_timeout=${options.lockTimeoutMs}`] : []),
  ].join(' ');
}

/** `work` on one connection of the pool, given back afterwards (the pool drops it if it broke meanwhile). */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

export function withTransaction<T>(pool: pg.Pool, work: (tx: Transaction) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(ignore);
      throw err;
    }
  });
}
