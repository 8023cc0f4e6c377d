// The box through Debian's PgBouncer in transaction mode, as a CloudNativePG Pooler puts it:
// DATABASE_URL is PgBouncer, BOXAUTH_DATABASE_DIRECT_URL the servers themselves. Queries go
// through PgBouncer without named statements (a statement prepared on one of its server
// connections is unknown on the next); the change feed's LISTEN, migrations and the upkeep's
// session lock go direct (through PgBouncer a LISTEN hears nothing, and a session lock would
// stay behind on a server connection). It works, two processes hear each other's closes, and a
// failover behind PgBouncer (the Pooler following the -rw Service) loses nothing acknowledged.
import { expect } from 'chai';
import { Box, basic, eventually, sleep } from '../support/box.js';
import { Ledger, load, lost, prepareLoad, WORKER } from '../support/acknowledged.js';
import { PgBouncer } from '../support/pgbouncer.js';
import { ReplicatedPostgres } from '../support/replicated-postgres.js';

describe('through PgBouncer in transaction mode', function () {
  this.timeout(180_000);
  let db: ReplicatedPostgres;
  let bouncer: PgBouncer;
  const boxes: Box[] = [];

  before(async function () {
    db = await ReplicatedPostgres.start({ synchronous: true });
    // Fewer server connections than the two boxes' pools: each transaction takes whichever is free.
    bouncer = await PgBouncer.start({ server: db.primary.url(), poolSize: 4 });
    const env = { BOXAUTH_DATABASE_DIRECT_URL: db.url(), BOXAUTH_PURGE_INTERVAL_SECONDS: '1', BOXAUTH_SESSION_RETENTION_HOURS: '0' };
    const first = await Box.start({ databaseUrl: bouncer.url(), env });
    boxes.push(first);
    boxes.push(await first.startAnother(env));
    await prepareLoad(first);
  });

  after(async function () {
    for (const box of boxes) await box.stop();
    await bouncer?.stop();
    await db?.stop();
  });

  const token = (box: Box) =>
    box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(WORKER.id, WORKER.secret) });

  it('serves under load, hears closes made at the other process, and the upkeep keeps running', async function () {
    const root = await boxes[0]!.rootToken();
    const ledger = new Ledger();
    const loads = boxes.map((box) => load(box, root, ledger));
    try {
      await eventually('load', async () => loads.every((l) => l.answered() >= 150), 30_000, 20);
    } finally {
      await Promise.all(loads.map((l) => l.stop()));
    }
    for (const l of loads) expect(l.wrong).to.deep.equal([]);
    expect(await lost(boxes, root, ledger)).to.deep.equal([]);
    // The change feed listens directly: a close at one process holds at the other.
    const [a, b] = boxes as [Box, Box];
    const seen = (await token(b)).body.access_token as string;
    expect((await b.json('GET', `/Client/${WORKER.id}`, undefined, seen)).status).to.equal(200);
    expect((await a.json('DELETE', '/Session', undefined, seen)).status).to.equal(200);
    await eventually(
      'the close at the other process',
      async () => (await b.json('GET', `/Client/${WORKER.id}`, undefined, seen)).status === 401,
      5_000,
      20,
    );
    // The purge job (every second) deletes closed sessions again and again: its lock was released each time,
    // by the connection that took it.
    const purges = () => boxes.reduce((n, box) => n + box.logs.filter((l) => l.includes('"msg":"purged old sessions"')).length, 0);
    for (let round = 0; round < 3; round++) {
      const before = purges();
      const closed = (await token(a)).body.access_token as string;
      expect((await a.json('DELETE', '/Session', undefined, closed)).status).to.equal(200);
      await eventually(`the upkeep purging again (${round})`, async () => purges() > before, 15_000);
    }
  });

  it('with named statements through PgBouncer 1.18 the box fails: why they are off by default behind a pooler', async function () {
    const named = await boxes[0]!.startAnother({ BOXAUTH_DATABASE_DIRECT_URL: db.url(), BOXAUTH_DATABASE_PREPARED_STATEMENTS: 'true' });
    try {
      // Tokens the process has not seen: each use looks its session up with a named statement, from several
      // connections at once, over PgBouncer's few server connections.
      const tokens = await Promise.all(Array.from({ length: 40 }, async () => (await token(named)).body.access_token as string));
      const answers = await Promise.all(tokens.map((t) => named.json('GET', `/Client/${WORKER.id}`, undefined, t)));
      expect(answers.map((r) => r.status)).to.include(500);
      await eventually('the error of a named statement in the log', async () =>
        named.logs.some((l) => /prepared statement \\?"[^"\\]+\\?" (already exists|does not exist)/.test(l)),
      );
    } finally {
      await named.stop();
    }
  });

  it('a failover behind PgBouncer (pointed at the new primary, as a Pooler follows -rw) loses nothing acknowledged', async function () {
    const root = await boxes[0]!.rootToken();
    const ledger = new Ledger();
    const loads = boxes.map((box) => load(box, root, ledger));
    let promotedAt = 0;
    try {
      await eventually('load', async () => loads.every((l) => l.answered() >= 60), 30_000, 20);
      await db.primary.kill();
      await db.standby.promote();
      await bouncer.pointTo(db.standby.url());
      promotedAt = Date.now();
      await eventually('serving again', async () => loads.every((l) => l.lastSuccess() > promotedAt), 20_000, 20);
      await sleep(500);
    } finally {
      await Promise.all(loads.map((l) => l.stop()));
    }
    for (const l of loads) expect(l.wrong).to.deep.equal([]);
    expect(ledger.tokens.length).to.be.greaterThan(50);
    expect(await lost(boxes, root, ledger)).to.deep.equal([]);
  });
});
