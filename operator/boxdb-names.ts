// Where a box lives in PostgreSQL and what its objects are called (operator/boxdb.ts makes them).
//
// A box made with BOXAUTH_OPERATOR_BOX_ISOLATION=Database (the default) gets a database of its
// own, owned by its role; one made with Schema, or before the setting, a schema of the database
// of the administrative URL. PostgreSQL shows every role the catalogs of the database it is
// connected to, so boxes sharing a database read each other's schema, table and statistics
// names; a database of its own shows a box only its own. What stays in view of every role are
// the catalogs shared by the whole server: databases, roles, their comments and their settings
// (pg_db_role_setting, which holds each role's search_path). So a box's own database, its role
// and the schema in it have one name that says nothing of its namespace: `box_<32 hex>`, the
// digest of the namespace under a key kept in the administrative database
// (boxauth_operator.box_name_key, readable by its owner only); and their mark says only which
// administrative database made them. The schema's own mark, which only the box reads, names
// the namespace as in a shared database.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { parseDatabaseUrl, type Queryable, rewriteDatabaseUrl } from '../api/public.js';

export interface BoxDbNames {
  /** The database the box's records are in: its own, or the shared one of the administrative URL. */
  database: string;
  schema: string;
  role: string;
}

/** Where new boxes go (BOXAUTH_OPERATOR_BOX_ISOLATION): a database of their own, or a schema of the shared one. */
export const BOX_ISOLATIONS = ['Database', 'Schema'] as const;
export type BoxIsolation = (typeof BOX_ISOLATIONS)[number];

/** Where a box reached through an administrative URL lives, and what the operator's setting asks for new boxes. */
export interface BoxPlace {
  isolation: BoxIsolation;
  names: BoxDbNames;
  /** Schema where Database is asked: the box was made in the shared database before, and stays there. */
  asked: BoxIsolation;
  /** The box's schema in the shared database, wherever it lives: the name of its lock, and what a move leaves behind. */
  sharedSchema: string;
}

const MAX_IDENT = 63;
const DIGEST_HEX = 16;
const READABLE = MAX_IDENT - 'box_'.length - '_'.length - DIGEST_HEX;
/** 128 bits: no two namespaces of one key meet, however many boxes a server holds. */
const OWN_DIGEST_HEX = 32;

/** The schema and role of the box of `namespace` in the shared `database`: one name, box_<namespace, cut>_<digest of both>. */
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
  return { database, schema: name, role: name };
}

/** The database, role and schema of the box of `namespace` in a database of its own: one name, box_<digest of the namespace under `key`>. */
export function ownDatabaseNames(namespace: string, key: Buffer): BoxDbNames {
  const name = `box_${createHmac('sha256', key).update(namespace).digest('hex').slice(0, OWN_DIGEST_HEX)}`;
  return { database: name, role: name, schema: name };
}

/** The comment that records a schema, or a role of a shared database, as the box of `namespace`'s. */
export function ownerMark(namespace: string): string {
  return `boxauth owner: namespace=${namespace}`;
}

/** The comment on a box's own database and role, which every role of the server reads: the namespace is not in it. */
export function ownDatabaseMark(names: BoxDbNames, adminDatabase: string): string {
  return `boxauth owner: box ${names.database} of database ${adminDatabase}`;
}

const OWN_MARK = /^boxauth owner: box (\S+) of database (.*)$/;

/** The mark a box's shared objects carry in `place`: of its own database, or of the shared one. */
export function markOf(place: BoxPlace, namespace: string, adminDatabase: string): string {
  return place.isolation === 'Database' ? ownDatabaseMark(place.names, adminDatabase) : ownerMark(namespace);
}

// Administrative URLs may name several hosts (libpq's form, api/database-url.ts): read and rewritten as such.
export function databaseOf(url: string): string {
  return parseDatabaseUrl(url, 'the database URL').database || 'postgres';
}

/** `url` with another user and password, and (optionally) host[:port] or hosts `a:1,b:2`, and database. */
export function urlAs(url: string, user: string, password: string, where: { host?: string; database?: string } = {}): string {
  return rewriteDatabaseUrl(url, {
    user,
    password,
    ...(where.host ? { hosts: where.host } : {}),
    ...(where.database ? { database: where.database } : {}),
  });
}

/** The user of a postgres:// URL. */
export function userOf(url: string): string {
  return parseDatabaseUrl(url, 'the database URL').user;
}

const KEY_SCHEMA = 'boxauth_operator';
const KEY_TABLE = `${KEY_SCHEMA}.box_name_key`;

/** The name of the operator's lock (operator/boxdb-sql.ts lockRow) held while its key is made. */
export const NAME_KEY_LOCK = `boxauth.provision.${KEY_TABLE}`;

/** The key the names of boxes' own databases are made with, in the administrative database; undefined before the first. */
export async function readNameKey(db: Queryable): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ present: boolean }>(`SELECT to_regclass('${KEY_TABLE}') IS NOT NULL AS present`);
  if (!rows[0]?.present) return undefined;
  return (await db.query<{ key: Buffer }>(`SELECT key FROM ${KEY_TABLE}`)).rows[0]?.key;
}

/** The key the names of boxes' own databases are lost with; the operator makes no new one while such databases exist. */
export class NameKeyLost extends Error {}

/**
 * The key, made (in a transaction `tx` of the administrative database holding the operator's lock NAME_KEY_LOCK) if
 * there is none yet: 32 random bytes only the database's owner reads. Not when databases this administrative
 * database's boxes were given exist already: their key was lost, and a new one would give each of those boxes a new,
 * empty database.
 */
export async function makeNameKey(tx: Queryable, adminDatabase: string): Promise<Buffer> {
  const existing = await readNameKey(tx);
  if (existing) return existing;
  const { rows } = await tx.query<{ mark: string }>(
    `SELECT shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE starts_with(shobj_description(oid, 'pg_database'), 'boxauth owner: box ')`,
  );
  const orphans = rows.map((r) => OWN_MARK.exec(r.mark)).filter((m) => m?.[2] === adminDatabase);
  if (orphans.length) {
    throw new NameKeyLost(
      `the table ${KEY_TABLE} of database ${adminDatabase}, which names the boxes' own databases, is gone, while ${orphans.length} ` +
        `such database(s) exist (${orphans
          .slice(0, 3)
          .map((m) => m![1])
          .join(', ')}): restore it from a backup (docs/kubernetes/resources.md); until then no box gets a database of its own`,
    );
  }
  const key = randomBytes(32);
  await tx.query(`CREATE SCHEMA IF NOT EXISTS ${KEY_SCHEMA}`);
  await tx.query(`REVOKE ALL ON SCHEMA ${KEY_SCHEMA} FROM PUBLIC`);
  await tx.query(
    `COMMENT ON SCHEMA ${KEY_SCHEMA} IS ${pg.escapeLiteral("boxauth operator: the key of the names of the boxes' own databases; without it the operator finds none of them")}`,
  );
  await tx.query(
    `CREATE TABLE IF NOT EXISTS ${KEY_TABLE} (one boolean PRIMARY KEY DEFAULT true CHECK (one), key bytea NOT NULL, made timestamptz NOT NULL DEFAULT now())`,
  );
  await tx.query(`REVOKE ALL ON TABLE ${KEY_TABLE} FROM PUBLIC`);
  await tx.query(`INSERT INTO ${KEY_TABLE} (key) VALUES ($1)`, [key]);
  return key;
}
