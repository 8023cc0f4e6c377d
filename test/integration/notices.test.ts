// The outbox of notices (api/notices/) on real parts: box processes sharing one database, a
// relying party's back-channel logout endpoint as a node:http server verifying each logout token
// with jose (test/support/notice-receiver.ts), sessions closed through the box API. Each close of
// a person's session at a client with a backchannel_logout_uri is one notice; what the receiver
// is told is what the issue promises: exactly one notice per event across processes, everything
// after an outage and in order per person, a slow receiver holding no request and no other
// receiver, an address refused until an administrator allows it, a give-up audited.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook as Verifier } from 'standardwebhooks';
import { Box, eventually, sleep } from '../support/box.js';
import { ReplicatedPostgres } from '../support/replicated-postgres.js';
import { addLogoutClient, addPerson, allowLoopbackReceivers, LogoutReceiver, mintSessions } from '../support/notice-receiver.js';

/** Retries soon, so that an outage of a few seconds is ridden out within the test. */
const QUICK_RETRIES = { BOXAUTH_NOTICE_FIRST_RETRY_SECONDS: '1', BOXAUTH_NOTICE_LONGEST_RETRY_SECONDS: '2' };

/** Closes session `id` through the box API (DELETE /Session/:id), as an administrator does; its status. */
async function close(box: Box, root: string, id: string): Promise<number> {
  return (await box.json('DELETE', `/Session/${id}`, undefined, root)).status;
}

describe('notices: the outbox on real parts', function () {
  this.timeout(120_000);

  describe('two box processes sharing one database', function () {
    let a: Box;
    let b: Box;
    let root: string;
    let receiver: LogoutReceiver;
    // A webhook receiver verifying each delivery with the standardwebhooks library.
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const webhooks: { id: string; event: any }[] = [];
    const hooks = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const event = new Verifier(secret).verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
        webhooks.push({ id: String(req.headers['webhook-id']), event });
        res.writeHead(204).end();
      });
    });

    before(async function () {
      // The logout tokens' sub is the row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
      a = await Box.start({ env: { ...QUICK_RETRIES, BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
      b = await a.startAnother(QUICK_RETRIES);
      root = await a.rootToken();
      await allowLoopbackReceivers(a, root);
      receiver = await LogoutReceiver.start(a, 'app');
      await addLogoutClient(a, 'app', receiver.url);
      await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
      const hook = await a.json(
        'PUT',
        '/Webhook/closes',
        { url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/`, events: ['io.boxauth.session.closed'], secret },
        root,
      );
      expect(hook.status, hook.text).to.equal(201);
    });

    after(async function () {
      await new Promise((resolve) => hooks.close(resolve));
      await receiver?.down();
      await b?.stop();
      await a?.stop();
    });

    it('tells each receiver of each close exactly once (a logout token, a verified webhook), whichever process closed it', async function () {
      const user = await addPerson(a, root, 'once@example.com');
      const sids = Array.from({ length: 40 }, (_, i) => `once-${i}`);
      const sessions = await mintSessions(a, user, 'app', sids);
      // Closed from both processes at once: both dispatch and send, racing for every row.
      const statuses = await Promise.all(sessions.map((id, i) => close(i % 2 ? b : a, root, id)));
      expect(statuses.every((s) => s === 200)).to.equal(true);
      await eventually('every close told', async () => receiver.told.length >= sids.length, 20_000);
      await sleep(3000); // long enough for a second send of any of them to arrive
      expect(receiver.wrong).to.deep.equal([]);
      expect(receiver.told.map((t) => t.sid).sort()).to.deep.equal([...sids].sort());
      expect(new Set(receiver.told.map((t) => t.jti)).size).to.equal(sids.length);
      expect(receiver.told.every((t) => t.sub === String(user))).to.equal(true);
      // And one webhook per close, each verified by standardwebhooks, each with its own id.
      const closes = webhooks.filter((w) => sessions.some((s) => JSON.stringify(w.event.data).includes(s)));
      expect(closes).to.have.length(sessions.length);
      expect(new Set(closes.map((w) => w.id)).size).to.equal(sessions.length);
      expect(closes.every((w) => w.event.type === 'io.boxauth.session.closed')).to.equal(true);
    });

    it('gives a receiver that was down everything when it comes back, in order per person', async function () {
      receiver.told.length = 0;
      const people = await Promise.all(['ann', 'bob', 'cy'].map((n) => addPerson(a, root, `${n}-down@example.com`)));
      const sidsOf = new Map<number, string[]>();
      const sessionsOf = new Map<number, string[]>();
      for (const p of people) {
        const sids = Array.from({ length: 6 }, (_, i) => `p${p}-${i}`);
        sidsOf.set(p, sids);
        sessionsOf.set(p, await mintSessions(a, p, 'app', sids));
      }
      await receiver.down();
      // Each person's sessions closed one after another (their order), the people's closes
      // interleaved, alternately at each process.
      for (let i = 0; i < 6; i++) {
        await Promise.all(people.map((p, k) => close((i + k) % 2 ? b : a, root, sessionsOf.get(p)![i]!)));
      }
      await sleep(4000); // several attempts fail meanwhile
      expect(receiver.told).to.deep.equal([]);
      await receiver.up();
      await eventually('everything told after the outage', async () => receiver.told.length >= 18, 30_000);
      await sleep(1000);
      expect(receiver.wrong).to.deep.equal([]);
      expect(receiver.told).to.have.length(18);
      for (const p of people) expect(receiver.sidsOf(String(p)), `person ${p}`).to.deep.equal(sidsOf.get(p));
      const metrics = (await a.metrics()) + (await b.metrics());
      expect(metrics).to.match(/boxauth_notices_total\{[^}]*kind="backchannel"[^}]*destination="app"[^}]*result="retrying"[^}]*\} [1-9]/);
    });
  });

  describe('a slow receiver', function () {
    let box: Box;
    let root: string;
    let slow: LogoutReceiver;
    let fast: LogoutReceiver;

    before(async function () {
      box = await Box.start({ env: { ...QUICK_RETRIES, BOXAUTH_NOTICE_TIMEOUT_MS: '1500', BOXAUTH_NOTICE_SENDING_AT_ONCE: '2' } });
      root = await box.rootToken();
      await allowLoopbackReceivers(box, root);
      slow = await LogoutReceiver.start(box, 'slow-app');
      fast = await LogoutReceiver.start(box, 'fast-app');
      await addLogoutClient(box, 'slow-app', slow.url);
      await addLogoutClient(box, 'fast-app', fast.url);
    });

    after(async function () {
      await slow?.down();
      await fast?.down();
      await box?.stop();
    });

    it('holds no request and no other receiver, and gets its notices once it answers', async function () {
      slow.mode = 'hang';
      const user = await addPerson(box, root, 'slow@example.com');
      const slowSessions = await mintSessions(box, user, 'slow-app', ['s-0', 's-1', 's-2', 's-3']);
      const fastSessions = await mintSessions(box, user, 'fast-app', ['f-0', 'f-1', 'f-2', 'f-3']);
      for (const id of slowSessions) {
        const started = Date.now();
        expect(await close(box, root, id)).to.equal(200);
        expect(Date.now() - started, 'a close waits for no receiver').to.be.below(1000);
      }
      await eventually('the slow receiver asked', async () => slow.requests >= 1, 10_000);
      // Of the two sends this process makes at once, the hanging receiver holds one, never both:
      // a quarter of the places at most per destination, and one notice in flight per person there.
      const started = Date.now();
      for (const id of fastSessions) expect(await close(box, root, id)).to.equal(200);
      await eventually('the fast receiver told', async () => fast.told.length === 4, 10_000);
      expect(Date.now() - started, 'the fast receiver is not held by the slow one').to.be.below(5000);
      expect(fast.told.map((t) => t.sid)).to.deep.equal(['f-0', 'f-1', 'f-2', 'f-3']);
      expect(slow.told).to.deep.equal([]);
      slow.mode = 'up';
      await eventually('the slow receiver told, once it answers', async () => slow.told.length === 4, 20_000);
      expect(slow.told.map((t) => t.sid)).to.deep.equal(['s-0', 's-1', 's-2', 's-3']);
    });
  });

  describe('the allow-list and giving up', function () {
    let box: Box;
    let root: string;
    let receiver: LogoutReceiver;

    before(async function () {
      box = await Box.start({ env: QUICK_RETRIES });
      root = await box.rootToken();
      receiver = await LogoutReceiver.start(box, 'app');
    });

    after(async function () {
      await receiver?.down();
      await box?.stop();
    });

    it('never posts to an address the box does not allow, and does once an administrator allows it at runtime', async function () {
      // Written while 127.0.0.1 is not allowed: the client's own checks are its kind's; the send refuses it.
      await allowLoopbackReceivers(box, root);
      await addLogoutClient(box, 'app', receiver.url);
      expect((await box.json('PUT', '/settings/notices', { allowed_addresses: [] }, root)).status).to.equal(200);
      const user = await addPerson(box, root, 'allow@example.com');
      const [session] = await mintSessions(box, user, 'app', ['allow-0']);
      expect(await close(box, root, session!)).to.equal(200);
      await sleep(3000);
      expect(receiver.requests, 'no request reaches a loopback receiver not allowed').to.equal(0);
      const put = await box.json('PUT', '/settings/notices', { allowed_addresses: ['127.0.0.1'] }, root);
      expect(put.status).to.equal(200);
      expect(put.body.allowed_addresses).to.deep.equal(['127.0.0.1/32']);
      expect((await box.json('GET', '/settings/notices', undefined, root)).body.allowed_addresses).to.deep.equal(['127.0.0.1/32']);
      await eventually('told once allowed', async () => receiver.told.length === 1, 15_000);
      expect(receiver.told[0]!.sid).to.equal('allow-0');
    });

    it('refuses an allow-list entry that is not an address, with a 422', async function () {
      const res = await box.json('PUT', '/settings/notices', { allowed_addresses: ['127.0.0.1', 'localhost'] }, root);
      expect(res.status).to.equal(422);
      expect(res.body.errors.allowed_addresses[0]).to.include('"localhost"');
      expect((await box.json('PUT', '/settings/notices', { allowed: ['127.0.0.1'] }, root)).status).to.equal(422);
    });

    it('refuses a range of every address, and keeps who changed the allow-list in the audit trail', async function () {
      for (const everything of ['0.0.0.0/0', '::/0']) {
        const res = await box.json('PUT', '/settings/notices', { allowed_addresses: ['127.0.0.1', everything] }, root);
        expect(res.status, everything).to.equal(422);
        expect(res.body.errors.allowed_addresses[0]).to.include('allows every address');
      }
      const before = (await box.json('GET', '/settings/notices', undefined, root)).body.allowed_addresses;
      const put = await box.json('PUT', '/settings/notices', { allowed_addresses: [...before, '10.96.0.0/12'] }, root);
      expect(put.status, put.text).to.equal(200);
      const changed = await eventually(
        'the change in the audit trail',
        async () => (await box.json('GET', '/AuditEvent?event=settings_changed', undefined, root)).body.entry?.[0]?.resource,
        15_000,
      );
      expect(changed.detail).to.deep.include({ event: 'settings_changed', setting: 'notices' });
      expect(changed.detail.changes.allowed_addresses).to.deep.equal({ from: before, to: [...before, '10.96.0.0/12'] });
      expect(changed.detail.by).to.have.property('client');
      expect((await box.json('PUT', '/settings/notices', { allowed_addresses: before }, root)).status).to.equal(200);
    });

    it('gives up a notice its destination refuses, with an audit event naming kind and destination only', async function () {
      const user = await addPerson(box, root, 'given-up@example.com');
      const [session] = await mintSessions(box, user, 'app', ['given-up-0']);
      receiver.mode = 'refuse';
      expect(await close(box, root, session!)).to.equal(200);
      await eventually('an attempt refused', async () => receiver.requests >= 2, 15_000);
      // The client no longer asks for logout tokens: its kind refuses the notice (NoticeRefused).
      const token = await box.rootToken();
      const client = await box.json('GET', '/Client/app', undefined, token);
      const { backchannel_logout_uri: _gone, ...rest } = client.body;
      expect((await box.json('PUT', '/Client/app', rest, token)).status).to.equal(200);
      const event = await eventually(
        'the give-up in the audit trail',
        async () => (await box.json('GET', '/AuditEvent?event=notice', undefined, token)).body.entry?.[0]?.resource,
        15_000,
      );
      expect(event.action).to.equal('given-up');
      expect(event.outcome).to.equal('failure');
      expect(event.detail).to.include({ event: 'notice', action: 'given-up', kind: 'backchannel', destination: 'app' });
      expect(JSON.stringify(event.detail)).to.not.include('given-up-0'); // never the payload
      const metrics = await box.metrics();
      expect(metrics).to.match(/boxauth_notices_total\{[^}]*result="given_up"[^}]*\} 1/);
    });
  });

  describe('the primary PostgreSQL killed mid-send', function () {
    let db: ReplicatedPostgres;
    let a: Box;
    let b: Box;
    let receiver: LogoutReceiver;

    before(async function () {
      db = await ReplicatedPostgres.start({ synchronous: true });
      a = await Box.start({ databaseUrl: db.url(), env: QUICK_RETRIES });
      b = await a.startAnother(QUICK_RETRIES);
      receiver = await LogoutReceiver.start(a, 'app');
    });

    after(async function () {
      await receiver?.down();
      await b?.stop();
      await a?.stop();
      await db?.stop();
    });

    it('loses no notice of a close the box acknowledged', async function () {
      const root = await a.rootToken();
      await allowLoopbackReceivers(a, root);
      await addLogoutClient(a, 'app', receiver.url);
      const user = await addPerson(a, root, 'failover@example.com');
      const sids = Array.from({ length: 60 }, (_, i) => `fo-${i}`);
      const sessions = await mintSessions(a, user, 'app', sids, db.primary.url());
      receiver.delayMs = 150; // sends are in flight when the primary dies
      const acknowledged: string[] = [];
      let killed = false;
      let promoted = false;
      // Closes from both processes, each tried until the box acknowledges it (a 503 while no host takes writes).
      const closing = (async () => {
        for (const [i, id] of sessions.entries()) {
          const box = i % 2 ? b : a;
          for (;;) {
            const token = await box.rootToken().catch(() => undefined);
            const status = token ? await close(box, token, id).catch(() => 0) : 0;
            if (status === 200) break;
            expect([0, 503], `a close answered ${status}`).to.include(status);
            await sleep(100);
          }
          acknowledged.push(sids[i]!);
        }
      })();
      await eventually('a third closed and some told', async () => acknowledged.length >= 20 && receiver.told.length >= 5, 30_000, 20);
      await db.primary.kill();
      killed = true;
      await sleep(1500);
      await db.standby.promote();
      promoted = true;
      await closing;
      expect(killed && promoted).to.equal(true);
      await eventually(
        'every acknowledged close told',
        async () => acknowledged.every((sid) => receiver.told.some((t) => t.sid === sid)),
        60_000,
      );
      expect(receiver.wrong).to.deep.equal([]);
      expect(new Set(receiver.told.map((t) => t.sid))).to.deep.equal(new Set(sids));
      // At least once: a second send only of a notice whose removal the failover lost after its receiver answered.
      const twice = receiver.told.length - sids.length;
      expect(twice, 'notices sent twice').to.be.at.most(5);
    });
  });

  describe('the delivery latency, from close to receipt', function () {
    let box: Box;
    let receiver: LogoutReceiver;

    before(async function () {
      box = await Box.start();
      receiver = await LogoutReceiver.start(box, 'app');
    });

    after(async function () {
      await receiver?.down();
      await box?.stop();
    });

    // NOTICE_LATENCY_CLOSES (300) closes by NOTICE_LATENCY_AT_ONCE (4) administrators at once, each
    // closing one session of their own person after another, all at one relying party: its notices
    // about one person go one at a time, in order; about different people, a few at once. Printed,
    // not asserted: speed is `make bench`'s to judge, and this is the figure of the guide.
    it('is measured over a few hundred closes (p50, p99 printed)', async function () {
      const root = await box.rootToken();
      await allowLoopbackReceivers(box, root);
      await addLogoutClient(box, 'app', receiver.url);
      const CLOSES = Number(process.env.NOTICE_LATENCY_CLOSES ?? 300);
      const AT_ONCE = Number(process.env.NOTICE_LATENCY_AT_ONCE ?? 4);
      const people = await Promise.all(Array.from({ length: AT_ONCE }, (_, k) => addPerson(box, root, `latency-${k}@example.com`)));
      const sids = Array.from({ length: CLOSES }, (_, i) => `lat-${i}`);
      const sessions = new Map<string, string>();
      for (const [k, person] of people.entries()) {
        const mine = sids.filter((_, i) => i % AT_ONCE === k);
        (await mintSessions(box, person, 'app', mine)).forEach((id, i) => sessions.set(mine[i]!, id));
      }
      const closedAt = new Map<string, number>();
      // AT_ONCE administrators closing one session after another, each of their own person.
      await Promise.all(
        people.map(async (_, k) => {
          for (const [i, sid] of sids.entries()) {
            if (i % AT_ONCE !== k) continue;
            closedAt.set(sid, Date.now());
            expect(await close(box, root, sessions.get(sid)!)).to.equal(200);
          }
        }),
      );
      await eventually('every close told', async () => receiver.told.length >= CLOSES, 60_000);
      const latencies = receiver.told.map((t) => t.at - closedAt.get(t.sid!)!).sort((x, y) => x - y);
      const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]!;
      console.log(
        `      delivery latency, close to receipt, ${CLOSES} closes (${AT_ONCE} at once, one relying party): ` +
          `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${latencies.at(-1)} ms`,
      );
      expect(receiver.wrong).to.deep.equal([]);
    });
  });
});
