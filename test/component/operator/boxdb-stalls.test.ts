// A tenant against the operator's work on other boxes, with what its box's role (the URL its pods get) can do in
// the operator's database and in its own schema: take the locks the operator provisions a box under (advisory
// locks of the shared database were such locks: a key computed from the namespace, held, and another box's
// provisioning waited without end with the operator's administrative connections); plant triggers that sleep, or
// keep a lock of its own tables in a transaction left open, so that the operator's statements there never end and
// hold the connections all boxes share. And what it cannot do to another box in a shared database (its channel, its
// locks, its feed connections), and what it still can wherever it lives: hold the server's queue of notifications.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLogger } from '../../../api/log.js';
import {
  boxDbNames,
  databaseOf,
  PostgresBoxDatabases,
  urlAs,
  type BoxAccess,
  type BoxDbNames,
  type BoxIsolation,
} from '../../../operator/boxdb.js';
import { createDatabase } from '../../support/postgres.js';

/** Far beyond what a provisioning takes here: only a wait without end reaches it. */
const HELD_MS = 30_000;

/** `work`'s answer, or a failure saying it was still waiting after HELD_MS. */
async function unheld<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const held = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${HELD_MS / 1000} s`)), HELD_MS);
  });
  try {
    return await Promise.race([work, held]);
  } finally {
    clearTimeout(timer);
  }
}

/** `work` tried again on failure, as the operator's queue does a reconcile, until it succeeds or HELD_MS has passed. */
async function eventually<T>(what: string, work: () => Promise<T>): Promise<T> {
  const until = Date.now() + HELD_MS;
  for (;;) {
    try {
      return await unheld(what, work());
    } catch (err) {
      if (Date.now() >= until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** What `work` ends with: 'done', or how it failed (first line). */
const outcome = (work: Promise<unknown>): Promise<string> =>
  work.then(
    () => 'done',
    (err: Error) => `failed: ${err.message.split('\n')[0]!}`,
  );

/** The operator's box databases of one suite, in a database of their own, and the connections of the boxes' pods. */
class Operator {
  databases: PostgresBoxDatabases;
  readonly password = `pw-${randomBytes(8).toString('hex')}`;
  private readonly accesses = new Map<string, BoxAccess>();
  private readonly clients: pg.Client[] = [];

  private constructor(
    readonly adminUrl: string,
    readonly isolation: BoxIsolation,
    /** Connections to box databases for all boxes together (the operator's 32 for a thousand). */
    private readonly budget?: number,
  ) {
    this.databases = new PostgresBoxDatabases(createLogger('silent'), budget);
  }

  static async start(isolation: BoxIsolation, budget?: number): Promise<Operator> {
    return new Operator(await createDatabase('stall'), isolation, budget);
  }

  async ensure(namespace: string): Promise<BoxDbNames> {
    const place = await this.databases.place(namespace, this.adminUrl, this.isolation);
    const access: BoxAccess = { kind: 'role', adminUrl: this.adminUrl, password: this.password, place };
    this.accesses.set(namespace, access);
    return this.databases.ensure(namespace, access);
  }

  /** A connection as the box's role (its pods'), to its database or `database`, named `applicationName`. */
  async connect(names: BoxDbNames, { database = names.database, applicationName = 'pods' } = {}): Promise<pg.Client> {
    const url = urlAs(this.adminUrl, names.role, this.password, { database });
    const client = new pg.Client({ connectionString: url, application_name: applicationName });
    await client.connect();
    this.clients.push(client);
    return client;
  }

  /** A new process: nothing of the boxes known yet, each migrated at its first look. */
  async restart(): Promise<void> {
    await this.databases.close();
    this.databases = new PostgresBoxDatabases(createLogger('silent'), this.budget);
  }

  async close(): Promise<void> {
    for (const client of this.clients) await client.end().catch(() => undefined);
    for (const [namespace, access] of this.accesses) await this.databases.drop(namespace, access).catch(() => undefined);
    await this.databases.close();
  }
}

for (const isolation of ['Schema', 'Database'] as BoxIsolation[]) {
  describe(`a box's role (${isolation}) and the operator's locks on other boxes`, function () {
    this.timeout(4 * HELD_MS);
    let operator: Operator;
    let tenant: pg.Client;

    before(async () => (operator = await Operator.start(isolation)));
    after(() => operator?.close());

    it('holds none of them: other boxes are provisioned while it holds every lock it can name', async function () {
      const adminDatabase = databaseOf(operator.adminUrl);
      // Box A's role in the operator's database: its own in a schema of it; by PUBLIC's CONNECT beside its own database.
      tenant = await operator.connect(await operator.ensure('team-a'), { database: adminDatabase });
      const keys = ['team-b', 'team-c'].map((ns) => `boxauth.provision.${boxDbNames(ns, adminDatabase).schema}`);
      for (const key of [...keys, 'boxauth.confine']) await tenant.query('SELECT pg_advisory_lock(hashtext($1))', [key]);

      // Two boxes to make (each held, were it held, with one of the operator's two administrative connections) and a third.
      const made = await unheld('boxes B and C provisioned', Promise.all([operator.ensure('team-b'), operator.ensure('team-c')]));
      expect(made.map((m) => m.role)).to.have.length(2);
      expect((await unheld('box D placed and provisioned', operator.ensure('team-d'))).schema).to.be.a('string');
      // Nothing of the operator's is an advisory lock the tenant could see held and take.
      const { rows } = await tenant.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()`,
      );
      expect(rows[0].n).to.equal(0);
    });

    it("holds no administrative connection with its own names: a lock on its role's settings, kept open", async function () {
      const a = await operator.ensure('team-a');
      const pods = await operator.connect(a);
      // The box's tables made to look unmigrated (its own to drop), so the operator provisions it again...
      await pods.query('DROP TABLE schema_migrations');
      // ... while its role's setting in the database, which provisioning sets, is locked by a transaction left open.
      await pods.query('BEGIN');
      await pods.query(`ALTER ROLE CURRENT_USER IN DATABASE ${pg.escapeIdentifier(a.database)} SET search_path = ${a.schema}`);
      expect(await unheld("box A's provisioning", outcome(operator.ensure('team-a')))).to.match(/^failed: .*lock timeout/);
      await pods.query('ROLLBACK');
    });

    it("reads and locks nothing of the operator's: the key of the boxes' names, the rows of its locks", async function () {
      const refusals: string[] = [];
      for (const sql of [
        'SELECT key FROM boxauth_operator.box_name_key',
        'SELECT name FROM boxauth_operator.locks FOR UPDATE',
        `INSERT INTO boxauth_operator.locks (name) VALUES ('boxauth.confine')`,
      ]) {
        refusals.push(await outcome(tenant.query(sql)));
      }
      expect(refusals).to.deep.equal(Array(3).fill('failed: permission denied for schema boxauth_operator'));
    });
  });
}

describe("a box's role in a shared database, against another box's channel, locks and feed connections", function () {
  this.timeout(4 * HELD_MS);
  let operator: Operator;
  let a: BoxDbNames;
  let b: BoxDbNames;

  /** What `listener` hears on the shared channel `boxauth` of A's record written by the operator. */
  async function heardOnShared(listener: pg.Client, id: string): Promise<string[]> {
    const heard: string[] = [];
    const marker = `marker-${randomBytes(4).toString('hex')}`;
    const back = new Promise<void>((resolve) =>
      listener.on('notification', (msg) => (msg.payload === marker ? resolve() : heard.push(msg.payload ?? ''))),
    );
    await listener.query('LISTEN boxauth');
    await operator.databases.pool('team-a')!.query(`INSERT INTO clients (id, resource) VALUES ($1, '{}')`, [id]);
    await listener.query(`SELECT pg_notify('boxauth', $1)`, [marker]); // after A's commit: back once all before it was heard
    await unheld('the marker back', back);
    await listener.query('UNLISTEN boxauth');
    return heard;
  }

  before(async function () {
    operator = await Operator.start('Schema');
    a = await operator.ensure('team-a');
    b = await operator.ensure('team-b');
  });
  after(() => operator?.close());

  it("reads none of A's channel, locks none of A's rows, cuts none of A's connections", async function () {
    const aFeed = await operator.connect(a, { applicationName: 'boxauth box feed' });
    const aPid = (await aFeed.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const bc = await operator.connect(b);
    const schema = pg.escapeIdentifier(a.schema);
    const answers: string[] = [];
    for (const sql of [
      `SELECT value FROM ${schema}.box_settings WHERE name = 'change_channel'`,
      `SELECT FROM ${schema}.box_locks FOR UPDATE`,
      `SELECT pg_terminate_backend(${aPid})`,
    ]) {
      answers.push(await outcome(bc.query(sql)));
    }
    expect(answers.slice(0, 2)).to.deep.equal(Array(2).fill(`failed: permission denied for schema ${a.schema}`));
    expect(answers[2]).to.match(/^failed: permission denied to terminate process/);
    expect((await aFeed.query('SELECT 1 AS up')).rows).to.deep.equal([{ up: 1 }]);
    await aFeed.end(); // while A's own feed listens, nothing of A goes on the shared channel whatever the names (below)
  });

  it("makes none of A's changes go on the shared channel by naming its connection as an older release's feed", async function () {
    const disguised = await operator.connect(b, { applicationName: 'boxauth change feed' });
    expect(await heardOnShared(disguised, 'while-b-poses')).to.deep.equal([]);
    // An older release's feed of A's own (A's role) is what makes them go there, as docs/operations/upgrades.md says.
    const older = await operator.connect(a, { applicationName: 'boxauth change feed' });
    await older.query('LISTEN boxauth');
    expect((await heardOnShared(disguised, 'while-a-older')).map((p) => JSON.parse(p).id)).to.deep.equal(['while-a-older']);
  });
});

describe("a tenant's own schema and the operator's connections to other boxes", function () {
  this.timeout(6 * HELD_MS);
  let operator: Operator;
  let a: BoxDbNames;

  before(async function () {
    operator = await Operator.start('Database', 2); // two connections for all boxes together
    a = await operator.ensure('team-a');
    await operator.ensure('team-b');
  });
  after(() => operator?.close());

  it("runs what a tenant plants in its schema with the tenant's rights only: the operator writes as the box's role", async function () {
    const pods = await operator.connect(a);
    await pods.query('CREATE TABLE seen (who text)');
    await pods.query(
      `CREATE FUNCTION spy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO seen VALUES (current_user || ' ' || session_user); RETURN NEW; END $$`,
    );
    await pods.query('CREATE TRIGGER spy BEFORE INSERT ON clients FOR EACH ROW EXECUTE FUNCTION spy()');
    await operator.databases.pool('team-a')!.query(`INSERT INTO clients (id, resource) VALUES ('seen-client', '{}')`);
    expect((await pods.query('SELECT who FROM seen')).rows).to.deep.equal([{ who: `${a.role} ${a.role}` }]);
    await pods.query('DROP TRIGGER spy ON clients');
  });

  it("writes another box's records while one box's writes never end (a trigger that sleeps, a lock its pods keep)", async function () {
    const pods = await operator.connect(a);
    await pods.query(`CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3600); RETURN NEW; END $$`);
    await pods.query('CREATE TRIGGER stall BEFORE INSERT ON clients FOR EACH ROW EXECUTE FUNCTION stall()');
    const idle = await operator.connect(a);
    await idle.query('BEGIN');
    await idle.query('LOCK TABLE access_policies IN ACCESS EXCLUSIVE MODE'); // and left idle in its transaction

    // The operator writing two of A's records at once (two of its Clients' reconciles): each takes one of the two connections.
    const pool = operator.databases.pool('team-a')!;
    const aWrites = [
      outcome(pool.query(`INSERT INTO clients (id, resource) VALUES ('a-client', '{}')`)),
      outcome(pool.query(`SELECT count(*) FROM access_policies`)),
    ];
    const written = await eventually("box B's record written", () =>
      operator.databases.pool('team-b')!.query(`INSERT INTO clients (id, resource) VALUES ('b-client', '{}') ON CONFLICT DO NOTHING`),
    );
    expect(written.rowCount).to.be.at.most(1);
    // A's writes were not left waiting either: they failed, and its reconciles are tried again.
    for (const ended of await unheld("box A's writes ended", Promise.all(aWrites))) expect(ended).to.match(/^failed: /);
  });

  it("finds a box in place at its start while the box's pods hold its table of migrations", async function () {
    const idle = await operator.connect(a);
    await idle.query('BEGIN');
    await idle.query('LOCK TABLE schema_migrations IN ACCESS EXCLUSIVE MODE');
    await operator.restart(); // its first look at each box migrates it
    expect(await unheld("box A's look", outcome(operator.ensure('team-a')))).to.match(/^failed: /);
    expect((await unheld("box B's look", operator.ensure('team-b'))).role).to.be.a('string');
  });
});

describe("what remains shared by boxes in databases of their own: the server's queue of notifications", function () {
  this.timeout(4 * HELD_MS);
  let operator: Operator;

  before(async () => (operator = await Operator.start('Database')));
  after(() => operator?.close());

  it('is held by a listener of one box left in a transaction, while another box notifies in its own database', async function () {
    const a = await operator.ensure('team-a');
    const listener = await operator.connect(a);
    const b = await operator.connect(await operator.ensure('team-b'));
    await listener.query('LISTEN anything');
    await listener.query('BEGIN');
    await listener.query('SELECT 1');
    // One notification of A's own, in its database, which its listener never reads: the queue's tail stays there.
    await (await operator.connect(a)).query(`SELECT pg_notify('anything', 'unread')`);
    // B's notifications, 8 MB of them (each its own: PostgreSQL sends one of equal ones), in B's own database: kept behind A's.
    await b.query(`SELECT count(pg_notify('b_own', repeat('n', 4000) || i)) FROM generate_series(1, 2000) i`);
    const { rows } = await b.query<{ usage: number }>('SELECT pg_notification_queue_usage() AS usage');
    expect(rows[0]!.usage).to.be.greaterThan(0); // a share of 8 GB, the server's; full, every NOTIFY of every database fails
    // A setting of its role's is no bound: the role sets it back in its own session.
    await listener.query(`SET LOCAL idle_in_transaction_session_timeout = 0`);
    await listener.query('COMMIT');
  });
});
