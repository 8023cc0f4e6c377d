// The databases of boxes. Each box namespace gets a PostgreSQL database of its own
// (BOXAUTH_OPERATOR_BOX_ISOLATION=Database, the default), or a schema of the
// shared database of the administrative URL (Schema, and every box made before
// the setting: where a box lives is never changed behind its back), and a role
// that owns it; the role's default search_path there is the box's schema, so the
// box API, connecting as that role, creates and finds its tables there. The
// operator provisions them through its own connection (a superuser, or a role
// with CREATEROLE, and CREATEDB for databases of their own, that owns the
// database), and then works in the schema as the box's role, so every table
// stays owned by the box. Where each box lives and what its objects are called:
// boxdb-names.ts.
//
// Tenants share nothing. Names are unique to the (database, namespace) pair by
// construction (roles and databases belong to the whole server). Provisioning
// marks what it makes with a comment, and under its lock (a row of the
// operator's own table, which no box's role may lock: boxdb-sql.ts) changes
// nothing of the box's name unless it finds that mark: a schema, role or
// database of the name with another mark or none (made by a person, or by
// another operator) keeps its password, owner and contents. reclaimPolicy
// Delete drops only what carries the mark. CREATE DATABASE and DROP DATABASE
// cannot run in a transaction: for a database of its own the lock is held by a
// transaction on a second administrative connection around every step, and
// each step can be taken again after a failure at any point (a database made
// but not marked yet is recognised by its owner, the box's marked role). Every
// lock the operator waits for, and every statement it runs in a box's
// database (where the tenant's triggers run and its pods' locks are held), has
// a bound: BOX_STATEMENT_TIMEOUT_MS.
//
// A database that is the box's own (a CloudNativePG Cluster of the box's
// namespace: its application database and the role that owns it) is reached
// as that owner instead: no role is made, changed or marked (it is the
// Cluster's, and not a superuser: it could make none), the schema is made,
// owned and marked by it, and its search_path in that database becomes the
// schema. A role-level setting, not a connection option, because the API
// pods may connect through PgBouncer in transaction mode, which refuses
// `-c search_path` in the startup packet; a server connection PgBouncer opens
// as the role gets the setting, as a direct one does. A database the operator
// made for the box is reached the same way once it is made: as its owner.
// Names and places: boxdb-names.ts; the statements: boxdb-sql.ts.
import pg from 'pg';
import {
  accessPolicies,
  clients,
  ConnectionBudget,
  createPool,
  errorMessage,
  type Logger,
  migrate,
  type Pool,
  type Queryable,
  withTransaction,
} from '../api/public.js';
import {
  boxDbNames,
  databaseOf,
  makeNameKey,
  markOf,
  NAME_KEY_LOCK,
  ownDatabaseNames,
  ownerMark,
  readNameKey,
  urlAs,
  userOf,
  type BoxDbNames,
  type BoxIsolation,
  type BoxPlace,
} from './boxdb-names.js';
import {
  claimRole,
  claimSchema,
  confine,
  dropRole,
  existing,
  existingOwn,
  inTransactionOn,
  lockNames,
  lockNamesInOwn,
  lockRow,
  makeLocks,
  NotOwned,
  notOwned,
  ownOf,
  PlaceChanged,
  resetSearchPath,
  underSessionLock,
  type Found,
} from './boxdb-sql.js';

export {
  BOX_ISOLATIONS,
  boxDbNames,
  databaseOf,
  NameKeyLost,
  ownDatabaseMark,
  ownDatabaseNames,
  ownerMark,
  readNameKey,
  urlAs,
  userOf,
  type BoxDbNames,
  type BoxIsolation,
  type BoxPlace,
} from './boxdb-names.js';

export { NotOwned, PlaceChanged } from './boxdb-sql.js';

/** How the operator gets into a box's database. */
export type BoxAccess =
  /** Through an administrative URL, with which it makes the box a role of its own (with this password), and a database or a schema. */
  | { kind: 'role'; adminUrl: string; password: string; place: BoxPlace }
  /** As the owner of a database that is the box's own (a CloudNativePG Cluster's application role): a schema, no role. */
  | { kind: 'owner'; url: string };

/** The database, schema, and role the box connects as, of the box of `namespace` reached through `access`. */
export function boxDbNamesFor(namespace: string, access: BoxAccess): BoxDbNames {
  if (access.kind === 'role') return access.place.names;
  const database = databaseOf(access.url);
  return { database, schema: boxDbNames(namespace, database).schema, role: userOf(access.url) };
}

/** What the Box controller asks of box databases: PostgresBoxDatabases does it; the unit tests fake it. */
export interface BoxDatabases {
  /**
   * Where the box of `namespace` lives through `adminUrl`: in the database of its own or the schema it was given, else
   * (a new box) where `isolation` says. Changes nothing but the key of own databases' names, made before the first.
   */
  place(namespace: string, adminUrl: string, isolation: BoxIsolation): Promise<BoxPlace>;
  /** The pool of a provisioned box (as its role, in its schema), or undefined before ensure() succeeded. */
  pool(namespace: string): Pool | undefined;
  /**
   * Makes sure the box's database or schema and (kind role) its role with that password exist, marked as the
   * namespace's, and its tables are migrated; afterwards pool(namespace) works. Throws NotOwned, having changed
   * nothing, when any is not the namespace's, and PlaceChanged when the box no longer lives where `access` says.
   */
  ensure(namespace: string, access: BoxAccess): Promise<BoxDbNames>;
  /** reclaimPolicy Retain: the box's records, managed by resources until now, are managed through its REST API from now on. */
  releaseRecords(namespace: string, access: BoxAccess): Promise<void>;
  /**
   * reclaimPolicy Delete: the box's own database, or its schema with every record, and (kind role) the role, those
   * marked as the namespace's; never a database owner's role (kind owner), whose search_path in the database is reset instead.
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
/**
 * The longest the operator's statement in a box's database runs, or waits for a lock. What runs there is partly the
 * tenant's (triggers and defaults of its own tables, locks its pods hold), and a statement that never ends held a
 * worker and a connection of the budget below, shared by every box, for good: so one tenant held every other's
 * records. Canceled, it fails that box's reconcile, which is tried again later.
 */
export const BOX_STATEMENT_TIMEOUT_MS = 10_000;
/** The box's migrations, applied by the operator once per process: their statements may take long on a big box, not their locks. */
const BOX_MIGRATION_TIMEOUT_MS = 600_000;
/** Connections to box databases open at once, all boxes together: a reconcile holds one at a time. */
export const BOX_CONNECTIONS_MAX = 32;

interface Entry {
  url: string;
  pool: Pool;
  names: BoxDbNames;
  /** The schema's. */
  mark: string;
  /** The role's, when it is the box's own (kind role). */
  roleMark: string | undefined;
  /** The database's, when the operator made it for the box. */
  databaseMark: string | undefined;
}

/** The URL the box's pool connects with: as its own role (in its own database, or the shared one), or as the database's owner. */
function boxUrl(access: BoxAccess, names: BoxDbNames): string {
  return access.kind === 'role' ? urlAs(access.adminUrl, names.role, access.password, { database: names.database }) : access.url;
}

/**
 * `work` in a transaction on a connection of its own, closed afterwards: an owner's URL changes with its
 * password, so no pool is kept for it besides the box's.
 */
async function inTransactionAs<T>(url: string, work: (tx: Queryable) => Promise<T>): Promise<T> {
  const pool = createPool(url, 1, { lockTimeoutMs: BOX_STATEMENT_TIMEOUT_MS });
  try {
    return await withTransaction(pool, work);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * The pool of `pools` for an administrative URL, made at first: two connections, none waiting longer than
 * BOX_STATEMENT_TIMEOUT_MS for a lock. A lock a box's role holds on its own names (its role's settings, its schema's
 * comment, in a transaction left open) made the box's provisioning wait for it, with one of these, which every Box needs.
 */
function administrative(pools: Map<string, Pool>, url: string): Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = createPool(url, 2, { lockTimeoutMs: BOX_STATEMENT_TIMEOUT_MS });
    pools.set(url, pool);
  }
  return pool;
}

export class PostgresBoxDatabases implements BoxDatabases {
  private readonly admins = new Map<string, Pool>();
  /** By administrative URL: connections holding the operator's lock of a box while another creates or drops its database. */
  private readonly lockers = new Map<string, Pool>();
  /** Administrative URLs whose table of the operator's locks is known to exist. */
  private readonly withLocks = new Set<string>();
  private readonly boxes = new Map<string, Entry>();
  /** By administrative URL: the key of own databases' names, once read or made. */
  private readonly nameKeys = new Map<string, Buffer>();
  private readonly budget: ConnectionBudget;

  constructor(
    private readonly log: Logger,
    maxConnections = BOX_CONNECTIONS_MAX,
  ) {
    this.budget = new ConnectionBudget(maxConnections);
  }

  private admin(url: string): Pool {
    return administrative(this.admins, url);
  }

  private locker(url: string): Pool {
    return administrative(this.lockers, url);
  }

  /** The administrative pool of `url`, its table of locks made (operator/boxdb-sql.ts makeLocks). */
  private async lockable(url: string): Promise<Pool> {
    const pool = this.admin(url);
    if (!this.withLocks.has(url)) {
      await makeLocks(pool);
      this.withLocks.add(url);
    }
    return pool;
  }

  private async nameKey(adminUrl: string, make: boolean): Promise<Buffer | undefined> {
    const known = this.nameKeys.get(adminUrl);
    if (known) return known;
    const pool = this.admin(adminUrl);
    const key =
      (await readNameKey(pool)) ??
      (make
        ? await withTransaction(await this.lockable(adminUrl), async (tx) => {
            await lockRow(tx, NAME_KEY_LOCK);
            return makeNameKey(tx, databaseOf(adminUrl));
          })
        : undefined);
    if (key) this.nameKeys.set(adminUrl, key);
    return key;
  }

  /** One query of the shared database (and, the first time, one of its key): a database of its own wins over a schema left beside it. */
  async place(namespace: string, adminUrl: string, isolation: BoxIsolation): Promise<BoxPlace> {
    const adminDatabase = databaseOf(adminUrl);
    const shared = boxDbNames(namespace, adminDatabase);
    const key = await this.nameKey(adminUrl, false);
    const own = key ? ownDatabaseNames(namespace, key) : undefined;
    const { rows } = await this.admin(adminUrl).query<{ database: boolean; schema: boolean }>(
      `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1) AS database,
              EXISTS (SELECT FROM pg_namespace WHERE nspname = $2 AND obj_description(oid, 'pg_namespace') = $3) AS schema`,
      [own?.database ?? null, shared.schema, ownerMark(namespace)],
    );
    const sharedSchema = shared.schema;
    if (own && rows[0]?.database) return { isolation: 'Database', names: own, asked: isolation, sharedSchema };
    if (rows[0]?.schema || isolation === 'Schema') return { isolation: 'Schema', names: shared, asked: isolation, sharedSchema };
    const made = own ?? ownDatabaseNames(namespace, (await this.nameKey(adminUrl, true))!);
    return { isolation: 'Database', names: made, asked: isolation, sharedSchema };
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
      if (access.kind === 'owner') await this.provisionAsOwner(access.url, names, namespace);
      else if (access.place.isolation === 'Database') await this.provisionOwnDatabase(access, namespace);
      else await this.provision(access, namespace);
    } catch (err) {
      if (err instanceof NotOwned || err instanceof PlaceChanged) await this.forget(namespace); // no more records written there
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
    const own = access.kind === 'role' && access.place.isolation === 'Database';
    const sharedMark = access.kind === 'role' ? markOf(access.place, namespace, databaseOf(access.adminUrl)) : undefined;
    return {
      url,
      pool: createPool(url, BOX_POOL_MAX, {
        schema: names.schema,
        idleMs: BOX_POOL_IDLE_MS,
        budget: this.budget,
        statementTimeoutMs: BOX_STATEMENT_TIMEOUT_MS,
        lockTimeoutMs: BOX_STATEMENT_TIMEOUT_MS,
      }),
      names,
      mark: ownerMark(namespace),
      roleMark: sharedMark,
      databaseMark: own ? sharedMark : undefined,
    };
  }

  /** On a connection of its own, in the budget: a migration's statements have a longer deadline than a record's, its lock waits the same. */
  private async migrated(entry: Entry, namespace: string): Promise<void> {
    const pool = createPool(entry.url, 1, {
      schema: entry.names.schema,
      idleMs: BOX_POOL_IDLE_MS,
      budget: this.budget,
      statementTimeoutMs: BOX_MIGRATION_TIMEOUT_MS,
      lockTimeoutMs: BOX_STATEMENT_TIMEOUT_MS,
    });
    const applied = await migrate(pool).finally(() => pool.end().catch(() => undefined));
    if (applied.length) this.log.info({ namespace, schema: entry.names.schema, applied }, 'box database migrated');
  }

  /** Connected, in its schema, migrated, and all still marked as the namespace's (a person may have moved them). */
  private async inSchema(entry: Entry): Promise<boolean> {
    try {
      const { rows } = await entry.pool.query<{
        s: string | null;
        t: string | null;
        schema: string | null;
        role: string | null;
        db: string | null;
      }>(
        `SELECT current_schema() AS s, to_regclass('schema_migrations')::text AS t,
           obj_description(to_regnamespace(current_schema()), 'pg_namespace') AS schema,
           shobj_description((SELECT oid FROM pg_roles WHERE rolname = current_user), 'pg_authid') AS role,
           shobj_description((SELECT oid FROM pg_database WHERE datname = current_database()), 'pg_database') AS db`,
      );
      const row = rows[0];
      return (
        row?.s === entry.names.schema &&
        row.t !== null &&
        row.schema === entry.mark &&
        (entry.roleMark === undefined || row.role === entry.roleMark) &&
        (entry.databaseMark === undefined || row.db === entry.databaseMark)
      );
    } catch {
      return false; // wrong password, role, schema or database dropped: provision again
    }
  }

  /** In the shared database: the role and the schema. */
  private async provision(access: Extract<BoxAccess, { kind: 'role' }>, namespace: string): Promise<void> {
    const { adminUrl, password, place } = access;
    const names = place.names;
    const mark = ownerMark(namespace);
    const open = await withTransaction(await this.lockable(adminUrl), async (tx) => {
      await lockNames(tx, place.sharedSchema);
      const found = await existing(tx, names);
      // Kept in the shared database because it was found there: gone since (renamed, dropped), it is not made again here.
      if (place.asked === 'Database' && !found.some((f) => f.kind === 'schema' && f.mark === mark)) {
        throw new PlaceChanged(`schema ${names.schema} of database ${names.database} is gone`);
      }
      const foreign = found.filter((f) => f.mark !== mark);
      if (foreign.length) throw notOwned(foreign, namespace, () => mark);
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

  /**
   * A database of its own: the role (marked), the database it owns (made from template0, marked, closed to PUBLIC), and
   * then, as that role, the schema in it, under the box's lock for the session. Each step is taken again if a look
   * finds it missing, whatever failed before.
   */
  private async provisionOwnDatabase(access: Extract<BoxAccess, { kind: 'role' }>, namespace: string): Promise<void> {
    const { adminUrl, password, place } = access;
    const names = place.names;
    const adminDatabase = databaseOf(adminUrl);
    const mark = markOf(place, namespace, adminDatabase);
    const [database, role] = [pg.escapeIdentifier(names.database), pg.escapeIdentifier(names.role)];
    const adminPool = await this.lockable(adminUrl);
    const open = await underSessionLock(adminPool, this.locker(adminUrl), place.sharedSchema, async (admin) => {
      const found = await existingOwn(admin, names, place.sharedSchema, namespace);
      const own = ownOf(found, names, mark);
      if (!own.database && found.some((f) => f.kind === 'schema')) {
        throw new PlaceChanged(`schema ${place.sharedSchema} of database ${adminDatabase}, marked as namespace ${namespace}'s, exists`);
      }
      if (own.foreign.length) throw notOwned(own.foreign, namespace, (kind) => (kind === 'schema' ? ownerMark(namespace) : mark));
      const open = await inTransactionOn(admin, async (tx) => {
        await claimRole(tx, names.role, own.role !== undefined, password, mark);
        return confine(tx, names.role, adminDatabase);
      });
      if (!own.database) {
        // template0: nothing anyone put into template1 comes along, and no connection to it can make this fail.
        await admin.query(`CREATE DATABASE ${database} OWNER ${role} TEMPLATE template0`).catch((err: unknown) => {
          if ((err as { code?: string }).code !== '42501') throw err;
          throw new Error(
            `${errorMessage(err)}: the operator's database user needs CREATEDB to give a box a database of its own ` +
              `(ALTER ROLE ... CREATEDB), or BOXAUTH_OPERATOR_BOX_ISOLATION=Schema gives new boxes a schema of the shared database`,
            { cause: err },
          );
        });
        this.log.info({ database: names.database }, 'box database made');
      }
      await admin.query(`COMMENT ON DATABASE ${database} IS ${pg.escapeLiteral(mark)}`);
      // One a person marked as the box's (what a refusal says to do) becomes the role's, as a marked schema does.
      if (own.database && own.database.owner !== names.role) await admin.query(`ALTER DATABASE ${database} OWNER TO ${role}`);
      await admin.query(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
      await this.provisionAsOwner(boxUrl(access, names), names, namespace);
      return open;
    });
    if (open.length) this.log.warn({ role: names.role, open }, "the box's role can still reach what this connection may not close");
    this.log.info({ database: names.database, schema: names.schema, role: names.role }, 'box database, schema and role in place');
  }

  /** As the database's owner: its schema, marked, and its search_path in the database; no role is touched. */
  private async provisionAsOwner(url: string, names: BoxDbNames, namespace: string): Promise<void> {
    const mark = ownerMark(namespace);
    await inTransactionAs(url, async (tx) => {
      await lockNamesInOwn(tx, names.schema);
      const foreign = (await existing(tx, names, false)).filter((f) => f.mark !== mark);
      if (foreign.length) throw notOwned(foreign, namespace, () => mark);
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

  /** The role goes only when it owns nothing left behind (it owns the schema or database); a database owner's role never goes. */
  async drop(namespace: string, access: BoxAccess): Promise<void> {
    await this.forget(namespace);
    const { dropped, left } =
      access.kind === 'role' && access.place.isolation === 'Database'
        ? await this.dropOwnDatabase(access, namespace)
        : await this.dropSchema(access, namespace);
    if (left.length) {
      this.log.warn(
        { namespace, left: left.map((f) => ({ [f.kind]: f.name, comment: f.mark })) },
        "reclaimPolicy Delete left what is not marked as this namespace's (or a role that still owns something)",
      );
    }
    this.log.info({ namespace, dropped: dropped.map((f) => `${f.kind} ${f.name}`) }, 'box database, schema and role dropped');
  }

  private async dropSchema(access: BoxAccess, namespace: string): Promise<{ dropped: Found[]; left: Found[] }> {
    const names = boxDbNamesFor(namespace, access);
    const mark = ownerMark(namespace);
    const inTransaction = async <T>(work: (tx: Queryable) => Promise<T>): Promise<T> =>
      access.kind === 'role' ? withTransaction(await this.lockable(access.adminUrl), work) : inTransactionAs(access.url, work);
    return inTransaction(async (tx) => {
      if (access.kind === 'role') await lockNames(tx, access.place.sharedSchema);
      else await lockNamesInOwn(tx, names.schema);
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
  }

  /** The database (its connections ended) and then the role, each only when marked as the box's, under the box's lock. */
  private async dropOwnDatabase(
    access: Extract<BoxAccess, { kind: 'role' }>,
    namespace: string,
  ): Promise<{ dropped: Found[]; left: Found[] }> {
    const names = access.place.names;
    const mark = markOf(access.place, namespace, databaseOf(access.adminUrl));
    const { sharedSchema } = access.place;
    const adminPool = await this.lockable(access.adminUrl);
    return underSessionLock(adminPool, this.locker(access.adminUrl), sharedSchema, async (admin) => {
      const own = ownOf(await existingOwn(admin, names, sharedSchema, namespace), names, mark);
      const left = [...own.foreign];
      if (own.database) await admin.query(`DROP DATABASE ${pg.escapeIdentifier(own.database.name)} WITH (FORCE)`);
      const roleDropped =
        own.role !== undefined &&
        !left.some((f) => f.kind === 'database') &&
        (await inTransactionOn(admin, (tx) => dropRole(tx, own.role!.name)));
      if (own.role && !roleDropped) left.push(own.role);
      return { dropped: [own.database, roleDropped ? own.role : undefined].filter((f) => f !== undefined), left };
    });
  }

  async forget(namespace: string): Promise<void> {
    const entry = this.boxes.get(namespace);
    this.boxes.delete(namespace);
    await entry?.pool.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    const pools = [...this.boxes.values()].map((e) => e.pool).concat([...this.admins.values()], [...this.lockers.values()]);
    this.boxes.clear();
    this.admins.clear();
    this.lockers.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }
}
