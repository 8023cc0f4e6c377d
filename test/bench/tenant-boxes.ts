// The boxes of `make bench-tenants`, on one PostgreSQL as the operator provisions
// them (operator/boxdb.ts): each a login role of its own and, as the operator's
// default BOXAUTH_OPERATOR_BOX_ISOLATION=Database makes them, a database of its
// own (from template0, owned by the role, closed to PUBLIC) holding the role's
// schema; or, with BENCH_TENANTS_ISOLATION=Schema, a schema each in one shared
// database, as before. The role's search_path is its schema. Each box then signs
// in to PostgreSQL with its own password (SCRAM) and migrates, reads and writes
// only its schema, as in a cluster; and PostgreSQL's count of connections by role
// is each box's count.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { BOX_ISOLATIONS, type BoxIsolation } from '../../operator/boxdb.js';

/** The bench's roles (and schemas, and databases) are named with this; only such are dropped again. */
const PREFIX = 'bench_tenant_';

export const boxRole = (name: string): string => `${PREFIX}${name}`;

/** Where the bench's boxes live: BENCH_TENANTS_ISOLATION, by default where the operator puts a new box. */
export function benchIsolation(env = process.env.BENCH_TENANTS_ISOLATION): BoxIsolation {
  if (env === undefined) return 'Database';
  if (!(BOX_ISOLATIONS as readonly string[]).includes(env))
    throw new Error(`BENCH_TENANTS_ISOLATION must be one of ${BOX_ISOLATIONS.join(', ')}`);
  return env as BoxIsolation;
}

async function withClient<T>(databaseUrl: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/** `url` as `user` with `password`, in `database` (default: the same). */
function urlAs(url: string, user: string, password: string, database?: string): string {
  const at = new URL(url);
  at.username = user;
  at.password = password;
  if (database) at.pathname = `/${database}`;
  return at.toString();
}

/**
 * A role, and a database or a schema (`isolation`), for each name on the server of `databaseUrl` (whose database is
 * fresh: the shared one), what an earlier run left dropped first; returns each box's DATABASE_URL, by name.
 */
export async function boxDatabases(databaseUrl: string, names: string[], isolation: BoxIsolation): Promise<Map<string, string>> {
  const shared = pg.escapeIdentifier(new URL(databaseUrl).pathname.slice(1));
  return withClient(databaseUrl, async (db) => {
    const left = await db.query<{ name: string }>(`SELECT datname AS name FROM pg_database WHERE starts_with(datname, $1)`, [PREFIX]);
    for (const { name } of left.rows) await db.query(`DROP DATABASE ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    const { rows } = await db.query<{ name: string }>(`SELECT rolname AS name FROM pg_roles WHERE starts_with(rolname, $1)`, [PREFIX]);
    for (const { name } of rows) await db.query(`DROP ROLE ${pg.escapeIdentifier(name)}`);
    const urls = new Map<string, string>();
    for (const name of names) {
      const role = boxRole(name);
      const id = pg.escapeIdentifier(role);
      const password = randomBytes(18).toString('base64url');
      await db.query(`CREATE ROLE ${id} LOGIN NOINHERIT PASSWORD ${pg.escapeLiteral(password)}`);
      if (isolation === 'Schema') {
        await db.query(`CREATE SCHEMA ${id} AUTHORIZATION ${id}`);
        await db.query(`ALTER ROLE ${id} IN DATABASE ${shared} SET search_path = ${id}`);
        urls.set(name, urlAs(databaseUrl, role, password));
        continue;
      }
      // As operator/boxdb.ts makes a database of its own: then the schema, as the role, in it.
      await db.query(`CREATE DATABASE ${id} OWNER ${id} TEMPLATE template0`);
      await db.query(`REVOKE ALL ON DATABASE ${id} FROM PUBLIC`);
      const url = urlAs(databaseUrl, role, password, role);
      await withClient(url, async (own) => {
        await own.query(`CREATE SCHEMA ${id} AUTHORIZATION CURRENT_USER`);
        await own.query(`ALTER ROLE CURRENT_USER IN DATABASE ${id} SET search_path = ${id}`);
      });
      urls.set(name, url);
    }
    return urls;
  });
}

/**
 * Connections PostgreSQL holds (in any state) for the bench's boxes whose names start with `prefix`,
 * by application_name (the change feed's, the database watch's; a pool's have none): `total` all.
 */
export async function boxConnections(databaseUrl: string, prefix: string): Promise<Record<string, number> & { total: number }> {
  return withClient(databaseUrl, async (db) => {
    const { rows } = await db.query<{ name: string; n: number }>(
      `SELECT coalesce(nullif(application_name, ''), 'pool') AS name, count(*)::int AS n
       FROM pg_stat_activity WHERE starts_with(usename, $1) GROUP BY 1`,
      [boxRole(prefix)],
    );
    return { ...Object.fromEntries(rows.map((r) => [r.name, r.n])), total: rows.reduce((sum, r) => sum + r.n, 0) };
  });
}
