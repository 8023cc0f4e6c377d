// Two boxes provisioned by the operator in one database of the real PostgreSQL,
// and box A's role (the URL its pods get) trying every way it has to reach box
// B: other databases, the catalogs, B's tables, the schema public, the change
// notifications (its feed and locks: test/integration/box-channel.test.ts). Then box A's API started on that role: what the confinement
// takes away must not be what the API needs.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { createLogger } from '../../../api/log.js';
import { PostgresBoxDatabases, urlAs, type BoxAccess } from '../../../operator/boxdb.js';
import { Box } from '../../support/box.js';
import { adminUrl, createDatabase } from '../../support/postgres.js';

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

describe("a box's database role reaches its own schema and nothing else", function () {
  this.timeout(120_000);
  let databaseUrl: string;
  let databases: PostgresBoxDatabases;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const access = (): BoxAccess => ({ kind: 'role', adminUrl: databaseUrl, password });
  let a: { schema: string; role: string; url: string };
  let b: { schema: string; role: string };

  before(async function () {
    databaseUrl = await createDatabase('iso');
    databases = new PostgresBoxDatabases(createLogger('silent'));
    const namesA = await databases.ensure('team-a', access());
    b = await databases.ensure('team-b', access());
    a = { ...namesA, url: urlAs(databaseUrl, namesA.role, password) };
    await databases.pool('team-b')!.query(`INSERT INTO clients (id, resource) VALUES ('b-secret-client', '{}')`);
  });

  after(async function () {
    await databases?.close();
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

  it("still reads the other box's schema and table names in the catalogs: PostgreSQL shows every role its database's (what remains)", async function () {
    const names = await attempt(
      a.url,
      rows('SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace($1) AND relname = $2', [b.schema, 'clients']),
    );
    expect(names).to.equal('[{"relname":"clients"}]');
  });

  it("hears none of the other box's change notifications on the channel every box used to share", async function () {
    const listener = new pg.Client({ connectionString: a.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      const marker = `marker-${randomBytes(4).toString('hex')}`;
      const markerHeard = new Promise<void>((resolve) =>
        listener.on('notification', (msg) => (msg.payload === marker ? resolve() : heard.push(msg.payload ?? ''))),
      );
      await listener.query('LISTEN boxauth');
      await databases.pool('team-b')!.query(`UPDATE clients SET version = version + 1 WHERE id = 'b-secret-client'`);
      // Notifications reach a listener in commit order: once A's own marker is back, B's change was delivered, if it ever is.
      await listener.query(`SELECT pg_notify('boxauth', $1)`, [marker]);
      await markerHeard;
      expect(heard).to.deep.equal([]); // B announces on a channel of its own, which A cannot name
    } finally {
      await listener.end();
    }
  });

  it('leaves the role all its API needs: a box on it migrates, issues a token and makes a person', async function () {
    const box = await Box.start({
      databaseUrl: a.url,
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
    // The operator's check of a provisioned box, as the box's role, still finds everything in place.
    expect(await databases.ensure('team-a', access())).to.deep.include({ schema: a.schema });
  });

  it('changes nothing when applied again', async function () {
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    const acl = async () =>
      (
        await admin.query<{ acl: string }>(
          `SELECT json_build_object('db', (SELECT datacl FROM pg_database WHERE datname IN ('postgres')),
             'public', (SELECT nspacl FROM pg_namespace WHERE nspname = 'public'),
             'class', (SELECT relacl FROM pg_class WHERE oid = 'pg_class'::regclass))::text AS acl`,
        )
      ).rows[0]!.acl;
    try {
      const first = await acl();
      await databases.forget('team-a'); // ensure() provisions again rather than finding its pool in place
      await databases.ensure('team-a', access());
      expect(await acl()).to.equal(first);
    } finally {
      await admin.end();
    }
  });
});

describe('confining a box role as an operator that is only a CREATEROLE owner of the database', function () {
  this.timeout(60_000);
  const operator = `op_${randomBytes(5).toString('hex')}`;
  const database = operator;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const superuser = async (sql: string): Promise<void> => {
    await attempt(adminUrl(), async (c) => (await c.query(sql), 'done'));
  };
  const lines: { msg: string; open?: string[] }[] = [];
  let databases: PostgresBoxDatabases;

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
    const adminOfDb = inDatabase(urlAs(adminUrl(), operator, password), database);
    const names = await databases.ensure('team-c', { kind: 'role', adminUrl: adminOfDb, password });
    const asBox = urlAs(adminOfDb, names.role, password);
    expect(
      await attempt(asBox, rows("SELECT has_schema_privilege('public', 'USAGE') AS u, has_schema_privilege('public', 'CREATE') AS c")),
    ).to.equal('[{"u":false,"c":false}]');
    const open = lines.find((l) => l.open)?.open ?? [];
    expect(
      open.every((o) => /^CONNECT to database (postgres|template1)$/.test(o)),
      JSON.stringify(open),
    ).to.equal(true);
  });
});
