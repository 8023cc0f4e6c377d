// The databases of boxes. Each box namespace gets a PostgreSQL schema and a role
// that owns it and whose default search_path (in that database) is the schema,
// so the box API, connecting as that role, creates and finds its tables there
// and sees no other box. The operator provisions both through its own
// connection (a superuser, or a role with CREATEROLE that owns the database),
// and then works in the schema as the box's role, so every table stays owned by
// the box.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../api/log.js';
import { migrate } from '../api/db/migrate.js';
import { createPool, type Pool } from '../api/db/pool.js';

export interface BoxDbNames {
  schema: string;
  role: string;
}

const MAX_IDENT = 63;

/** A PostgreSQL identifier from parts: lower case, [a-z0-9_], shortened with a hash past 63 bytes. */
export function identifier(...parts: string[]): string {
  const raw = parts.join('_').toLowerCase().replace(/[^a-z0-9_]/g, '_');
  if (raw.length <= MAX_IDENT) return raw;
  return `${raw.slice(0, MAX_IDENT - 9)}_${createHash('sha256').update(raw).digest('hex').slice(0, 8)}`;
}

/** The schema is per namespace; the role also carries the database name, since roles are shared by all databases of a server. */
export function boxDbNames(namespace: string, database: string): BoxDbNames {
  return { schema: identifier('box', namespace), role: identifier(database, 'box', namespace) };
}

export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
}

/** `url` with another user, password and (optionally) host[:port]. */
export function urlAs(url: string, user: string, password: string, host?: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  if (host) {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host);
    if (m) {
      u.hostname = m[1]!;
      if (m[2]) u.port = m[2];
    }
  }
  return u.toString();
}

interface Entry {
  url: string;
  pool: Pool;
  names: BoxDbNames;
}

export class BoxDatabases {
  private readonly admins = new Map<string, Pool>();
  private readonly boxes = new Map<string, Entry>();

  constructor(private readonly log: Logger) {}

  private admin(url: string): Pool {
    let pool = this.admins.get(url);
    if (!pool) {
      pool = createPool(url, 2);
      this.admins.set(url, pool);
    }
    return pool;
  }

  /** The pool of a provisioned box (as its role, in its schema), or undefined before ensure() succeeded. */
  pool(namespace: string): Pool | undefined {
    return this.boxes.get(namespace)?.pool;
  }

  /**
   * Makes sure the box's role (with this password) and schema exist and its
   * tables are migrated; afterwards pool(namespace) works. Cheap when all is in
   * place: one query as the box's role.
   */
  async ensure(namespace: string, adminUrl: string, password: string): Promise<BoxDbNames> {
    const names = boxDbNames(namespace, databaseOf(adminUrl));
    const url = urlAs(adminUrl, names.role, password);
    let entry = this.boxes.get(namespace);
    if (entry && entry.url !== url) {
      this.boxes.delete(namespace);
      await entry.pool.end().catch(() => undefined);
      entry = undefined;
    }
    if (entry && (await this.inSchema(entry))) return names;
    await this.provision(adminUrl, names, password);
    entry ??= { url, pool: createPool(url, 3, names.schema), names };
    this.boxes.set(namespace, entry);
    const applied = await migrate(entry.pool);
    if (applied.length) this.log.info({ namespace, schema: names.schema, applied }, 'box database migrated');
    return names;
  }

  private async inSchema(entry: Entry): Promise<boolean> {
    try {
      const { rows } = await entry.pool.query<{ s: string | null; t: string | null }>(
        "SELECT current_schema() AS s, to_regclass('schema_migrations')::text AS t");
      return rows[0]?.s === entry.names.schema && rows[0]?.t !== null;
    } catch {
      return false; // wrong password, role or schema dropped: provision again
    }
  }

  private async provision(adminUrl: string, names: BoxDbNames, password: string): Promise<void> {
    const db = this.admin(adminUrl);
    const role = pg.escapeIdentifier(names.role);
    const schema = pg.escapeIdentifier(names.schema);
    const database = pg.escapeIdentifier(databaseOf(adminUrl));
    const client = await db.connect();
    try {
      // Serialise provisioning of one box across operator replicas (a new leader may overlap an old one briefly).
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [`boxauth.provision.${names.role}`]);
      try {
        const exists = (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [names.role])).rowCount;
        await client.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${role} WITH LOGIN NOINHERIT PASSWORD ${pg.escapeLiteral(password)}`);
        // Creating a schema owned by another role needs membership in it, unless superuser.
        const superuser = (await client.query<{ s: boolean }>('SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user')).rows[0]?.s;
        if (!superuser) await client.query(`GRANT ${role} TO CURRENT_USER`).catch(() => undefined);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${role}`);
        await client.query(`ALTER SCHEMA ${schema} OWNER TO ${role}`);
        await client.query(`ALTER ROLE ${role} IN DATABASE ${database} SET search_path = ${schema}`);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`boxauth.provision.${names.role}`]).catch(() => undefined);
      }
    } finally {
      client.release();
    }
    this.log.info({ schema: names.schema, role: names.role }, 'box schema and role in place');
  }

  /** Reclaim policy Delete: the schema with every record, and the role. */
  async drop(namespace: string, adminUrl: string): Promise<void> {
    await this.forget(namespace);
    const names = boxDbNames(namespace, databaseOf(adminUrl));
    const db = this.admin(adminUrl);
    await db.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(names.schema)} CASCADE`);
    if ((await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [names.role])).rowCount) {
      await db.query(`DROP OWNED BY ${pg.escapeIdentifier(names.role)}`);
      await db.query(`DROP ROLE ${pg.escapeIdentifier(names.role)}`);
    }
    this.log.info({ schema: names.schema, role: names.role }, 'box schema and role dropped');
  }

  /** Closes the box's pool (the Box is gone or moved). */
  async forget(namespace: string): Promise<void> {
    const entry = this.boxes.get(namespace);
    this.boxes.delete(namespace);
    await entry?.pool.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    const pools = [...this.boxes.values()].map((e) => e.pool).concat([...this.admins.values()]);
    this.boxes.clear();
    this.admins.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }
}
