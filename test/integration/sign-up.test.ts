// Self sign-up (BOXAUTH_REGISTRATION=true) is a door anyone may knock on: each
// knock is an account and an argon2 hash. It is throttled per address and
// box-wide, across the processes of a box, and its hashing waits behind
// everyone else's, so a flood of sign-ups slows only sign-ups.
import { expect } from 'chai';
import pg from 'pg';
import { Box, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { createDatabase } from '../support/postgres.js';

const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const PROXIED = { BOXAUTH_REGISTRATION: 'true', BOXAUTH_TRUSTED_PROXIES: '127.0.0.1/32, ::1' };

describe('sign-up', function () {
  this.timeout(120_000);

  /** Sign-ups sent at once from one page load, each from `address` (through the trusted proxy). */
  async function signUps(box: Box, emails: string[], address: (i: number) => string): Promise<JsonResponse[]> {
    const post = await new FormAgent(box).signUpPoster();
    return Promise.all(emails.map((email, i) => post(email, 'a-good-password-1', { 'X-Forwarded-For': address(i) })));
  }

  function expectThrottled(res: JsonResponse, maxSeconds: number, message: RegExp): void {
    expect(res.status, res.text).to.equal(429);
    expect(Number(res.headers.get('retry-after'))).to.be.within(1, maxSeconds);
    expect(res.headers.get('content-type')).to.match(/text\/html/);
    expect(res.text).to.match(message);
  }

  describe('per address', function () {
    let box: Box;
    // Two processes: the count lives in the database, so the processes share it.
    boxForSuite((b) => (box = b), { env: { ...PROXIED, BOXAUTH_WORKERS: '2', BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '3' } });

    it('an address gets 3 sign-ups in the window, even sent at once; then 429 with Retry-After and a message', async function () {
      const answers = await signUps(
        box,
        times(8, (i) => `burst-${i}@example.com`),
        () => '203.0.113.7',
      );
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 303).length, JSON.stringify(statuses)).to.equal(3);
      expect(statuses.filter((s) => s === 429).length, JSON.stringify(statuses)).to.equal(5);
      expectThrottled(
        answers.find((r) => r.status === 429)!,
        3600,
        /Too many accounts were created from your network/,
      );
      // A refused sign-up made no account: its email is still free, here from another address.
      const refused = answers.findIndex((r) => r.status === 429);
      const [late] = await signUps(box, [`burst-${refused}@example.com`], () => '203.0.113.8');
      expect(late!.status, late!.text).to.equal(303);
    });
  });

  describe('box-wide', function () {
    let box: Box;
    boxForSuite((b) => (box = b), {
      env: {
        ...PROXIED,
        BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '2',
        BOXAUTH_SIGN_UP_MAX_PER_BOX: '5',
        BOXAUTH_SIGN_UP_BOX_WINDOW_SECONDS: '600',
      },
    });

    it('5 sign-ups in the window whatever the addresses; then 429 for an address never seen before', async function () {
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await signUps(box, [`wide-${i}@example.com`], () => `198.51.100.${i}`))[0]!.status);
      expect(statuses).to.deep.equal([303, 303, 303, 303, 303]);
      const [fresh] = await signUps(box, ['wide-late@example.com'], () => '192.0.2.77');
      expectThrottled(fresh!, 600, /Too many people are signing up right now/);
    });
  });

  describe('a flood of sign-ups', function () {
    let box: Box;
    let root: string;
    boxForSuite((b, r) => ([box, root] = [b, r]), {
      // Throttles out of the way: every sign-up of the flood reaches argon2.
      env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '100000', BOXAUTH_SIGN_UP_MAX_PER_BOX: '100000' },
    });

    it("does not hold up a new client's first token, a person signing in, or an admin creating a user", async function () {
      expect((await box.json('POST', '/users', { email: 'person@example.com', password: 'person-password-1' }, root)).status).to.equal(201);
      const { secret } = await box.addClient('newcomer', {}); // its secret has not been checked yet: its first token runs argon2
      const post = await new FormAgent(box).signUpPoster();
      let flooding = true;
      let sent = 0;
      const refusals: JsonResponse[] = [];
      const flooders = times(40, async () => {
        while (flooding) {
          const res = await post(`flood-${sent++}@example.com`, 'a-good-password-1');
          if (res.status !== 303) {
            refusals.push(res);
            await new Promise((r) => setTimeout(r, 50)); // knock again soon
          }
        }
      });
      // The flood is under way once the sign-up lane is full: the box turns sign-ups away as busy.
      await eventually('the flood to fill the sign-up lane (a 503)', async () => refusals.some((r) => r.status === 503), 30_000, 10);

      // The defect is starvation: behind the flood these waited until it ended (or
      // were refused, 503). So the bound is generous: each must be answered while
      // the flood still runs, which it does for up to 30 s.
      const during = async (what: Promise<JsonResponse>): Promise<{ status: number; text: string; inFlood: boolean }> => {
        const res = await what;
        return { status: res.status, text: res.text, inFlood: flooding };
      };
      const stopFlood = setTimeout(() => (flooding = false), 30_000);
      const [token, signIn, created] = await Promise.all([
        during(box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'newcomer', client_secret: secret })),
        during(new FormAgent(box).signIn('person@example.com', 'person-password-1')),
        during(box.json('POST', '/users', { email: 'by-admin@example.com', password: 'admin-made-password-1' }, root)),
      ]);
      flooding = false;
      clearTimeout(stopFlood);
      await Promise.all(flooders);

      expect(token, 'client_credentials').to.include({ status: 200, inFlood: true });
      expect(signIn, 'sign-in').to.include({ status: 303, inFlood: true });
      expect(created, 'POST /users').to.include({ status: 201, inFlood: true });
      // The flood itself was told to come back later, on a page.
      const busy = refusals.find((r) => r.status === 503);
      expect(busy, JSON.stringify(refusals.map((r) => r.status))).to.not.equal(undefined);
      expect(busy!.headers.get('retry-after')).to.equal('1');
      expect(busy!.headers.get('content-type')).to.match(/text\/html/);
      expect(busy!.text).to.include('busy');
    });
  });

  describe('a database that cannot keep up', function () {
    // A managed PostgreSQL often cuts queries short (statement_timeout): under heavy
    // load, a sign-up whose query was cut answered 500. It is the database's state,
    // not the request's fault: 503 with Retry-After, and nothing made.
    let box: Box;
    let database: pg.Client;
    before(async function () {
      const url = await createDatabase('slow');
      database = new pg.Client({ connectionString: url });
      await database.connect();
      await database.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET statement_timeout = '1s'`);
      // Every sign-up gets through the argon2 lane to the database.
      box = await Box.start({
        databaseUrl: url,
        env: { ...PROXIED, BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '100000', BOXAUTH_SIGN_UP_MAX_WAITING: '100' },
      });
    });
    after(async function () {
      await database?.end();
      await box?.stop();
    });

    it('sign-ups sent at once while the users table is held: each a page saying to come back (503), none a 500', async function () {
      const post = await new FormAgent(box).signUpPoster();
      await database.query('BEGIN');
      // Held until every sign-up is answered: each one's query outlasts statement_timeout.
      await database.query('LOCK TABLE users IN EXCLUSIVE MODE');
      let answers: JsonResponse[];
      try {
        answers = await Promise.all(
          times(6, (i) =>
            post(`held-${i}@example.com`, 'a-good-password-1', { Accept: 'text/html', 'X-Forwarded-For': `198.51.100.${i}` }),
          ),
        );
      } finally {
        await database.query('ROLLBACK');
      }
      expect(answers.map((r) => r.status)).to.deep.equal(times(6, () => 503));
      for (const res of answers) {
        expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
        expect(res.headers.get('content-type')).to.match(/text\/html/);
        expect(res.text).to.include('Temporarily unavailable');
      }
      const { rows } = await database.query<{ n: number }>("SELECT count(*)::int AS n FROM users WHERE email LIKE 'held-%'");
      expect(rows[0]!.n).to.equal(0);
      // And once the database keeps up again, the same sign-up works.
      expect((await post('held-0@example.com', 'a-good-password-1')).status).to.equal(303);
    });
  });
});
