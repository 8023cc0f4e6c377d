// The harness of the failover tests (test/support/replicated-postgres.ts, pgbouncer.ts), checked
// with plain node-postgres clients and no box: what a test built on it relies on.
// - Synchronous replication: every row whose COMMIT was acknowledged is on the promoted standby,
//   the primary killed while writers were mid-stream; db.url() takes libpq to the writable server.
// - The negative control: asynchronous, the standby held back, rows the primary acknowledged
//   afterwards are lost by the failover; the same check finds them missing.
// - PgBouncer in transaction mode: parameterised queries and transactions work; a named prepared
//   statement and LISTEN do not (why the box's change feed connects to PostgreSQL directly).
//   Asserted, so that a PgBouncer that changes either is noticed.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { eventually } from '../support/box.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { POSTGRES_BIN, ReplicatedPostgres } from '../support/replicated-postgres.js';

const execFileAsync = promisify(execFile);

/** Writers inserting rows on connections of their own; a row is remembered only once its INSERT (a COMMIT) returned. */
class Writers {
  readonly acknowledged: number[] = [];
  /** What ended each writer that did not stop when asked: the server went while it was writing. */
  readonly failed: Error[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(url: string, count: number, firstId: number) {
    this.loops = Array.from({ length: count }, (_, w) => this.write(url, firstId + w * 1_000_000));
  }

  private async write(url: string, firstId: number): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined); // the server killed: the INSERT awaited below fails
    await client.connect();
    try {
      for (let id = firstId; this.running; id++) {
        await client.query('INSERT INTO acks (id) VALUES ($1)', [id]);
        this.acknowledged.push(id);
      }
    } catch (err) {
      this.failed.push(err as Error);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  untilAcknowledged(count: number): Promise<boolean> {
    return eventually(
      `${count} rows acknowledged`,
      () => Promise.resolve(this.acknowledged.length >= count || this.failed.length > 0),
      30_000,
      5,
    );
  }

  /** Resolved once every writer has ended: asked to stop, or its connection gone. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** The acknowledged ids that the server of `url` does not have. */
async function missingFrom(url: string, acknowledged: number[]): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>('SELECT id FROM acks');
    const present = new Set(rows.map((r) => Number(r.id)));
    return acknowledged.filter((id) => !present.has(id));
  } finally {
    await client.end();
  }
}

/** The port of the server libpq (psql) connects to for `url`: how a multi-host URL is followed. */
async function libpqServerPort(url: string): Promise<number> {
  const { stdout } = await execFileAsync(path.join(POSTGRES_BIN, 'psql'), [
    '--no-psqlrc',
    '-At',
    '-d',
    url,
    '-c',
    'SELECT inet_server_port()',
  ]);
  return Number(stdout.trim());
}

const WRITERS = 8;

describe('the replicated PostgreSQL of the failover tests', function () {
  this.timeout(60_000);
  let db: ReplicatedPostgres | undefined;
  let writers: Writers | undefined;

  afterEach(async function () {
    await writers?.stop();
    writers = undefined;
    await db?.stop();
    db = undefined;
  });

  it('synchronous: every acknowledged row survives the primary killed mid-stream, and db.url() finds the new primary', async function () {
    db = await ReplicatedPostgres.start({ synchronous: true });
    expect([await db.primary.inRecovery(), await db.standby.inRecovery()]).to.deep.equal([false, true]);
    expect(await libpqServerPort(db.url())).to.equal(db.primary.port);
    await db.primary.query('CREATE TABLE acks (id bigint PRIMARY KEY)');
    // Synchronous indeed: with the standby held back, a COMMIT waits for it until it is back.
    await db.holdBackStandby();
    const waiting = db.primary.query('INSERT INTO acks (id) VALUES (0)');
    await eventually('a COMMIT waiting for the standby', async () => {
      const { rowCount } = await db!.primary.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
      return rowCount === 1;
    });
    await db.releaseStandby();
    await waiting;

    writers = new Writers(db.primary.url(), WRITERS, 1); // node-postgres takes one host
    await writers.untilAcknowledged(400);
    await db.primary.kill();
    await writers.stop();
    await db.standby.promote();

    const { acknowledged, failed } = writers;
    expect(failed, 'writers still writing when the primary died').to.have.length(WRITERS);
    expect(acknowledged.length).to.be.at.least(400);
    expect(await missingFrom(db.standby.url(), acknowledged), 'acknowledged rows lost').to.deep.equal([]);
    expect(await libpqServerPort(db.url())).to.equal(db.standby.port);
    await db.standby.query('INSERT INTO acks (id) VALUES (-1)'); // and it takes writes alone
  });

  it('asynchronous with the standby held back: rows acknowledged afterwards are lost, and the check finds them', async function () {
    db = await ReplicatedPostgres.start({ synchronous: false });
    await db.primary.query('CREATE TABLE acks (id bigint PRIMARY KEY)');
    const before = new Writers(db.primary.url(), WRITERS, 1);
    await before.untilAcknowledged(100);
    await before.stop();
    // Caught up, then held back: what came before is on the standby, what comes after is not.
    const { rows } = await db.primary.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn');
    await eventually('the standby caught up', async () => {
      const replayed = await db!.standby.query<{ done: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [rows[0]!.lsn]);
      return replayed.rows[0]!.done;
    });
    await db.holdBackStandby();

    writers = new Writers(db.primary.url(), WRITERS, 500_000);
    await writers.untilAcknowledged(100);
    await db.primary.kill();
    await writers.stop();
    await db.standby.promote();

    const missing = await missingFrom(db.standby.url(), [...before.acknowledged, ...writers.acknowledged]);
    expect(missing.length, 'acknowledged rows lost').to.be.at.least(100);
    expect(missing).to.have.members(writers.acknowledged); // exactly those of after the hold-back
  });
});

describe('PgBouncer (transaction pooling) in front of PostgreSQL', function () {
  this.timeout(60_000);
  let db: ReplicatedPostgres;
  const bouncers: PgBouncer[] = [];
  const clients: pg.Client[] = [];

  before(async function () {
    db = await ReplicatedPostgres.start({ synchronous: false });
    await db.primary.query('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
  });

  after(async function () {
    for (const client of clients) await client.end().catch(() => undefined);
    for (const bouncer of bouncers) await bouncer.stop();
    await db?.stop();
  });

  async function bouncer(poolSize?: number): Promise<PgBouncer> {
    const started = await PgBouncer.start({ server: db.primary.url(), ...(poolSize ? { poolSize } : {}) });
    bouncers.push(started);
    return started;
  }

  async function connect(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined); // the primary killed by the last test: its connections break
    clients.push(client);
    await client.connect();
    return client;
  }

  it('runs parameterised queries and transactions of many clients over a few server connections', async function () {
    const through = await bouncer(3);
    const many = await Promise.all(Array.from({ length: 12 }, () => connect(through.url())));
    await Promise.all(
      many.map(async (client, i) => {
        await client.query('BEGIN');
        // One transaction, one server connection throughout: the same backend answers each statement.
        const { rows: first } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await client.query('INSERT INTO accounts (id, balance) VALUES ($1, $2)', [i, 100]);
        await client.query('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [i, i]);
        const { rows: last } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        expect(last[0]!.pid).to.equal(first[0]!.pid);
        await client.query(i % 4 === 3 ? 'ROLLBACK' : 'COMMIT');
      }),
    );
    const { rows } = await db.primary.query<{ id: number; balance: number }>('SELECT id, balance FROM accounts ORDER BY id');
    const committed = many.map((_, i) => i).filter((i) => i % 4 !== 3);
    expect(rows).to.deep.equal(committed.map((i) => ({ id: i, balance: 100 - i })));
    const servers = await through.admin('SHOW SERVERS');
    expect(servers.length).to.be.within(1, 3);
  });

  // One server connection: which one a client lands on is then certain. With more, a client lands on
  // whichever is free (the last released first): the same errors, at random.
  it('fails a named prepared statement used by a second client: it lives on the server connection', async function () {
    const through = await bouncer(1);
    const [a, b] = [await connect(through.url()), await connect(through.url())];
    const named = { name: 'x', text: 'SELECT $1::int AS n' };
    expect((await a.query({ ...named, values: [1] })).rows).to.deep.equal([{ n: 1 }]);
    const error = await b.query({ ...named, values: [2] }).then(
      () => undefined,
      (err: unknown) => err as pg.DatabaseError,
    );
    expect(error, 'the second client preparing "x"').to.include({ code: '42P05', message: 'prepared statement "x" already exists' });
  });

  it('delivers no NOTIFY to a LISTEN through it; a notification reaches whichever client holds the connection', async function () {
    const through = await bouncer(1);
    const listener = await connect(through.url());
    const bystander = await connect(through.url());
    const direct = await connect(db.primary.url());
    const heard = { listener: [] as string[], bystander: [] as string[], direct: [] as string[] };
    listener.on('notification', (n) => heard.listener.push(n.payload ?? ''));
    bystander.on('notification', (n) => heard.bystander.push(n.payload ?? ''));
    direct.on('notification', (n) => heard.direct.push(n.payload ?? ''));

    expect((await listener.query('LISTEN feed')).command).to.equal('LISTEN'); // accepted, on a pooled connection
    await direct.query('LISTEN feed');
    await direct.query("NOTIFY feed, 'one'");
    await eventually('the direct listener hearing it', () => Promise.resolve(heard.direct.includes('one')));
    // The idle server connection that ran the LISTEN received it too, with no client linked: dropped.
    await eventually('PgBouncer dropping it', () =>
      Promise.resolve(/got packet 'A' from server when not linked/.test(through.logTail(200))),
    );
    await listener.query('SELECT 1');
    expect(heard.listener).to.deep.equal([]);

    // A client that never listened, in a transaction on that connection, is handed the next one.
    await bystander.query('BEGIN');
    await direct.query("NOTIFY feed, 'two'");
    await bystander.query('COMMIT');
    await eventually('the direct listener hearing it', () => Promise.resolve(heard.direct.includes('two')));
    expect(heard).to.deep.include({ listener: [], bystander: ['two'] });
  });

  it('follows the primary once pointed to the promoted standby (as a -rw service would)', async function () {
    const through = await bouncer();
    const client = await connect(through.url());
    expect((await client.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0]!.port).to.equal(db.primary.port);
    await db.primary.kill();
    await db.standby.promote();
    await through.pointTo(db.standby.url());
    // The same client connection: PgBouncer opens a server connection to the new primary for it.
    expect((await client.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0]!.port).to.equal(db.standby.port);
    await client.query('INSERT INTO accounts (id, balance) VALUES ($1, $2)', [1000, 1]);
  });
});
