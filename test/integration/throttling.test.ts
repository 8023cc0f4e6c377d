// Throttles that hold under parallel attack: sign-in guesses counted before the
// check, X-Forwarded-For believed only from trusted proxies, failed client
// authentication limited per client id and per address, sign-ins begun at upstream
// providers bounded per address, a bounded argon2 queue in which people signing in
// go ahead of a flood of client secrets, and which a request whose client left no longer waits in.
import net from 'node:net';
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

describe('throttling', function () {
  this.timeout(120_000);

  describe('sign-in', function () {
    let box: Box;
    let root: string;
    before(async function () {
      box = await Box.start({ env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '5' } });
      root = await box.rootToken();
      for (const email of ['target@example.com', 'other@example.com']) {
        expect((await box.json('POST', '/users', { email, password: 'right-password-1' }, root)).status).to.equal(201);
      }
    });
    after(async function () {
      await box?.stop();
    });

    /** Sign-in attempts sent at once from one browser's form. */
    async function guesses(
      email: string,
      passwords: string[],
      headers: (i: number) => Record<string, string> = () => ({}),
    ): Promise<number[]> {
      const post = await new FormAgent(box).signInPoster();
      return Promise.all(passwords.map(async (password, i) => (await post(email, password, headers(i))).status));
    }

    it('150 parallel guesses get at most 5 checked failures, and the right password among them does not slip through', async function () {
      const passwords = times(150, (i) => (i === 120 ? 'right-password-1' : `wrong-${i}`));
      const statuses = await guesses('target@example.com', passwords);
      const checked = statuses.filter((s) => s === 401).length;
      expect(checked, JSON.stringify(statuses)).to.be.at.most(5);
      expect(statuses.filter((s) => s === 429).length, JSON.stringify(statuses)).to.be.at.least(145 - 1);
      expect(statuses.every((s) => [401, 429, 303].includes(s))).to.equal(true);
      // Locked now: even the right password waits for the window to end.
      expect(await guesses('target@example.com', ['right-password-1'])).to.deep.equal([429]);
    });

    it('believes no X-Forwarded-For by default: an attacker cannot pick a new address per guess', async function () {
      // The address allows 4 × 5 failures; 25 guesses at other accounts, each "from" another address.
      const statuses = await guesses(
        'nobody@example.com',
        times(25, (i) => `wrong-${i}`),
        (i) => ({ 'X-Forwarded-For': `203.0.113.${i}` }),
      );
      expect(statuses.filter((s) => s === 401).length).to.be.at.most(5); // the account's own limit comes first
      const others = await Promise.all(
        times(20, (i) => guesses(`someone-${i}@example.com`, ['wrong'], () => ({ 'X-Forwarded-For': `198.51.100.${i}` }))),
      );
      expect(others.flat()).to.include(429); // the loopback address is over its limit, whatever the header says
    });
  });

  describe('trusted proxies', function () {
    let box: Box;
    boxForSuite((b) => (box = b), { env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1', BOXAUTH_TRUSTED_PROXIES: '127.0.0.1/32, ::1' } });

    it('believes X-Forwarded-For from BOXAUTH_TRUSTED_PROXIES: addresses behind the proxy are throttled apart', async function () {
      const post = await new FormAgent(box).signInPoster();
      const attempt = async (email: string, forwardedFor: string): Promise<number> =>
        (await post(email, 'wrong-password', { 'X-Forwarded-For': forwardedFor })).status;
      // One address: 4 × 1 failures, then 429 (each try at another account, so only the address counts).
      const one = [];
      for (let i = 0; i < 5; i++) one.push(await attempt(`a${i}@example.com`, '203.0.113.7'));
      expect(one).to.deep.equal([401, 401, 401, 401, 429]);
      // Another address behind the same proxy is not affected; a spoofed hop before it is ignored.
      expect(await attempt('b@example.com', '203.0.113.8')).to.equal(401);
      expect(await attempt('c@example.com', '198.51.100.1, 203.0.113.7')).to.equal(429);
    });
  });

  describe('sign-ins begun at upstream providers', function () {
    let box: Box;
    let root: string;
    boxForSuite((b, r) => ([box, root] = [b, r]), {
      env: { BOXAUTH_UPSTREAM_STARTS_PER_ADDRESS: '5', BOXAUTH_TRUSTED_PROXIES: '127.0.0.1/32, ::1' },
    });

    before(async function () {
      const provider = {
        type: 'oauth2',
        displayName: 'Elsewhere',
        oauth2: {
          authorizationUrl: 'https://idp.example/authorize',
          tokenUrl: 'https://idp.example/token',
          userinfoUrl: 'https://idp.example/userinfo',
          clientId: 'box',
        },
        secret: 'elsewhere-secret-1',
      };
      const res = await box.json('PUT', '/IdentityProvider/elsewhere', provider, root);
      expect(res.status, res.text).to.equal(201);
    });

    /** The sign-in page's button for the provider, pressed `n` times at once from `address` (one page load: its cookie and CSRF token). */
    async function starts(n: number, address: string): Promise<JsonResponse[]> {
      const browser = new FormAgent(box);
      const page = await browser.get('/auth/sign-in');
      const form = new URLSearchParams({ ...hiddenFields(page.text), return_to: '/auth/signed-in' }).toString();
      return Promise.all(
        times(n, () =>
          box.request('POST', '/auth/upstream/elsewhere/start', {
            headers: { ...browser.cookieHeader(), 'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': address },
            body: form,
          }),
        ),
      );
    }

    const waiting = async (): Promise<number> => {
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM upstream_sign_ins')).rows[0]!.n;
      } finally {
        await db.end();
      }
    };

    it('40 at once from one address: 5 go to the provider, the rest 429 with Retry-After and why; 5 rows wait', async function () {
      const answers = await starts(40, '203.0.113.20');
      const begun = answers.filter((r) => r.status === 303);
      expect(begun.length, answers.map((r) => r.status).join()).to.equal(5);
      expect(new URL(begun[0]!.headers.get('location')!).origin).to.equal('https://idp.example');
      const refused = answers.filter((r) => r.status === 429);
      expect(refused.length).to.equal(35);
      expect(Number(refused[0]!.headers.get('retry-after'))).to.be.within(1, 600);
      expect(refused[0]!.text).to.include('Too many sign-ins were begun from your network address. Try again in 10 minutes.');
      expect(await waiting()).to.equal(5);
      // Another address is its own: it begins.
      expect((await starts(1, '203.0.113.21')).map((r) => r.status)).to.deep.equal([303]);
      expect(await waiting()).to.equal(6);
    });
  });

  describe('client authentication', function () {
    let box: Box;
    boxForSuite((b) => (box = b), { env: { BOXAUTH_CLIENT_AUTH_MAX_FAILURES: '3', BOXAUTH_CLIENT_AUTH_WINDOW_SECONDS: '600' } });

    const token = (id: string, secret: string) =>
      box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });

    it('after 3 failures for a client id: 429 with Retry-After, while its real owner keeps working', async function () {
      const { secret } = await box.addClient('victim', {}, { policy: false });
      expect((await token('victim', secret)).status).to.equal(200); // verified once: remembered by this process
      const statuses = await Promise.all(times(20, (i) => token('victim', `guess-${i}-xxxx`).then((r) => r.status)));
      expect(statuses.filter((s) => s === 401).length, JSON.stringify(statuses)).to.be.at.most(3);
      const throttled = await token('victim', 'one-more-guess');
      expect(throttled.status).to.equal(429);
      expect(throttled.body.error).to.equal('too_many_requests');
      expect(Number(throttled.headers.get('retry-after'))).to.be.within(1, 600);
      expect((await token('victim', secret)).status).to.equal(200);
    });

    it('unknown client ids are throttled like wrong secrets, and per address across ids', async function () {
      const statuses = await Promise.all(times(20, (i) => token(`nobody-${i}`, 'some-secret-1').then((r) => r.status)));
      // Per address: 4 × 3 checked failures at most; the rest 429.
      expect(statuses.filter((s) => s === 401).length, JSON.stringify(statuses)).to.be.at.most(12);
      expect(statuses).to.include(429);
      const unknown = await token('nobody-else', 'x-secret-1');
      expect(unknown.status).to.equal(429);
    });
  });

  describe('the argon2 queue', function () {
    let box: Box;
    before(async function () {
      box = await Box.start({ env: { BOXAUTH_CLIENT_AUTH_MAX_FAILURES: '100000', BOXAUTH_ARGON2_MAX_WAITING: '8' } });
      const root = await box.rootToken();
      expect((await box.json('POST', '/users', { email: 'person@example.com', password: 'person-password-1' }, root)).status).to.equal(201);
    });
    after(async function () {
      await box?.stop();
    });

    it('a flood of wrong client secrets gets 503 + Retry-After beyond the queue, and a person signing in goes ahead of it', async function () {
      const post = await new FormAgent(box).signInPoster();
      const order: string[] = [];
      const flood = times(200, (i) =>
        box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', `wrong-${i}-secret`) }).then((r) => {
          order.push(`client:${r.status}`);
          return r;
        }),
      );
      const signIn = post('person@example.com', 'person-password-1').then((r) => {
        order.push(`person:${r.status}`);
        return r;
      });
      const [answers, person] = await Promise.all([Promise.all(flood), signIn]);
      expect(person.status).to.equal(303);
      const busy = answers.filter((r) => r.status === 503);
      expect(busy.length).to.be.above(0);
      expect(busy[0]!.headers.get('retry-after')).to.equal('1');
      expect(busy[0]!.body.error).to.equal('temporarily_unavailable');
      expect(answers.every((r) => r.status === 401 || r.status === 503)).to.equal(true);
      // Checked client secrets still queued when the person was answered: the person did not wait for them.
      const personAt = order.indexOf('person:303');
      expect(order.slice(personAt + 1).filter((o) => o === 'client:401').length).to.be.above(0);
      expect((await box.request('GET', '/healthz')).status).to.equal(200);
    });

    /** Ten POST /users sent by `send` and hung up by the function it returns while six or more wait: the users created. */
    const abandonedWrites = async (name: string, send: (requests: Buffer[]) => () => void): Promise<string[]> => {
      const root = await box.rootToken();
      const writesWaiting = async (): Promise<number> =>
        Number(/^boxauth_argon2_waiting\{lane="write"[^}]*\} (\d+)$/m.exec(await box.metrics())?.[1] ?? NaN);
      // Ten at once: two hash, eight wait (the write lane's bound here).
      const emails = times(10, (i) => `${name}-${i}@example.com`);
      const hangUp = send(
        emails.map((email) => {
          const body = JSON.stringify({ email, password: 'a-good-password-1' });
          return Buffer.from(
            `POST /users HTTP/1.1\r\nHost: ${new URL(box.url).host}\r\nAuthorization: Bearer ${root}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
        }),
      );
      // Six or more still waiting: at most four have begun.
      await eventually('hashes waiting', async () => (await writesWaiting()) >= 6, 30_000, 5);
      hangUp();
      await eventually('the queue emptied', async () => (await writesWaiting()) === 0, 2_000, 5);
      // The next write is not refused for a queue full of work for no one.
      const next = await box.json('POST', '/users', { email: `${name}-stays@example.com`, password: 'a-good-password-1' }, root);
      expect(next.status, next.text).to.equal(201);
      const listed = await box.json('GET', '/users?_count=200', undefined, root);
      return (listed.body as { email: string }[]).map((u) => u.email).filter((email) => emails.includes(email));
    };
    const connect = (): net.Socket => {
      const { hostname, port } = new URL(box.url);
      return net.connect(Number(port), hostname).on('error', () => undefined); // ECONNRESET: we hang up
    };

    it('POST /users whose client leaves while its hash waits creates no one, and gives its place in the queue back', async function () {
      const created = await abandonedWrites('left', (requests) => {
        const connections = requests.map((request) => {
          const connection = connect();
          connection.write(request);
          return connection;
        });
        return () => connections.forEach((c) => c.destroy());
      });
      // Those that had begun hashing when their clients left; never the ones still waiting.
      expect(created.length, created.join(', ')).to.be.at.most(4);
    });

    it('the same, ten requests pipelined on one connection', async function () {
      const created = await abandonedWrites('pipelined', (requests) => {
        const connection = connect();
        connection.write(Buffer.concat(requests));
        return () => connection.destroy();
      });
      expect(created.length, created.join(', ')).to.be.at.most(4);
    });
  });
});
