// A box in a database that is its own (a CloudNativePG Cluster's application
// database), on the real PostgreSQL, with Debian's PgBouncer in transaction
// mode in front as a CloudNativePG Pooler runs it. The operator connects as the
// database's owner, a role that is neither superuser nor CREATEROLE (as
// CloudNativePG's application role is): it makes, marks and migrates the box's
// schema and sets its own search_path there, and changes no role. The API pods'
// connections through PgBouncer land in that schema by the role's setting
// alone: a `-c search_path` startup option does not pass a transaction pooler.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLogger } from '../../../api/log.js';
import { boxDbNames, ownerMark, PostgresBoxDatabases, type BoxAccess } from '../../../operator/boxdb.js';
import { PgBouncer } from '../../support/pgbouncer.js';
import { adminUrl } from '../../support/postgres.js';

const NS = 'team-cnpg';

/** SQL as the server's superuser (what the test plays of CloudNativePG's instance manager). */
async function asSuperuser<T extends pg.QueryResultRow = any>(text: string, params: unknown[] = [], database?: string): Promise<T[]> {
  const url = new URL(adminUrl());
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

describe("a box in its own database, as that database's owner (CloudNativePG's application role)", function () {
  this.timeout(60_000);
  const owner = `app_${randomBytes(5).toString('hex')}`;
  const database = owner;
  let password = `pw-${randomBytes(8).toString('hex')}`;
  let bouncer: PgBouncer;
  let databases: PostgresBoxDatabases;
  const schema = boxDbNames(NS, database).schema;

  const direct = (): string => {
    const url = new URL(adminUrl());
    url.username = owner;
    url.password = password;
    url.pathname = `/${database}`;
    return url.toString();
  };
  const access = (): BoxAccess => ({ kind: 'owner', url: direct() });
  const role = async (): Promise<{ rolsuper: boolean; rolcreaterole: boolean; mark: string | null; rolpassword: string }> =>
    (
      await asSuperuser(
        `SELECT rolsuper, rolcreaterole, rolpassword, shobj_description(oid, 'pg_authid') AS mark FROM pg_authid WHERE rolname = $1`,
        [owner],
      )
    )[0];
  const searchPath = async (): Promise<string[]> =>
    (
      await asSuperuser<{ c: string[] }>(
        `SELECT s.setconfig AS c FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
         WHERE d.datname = $1 AND s.setrole = $2::regrole`,
        [database, owner],
      )
    ).flatMap((r) => r.c);

  before(async function () {
    // What CloudNativePG's initdb bootstrap makes: the application role (LOGIN only) owning the application database.
    await asSuperuser(`CREATE ROLE ${owner} LOGIN PASSWORD '${password}'`);
    await asSuperuser(`CREATE DATABASE ${database} OWNER ${owner}`);
    bouncer = await PgBouncer.start({ server: direct() });
    databases = new PostgresBoxDatabases(createLogger('silent'));
  });

  after(async function () {
    await databases?.close();
    await bouncer?.stop();
    await asSuperuser(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await asSuperuser(`DROP ROLE IF EXISTS ${owner}`);
  });

  it('makes the schema as the owner, marks it, migrates it, and sets only its search_path: the role stays as it was', async function () {
    const before = await role();
    expect(before).to.include({ rolsuper: false, rolcreaterole: false });
    const names = await databases.ensure(NS, access());
    expect(names).to.deep.equal({ database, schema, role: owner });
    const [made] = await asSuperuser(
      `SELECT nspowner::regrole::text AS owner, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1`,
      [schema],
      database,
    );
    expect(made).to.deep.equal({ owner, mark: ownerMark(NS) });
    expect(await role()).to.deep.equal(before); // no comment, no password, no attribute changed
    expect(await searchPath()).to.deep.equal([`search_path=${schema}`]);
    const pool = databases.pool(NS)!;
    const migrated = await pool.query(
      `SELECT relnamespace::regnamespace::text AS s FROM pg_class WHERE oid = to_regclass('schema_migrations')`,
    );
    expect(migrated.rows).to.deep.equal([{ s: schema }]);
  });

  it('lands the pods in the schema through PgBouncer in transaction mode by the role setting, where a startup option is refused', async function () {
    const pods = new pg.Pool({ connectionString: bouncer.url(database), max: 4 });
    try {
      // Several clients at once, each transaction on whichever server connection PgBouncer gives it.
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          pods.query<{ p: string; n: number }>(`SELECT current_schema() AS p, count(*)::int AS n FROM schema_migrations`),
        ),
      );
      for (const { rows } of answers) expect(rows[0]!.p).to.equal(schema);
      expect(answers[0]!.rows[0]!.n).to.be.above(0);
    } finally {
      await pods.end();
    }
    // The negative control: what a per-connection schema would need does not get through.
    const withOption = new pg.Client({ connectionString: bouncer.url(database), options: `-c search_path=${schema}` });
    const refused = await withOption.connect().then(
      () => 'connected',
      (err: Error) => err.message,
    );
    await withOption.end().catch(() => undefined);
    expect(refused).to.match(/unsupported startup parameter: options/);
  });

  it('follows a new password of the role (CloudNativePG rotating its application Secret)', async function () {
    const old = databases.pool(NS)!;
    password = `pw-${randomBytes(8).toString('hex')}`;
    await asSuperuser(`ALTER ROLE ${owner} PASSWORD '${password}'`);
    await databases.ensure(NS, access());
    expect(databases.pool(NS)).to.not.equal(old);
    expect((await databases.pool(NS)!.query('SELECT current_user AS u')).rows[0].u).to.equal(owner);
  });

  it("refuses a schema of the box's name that is not marked as the namespace's, changing nothing", async function () {
    const other = 'team-squatted';
    const squatted = boxDbNames(other, database).schema;
    await asSuperuser(`CREATE SCHEMA ${squatted} AUTHORIZATION ${owner}`, [], database);
    const failure = await databases.ensure(other, access()).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failure?.constructor.name).to.equal('NotOwned');
    expect(await searchPath(), "the role's setting is still the first box's").to.deep.equal([`search_path=${schema}`]);
    await asSuperuser(`DROP SCHEMA ${squatted}`, [], database);
  });

  it("reclaimPolicy Delete drops the schema and resets the role's search_path, and leaves the role", async function () {
    await databases.drop(NS, access());
    expect(await asSuperuser(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [schema], database)).to.deep.equal([]);
    expect(await searchPath()).to.deep.equal([]);
    expect(await role()).to.include({ rolsuper: false, mark: null });
  });
});
