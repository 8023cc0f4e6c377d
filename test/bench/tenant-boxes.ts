// The boxes of `make bench-tenants`, in one database as the operator provisions
// them (operator/boxdb.ts): each a schema and a login role of its own, the role's
// search_path its schema. Each box then signs in to PostgreSQL with its own
// password (SCRAM) and migrates, reads and writes only its schema, as in a
// cluster; and PostgreSQL's count of connections by role is each box's count.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The bench's roles (and schemas) are named with this; only such roles are dropped again. */
const PREFIX = 'bench_tenant_';

export const boxRole = (name: string): string => `${PREFIX}${name}`;

async function withClient<T>(databaseUrl: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/**
 * A role and a schema for each name in `databaseUrl`'s (fresh) database, the roles of an earlier
 * run dropped first; returns each box's DATABASE_URL, by name.
 */
export async function boxDatabases(databaseUrl: string, names: string[]): Promise<Map<string, string>> {
  const database = pg.escapeIdentifier(new URL(databaseUrl).pathname.slice(1));
  return withClient(databaseUrl, async (db) => {
    const { rows } = await db.query<{ name: string }>(`SELECT rolname AS name FROM pg_roles WHERE starts_with(rolname, $1)`, [PREFIX]);
    for (const { name } of rows) await db.query(`DROP ROLE ${pg.escapeIdentifier(name)}`);
    const urls = new Map<string, string>();
    await db.query('BEGIN');
    for (const name of names) {
      const role = boxRole(name);
      const id = pg.escapeIdentifier(role);
      const password = randomBytes(18).toString('base64url');
      await db.query(`CREATE ROLE ${id} LOGIN NOINHERIT PASSWORD ${pg.escapeLiteral(password)}`);
      await db.query(`CREATE SCHEMA ${id} AUTHORIZATION ${id}`);
      await db.query(`ALTER ROLE ${id} IN DATABASE ${database} SET search_path = ${id}`);
      const url = new URL(databaseUrl);
      url.username = role;
      url.password = password;
      urls.set(name, url.toString());
    }
    await db.query('COMMIT');
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
