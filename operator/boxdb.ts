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
//
// A database that is the box's own (a CloudNativePG Cluster of the box's
// namespace: its application database and the role that owns it) is reached
// as that owner instead: no role is made, changed or marked (it is the
// Cluster's, and not a superuser: it could make none), the schema is made,
// owned and marked by it, and its search_path in that database becomes the
// schema. A role-level setting, not a connection option, because the API
// pods may connect through PgBouncer in transaction mode, which refuses
// `-c search_path` in the startup packet; a server connection PgBouncer opens
// as the role gets the setting, as a direct one does.
import { createHash } from 'node:crypto';
import pg from 'pg';
import {
  accessPolicies,
  clients,
  ConnectionBudget,
  createPool,
  type Logger,
  migrate,
  parseDatabaseUrl,
  type Pool,
  type Queryable,
  rewriteDatabaseUrl,
  withTransaction,
} from '../api/public.js';

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

/** The box's schema and (unless only the schema is the box's to look at) its role where they exist, with their comments. */
async function existing(db: Queryable, names: BoxDbNames, role = true): Promise<Found[]> {
  const { rows } = await db.query<Found>(
    `SELECT 'schema' AS kind, nspname AS name, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1
     UNION ALL
     SELECT 'role', rolname, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $2 AND $3`,
    [names.schema, names.role, role],
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

/**
 * Serialises work on one box's names across operator replicas (a new leader may overlap an old one briefly);
 * keyed by the schema's name, which is also its own role's.
 */
async function lockNames(tx: Queryable, names: BoxDbNames): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`boxauth.provision.${names.schema}`]);
}

// Administrative URLs may name several hosts (libpq's form, api/database-url.ts): read and rewritten as such.
export function databaseOf(url: string): string {
  return parseDatabaseUrl(url, 'the database URL').database || 'postgres';
}

/** `url` with another user, password and (optionally) host[:port], or hosts `a:1,b:2`. */
export function urlAs(url: string, user: string, password: string, host?: string): string {
  return rewriteDatabaseUrl(url, { user, password, ...(host ? { hosts: host } : {}) });
}

/** The user of a postgres:// URL. */
export function userOf(url: string): string {
  return parseDatabaseUrl(url, 'the database URL').user;
}

/** How the operator gets into a box's database. */
export type BoxAccess =
  /** Through an administrative URL, with which it makes the box a role of its own (with this password) and a schema. */
  | { kind: 'role'; adminUrl: string; password: string }
  /** As the owner of a database that is the box's own (a CloudNativePG Cluster's application role): a schema, no role. */
  | { kind: 'owner'; url: string };

/** The schema, and the role the box connects as, of the box of `namespace` reached through `access`. */
export function boxDbNamesFor(namespace: string, access: BoxAccess): BoxDbNames {
  if (access.kind === 'role') return boxDbNames(namespace, databaseOf(access.adminUrl));
  return { schema: boxDbNames(namespace, databaseOf(access.url)).schema, role: userOf(access.url) };
}

/** What the Box controller asks of box databases: PostgresBoxDatabases does it; the unit tests fake it. */
export interface BoxDatabases {
  /** The pool of a provisioned box (as its role, in its schema), or undefined before ensure() succeeded. */
  pool(namespace: string): Pool | undefined;
  /**
   * Makes sure the box's schema and (kind role) its role with that password exist, marked as the
   * namespace's, and its tables are migrated; afterwards pool(namespace) works. Throws NotOwned,
   * having changed nothing, when either is not the namespace's.
   */
  ensure(namespace: string, access: BoxAccess): Promise<BoxDbNames>;
  /** reclaimPolicy Retain: the box's records, managed by resources until now, are managed through its REST API from now on. */
  releaseRecords(namespace: string, access: BoxAccess): Promise<void>;
  /**
   * reclaimPolicy Delete: the schema with every record, and (kind role) the role, those marked as the namespace's;
   * never a database owner's role (kind owner), whose search_path in the database is reset instead.
   */
  drop(namespace: string, access: BoxAccess): Promise<void>;
  /** Closes the box's pool (the Box is gone or moved). */
  forget(namespace: string): Promise<void>;
  close(): Promise<void>;
}

/** Connections of one box's pool: a reconcile uses one at a time; a Client's SAML status read may overlap. */
const BOX_POOL_MAX = 2;
/**
 * An idle connection to a box closes after this long: reconciles of one box come in bursts (a Box's records),
 * and a thousand boxes looked at in turn leave no more connections open than half a second's worth.
 */
const BOX_POOL_IDLE_MS = 500;
/** Connections to box databases open at once, all boxes together: a reconcile holds one at a time. */
export const BOX_CONNECTIONS_MAX = 32;

interface Entry {
  url: string;
  pool: Pool;
  names: BoxDbNames;
  mark: string;
  /** The role is the box's own, and carries the mark too (kind role). */
  ownRole: boolean;
}

/** The URL the box's pool connects with: as its own role, or as the database's owner. */
function boxUrl(access: BoxAccess, names: BoxDbNames): string {
  return access.kind === 'role' ? urlAs(access.adminUrl, names.role, access.password) : access.url;
}

/**
 * `work` in a transaction on a connection of its own, closed afterwards: an owner's URL changes with its
 * password, so no pool is kept for it besides the box's.
 */
async function inTransactionAs<T>(url: string, work: (tx: Queryable) => Promise<T>): Promise<T> {
  const pool = createPool(url, 1);
  try {
    return await withTransaction(pool, work);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

export class PostgresBoxDatabases implements BoxDatabases {
  private readonly admins = new Map<string, Pool>();
  private readonly boxes = new Map<string, Entry>();
  private readonly budget: ConnectionBudget;

  constructor(
    private readonly log: Logger,
    maxConnections = BOX_CONNECTIONS_MAX,
  ) {
    this.budget = new ConnectionBudget(maxConnections);
  }

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

  /** Cheap when all is in place: one query as the box's role. A new URL (a rotated password) makes a new pool. */
  async ensure(namespace: string, access: BoxAccess): Promise<BoxDbNames> {
    const names = boxDbNamesFor(namespace, access);
    const url = boxUrl(access, names);
    if (this.boxes.get(namespace)?.url !== url) await this.forget(namespace);
    // A process that starts finds the boxes of the one before in place: it looks, as the box's role, before it
    // writes anything (a role's password set again is a write to the catalog, per box, per restart).
    let entry = this.boxes.get(namespace) ?? this.entry(namespace, access, names, url);
    if (await this.inSchema(entry)) {
      if (!this.boxes.has(namespace)) {
        this.boxes.set(namespace, entry);
        await this.migrated(entry, namespace);
      }
      return names;
    }
    try {
      if (access.kind === 'role') await this.provision(access.adminUrl, names, namespace, access.password);
      else await this.provisionAsOwner(access.url, names, namespace);
    } catch (err) {
      if (err instanceof NotOwned) await this.forget(namespace); // no more records written into what is not the box's
      if (this.boxes.get(namespace) !== entry) await entry.pool.end().catch(() => undefined);
      throw err;
    }
    if (this.boxes.get(namespace) !== entry) {
      // Its locator may still hold the refusal of the look before (the role or its password not made yet): afresh.
      await entry.pool.end().catch(() => undefined);
      entry = this.entry(namespace, access, names, url);
    }
    this.boxes.set(namespace, entry);
    await this.migrated(entry, namespace);
    return names;
  }

  /**
   * The pool of a box: the direct connection (not a pooler's), whose startup option sets the schema before the
   * role's setting exists. Its connections close once idle for a moment: the operator writes to a box now and then,
   * and a thousand boxes must not hold a thousand connections (nor their PostgreSQL's max_connections).
   */
  private entry(namespace: string, access: BoxAccess, names: BoxDbNames, url: string): Entry {
    return {
      url,
      pool: createPool(url, BOX_POOL_MAX, { schema: names.schema, idleMs: BOX_POOL_IDLE_MS, budget: this.budget }),
      names,
      mark: ownerMark(namespace),
      ownRole: access.kind === 'role',
    };
  }

  private async migrated(entry: Entry, namespace: string): Promise<void> {
    const applied = await migrate(entry.pool);
    if (applied.length) this.log.info({ namespace, schema: entry.names.schema, applied }, 'box database migrated');
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
      return row?.s === entry.names.schema && row.t !== null && row.schema === entry.mark && (!entry.ownRole || row.role === entry.mark);
    } catch {
      return false; // wrong password, role or schema dropped: provision again
    }
  }

  private async provision(adminUrl: string, names: BoxDbNames, namespace: string, password: string): Promise<void> {
    const mark = ownerMark(namespace);
    const open = await withTransaction(this.admin(adminUrl), async (tx) => {
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
      return confine(tx, names.role, databaseOf(adminUrl));
    });
    if (open.length) this.log.warn({ role: names.role, open }, "the box's role can still reach what this connection may not close");
    this.log.info({ schema: names.schema, role: names.role }, 'box schema and role in place');
  }

  /** As the database's owner: its schema, marked, and its search_path in the database; no role is touched. */
  private async provisionAsOwner(url: string, names: BoxDbNames, namespace: string): Promise<void> {
    const mark = ownerMark(namespace);
    await inTransactionAs(url, async (tx) => {
      await lockNames(tx, names);
      const foreign = (await existing(tx, names, false)).filter((f) => f.mark !== mark);
      if (foreign.length) throw notOwned(foreign, namespace);
      const schema = pg.escapeIdentifier(names.schema);
      await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION CURRENT_USER`);
      await tx.query(`COMMENT ON SCHEMA ${schema} IS ${pg.escapeLiteral(mark)}`);
      await tx.query(`ALTER ROLE CURRENT_USER IN DATABASE ${pg.escapeIdentifier(databaseOf(url))} SET search_path = ${schema}`);
    });
    this.log.info({ schema: names.schema, role: names.role }, "box schema in place, the database owner's search_path set to it");
  }

  async releaseRecords(namespace: string, access: BoxAccess): Promise<void> {
    await this.ensure(namespace, access);
    const pool = this.pool(namespace)!;
    for (const id of await clients.ids(pool)) await clients.setOwner(pool, id, null);
    for (const id of await accessPolicies.ids(pool)) await accessPolicies.setOwner(pool, id, null);
  }

  /** The role goes only when it owns nothing left behind (it owns the schema); a database owner's role never goes. */
  async drop(namespace: string, access: BoxAccess): Promise<void> {
    await this.forget(namespace);
    const names = boxDbNamesFor(namespace, access);
    const mark = ownerMark(namespace);
    const inTransaction = <T>(work: (tx: Queryable) => Promise<T>): Promise<T> =>
      access.kind === 'role' ? withTransaction(this.admin(access.adminUrl), work) : inTransactionAs(access.url, work);
    const { dropped, left } = await inTransaction(async (tx) => {
      await lockNames(tx, names);
      const found = await existing(tx, names, access.kind === 'role');
      const left = found.filter((f) => f.mark !== mark);
      const schema = found.find((f) => f.kind === 'schema' && f.mark === mark);
      const role = found.find((f) => f.kind === 'role' && f.mark === mark);
      if (schema) await tx.query(`DROP SCHEMA ${pg.escapeIdentifier(schema.name)} CASCADE`);
      if (schema && access.kind === 'owner') await resetSearchPath(tx, names.schema, databaseOf(access.url));
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

/** The maintenance databases every server has, which a box's role has no business connecting to. */
const MAINTENANCE_DATABASES = ['postgres', 'template1'];

/**
 * Takes from PUBLIC, and so from the box's `role`, what reaches beyond its schema where this
 * connection may: CONNECT to the maintenance databases (a superuser's, or their owner's to take),
 * and USAGE and CREATE on the schema public of the box's `database` (its owner's). Not CONNECT to
 * every other database: other applications' roles rely on PUBLIC's, and would lose theirs. Nor the
 * catalogs, which name every schema's tables: see docs/kubernetes/resources.md. A REVOKE this
 * connection may not make fails or warns, so what the role can still do is asked afterwards and
 * returned; what was taken once stays taken, and taking it again changes nothing.
 */
async function confine(tx: Queryable, role: string, database: string): Promise<string[]> {
  // Every box's provisioning revokes on the same catalog rows: two at once fail with "tuple concurrently updated".
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('boxauth.confine'))");
  const others = MAINTENANCE_DATABASES.filter((d) => d !== database);
  const { rows: found } = await tx.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY($1) AND datallowconn', [
    others,
  ]);
  for (const { datname } of found) await inSavepoint(tx, `REVOKE CONNECT ON DATABASE ${pg.escapeIdentifier(datname)} FROM PUBLIC`, '42501');
  const publicSchema = await tx.query("SELECT FROM pg_namespace WHERE nspname = 'public'");
  if (publicSchema.rowCount) await inSavepoint(tx, 'REVOKE CREATE, USAGE ON SCHEMA public FROM PUBLIC', '42501');
  const { rows } = await tx.query<{ open: string }>(
    `SELECT 'CONNECT to database ' || datname AS open FROM pg_database WHERE datname = ANY($2) AND has_database_privilege($1, oid, 'CONNECT')
     UNION ALL
     SELECT p || ' on schema public' FROM pg_namespace, unnest(ARRAY['USAGE', 'CREATE']) p WHERE nspname = 'public' AND has_schema_privilege($1, oid, p)`,
    [role, found.map((d) => d.datname)],
  );
  return rows.map((r) => r.open);
}

/** The current user's search_path in `database` back to the server's default, while it is still the dropped `schema`. */
async function resetSearchPath(tx: Queryable, schema: string, database: string): Promise<void> {
  const { rows } = await tx.query<{ set: boolean }>(
    `SELECT EXISTS (SELECT FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
       WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND d.datname = $1
         AND $2 = ANY (s.setconfig)) AS set`,
    [database, `search_path=${schema}`],
  );
  if (rows[0]?.set) await tx.query(`ALTER ROLE CURRENT_USER IN DATABASE ${pg.escapeIdentifier(database)} RESET search_path`);
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
