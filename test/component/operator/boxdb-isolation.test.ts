// Boxes provisioned by the operator on the real PostgreSQL, and box A's role
// (the URL its pods get) trying every way it has to reach box B: other
// databases, the catalogs, B's tables, the schema public, the change
// notifications, advisory locks. Each box in a database of its own
// (BOXAUTH_OPERATOR_BOX_ISOLATION=Database, the default) sees nothing of B but
// names that say nothing; in one shared database (Schema) it still reads B's
// names, but hears none of B's notifications (B's feed and locks:
// test/integration/box-channel.test.ts). Then box A's API started on that role:
// what the confinement takes away must not be what the API needs. And what a
// database of its own must keep doing: reclaim and retain, nothing changed by
// applying again, a half-made box taken up again, a box of a shared schema kept
// there until moved as docs/guides/upgrading.md says.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { createLogger } from '../../../api/log.js';
import {
  databaseOf,
  NotOwned,
  ownDatabaseMark,
  PostgresBoxDatabases,
  urlAs,
  type BoxAccess,
  type BoxDbNames,
  type BoxIsolation,
} from '../../../operator/boxdb.js';
import { Box } from '../../support/box.js';
import { adminUrl, createDatabase } from '../../support/postgres.js';
import { ReplicatedPostgres } from '../../support/replicated-postgres.js';

/** What a client of `url` gets from `work`: its answer, or the server's refusal. */
async function attempt(url: string, work: (c: pg.Client) => Promise<string>): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return await work(client);
  } catch (err) {
    return `refused: ${(err as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const rows =
  (sql: string, params: unknown[] = []) =>
  (c: pg.Client): Promise<string> =>
    c.query(sql, params).then((r) => JSON.stringify(r.rows));

const inDatabase = (url: string, database: string): string => Object.assign(new URL(url), { pathname: `/${database}` }).toString();

/** SQL as the server's superuser, in `url`'s database. */
async function asSuperuser<T extends pg.QueryResultRow = any>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** The payloads a listener on `url`'s channel boxauth hears of `change`; its own marker says when all was delivered. */
async function heardOf(
  url: string,
  change: () => Promise<unknown>,
  whileListening?: (listener: pg.Client) => Promise<void>,
): Promise<string[]> {
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  try {
    const heard: string[] = [];
    const marker = `marker-${randomBytes(4).toString('hex')}`;
    const markerHeard = new Promise<void>((resolve) =>
      listener.on('notification', (msg) => (msg.payload === marker ? resolve() : heard.push(msg.payload ?? ''))),
    );
    await listener.query('LISTEN boxauth');
    await change();
    // Notifications reach a listener in commit order: once its own marker is back, the change was delivered, if it ever is.
    await listener.query(`SELECT pg_notify('boxauth', $1)`, [marker]);
    await markerHeard;
    await whileListening?.(listener);
    return heard;
  } finally {
    await listener.end();
  }
}

/** A box API started on `url`, as its pods start: it migrates, issues a token and makes a person. */
async function servesAsBox(url: string): Promise<void> {
  const box = await Box.start({
    databaseUrl: url,
    env: { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password-1' },
  });
  try {
    const token = await box.rootToken();
    const made = await box.json('POST', '/users', { email: 'ann@example.com', password: 'ann-password-1' }, token);
    expect(made.status, made.text).to.equal(201);
    const listed = await box.json('GET', '/users', undefined, token);
    expect(listed.body.map((u: { email: string }) => u.email)).to.include('ann@example.com');
  } finally {
    await box.stop();
  }
}

/** Boxes of one test, provisioned as the operator does: each namespace's place, its access, its names. */
class Boxes {
  readonly databases = new PostgresBoxDatabases(createLogger('silent'));
  readonly password = `pw-${randomBytes(8).toString('hex')}`;
  private readonly accesses = new Map<string, BoxAccess>();

  constructor(
    readonly adminUrl: string,
    readonly isolation: BoxIsolation,
  ) {}

  /** Where the namespace's box is (or goes), as the Box controller asks before it writes the pods' Secret. */
  async access(namespace: string, isolation = this.isolation): Promise<Extract<BoxAccess, { kind: 'role' }>> {
    const place = await this.databases.place(namespace, this.adminUrl, isolation);
    const access = { kind: 'role' as const, adminUrl: this.adminUrl, password: this.password, place };
    this.accesses.set(namespace, access);
    return access;
  }

  async ensure(namespace: string, isolation = this.isolation): Promise<BoxDbNames & { url: string }> {
    const names = await this.databases.ensure(namespace, await this.access(namespace, isolation));
    return { ...names, url: this.urlOf(names) };
  }

  /** The URL the box's pods get. */
  urlOf(names: BoxDbNames): string {
    return urlAs(this.adminUrl, names.role, this.password, { database: names.database });
  }

  /** reclaimPolicy Delete of every box made here: what the test leaves behind is the server's whole (roles, databases). */
  async close(): Promise<void> {
    for (const [namespace, access] of this.accesses) await this.databases.drop(namespace, access).catch(() => undefined);
    await this.databases.close();
  }
}

/**
 * What box B's role reaches of box A in the catalogs of one database it connects to: A's schema, its tables and their
 * statistics, anything that names A's namespace (comments, marks, settings, database and role names).
 */
const CATALOG_LEAKS = `
  SELECT 'pg_namespace: ' || nspname AS leak FROM pg_namespace WHERE nspname = $1
  UNION ALL SELECT 'pg_class: ' || relname FROM pg_class WHERE relnamespace = to_regnamespace($1)
  UNION ALL SELECT 'pg_stat_all_tables: ' || relname || ', ' || n_tup_ins || ' inserted' FROM pg_stat_all_tables WHERE schemaname = $1
  UNION ALL SELECT 'information_schema.tables: ' || table_name FROM information_schema.tables WHERE table_schema = $1
  UNION ALL SELECT 'pg_description: ' || description FROM pg_description WHERE description ~ $2
  UNION ALL SELECT 'pg_shdescription: ' || description FROM pg_shdescription WHERE description ~ $2
  UNION ALL SELECT 'pg_database: ' || datname FROM pg_database WHERE datname ~ $2
  UNION ALL SELECT 'pg_roles: ' || rolname FROM pg_roles WHERE rolname ~ $2
  UNION ALL SELECT 'pg_db_role_setting: ' || array_to_string(setconfig, ' ') FROM pg_db_role_setting WHERE array_to_string(setconfig, ' ') ~ $2`;

describe("a box's database role in a database of its own reaches its own schema and nothing else", function () {
  this.timeout(120_000);
  // The roles and their marks are the whole server's: a namespace of its own, so that no other test's box named
  // team-a (in a schema, whose role's name and mark say it) reads as A's.
  const TEAM_A = `team-a-${randomBytes(3).toString('hex')}`;
  let boxes: Boxes;
  let a: BoxDbNames & { url: string };
  let b: BoxDbNames & { url: string };

  before(async function () {
    boxes = new Boxes(await createDatabase('iso'), 'Database');
    a = await boxes.ensure(TEAM_A);
    b = await boxes.ensure('team-b');
    const pool = boxes.databases.pool(TEAM_A)!;
    await pool.query(`INSERT INTO clients (id, resource) VALUES ('a-secret-client', '{}')`);
    await pool.query('SELECT pg_stat_force_next_flush()'); // A's statistics in view at once, were they in view at all
  });

  after(async function () {
    await boxes?.close();
  });

  it("sees none of the other box's schema, tables, statistics or comments, nor its namespace, in any catalog of any database it gets into", async function () {
    const leaks: Record<string, string> = {};
    for (const database of [b.database, a.database, databaseOf(boxes.adminUrl), 'postgres', 'template1']) {
      leaks[database] = await attempt(inDatabase(b.url, database), rows(CATALOG_LEAKS, [a.schema, TEAM_A.replace(/-/g, '[-_]')]));
    }
    expect(leaks[b.database]).to.equal('[]'); // its own database: it connects, and finds nothing of A
    const beyond = Object.entries(leaks).filter(
      ([database, answer]) => database !== b.database && answer !== '[]' && !answer.startsWith('refused: '),
    );
    expect(Object.fromEntries(beyond)).to.deep.equal({});
    // What it does see of A in the catalogs every role reads: a name of hex digits, and a mark that names no namespace.
    const shared = await attempt(
      b.url,
      rows(`SELECT datname, shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1`, [a.database]),
    );
    expect(JSON.parse(shared)).to.deep.equal([{ datname: a.database, mark: ownDatabaseMark(a, databaseOf(boxes.adminUrl)) }]);
    expect(a.database).to.match(/^box_[0-9a-f]{32}$/);
  });

  it("is refused the other box's database, and the other box is refused its own", async function () {
    expect(await attempt(inDatabase(b.url, a.database), async () => 'connected')).to.match(/^refused: permission denied for database/);
    expect(await attempt(inDatabase(a.url, b.database), async () => 'connected')).to.match(/^refused: permission denied for database/);
  });

  it("hears none of the other box's change notifications, and shares no advisory lock with it", async function () {
    const holder = new pg.Client({ connectionString: a.url });
    await holder.connect();
    try {
      const change = () => boxes.databases.pool(TEAM_A)!.query(`UPDATE clients SET version = version + 1 WHERE id = 'a-secret-client'`);
      // A lock A holds (its migrations', its jobs') is no lock of B's: the same key is free in B's database.
      await holder.query('SELECT pg_advisory_lock(4242)');
      let free: unknown;
      const heard = await heardOf(b.url, change, async (listener) => {
        free = (await listener.query<{ got: boolean }>('SELECT pg_try_advisory_lock(4242) AS got')).rows;
      });
      expect(heard).to.deep.equal([]);
      expect(free).to.deep.equal([{ got: true }]);
    } finally {
      await holder.end();
    }
  });

  it('leaves the role all its API needs: a box on it migrates, issues a token and makes a person', async function () {
    await servesAsBox(b.url);
    // The operator's check of a provisioned box, as the box's role, still finds everything in place.
    expect(await boxes.ensure('team-b')).to.deep.include({ database: b.database, schema: b.schema });
  });

  it('changes nothing when applied again, by this process or the next', async function () {
    const admin = boxes.adminUrl;
    const state = async (): Promise<string> =>
      JSON.stringify(
        await asSuperuser(
          admin,
          `SELECT d.datacl::text AS datacl, pg_get_userbyid(d.datdba) AS owner, shobj_description(d.oid, 'pg_database') AS dbmark,
             r.rolpassword, shobj_description(r.oid, 'pg_authid') AS rolemark,
             (SELECT setconfig FROM pg_db_role_setting WHERE setdatabase = d.oid AND setrole = r.oid) AS settings,
             (SELECT datacl::text FROM pg_database WHERE datname = 'postgres') AS postgres,
             (SELECT nspacl::text FROM pg_namespace WHERE nspname = 'public') AS public
           FROM pg_database d, pg_authid r WHERE d.datname = $1 AND r.rolname = $1`,
          [a.database],
        ),
      );
    const first = await state();
    await boxes.databases.forget(TEAM_A); // ensure() provisions again rather than finding its pool in place
    await boxes.ensure(TEAM_A);
    const next = new Boxes(admin, 'Database'); // an operator started afresh (a new leader)
    Object.assign(next, { password: boxes.password });
    await next.databases.ensure(TEAM_A, await next.access(TEAM_A));
    await next.databases.close();
    expect(await state()).to.equal(first);
  });

  it("reclaimPolicy Retain keeps the box's database and role with its records; Delete drops them", async function () {
    const c = await boxes.ensure('team-c');
    const pool = boxes.databases.pool('team-c')!;
    await pool.query(`INSERT INTO clients (id, resource, managed_by) VALUES ('kept', '{}', 'Client team-c/kept')`);
    const access = await boxes.access('team-c');
    await boxes.databases.releaseRecords('team-c', access);
    await boxes.databases.forget('team-c');
    const present = (): Promise<unknown[]> =>
      asSuperuser(
        admin(),
        `SELECT 'database' AS k FROM pg_database WHERE datname = $1 UNION ALL SELECT 'role' FROM pg_roles WHERE rolname = $1`,
        [c.database],
      );
    const admin = (): string => boxes.adminUrl;
    expect(await present()).to.deep.equal([{ k: 'database' }, { k: 'role' }]);
    expect(JSON.parse(await attempt(c.url, rows(`SELECT id, managed_by FROM clients WHERE id = 'kept'`)))).to.deep.equal([
      { id: 'kept', managed_by: null },
    ]);
    const again = await boxes.ensure('team-c'); // a Box made again in the namespace finds it
    expect(again.database).to.equal(c.database);
    await boxes.databases.drop('team-c', await boxes.access('team-c'));
    expect(await present()).to.deep.equal([]);
  });

  it("refuses a database of its name that is not marked as the box's, leaves it as it is, and Delete leaves it too", async function () {
    const access = await boxes.access('team-d');
    const { database } = access.place.names;
    await asSuperuser(boxes.adminUrl, `CREATE DATABASE ${database}`);
    try {
      const err = await boxes.databases.ensure('team-d', access).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(NotOwned);
      expect((err as Error).message)
        .to.include(`database "${database}" exists with no comment`)
        .and.include(`COMMENT ON DATABASE "${database}" IS 'boxauth owner: box ${database} of database ${databaseOf(boxes.adminUrl)}'`);
      await boxes.databases.drop('team-d', access);
      expect(
        await asSuperuser(
          boxes.adminUrl,
          `SELECT pg_get_userbyid(datdba) <> $2 AS other, shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1`,
          [database, database],
        ),
      ).to.deep.equal([{ other: true, mark: null }]);
    } finally {
      await asSuperuser(boxes.adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    }
  });

  it('takes up a box whose provisioning stopped halfway (the database made, not yet marked), and two operators at once make one', async function () {
    const access = await boxes.access('team-e');
    const { database, role } = access.place.names;
    // What a process killed right after CREATE DATABASE leaves: its marked role owning an unmarked database open to PUBLIC.
    await asSuperuser(boxes.adminUrl, `CREATE ROLE ${role} LOGIN PASSWORD 'before'`);
    await asSuperuser(boxes.adminUrl, `COMMENT ON ROLE ${role} IS '${ownDatabaseMark(access.place.names, databaseOf(boxes.adminUrl))}'`);
    await asSuperuser(boxes.adminUrl, `CREATE DATABASE ${database} OWNER ${role} TEMPLATE template0`);
    const other = new PostgresBoxDatabases(createLogger('silent'));
    try {
      await Promise.all([boxes.databases.ensure('team-e', access), other.ensure('team-e', access)]);
    } finally {
      await other.close();
    }
    const [db] = await asSuperuser(
      boxes.adminUrl,
      `SELECT shobj_description(oid, 'pg_database') AS mark, has_database_privilege('public', oid, 'CONNECT') AS public FROM pg_database WHERE datname = $1`,
      [database],
    );
    expect(db).to.deep.equal({ mark: ownDatabaseMark(access.place.names, databaseOf(boxes.adminUrl)), public: false });
    expect(await attempt(boxes.urlOf(access.place.names), rows('SELECT current_schema() AS s, count(*)::int AS n FROM clients'))).to.equal(
      JSON.stringify([{ s: database, n: 0 }]),
    );
  });

  it('gives no box a new, empty database when the key of the names is lost, and finds each again once it is restored', async function () {
    const key = (await asSuperuser<{ key: Buffer }>(boxes.adminUrl, 'SELECT key FROM boxauth_operator.box_name_key'))[0]!.key;
    await asSuperuser(boxes.adminUrl, 'DROP TABLE boxauth_operator.box_name_key');
    const restarted = new PostgresBoxDatabases(createLogger('silent'));
    try {
      for (const ns of [TEAM_A, 'team-new']) {
        const refused = await restarted.place(ns, boxes.adminUrl, 'Database').then(
          (place) => `placed in ${place.names.database}`,
          (err: Error) => `${err.name}: ${err.message}`,
        );
        expect(refused).to.match(
          /^Error: the table boxauth_operator.box_name_key of database \S+, which names the boxes' own databases, is gone/,
        );
      }
      // Restored from a backup: box A's database is found again, as it was.
      await asSuperuser(
        boxes.adminUrl,
        'CREATE TABLE boxauth_operator.box_name_key (one boolean PRIMARY KEY DEFAULT true CHECK (one), key bytea NOT NULL, made timestamptz NOT NULL DEFAULT now())',
      );
      await asSuperuser(boxes.adminUrl, 'REVOKE ALL ON TABLE boxauth_operator.box_name_key FROM PUBLIC');
      await asSuperuser(boxes.adminUrl, 'INSERT INTO boxauth_operator.box_name_key (key) VALUES ($1)', [key]);
      expect((await restarted.place(TEAM_A, boxes.adminUrl, 'Database')).names.database).to.equal(a.database);
    } finally {
      await restarted.close();
    }
  });
});

describe("a box made in a schema of a shared database stays there until moved (pg_dump and psql: Debian's PostgreSQL 15)", function () {
  this.timeout(120_000);
  let server: ReplicatedPostgres;
  let boxes: Boxes;

  before(async function () {
    // The embedded server of the tests has no pg_dump, and Debian's pg_dump dumps no newer server than its own.
    server = await ReplicatedPostgres.start({ synchronous: false });
    boxes = new Boxes(server.primary.url(await server.createDatabase('move')), 'Database');
  });

  after(async function () {
    await boxes?.close();
    await server?.stop();
  });

  it('keeps a box made in a schema of the shared database there, until it is moved as docs/guides/upgrading.md says', async function () {
    const legacy = await boxes.ensure('team-f', 'Schema');
    await boxes.databases.pool('team-f')!.query(`INSERT INTO clients (id, resource) VALUES ('from-before', '{}')`);
    // The operator, now giving new boxes their own database, finds this one in the shared database and leaves it there.
    const kept = await boxes.access('team-f');
    expect(kept.place).to.deep.include({
      isolation: 'Schema',
      asked: 'Database',
      names: { database: databaseOf(boxes.adminUrl), schema: legacy.schema, role: legacy.role },
    });
    await boxes.databases.ensure('team-f', kept);

    // The move, as the guide says: a dump of the schema; the schema renamed (the operator then makes the box its own
    // database); the dump restored in it as the box's role, in place of the empty schema; the old schema and role dropped.
    const dump = spawnSync('pg_dump', ['--schema', legacy.schema, '--no-owner', '--no-privileges', boxes.adminUrl], { encoding: 'utf8' });
    expect(dump.status, dump.stderr).to.equal(0);
    await asSuperuser(boxes.adminUrl, `ALTER SCHEMA ${legacy.schema} RENAME TO ${legacy.schema}_moved`);
    const moved = await boxes.access('team-f');
    expect(moved.place.isolation).to.equal('Database');
    const own = await boxes.databases.ensure('team-f', moved);
    const restore = [
      `DROP SCHEMA "${own.schema}" CASCADE;`,
      dump.stdout,
      `ALTER SCHEMA "${legacy.schema}" RENAME TO "${own.schema}";`,
    ].join('\n');
    const psql = spawnSync('psql', ['--single-transaction', '--set', 'ON_ERROR_STOP=1', '--quiet', boxes.urlOf(own)], {
      input: restore,
      encoding: 'utf8',
    });
    expect(psql.status, psql.stderr).to.equal(0);
    await asSuperuser(boxes.adminUrl, `DROP SCHEMA ${legacy.schema}_moved CASCADE; DROP ROLE ${legacy.role}`);

    await boxes.databases.forget('team-f');
    expect(await boxes.ensure('team-f')).to.deep.include({ database: own.database, schema: own.schema });
    expect((await boxes.databases.pool('team-f')!.query(`SELECT id FROM clients WHERE id = 'from-before'`)).rows).to.deep.equal([
      { id: 'from-before' },
    ]);
    expect(
      await attempt(boxes.urlOf(own), rows(`SELECT current_schema() AS s, to_regclass('schema_migrations') IS NOT NULL AS migrated`)),
    ).to.equal(JSON.stringify([{ s: own.schema, migrated: true }]));
  });
});

describe("a box's database role in a shared database (BOXAUTH_OPERATOR_BOX_ISOLATION=Schema) reaches its own rows only", function () {
  this.timeout(120_000);
  let boxes: Boxes;
  let a: BoxDbNames & { url: string };
  let b: BoxDbNames & { url: string };

  before(async function () {
    boxes = new Boxes(await createDatabase('iso'), 'Schema');
    a = await boxes.ensure('team-a');
    b = await boxes.ensure('team-b');
    await boxes.databases.pool('team-b')!.query(`INSERT INTO clients (id, resource) VALUES ('b-secret-client', '{}')`);
  });

  after(async function () {
    await boxes?.close();
  });

  /** What box A's role reaches beyond its schema, each way it tries; "refused: …" or an empty answer is no leak. */
  async function reachedByA(): Promise<Record<string, string>> {
    return {
      'connect to postgres': await attempt(inDatabase(a.url, 'postgres'), async () => 'connected'),
      'connect to template1': await attempt(inDatabase(a.url, 'template1'), async () => 'connected'),
      'information_schema.schemata': await attempt(
        a.url,
        rows('SELECT schema_name FROM information_schema.schemata WHERE schema_name = $1', [b.schema]),
      ),
      'information_schema.tables': await attempt(
        a.url,
        rows('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [b.schema]),
      ),
      "B's clients": await attempt(a.url, rows(`SELECT id FROM ${pg.escapeIdentifier(b.schema)}.clients`)),
      'a table in public': await attempt(a.url, async (c) => {
        await c.query('CREATE TABLE public.planted (a int)');
        return 'created';
      }),
      'schema public': await attempt(a.url, rows("SELECT has_schema_privilege('public', 'USAGE') AS usage")),
    };
  }

  it("is refused every other database it has no business in, the other box's rows, and the schema public", async function () {
    const leaks = Object.entries(await reachedByA()).filter(
      ([, answer]) => answer !== '[]' && answer !== '[{"usage":false}]' && !answer.startsWith('refused: '),
    );
    expect(Object.fromEntries(leaks)).to.deep.equal({});
  });

  it("still reads the other box's schema, table and namespace in the catalogs: PostgreSQL shows every role its database's (what remains)", async function () {
    const leaks = JSON.parse(await attempt(a.url, rows(CATALOG_LEAKS, [b.schema, 'team[-_]b']))) as { leak: string }[];
    expect(leaks.map((l) => l.leak)).to.include.members([
      `pg_namespace: ${b.schema}`,
      'pg_class: clients',
      `pg_description: boxauth owner: namespace=team-b`,
      `pg_roles: ${b.role}`,
    ]);
  });

  it("hears none of the other box's change notifications on the channel every box used to share", async function () {
    const heard = await heardOf(a.url, () =>
      boxes.databases.pool('team-b')!.query(`UPDATE clients SET version = version + 1 WHERE id = 'b-secret-client'`),
    );
    expect(heard).to.deep.equal([]); // B announces on a channel of its own, which A cannot name
  });

  it('leaves the role all its API needs: a box on it migrates, issues a token and makes a person', async function () {
    await servesAsBox(a.url);
    // The operator's check of a provisioned box, as the box's role, still finds everything in place.
    expect(await boxes.ensure('team-a')).to.deep.include({ schema: a.schema });
  });

  it('changes nothing shared when applied again, or when another box comes (what was taken stays taken, unwritten)', async function () {
    // The rows' versions too: a REVOKE that changes nothing still rewrites the row, and two at once fail.
    const acl = async () =>
      (
        await asSuperuser<{ acl: string }>(
          boxes.adminUrl,
          `SELECT json_build_object('db', (SELECT datacl::text || ' ' || xmin FROM pg_database WHERE datname IN ('postgres')),
             'public', (SELECT nspacl::text || ' ' || xmin FROM pg_namespace WHERE nspname = 'public'),
             'class', (SELECT relacl FROM pg_class WHERE oid = 'pg_class'::regclass))::text AS acl`,
        )
      )[0]!.acl;
    const first = await acl();
    await boxes.databases.forget('team-a'); // ensure() provisions again rather than finding its pool in place
    await boxes.ensure('team-a');
    await boxes.ensure('team-z');
    expect(await acl()).to.equal(first);
  });
});

describe('provisioning a box as an operator that is only a CREATEROLE owner of the database', function () {
  this.timeout(60_000);
  const operator = `op_${randomBytes(5).toString('hex')}`;
  const database = operator;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const superuser = async (sql: string): Promise<void> => {
    await asSuperuser(adminUrl(), sql);
  };
  const lines: { msg: string; open?: string[] }[] = [];
  let databases: PostgresBoxDatabases;
  const adminOfDb = (): string => inDatabase(urlAs(adminUrl(), operator, password), database);
  const access = async (namespace: string, isolation: BoxIsolation): Promise<BoxAccess> => ({
    kind: 'role',
    adminUrl: adminOfDb(),
    password,
    place: await databases.place(namespace, adminOfDb(), isolation),
  });

  before(async function () {
    await superuser(`CREATE ROLE ${operator} LOGIN CREATEROLE PASSWORD '${password}'`);
    await superuser(`CREATE DATABASE ${database} OWNER ${operator}`);
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    databases = new PostgresBoxDatabases(log);
  });

  after(async function () {
    await databases?.close();
    await superuser(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await superuser(`DROP OWNED BY ${operator}`);
    await superuser(`DROP ROLE IF EXISTS ${operator}`);
  });

  it('provisions the box, closes the schema public of its own database, and logs what only a superuser could close', async function () {
    const names = await databases.ensure('team-c', await access('team-c', 'Schema'));
    const asBox = urlAs(adminOfDb(), names.role, password);
    expect(
      await attempt(asBox, rows("SELECT has_schema_privilege('public', 'USAGE') AS u, has_schema_privilege('public', 'CREATE') AS c")),
    ).to.equal('[{"u":false,"c":false}]');
    const open = lines.find((l) => l.open)?.open ?? [];
    expect(
      open.every((o) => /^CONNECT to database (postgres|template1)$/.test(o)),
      JSON.stringify(open),
    ).to.equal(true);
    await databases.drop('team-c', await access('team-c', 'Schema'));
  });

  it('without CREATEDB, says what a database of its own needs; with it, makes one and drops it again', async function () {
    const refused = await databases.ensure('team-d', await access('team-d', 'Database')).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).to.match(/^permission denied to create database: the operator's database user needs CREATEDB/);
    await superuser(`ALTER ROLE ${operator} CREATEDB`);
    const names = await databases.ensure('team-d', await access('team-d', 'Database'));
    expect(
      await attempt(urlAs(adminOfDb(), names.role, password, { database: names.database }), rows('SELECT current_database() AS d')),
    ).to.equal(JSON.stringify([{ d: names.database }]));
    // Its drop (WITH FORCE) is refused while an autovacuum worker visits the new database: PostgreSQL 15 lets only a
    // superuser end one. The operator's reconcile of the deleted Box tries again after its back-off; so does this.
    for (let tries = 1; ; tries++) {
      const refused = await databases.drop('team-d', await access('team-d', 'Database')).then(
        () => undefined,
        (err: Error) => err,
      );
      if (!refused) break;
      if (tries === 5 || !/permission denied to terminate process/.test(refused.message)) throw refused;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(
      await asSuperuser(
        adminUrl(),
        'SELECT datname FROM pg_database WHERE datname = $1 UNION ALL SELECT rolname FROM pg_roles WHERE rolname = $1',
        [names.role],
      ),
    ).to.deep.equal([]);
  });
});
