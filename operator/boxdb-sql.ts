// The statements of operator/boxdb.ts, each on a connection it is given: what it looks up of a
// box's names (with their marks), the locks that serialise work on one box, and what it makes,
// marks, confines and drops.
import pg from 'pg';
import type { Pool, Queryable } from '../api/public.js';
import { ownerMark, type BoxDbNames } from './boxdb-names.js';

/** A schema, role or database of the box's name exists without the box's mark; nothing was changed. */
export class NotOwned extends Error {}

/**
 * Where the box lives is not where it was found to live a moment ago (its schema in the shared database renamed or
 * dropped to move it into a database of its own, or made again beside it); nothing was changed: locate it again.
 */
export class PlaceChanged extends Error {}

export interface Found {
  kind: 'schema' | 'role' | 'database';
  name: string;
  mark: string | null;
  /** A database's owner. */
  owner?: string;
}

/** The box's schema and (unless only the schema is the box's to look at) its role where they exist, with their comments. */
export async function existing(db: Queryable, names: BoxDbNames, role = true): Promise<Found[]> {
  const { rows } = await db.query<Found>(
    `SELECT 'schema' AS kind, nspname AS name, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1
     UNION ALL
     SELECT 'role', rolname, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $2 AND $3`,
    [names.schema, names.role, role],
  );
  return rows;
}

/**
 * A box's own database and its role where they exist, with their comments (and the database's owner), and its schema in
 * the shared database of this connection (`sharedSchema`) where one is marked as the namespace's.
 */
export async function existingOwn(db: Queryable, names: BoxDbNames, sharedSchema: string, namespace: string): Promise<Found[]> {
  const { rows } = await db.query<Found>(
    `SELECT 'role' AS kind, rolname AS name, shobj_description(oid, 'pg_authid') AS mark, NULL AS owner FROM pg_roles WHERE rolname = $1
     UNION ALL
     SELECT 'database', datname, shobj_description(oid, 'pg_database'), pg_get_userbyid(datdba) FROM pg_database WHERE datname = $2
     UNION ALL
     SELECT 'schema', nspname, obj_description(oid, 'pg_namespace'), NULL FROM pg_namespace
       WHERE nspname = $3 AND obj_description(oid, 'pg_namespace') = $4`,
    [names.role, names.database, sharedSchema, ownerMark(namespace)],
  );
  return rows;
}

/** The box's own database and role as found, each kept only if it is the box's (a database made but not marked yet: by its owner). */
export function ownOf(found: Found[], names: BoxDbNames, mark: string): { role?: Found; database?: Found; foreign: Found[] } {
  const role = found.find((f) => f.kind === 'role');
  const database = found.find((f) => f.kind === 'database');
  const ownRole = role?.mark === mark ? role : undefined;
  const ownDatabase =
    database && (database.mark === mark || (database.mark === null && ownRole && database.owner === names.role)) ? database : undefined;
  const foreign = [role, database].filter((f): f is Found => f !== undefined && f !== ownRole && f !== ownDatabase);
  return { role: ownRole, database: ownDatabase, foreign };
}

export function notOwned(foreign: Found[], namespace: string, markOfKind: (kind: Found['kind']) => string): NotOwned {
  const what = foreign.map(
    (f) => `${f.kind} ${pg.escapeIdentifier(f.name)} exists ${f.mark === null ? 'with no comment' : `with the comment "${f.mark}"`}`,
  );
  const marks = foreign.map(
    (f) => `COMMENT ON ${f.kind.toUpperCase()} ${pg.escapeIdentifier(f.name)} IS ${pg.escapeLiteral(markOfKind(f.kind))}`,
  );
  return new NotOwned(
    `${what.join(', and ')}: the operator changes no schema, role or database that is not marked as namespace ${namespace}'s. ` +
      `If it holds this box's data, mark it (${marks.join('; ')}); otherwise rename or drop it (see docs/guides/upgrading.md)`,
  );
}

/** The key of the lock on one box's names: its schema's name in the shared database, the same wherever the box lives. */
const lockKey = (schema: string): string => `boxauth.provision.${schema}`;

/**
 * The operator's locks in the administrative database: one row per name, in a schema of the operator's that PUBLIC
 * cannot use. Not advisory locks: any role connected to the database (a box's role in a schema of it, or one whose
 * own database leaves the administrative one open to PUBLIC) may take one of any key, and the keys of a box's names
 * are computed from its namespace, or read in pg_locks while held; a lock held so stalled that box's provisioning,
 * and the administrative connection waiting for it, without end. A row of this table only the operator may lock.
 */
const LOCKS = 'boxauth_operator.locks';

/** Makes the table of the operator's locks (once per database; two operators at once: the one that lost finds it made). */
export async function makeLocks(db: Queryable): Promise<void> {
  for (const statement of [
    'CREATE SCHEMA IF NOT EXISTS boxauth_operator',
    'REVOKE ALL ON SCHEMA boxauth_operator FROM PUBLIC',
    `CREATE TABLE IF NOT EXISTS ${LOCKS} (name text PRIMARY KEY)`,
    `REVOKE ALL ON TABLE ${LOCKS} FROM PUBLIC`,
  ]) {
    await db.query(statement).catch((err: unknown) => {
      if (!['23505', '42P06', '42P07', 'XX000'].includes((err as { code?: string }).code ?? '')) throw err;
    });
  }
}

/** Holds the operator's lock `name` until the end of the transaction `tx` of the administrative database (makeLocks first). */
export async function lockRow(tx: Queryable, name: string): Promise<void> {
  await tx.query(`INSERT INTO ${LOCKS} (name) VALUES ($1) ON CONFLICT DO NOTHING`, [name]);
  await tx.query(`SELECT FROM ${LOCKS} WHERE name = $1 FOR UPDATE`, [name]);
}

/**
 * Serialises work on one box's names across operator replicas (a new leader may overlap an old one briefly), in the
 * administrative database of `tx`; `schema`: the box's schema in the shared database (BoxPlace.sharedSchema).
 */
export async function lockNames(tx: Queryable, schema: string): Promise<void> {
  await lockRow(tx, lockKey(schema));
}

/**
 * The same, in a database that is the box's own (a Cluster's, or the one the operator made for it), as the database's
 * owner: no operator's table there, and no other box's role gets in, so an advisory lock.
 */
export async function lockNamesInOwn(tx: Queryable, schema: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey(schema)]);
}

/**
 * `work` on one connection of the administrative `pool` with no transaction open (what CREATE and DROP DATABASE
 * need), while the box's lock (lockNames) is held by a transaction on a connection of `lockers`, ended afterwards.
 */
export async function underSessionLock<T>(
  pool: Pool,
  lockers: Pool,
  schema: string,
  work: (admin: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const holder = await lockers.connect();
  try {
    await holder.query('BEGIN');
    await lockNames(holder, schema);
    const admin = await pool.connect();
    try {
      return await work(admin);
    } finally {
      admin.release();
    }
  } finally {
    // A connection that could not end its transaction is closed rather than given back holding the lock.
    const ended = await holder.query('ROLLBACK').then(
      () => true,
      () => false,
    );
    holder.release(ended ? undefined : new Error('closed: the lock of a box may still be held'));
  }
}

/** `work` in a transaction on a connection already held. */
export async function inTransactionOn<T>(client: pg.PoolClient, work: (tx: Queryable) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** Creates the role, or sets its password, and marks it. */
export async function claimRole(tx: Queryable, name: string, exists: boolean, password: string, mark: string): Promise<void> {
  const role = pg.escapeIdentifier(name);
  await tx.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${role} WITH LOGIN NOINHERIT PASSWORD ${pg.escapeLiteral(password)}`);
  await tx.query(`COMMENT ON ROLE ${role} IS ${pg.escapeLiteral(mark)}`);
  // Creating a schema or database owned by another role needs membership in it, unless superuser; a refusal is not fatal yet.
  const superuser = (await tx.query<{ s: boolean }>('SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user')).rows[0]?.s;
  if (!superuser) await inSavepoint(tx, `GRANT ${role} TO CURRENT_USER`);
}

/** Creates the schema owned by the role, marks it, and makes it the role's search_path in this database. */
export async function claimSchema(tx: Queryable, names: BoxDbNames, database: string, mark: string): Promise<void> {
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
export async function confine(tx: Queryable, role: string, database: string): Promise<string[]> {
  const others = MAINTENANCE_DATABASES.filter((d) => d !== database);
  const { rows: found } = await tx.query<{ datname: string; open: boolean }>(
    `SELECT datname, has_database_privilege('public', oid, 'CONNECT') AS open FROM pg_database WHERE datname = ANY($1) AND datallowconn`,
    [others],
  );
  const publicSchema = await tx.query<{ open: boolean }>(
    `SELECT has_schema_privilege('public', oid, 'USAGE') OR has_schema_privilege('public', oid, 'CREATE') AS open FROM pg_namespace WHERE nspname = 'public'`,
  );
  // Taken only while PUBLIC holds it: a REVOKE rewrites the catalog's row even when it changes nothing, and two
  // provisionings doing so at once (the operator's workers, at a cold start) fail with "tuple concurrently updated";
  // two that both found it open take turns.
  if (found.some((d) => d.open) || publicSchema.rows[0]?.open) await lockRow(tx, 'boxauth.confine');
  for (const { datname, open } of found) {
    if (open) await inSavepoint(tx, `REVOKE CONNECT ON DATABASE ${pg.escapeIdentifier(datname)} FROM PUBLIC`, '42501');
  }
  if (publicSchema.rows[0]?.open) await inSavepoint(tx, 'REVOKE CREATE, USAGE ON SCHEMA public FROM PUBLIC', '42501');
  const { rows } = await tx.query<{ open: string }>(
    `SELECT 'CONNECT to database ' || datname AS open FROM pg_database WHERE datname = ANY($2) AND has_database_privilege($1, oid, 'CONNECT')
     UNION ALL
     SELECT p || ' on schema public' FROM pg_namespace, unnest(ARRAY['USAGE', 'CREATE']) p WHERE nspname = 'public' AND has_schema_privilege($1, oid, p)`,
    [role, found.map((d) => d.datname)],
  );
  return rows.map((r) => r.open);
}

/** The current user's search_path in `database` back to the server's default, while it is still the dropped `schema`. */
export async function resetSearchPath(tx: Queryable, schema: string, database: string): Promise<void> {
  const { rows } = await tx.query<{ set: boolean }>(
    `SELECT EXISTS (SELECT FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
       WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND d.datname = $1
         AND $2 = ANY (s.setconfig)) AS set`,
    [database, `search_path=${schema}`],
  );
  if (rows[0]?.set) await tx.query(`ALTER ROLE CURRENT_USER IN DATABASE ${pg.escapeIdentifier(database)} RESET search_path`);
}

/** Drops the role unless it still owns something (then false): what it owns elsewhere is not the box's to drop. */
export async function dropRole(tx: Queryable, name: string): Promise<boolean> {
  return inSavepoint(tx, `DROP ROLE ${pg.escapeIdentifier(name)}`, '2BP01');
}

/** Runs `statement`; a failure (of SQLSTATE `code`, when given) is undone and answers false, leaving the transaction usable. */
export async function inSavepoint(tx: Queryable, statement: string, code?: string): Promise<boolean> {
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
