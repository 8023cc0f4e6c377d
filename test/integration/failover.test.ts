// A database machine dies under load, and nothing the box acknowledged is lost. Two real
// PostgreSQL servers with streaming replication (test/support/replicated-postgres.ts); two
// box processes on DATABASE_URL naming both (target_session_attrs=read-write); tokens,
// refreshes, sign-outs, revocations and writes of Clients, AccessPolicies and users from
// both; the primary killed (pg_ctl stop -m immediate) and the standby promoted, as
// CloudNativePG does. With synchronous replication every acknowledged token still works,
// every acknowledged close still holds, every acknowledged write is there; meanwhile the
// boxes answered success or 503 with Retry-After and nothing else, and found the new
// primary by themselves, change feed included. The negative control shows the check can
// fail: with asynchronous replication and the standby held back, acknowledged tokens are lost.
import { expect } from 'chai';
import { Box, basic, eventually, sleep } from '../support/box.js';
import { Ledger, load, lost, prepareLoad, WORKER } from '../support/acknowledged.js';
import { ReplicatedPostgres } from '../support/replicated-postgres.js';

describe('PostgreSQL failing over under load', function () {
  this.timeout(180_000);

  describe('with synchronous replication', function () {
    let db: ReplicatedPostgres;
    const boxes: Box[] = [];

    before(async function () {
      db = await ReplicatedPostgres.start({ synchronous: true });
      const first = await Box.start({ databaseUrl: db.url() });
      boxes.push(first);
      boxes.push(await first.startAnother());
      await prepareLoad(first);
    });

    after(async function () {
      for (const box of boxes) await box.stop();
      await db?.stop();
    });

    it('every process lives through it, answers 503 meanwhile, serves again by itself, and loses nothing it acknowledged', async function () {
      const root = await boxes[0]!.rootToken();
      const ledger = new Ledger();
      const loads = boxes.map((box) => load(box, root, ledger));
      let killedAt = 0;
      let promotedAt = 0;
      try {
        await eventually('load on both boxes', async () => loads.every((l) => l.answered() >= 60), 30_000, 20);
        killedAt = Date.now();
        await db.primary.kill();
        // The outage is seen by both before the standby takes over, as it is while CloudNativePG decides.
        const unavailable = async (box: Box) =>
          (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(WORKER.id, WORKER.secret) }))
            .status === 503;
        for (const box of boxes) await eventually('a 503 while no host takes writes', () => unavailable(box), 10_000, 20);
        await db.standby.promote();
        promotedAt = Date.now();
        await eventually('both serving again', async () => loads.every((l) => l.lastSuccess() > promotedAt), 20_000, 20);
        await sleep(500); // and under load on the new primary for a moment
      } finally {
        await Promise.all(loads.map((l) => l.stop()));
      }
      const windows = loads.map((l) => l.lastSuccess() - promotedAt);
      for (const [i, box] of boxes.entries()) {
        const said = `box ${i} said last:\n${box.logs.slice(-10).join('\n')}`;
        expect(box.process!.exitCode, said).to.equal(null);
        expect(loads[i]!.wrong, said).to.deep.equal([]);
        expect(box.logs.join('\n'), said).to.include('database failed over: now using this host');
        expect(
          box.logs.filter((l) => l.includes('a fault nothing handled')),
          said,
        ).to.deep.equal([]);
      }

      // The change feed listens on the new primary: a token revoked at one process is refused at the other.
      const [a, b] = boxes as [Box, Box];
      const seen = (await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(WORKER.id, WORKER.secret) }))
        .body.access_token as string;
      expect((await b.json('GET', `/Client/${WORKER.id}`, undefined, seen)).status).to.equal(200);
      expect((await a.form('/auth/revoke', { token: seen }, { Authorization: basic(WORKER.id, WORKER.secret) })).status).to.equal(200);
      await eventually(
        'the revocation at the other process',
        async () => (await b.json('GET', `/Client/${WORKER.id}`, undefined, seen)).status === 401,
        5_000,
        20,
      );

      const missing = await lost(boxes, root, ledger);
      process.stderr.write(
        `      failover: ${ledger.size} acknowledged (${ledger.tokens.length} tokens, ${ledger.refreshTokens.length} refresh chains, ` +
          `${ledger.closed.length} closes, ${ledger.clients.length + ledger.policies.length + ledger.users.length} writes), ${missing.length} lost; ` +
          `kill to promote ${promotedAt - killedAt} ms, back within ${Math.max(...windows)} ms of the promote\n`,
      );
      expect(ledger.tokens.length).to.be.greaterThan(100);
      expect(ledger.closed.length + ledger.users.length).to.be.greaterThan(10);
      expect(missing, `${missing.length} of ${ledger.size} acknowledged lost`).to.deep.equal([]);
    });
  });

  describe('the negative control: asynchronous replication, the standby held back', function () {
    let db: ReplicatedPostgres;
    let box: Box | undefined;

    before(async function () {
      db = await ReplicatedPostgres.start({ synchronous: false });
      box = await Box.start({ databaseUrl: db.url() });
      await prepareLoad(box);
    });

    after(async function () {
      await box?.stop();
      await db?.stop();
    });

    it('loses tokens it acknowledged, and the same check says so', async function () {
      const root = await box!.rootToken();
      await eventually('the standby has the root token', async () => {
        const { rows } = await db.standby.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
        return rows[0]!.n >= 2;
      });
      await db.holdBackStandby();
      const ledger = new Ledger();
      const running = load(box!, root, ledger);
      try {
        await eventually('some acknowledged', async () => ledger.tokens.length >= 30, 20_000, 20);
      } finally {
        await running.stop();
      }
      await db.primary.kill();
      await db.standby.promote();
      await eventually('serving again', async () => (await box!.request('GET', '/readyz')).status === 200, 20_000);
      const missing = await lost([box!], root, ledger);
      expect(missing.length, 'acknowledged and lost').to.be.greaterThan(ledger.tokens.length / 2);
      expect(missing.filter((m) => m.startsWith('token'))).to.have.length(ledger.tokens.length);
    });

    it('an old primary back as a primary (a split brain) gets no writes: a process starting now uses the promoted one', async function () {
      // After the failover above: the old primary restarts as it was, never made a standby of the promoted one.
      await db.primary.start();
      expect([await db.primary.inRecovery(), await db.standby.inRecovery()]).to.deep.equal([false, false]);
      // It is first in DATABASE_URL and takes writes, but the promoted one is on a later timeline.
      const other = await box!.startAnother();
      try {
        const res = await other.form(
          '/auth/token',
          { grant_type: 'client_credentials' },
          { Authorization: basic(WORKER.id, WORKER.secret) },
        );
        expect(res.status, res.text).to.equal(200);
        const introspected = await box!.form(
          '/auth/introspect',
          { token: res.body.access_token as string },
          { Authorization: basic(WORKER.id, WORKER.secret) },
        );
        expect([introspected.status, introspected.body.active], 'issued by the new process, known to the first').to.deep.equal([200, true]);
      } finally {
        await other.stop();
      }
    });
  });
});
