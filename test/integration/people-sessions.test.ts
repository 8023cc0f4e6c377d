// The administrator's side of people's sessions and addresses over the REST API: a person's
// signed-in browsers and grants listed and ended (all, one browser, one grant), the box's
// lists with their filters, the guard on every route, and the address rule (a new address is
// unverified unless vouched for; links void; every change and vouching audited).
import { expect } from 'chai';
import { createPool, type Pool } from '../../api/db/pool.js';
import { ADMIN_CLIENT_ID } from '../../api/reserved.js';
import type { Audit, AuditEvent } from '../../api/audit.js';
import { RecordCache } from '../../api/cache/record-cache.js';
import type { ChangeFeed } from '../../api/db/notify.js';
import { changeAccount, type AccountServices } from '../../api/people/accounts.js';
import { insertLink } from '../../api/store/account-links.js';
import type { SessionRow } from '../../api/store/sessions.js';
import type { PrincipalUser } from '../../api/types.js';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { userToken } from '../support/user-token.js';

const REDIRECT = 'https://app.example/cb';

describe("administrators and people's sessions", function () {
  let box: Box;
  let root: string;
  let pool: Pool;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    pool = createPool(box.databaseUrl!, 3);
    for (const id of ['app', 'other-app'])
      await box.addClient(
        id,
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
        },
        { secret: `${id}-secret-123`, policy: false },
      );
  });
  after(async function () {
    await pool?.end();
    await box?.stop();
  });

  let people = 0;
  async function person(prefix = 'person'): Promise<{ id: number; email: string }> {
    const email = `${prefix}-${++people}@example.com`;
    const res = await box.json('POST', '/users', { email, password: 'a-good-password' }, root);
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }

  const authorizePath = (client: string): string =>
    `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: REDIRECT })}`;

  /** A signed-in browser and a grant it obtained from `client`. */
  async function signedIn(email: string, client = 'app'): Promise<{ browser: FormAgent; accessToken: string; refreshToken: string }> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'a-good-password')).status).to.equal(303);
    return { browser, ...(await grant(browser, client)) };
  }

  async function grant(browser: FormAgent, client: string): Promise<{ accessToken: string; refreshToken: string }> {
    const authorized = await browser.get(authorizePath(client));
    expect(authorized.status, authorized.text).to.equal(302);
    const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
    const granted = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { Authorization: basic(client, `${client}-secret-123`) },
    );
    expect(granted.status, granted.text).to.equal(200);
    return { accessToken: granted.body.access_token, refreshToken: granted.body.refresh_token };
  }

  const refreshes = async (refreshToken: string, client = 'app'): Promise<boolean> =>
    (
      await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { Authorization: basic(client, `${client}-secret-123`) },
      )
    ).status === 200;
  /** Signed in: the authorization endpoint redirects with a code rather than showing the sign-in page. */
  const stillSignedIn = async (browser: FormAgent): Promise<boolean> => (await browser.get(authorizePath('app'))).status === 302;

  async function sessionsOf(id: number): Promise<{ browsers: any[]; grants: any[] }> {
    const res = await box.json('GET', `/users/${id}/sessions`, undefined, root);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }

  it("lists a person's signed-in browsers and grants: since when, from where, which factors, which client", async function () {
    const { id, email } = await person();
    await signedIn(email);
    const { browsers, grants } = await sessionsOf(id);
    expect(browsers).to.have.length(1);
    expect(browsers[0]).to.have.all.keys('sid', 'since', 'expires_at', 'amr', 'address', 'user_agent');
    expect(browsers[0].amr).to.deep.equal(['pwd']);
    expect(browsers[0].address).to.match(/127\.0\.0\.1|::1/);
    expect(new Date(browsers[0].since).getTime()).to.be.closeTo(Date.now(), 60_000);
    expect(grants).to.have.length(1);
    expect(grants[0]).to.have.all.keys('id', 'client', 'since', 'last_used', 'scope', 'amr', 'sid', 'address', 'agent');
    expect(grants[0].agent, 'a client the administrator registered is no agent').to.equal(null);
    expect(grants[0]).to.include({ client: 'app', sid: browsers[0].sid, address: browsers[0].address });
    expect(grants[0].amr).to.deep.equal(['pwd']);
    expect(JSON.stringify({ browsers, grants })).not.to.match(/token|hash/i);
  });

  it('ends one signed-in browser and what was issued through it, and nothing else of the person', async function () {
    const { id, email } = await person();
    const ending = await signedIn(email);
    const sid = (await sessionsOf(id)).browsers[0].sid as string;
    const staying = await signedIn(email);
    const res = await box.json('DELETE', `/users/${id}/sessions/${sid}`, undefined, root);
    expect(res.status, res.text).to.equal(204);
    expect(await stillSignedIn(ending.browser)).to.equal(false);
    expect(await refreshes(ending.refreshToken)).to.equal(false);
    expect(await stillSignedIn(staying.browser)).to.equal(true);
    expect(await refreshes(staying.refreshToken)).to.equal(true);
    expect((await sessionsOf(id)).browsers.map((b) => b.sid)).not.to.include(sid);
    await eventually('the close in the audit log', async () =>
      box.logs.some((l) => l.includes('"event":"session_closed"') && l.includes('"how":"api"')),
    );
    // Again: it is gone.
    expect((await box.json('DELETE', `/users/${id}/sessions/${sid}`, undefined, root)).status).to.equal(404);
  });

  it('ends one grant whole (its refresh token too) and leaves the browser signed in', async function () {
    const { id, email } = await person();
    const { browser, accessToken, refreshToken } = await signedIn(email);
    const family = (await sessionsOf(id)).grants[0].id as string;
    // A refresh first: the grant is its whole family, not the session the refresh made.
    expect(await refreshes(refreshToken)).to.equal(true);
    const res = await box.json('DELETE', `/users/${id}/grants/${family}`, undefined, root);
    expect(res.status, res.text).to.equal(204);
    expect(await refreshes(refreshToken)).to.equal(false);
    const introspected = await box.form('/auth/introspect', { token: accessToken }, { Authorization: basic('app', 'app-secret-123') });
    expect(introspected.body.active).to.equal(false);
    expect((await sessionsOf(id)).grants).to.deep.equal([]);
    expect(await stillSignedIn(browser)).to.equal(true);
    expect((await box.json('DELETE', `/users/${id}/grants/${family}`, undefined, root)).status).to.equal(404);
  });

  it("ends all of a person's sessions, and nobody else's", async function () {
    const { id, email } = await person();
    const other = await person();
    const mine = [await signedIn(email), await signedIn(email, 'other-app')];
    const theirs = await signedIn(other.email);
    const res = await box.json('DELETE', `/users/${id}/sessions`, undefined, root);
    expect(res.status, res.text).to.equal(204);
    for (const s of mine) {
      expect(await stillSignedIn(s.browser)).to.equal(false);
    }
    expect(await refreshes(mine[0]!.refreshToken)).to.equal(false);
    expect(await refreshes(mine[1]!.refreshToken, 'other-app')).to.equal(false);
    expect(await sessionsOf(id)).to.deep.equal({ browsers: [], grants: [] });
    expect(await stillSignedIn(theirs.browser)).to.equal(true);
    expect(await refreshes(theirs.refreshToken)).to.equal(true);
    expect((await box.json('DELETE', '/users/999999/sessions', undefined, root)).status).to.equal(404);
  });

  it("one person's id never ends another's browser or grant", async function () {
    const a = await person();
    const b = await person();
    const theirs = await signedIn(b.email);
    const { browsers, grants } = await sessionsOf(b.id);
    expect((await box.json('DELETE', `/users/${a.id}/sessions/${browsers[0].sid}`, undefined, root)).status).to.equal(404);
    expect((await box.json('DELETE', `/users/${a.id}/grants/${grants[0].id}`, undefined, root)).status).to.equal(404);
    expect(await stillSignedIn(theirs.browser)).to.equal(true);
    expect(await refreshes(theirs.refreshToken)).to.equal(true);
    // Not a UUID: 404 before any SQL (no 500 from a cast).
    for (const bad of ['x', "1' OR '1'='1", '00000000-0000-0000-0000-00000000000g'])
      expect((await box.json('DELETE', `/users/${a.id}/sessions/${encodeURIComponent(bad)}`, undefined, root)).status).to.equal(404);
    expect((await box.json('DELETE', `/users/${a.id}/grants/nope`, undefined, root)).status).to.equal(404);
  });

  it("lists the box's grants and signed-in browsers, filtered by part of an email and by client, with X-Total-Count", async function () {
    const carol = await person('carol');
    const dave = await person('dave');
    await signedIn(carol.email);
    const daves = await signedIn(dave.email);
    await grant(daves.browser, 'other-app');

    const all = await box.json('GET', '/grants', undefined, root);
    expect(all.status, all.text).to.equal(200);
    expect(Number(all.headers.get('x-total-count'))).to.be.at.least(3);
    const byDave = await box.json('GET', `/grants?q=${encodeURIComponent('DAVE-')}`, undefined, root);
    expect(byDave.body.map((g: { email: string; client: string }) => `${g.email} ${g.client}`).sort()).to.deep.equal([
      `${dave.email} app`,
      `${dave.email} other-app`,
    ]);
    expect(byDave.headers.get('x-total-count')).to.equal('2');
    expect(byDave.body[0]).to.include.keys('id', 'user', 'email', 'client', 'since', 'last_used', 'amr', 'address', 'sid');
    const daveOther = await box.json('GET', `/grants?q=dave-&client=other-app`, undefined, root);
    expect(daveOther.body.map((g: { client: string }) => g.client)).to.deep.equal(['other-app']);
    const paged = await box.json('GET', `/grants?q=dave-&_count=1&_page=2`, undefined, root);
    expect(paged.body).to.have.length(1);
    expect(paged.headers.get('x-total-count')).to.equal('2');

    const signIns = await box.json('GET', `/sign-ins?q=carol-`, undefined, root);
    expect(signIns.status, signIns.text).to.equal(200);
    expect(signIns.body.map((b: { email: string }) => b.email)).to.deep.equal([carol.email]);
    expect(signIns.body[0]).to.include.keys('sid', 'user', 'email', 'since', 'expires_at', 'amr', 'address', 'user_agent');
    expect((await box.json('GET', `/sign-ins?q=nobody-at-all`, undefined, root)).body).to.deep.equal([]);
  });

  it('refuses bad list parameters with a 400 that says what is wrong', async function () {
    const cases: [string, RegExp][] = [
      ['/grants?_count=0', /_count/],
      ['/grants?_count=abc', /_count/],
      ['/grants?_page=-1', /_page/],
      ['/grants?sort=email', /unknown parameter .sort./],
      ['/grants?q=a&q=b', /q must be given once/],
      [`/grants?q=${'a'.repeat(300)}`, /q must be at most/],
      ['/grants?q=%00', /q.*holds/],
      ['/grants?client=a%20b', /client/],
      ['/sign-ins?client=app', /unknown parameter .client./],
      ['/sign-ins?q=a&q=b', /q must be given once/],
    ];
    for (const [path, message] of cases) {
      const res = await box.json('GET', path, undefined, root);
      expect(res.status, `${path}: ${res.text}`).to.equal(400);
      expect(res.body.error_description, path).to.match(message);
    }
  });

  it('refuses every new route to a client without a policy and to a person acting for themselves', async function () {
    const { id, email } = await person();
    const them = await signedIn(email);
    const { browsers, grants } = await sessionsOf(id);
    await box.addClient('naive', {}, { secret: 'naive-secret-123', policy: false });
    const naive = (
      await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('naive', 'naive-secret-123') })
    ).body.access_token as string;
    // The person's own tokens: through the admin UI's client (it acts within the person's own policies), and an app's.
    const own = [await userToken(box, id, ADMIN_CLIENT_ID), them.accessToken];
    const routes: [string, string][] = [
      ['GET', `/users/${id}/sessions`],
      ['DELETE', `/users/${id}/sessions/${browsers[0].sid}`],
      ['DELETE', `/users/${id}/grants/${grants[0].id}`],
      ['DELETE', `/users/${id}/sessions`],
      ['GET', '/grants'],
      ['GET', '/sign-ins'],
    ];
    for (const token of [naive, ...own])
      for (const [method, path] of routes) {
        const res = await box.json(method, path, undefined, token);
        expect(res.status, `${method} ${path}: ${res.text}`).to.equal(403);
      }
    expect(await stillSignedIn(them.browser)).to.equal(true);
    expect(await refreshes(them.refreshToken)).to.equal(true);
  });

  it('ending all sessions while the person refreshes in parallel leaves no token alive', async function () {
    const { id, email } = await person();
    const { refreshToken } = await signedIn(email);
    const racing = Array.from({ length: 20 }, () =>
      box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { Authorization: basic('app', 'app-secret-123') },
      ),
    );
    const ended = box.json('DELETE', `/users/${id}/sessions`, undefined, root);
    const results = await Promise.all(racing);
    expect((await ended).status).to.equal(204);
    for (const r of results.filter((r) => r.status === 200)) {
      const introspected = await box.form(
        '/auth/introspect',
        { token: r.body.access_token },
        { Authorization: basic('app', 'app-secret-123') },
      );
      expect(introspected.body.active, 'a token refreshed during the close outlived it').to.equal(false);
    }
    expect(await refreshes(refreshToken)).to.equal(false);
    expect(await sessionsOf(id)).to.deep.equal({ browsers: [], grants: [] });
  });

  describe('addresses: verification state and vouching', function () {
    let someone = 0;
    const address = (): string => `someone-${++someone}@example.com`;
    const accountEvent = (id: number, action: string): Promise<boolean> =>
      eventually(`${action} of user ${id} in the audit log`, async () =>
        box.logs.some((l) => l.includes('"event":"account"') && l.includes(`"action":"${action}"`) && l.includes(`"user":"${id}"`)),
      );
    const hasEvent = (id: number, action: string): boolean =>
      box.logs.some((l) => l.includes('"event":"account"') && l.includes(`"action":"${action}"`) && l.includes(`"user":"${id}"`));
    const links = async (id: number): Promise<number> =>
      (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM account_links WHERE user_id = $1', [id])).rows[0]!.n;
    const outbox = async (id: number): Promise<number> =>
      (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_outbox WHERE user_id = $1', [id])).rows[0]!.n;

    it('shows the verification state; an address an administrator enters is vouched for, and the audit says so', async function () {
      const vouched = await box.json('POST', '/users', { email: address(), password: 'a-good-password' }, root);
      expect(vouched.status, vouched.text).to.equal(201);
      expect(vouched.body).to.include({ email_verified: true, must_verify_email: false });
      await accountEvent(vouched.body.id, 'email-vouched');
      const read = await box.json('GET', `/users/${vouched.body.id}`, undefined, root);
      expect(read.body).to.include({ email_verified: true, must_verify_email: false });
      expect((await box.json('GET', `/users?id=${vouched.body.id}`, undefined, root)).body[0]).to.include({ must_verify_email: false });

      const plain = await box.json('POST', '/users', { email: address(), password: 'a-good-password', email_verified: false }, root);
      expect(plain.body.email_verified).to.equal(false);
      await new Promise((r) => setTimeout(r, 200));
      expect(hasEvent(plain.body.id, 'email-vouched')).to.equal(false);
    });

    it('a new address is unverified, voids the outstanding links, and is audited; no mail without mail configured', async function () {
      const created = await box.json('POST', '/users', { email: address(), password: 'a-good-password' }, root);
      const id = created.body.id as number;
      await insertLink(pool, {
        tokenHash: Buffer.alloc(32, id % 256),
        purpose: 'verify',
        userId: id,
        email: created.body.email,
      });
      expect(await links(id)).to.equal(1);

      const newAddress = address();
      const changed = await box.json('PUT', `/users/${id}`, { email: newAddress }, root);
      expect(changed.status, changed.text).to.equal(200);
      expect(changed.body).to.include({ email: newAddress, email_verified: false });
      expect(await links(id)).to.equal(0);
      expect(await outbox(id)).to.equal(0);
      await accountEvent(id, 'email-changed');
      expect(box.logs.some((l) => l.includes('"action":"email-changed"') && l.includes(`"email":"${newAddress}"`))).to.equal(true);

      // The same address in other case is not a new one: nothing to verify again.
      const vouched = await box.json('PUT', `/users/${id}`, { email_verified: true }, root);
      expect(vouched.body.email_verified).to.equal(true);
      const recased = await box.json('PUT', `/users/${id}`, { email: newAddress.toUpperCase() }, root);
      expect(recased.body).to.include({ email: newAddress.toUpperCase(), email_verified: true });
    });

    it('a new address the same change vouches for stays verified, and the vouching is audited', async function () {
      const created = await box.json('POST', '/users', { email: address(), password: 'a-good-password', email_verified: false }, root);
      const id = created.body.id as number;
      const changed = await box.json('PUT', `/users/${id}`, { email: address(), email_verified: true }, root);
      expect(changed.body.email_verified).to.equal(true);
      await accountEvent(id, 'email-changed');
      await accountEvent(id, 'email-vouched');
    });

    it('vouching clears must_verify_email; unvouching is audited', async function () {
      const created = await box.json('POST', '/users', { email: address(), password: 'a-good-password', email_verified: false }, root);
      const id = created.body.id as number;
      // As a sign-up where a proven address comes first leaves it (the sign-up pages are another part's).
      await pool.query('UPDATE users SET must_verify_email = true WHERE id = $1', [id]);
      expect((await box.json('GET', `/users/${id}`, undefined, root)).body).to.include({ email_verified: false, must_verify_email: true });
      const vouched = await box.json('PUT', `/users/${id}`, { email_verified: true }, root);
      expect(vouched.body).to.include({ email_verified: true, must_verify_email: false });
      await accountEvent(id, 'email-vouched');

      const unvouched = await box.json('PUT', `/users/${id}`, { email_verified: false }, root);
      expect(unvouched.body).to.include({ email_verified: false, must_verify_email: false });
      await accountEvent(id, 'email-unvouched');
      // GET → PUT round-trips with the field in it; a wrong type is a 422 like any field's.
      const roundTrip = await box.json('PUT', `/users/${id}`, (({ password: _p, ...rest }) => rest)(unvouched.body), root);
      expect(roundTrip.status, roundTrip.text).to.equal(200);
      const bad = await box.json('PUT', `/users/${id}`, { must_verify_email: 'no' }, root);
      expect(bad.status).to.equal(422);
      expect(bad.body.errors).to.have.key('must_verify_email');
    });

    /**
     * With mail configured (the box's SMTP settings are the mail part's; until they land, the
     * rule is driven here with the services of a box that has them): a new address gets a
     * verification mail in the outbox, in the change's transaction; a vouched one does not.
     */
    it('with mail configured, a new address unvouched for puts a verify-email mail in the outbox', async function () {
      const events: AuditEvent[] = [];
      const feed = { onChange: () => undefined, onReset: () => undefined } as unknown as ChangeFeed;
      const svc: AccountServices = {
        config: { smtp: { url: 'smtp://localhost:2525', from: 'boxauth <no-reply@example.com>', leaseSeconds: 60, signInCodes: 'off' } },
        pool,
        sessions: new RecordCache<SessionRow>(feed, 'sessions', () => Promise.resolve(undefined)),
        users: new RecordCache<PrincipalUser>(feed, 'users', () => Promise.resolve(undefined)),
        // What the change records, in its transaction or not: the account events are what this test reads.
        audit: {
          record: (e: AuditEvent) => events.push(e),
          recordIn: async (_tx: unknown, e: AuditEvent) => void events.push(e),
        } as unknown as Audit,
        // No Hook is asked about anyone here.
        hooks: { asksAt: () => Promise.resolve(false), ask: () => Promise.reject(new Error('no hook is asked here')) },
      };
      const created = await box.json('POST', '/users', { email: address(), password: 'a-good-password' }, root);
      const id = created.body.id as number;

      // The person's own change (the account page): no word on verification, so it is unverified.
      const newAddress = address();
      const changed = await changeAccount(svc, id, { email: newAddress }, { user: String(id) });
      expect(changed).to.include({ email: newAddress, emailVerified: false });
      const { rows } = await pool.query<{ kind: string; address: string; user_id: number }>(
        'SELECT kind, address, user_id::int AS user_id FROM mail_outbox WHERE user_id = $1',
        [id],
      );
      // A link to the new address, and word of the change to the old one.
      expect(rows).to.have.deep.members([
        { kind: 'verify-email', address: newAddress, user_id: id },
        { kind: 'email-changed', address: created.body.email, user_id: id },
      ]);
      expect(events.filter((e) => e.event === 'account')).to.deep.equal([
        { event: 'account', action: 'email-changed', user: String(id), email: newAddress, by: { user: String(id) } },
      ]);

      // An administrator's change that vouches: no link to send.
      const vouched = await changeAccount(svc, id, { email: address(), emailVerified: true }, { client: 'root' });
      expect(vouched!.emailVerified).to.equal(true);
      expect(await outbox(id), 'no link for a vouched address; the old one told').to.equal(3);
      expect(
        events
          .filter((e) => e.event === 'account')
          .slice(1)
          .map((e) => 'action' in e && e.action),
      ).to.deep.equal(['email-changed', 'email-vouched']);
      // A change that leaves the address as it is sends nothing.
      await changeAccount(svc, id, { data: '{}' }, { client: 'root' });
      expect(await outbox(id)).to.equal(3);
    });
  });
});
