// The databases of boxes. Each box namespace gets a PostgreSQL schema and a role
// that owns it and whose default search_path (in that database) is the schema,
// so the box API, connecting as that role, creates and finds its tables there
// and sees no other box. The operator provisions both through its own
// connection (a superuser, or a role with CREATEROLE that owns the database),
// and then works in the schema as the box's role, so every table stays owned by
// the box.
//
// Tenants share nothing. Schema and role have one name, unique to the
// (database, namespace) pair by construction: a readable part and a digest of
// the whole pair, so no namespace, however it is chosen, is given another's
// (roles belong to the whole server: the database is part of the digest).
// Provisioning marks both with a comment, "boxauth owner: namespace=<ns>", and
// under its lock changes neither unless it finds that mark: a schema or role of
// the name with another mark or none (made by a person, or by another
// operator) keeps its password, owner and contents. reclaimPolicy Delete drops
// only what carries the mark.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../api/log.js';
import { migrate } from '../api/db/migrate.js';
import { createPool, withTransaction, type Pool, type Queryable } from '../api/db/pool.js';
import { clients } from '../api/store/clients.js';
import { accessPolicies } from '../api/store/policies.js';

export interface BoxDbNames {
  schema: string;
  role: string;
}

const MAX_IDENT = 63;
const DIGEST_HEX = 16;
const READABLE = MAX_IDENT - 'box_'.length - '_'.length - DIGEST_HEX;

/** The schema and role of the box of `namespace` in `database`: one name, box_<namespace, cut>_<digest of both>. */
export function boxDbNames(namespace: string, database: string): BoxDbNames {
  // JSON keeps the pair unambiguous: no two pairs give the same digest input.
  const digest = createHash('sha256')
    .update(JSON.stringify([database, namespace]))
    .digest('hex')
    .slice(0, DIGEST_HEX);
  const readable = namespace
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, READABLE);
  const name = `box_${readable}_${digest}`;
  return { schema: name, role: name };
}

/** The comment that records a schema or role as the box of `namespace`'s. */
export function ownerMark(namespace: string): string {
  return `boxauth owner: namespace=${namespace}`;
}

/** A schema or role of the box's name exists without the namespace's mark; nothing was changed. */
export class NotOwned extends Error {}

interface Found {
  kind: 'schema' | 'role';
  name: string;
  mark: string | null;
}

/** The box's schema and role where they exist, with their comments. */
async function existing(db: Queryable, names: BoxDbNames): Promise<Found[]> {
  const { rows } = await db.query<Found>(
    `SELECT 'schema' AS kind, nspname AS name, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1
     UNION ALL
     SELECT 'role', rolname, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $2`,
    [names.schema, names.role],
  );
  return rows;
}

function notOwned(foreign: Found[], namespace: string): NotOwned {
  const what = foreign.map(
    (f) => `${f.kind} ${pg.escapeIdentifier(f.name)} exists ${f.mark === null ? 'with no comment' : `with the comment "${f.mark}"`}`,
  );
  const marks = foreign.map(
    (f) => `COMMENT ON ${f.kind.toUpperCase()} ${pg.escapeIdentifier(f.name)} IS ${pg.escapeLiteral(ownerMark(namespace))}`,
  );
  return new NotOwned(
    `${what.join(', and ')}: the operator changes no schema or role that is not marked as namespace ${namespace}'s. ` +
      `If it holds this box's data, mark it (${marks.join('; ')}); otherwise rename or drop it (see docs/guides/upgrading.md)`,
  );
}

/** Serialises work on one box's names across operator replicas (a new leader may overlap an old one briefly). */
async function lockNames(tx: Queryable, names: BoxDbNames): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`boxauth.provision.${names.role}`]);
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

/** What the Box controller asks of box databases: PostgresBoxDatabases does it; the unit tests fake it. */
export interface BoxDatabases {
  /** The pool of a provisioned box (as its role, in its schema), or undefined before ensure() succeeded. */
  pool(namespace: string): Pool | undefined;
  /**
   * Makes sure the box's role (with this password) and schema exist, marked as
   * the namespace's, and its tables are migrated; afterwards pool(namespace)
   * works. Throws NotOwned, having changed nothing, when either is not the namespace's.
   */
  ensure(namespace: string, adminUrl: string, password: string): Promise<BoxDbNames>;
  /** reclaimPolicy Retain: the box's records, managed by resources until now, are managed through its REST API from now on. */
  releaseRecords(namespace: string, adminUrl: string, password: string): Promise<void>;
  /** reclaimPolicy Delete: the schema with every record, and the role, those marked as the namespace's. */
  drop(namespace: string, adminUrl: string): Promise<void>;
  /** Closes the box's pool (the Box is gone or moved). */
  forget(namespace: string): Promise<void>;
  close(): Promise<void>;
}

interface Entry {
  url: string;
  pool: Pool;
  names: BoxDbNames;
  mark: string;
}

export class PostgresBoxDatabases implements BoxDatabases {
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

  pool(namespace: string): Pool | undefined {
    return this.boxes.get(namespace)?.pool;
  }

  /** Cheap when all is in place: one query as the box's role. */
  async ensure(namespace: string, adminUrl: string, password: string): Promise<BoxDbNames> {
    const names = boxDbNames(namespace, databaseOf(adminUrl));
    const url = urlAs(adminUrl, names.role, password);
    if (this.boxes.get(namespace)?.url !== url) await this.forget(namespace);
    let entry = this.boxes.get(namespace);
    if (entry && (await this.inSchema(entry))) return names;
    try {
      await this.provision(adminUrl, names, namespace, password);
    } catch (err) {
      if (err instanceof NotOwned) await this.forget(namespace); // no more records written into what is not the box's
      throw err;
    }
    entry ??= { url, pool: createPool(url, 3, { schema: names.schema }), names, mark: ownerMark(namespace) };
    this.boxes.set(namespace, entry);
    const applied = await migrate(entry.pool);
    if (applied.length) this.log.info({ namespace, schema: names.schema, applied }, 'box database migrated');
    return names;
  }

  /** Connected, in its schema, migrated, and both still marked as the namespace's (a person may have moved them). */
  private async inSchema(entry: Entry): Promise<boolean> {
    try {
      const { rows } = await entry.pool.query<{ s: string | null; t: string | null; schema: string | null; role: string | null }>(
        `SELECT current_schema() AS s, to_regclass('schema_migrations')::text AS t,
           obj_description(to_regnamespace(current_schema()), 'pg_namespace') AS schema,
           shobj_description((SELECT oid FROM pg_roles WHERE rolname = current_user), 'pg_authid') AS role`,
      );
      const row = rows[0];
      return row?.s === entry.names.schema && row.t !== null && row.schema === entry.mark && row.role === entry.mark;
    } catch {
      return false; // wrong password, role or schema dropped: provision again
    }
  }

  private async provision(adminUrl: string, names: BoxDbNames, namespace: string, password: string): Promise<void> {
    const mark = ownerMark(namespace);
    await withTransaction(this.admin(adminUrl), async (tx) => {
      await lockNames(tx, names);
      const found = await existing(tx, names);
      const foreign = found.filter((f) => f.mark !== mark);
      if (foreign.length) throw notOwned(foreign, namespace);
      await claimRole(
        tx,
        names.role,
        found.some((f) => f.kind === 'role'),
        password,
        mark,
      );
      await claimSchema(tx, names, databaseOf(adminUrl), mark);
    });
    this.log.info({ schema: names.schema, role: names.role }, 'box schema and role in place');
  }

  async releaseRecords(namespace: string, adminUrl: string, password: string): Promise<void> {
    await this.ensure(namespace, adminUrl, password);
    const pool = this.pool(namespace)!;
    for (const id of await clients.ids(pool)) await clients.setOwner(pool, id, null);
    for (const id of await accessPolicies.ids(pool)) await accessPolicies.setOwner(pool, id, null);
  }

  /** The role goes only when it owns nothing left behind (it owns the schema). */
  async drop(namespace: string, adminUrl: string): Promise<void> {
    await this.forget(namespace);
    const names = boxDbNames(namespace, databaseOf(adminUrl));
    const mark = ownerMark(namespace);
    const { dropped, left } = await withTransaction(this.admin(adminUrl), async (tx) => {
      await lockNames(tx, names);
      const found = await existing(tx, names);
      const left = found.filter((f) => f.mark !== mark);
      const schema = found.find((f) => f.kind === 'schema' && f.mark === mark);
      const role = found.find((f) => f.kind === 'role' && f.mark === mark);
      if (schema) await tx.query(`DROP SCHEMA ${pg.escapeIdentifier(schema.name)} CASCADE`);
      const roleDropped = role !== undefined && !left.length && (await dropRole(tx, role.name));
      if (role && !roleDropped) left.push(role);
      return { dropped: [schema, roleDropped ? role : undefined].filter((f) => f !== undefined), left };
    });
    if (left.length) {
      this.log.warn(
        { namespace, left: left.map((f) => ({ [f.kind]: f.name, comment: f.mark })) },
        "reclaimPolicy Delete left what is not marked as this namespace's (or a role that still owns something)",
      );
    }
    this.log.info({ namespace, dropped: dropped.map((f) => `${f.kind} ${f.name}`) }, 'box schema and role dropped');
  }

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

/** Creates the role, or sets its password, and marks it. */
async function claimRole(tx: Queryable, name: string, exists: boolean, password: string, mark: string): Promise<void> {
  const role = pg.escapeIdentifier(name);
  await tx.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${role} WITH LOGIN NOINHERIT PASSWORD ${pg.escapeLiteral(password)}`);
  await tx.query(`COMMENT ON ROLE ${role} IS ${pg.escapeLiteral(mark)}`);
  // Creating a schema owned by another role needs membership in it, unless superuser; a refusal is not fatal yet.
  const superuser = (await tx.query<{ s: boolean }>('SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user')).rows[0]?.s;
  if (!superuser) await inSavepoint(tx, `GRANT ${role} TO CURRENT_USER`);
}

/** Creates the schema owned by the role, marks it, and makes it the role's search_path in this database. */
async function claimSchema(tx: Queryable, names: BoxDbNames, database: string, mark: string): Promise<void> {
  const [schema, role] = [pg.escapeIdentifier(names.schema), pg.escapeIdentifier(names.role)];
  await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${role}`);
  await tx.query(`ALTER SCHEMA ${schema} OWNER TO ${role}`);
  await tx.query(`COMMENT ON SCHEMA ${schema} IS ${pg.escapeLiteral(mark)}`);
  await tx.query(`ALTER ROLE ${role} IN DATABASE ${pg.escapeIdentifier(database)} SET search_path = ${schema}`);
}

/** Drops the role unless it still owns something (then false): what it owns elsewhere is not the box's to drop. */
async function dropRole(tx: Queryable, name: string): Promise<boolean> {
  return inSavepoint(tx, `DROP ROLE ${pg.escapeIdentifier(name)}`, '2BP01');
}

/** Runs `statement`; a failure (of SQLSTATE `code`, when given) is undone and answers false, leaving the transaction usable. */
async function inSavepoint(tx: Queryable, statement: string, code?: string): Promise<boolean> {
  await tx.query('SAVEPOINT boxauth_step');
  try {
    await tx.query(statement);
    await tx.query('RELEASE SAVEPOINT boxauth_step');
    return true;
  } catch (err) {
    if (code && (err as { code?: string }).code !== code) throw err;
    await tx.query('ROLLBACK TO SAVEPOINT boxauth_step');
    return false;
  }
}
