// The administrator's side of second factors: a person's factors read over the REST API,
// a reset that removes them, makes the person enrol anew and ends everything they obtained,
// the policies over both, and groups that require a second factor. Factors are put in place
// through api/store/factors.ts (the enrolment pages are another part's).
import { expect } from 'chai';
import { createPool, withTransaction, type Pool } from '../../api/db/pool.js';
import { randomBytes } from 'node:crypto';
import { tokenHash } from '../../api/credentials/tokens.js';
import { createBrowserSession } from '../../api/store/browser-sessions.js';
import { addPasskey, acceptCodeStep, startFactor } from '../../api/store/factors.js';
import { replaceRecoveryCodes } from '../../api/store/recovery-codes.js';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { authorizePath, grantThrough, signedInAt, type SignedIn } from '../support/signed-in.js';
import { appOnAccountPage, totpCode } from '../support/totp.js';

const REDIRECT = 'https://app.example/cb';

describe('administrators and second factors', function () {
  let box: Box;
  let root: string;
  let pool: Pool;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    pool = createPool(box.databaseUrl!, 3);
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
  });
  after(async function () {
    await pool?.end();
    await box?.stop();
  });

  let people = 0;
  async function person(): Promise<{ id: number; email: string }> {
    const email = `person-${++people}@example.com`;
    const res = await box.json('POST', '/users', { email, password: 'a-good-password' }, root);
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }

  /** A passkey, a confirmed TOTP and two recovery codes, as their enrolment would leave them. */
  async function withFactors(userId: number): Promise<void> {
    await addPasskey(pool, userId, {
      name: 'laptop',
      credentialId: Buffer.from(`credential-${userId}`),
      publicKey: Buffer.from('public-key-bytes'),
      signCount: 0,
      transports: ['internal'],
      deviceType: 'multiDevice',
      backedUp: true,
    });
    const totp = await withTransaction(pool, (tx) =>
      startFactor(tx, userId, 'phone', { kind: 'totp', sealedSecret: Buffer.from('sealed-secret-bytes') }),
    );
    expect(await acceptCodeStep(pool, totp, 1, true)).to.equal(true);
    await withTransaction(pool, (tx) => replaceRecoveryCodes(tx, userId, [Buffer.alloc(32, 1), Buffer.alloc(32, 2)]));
  }

  /** A signed-in browser and a grant it obtained. */
  const signedInWithGrant = (email: string): Promise<SignedIn> => signedInAt(box, email, 'a-good-password');

  const introspect = async (token: string): Promise<boolean> =>
    (await box.form('/auth/introspect', { token }, { Authorization: basic('app', 'app-secret-123') })).body.active as boolean;

  it("shows a person's factors without a key or secret", async function () {
    const { id } = await person();
    await withFactors(id);
    const res = await box.json('GET', `/users/${id}/factors`, undefined, root);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.factors.map((f: { kind: string; name: string }) => `${f.kind}:${f.name}`)).to.deep.equal([
      'passkey:laptop',
      'totp:phone',
    ]);
    expect(res.body.factors[0]).to.have.all.keys('id', 'kind', 'name', 'created_at', 'last_used_at', 'device_type');
    expect(res.body.factors[0].device_type).to.equal('multiDevice');
    expect(res.body).to.include({ recovery_codes_left: 2, must_enrol: false, group_requires: false });
    expect(res.text).not.to.match(/public|secret|credential/i);
  });

  it('a reset removes the factors, ends the browser session and the tokens, and makes the person enrol at the next sign-in', async function () {
    const { id, email } = await person();
    const { browser, accessToken, refreshToken } = await signedInWithGrant(email);
    await withFactors(id);
    expect(await introspect(accessToken)).to.equal(true);

    const reset = await box.json('POST', `/users/${id}/factors/reset`, undefined, root);
    expect(reset.status, reset.text).to.equal(200);
    expect(reset.body).to.deep.equal({ factors: [], recovery_codes_left: 0, must_enrol: true, group_requires: false });
    expect((await box.json('GET', `/users/${id}/factors`, undefined, root)).body).to.deep.equal(reset.body);

    expect(await introspect(accessToken)).to.equal(false);
    const refreshed = await box.form('/auth/token', { grant_type: 'refresh_token', client_id: 'app', refresh_token: refreshToken });
    expect(refreshed.body.error).to.equal('invalid_grant');
    // The browser is signed out: the authorization endpoint shows the sign-in page again.
    expect((await browser.get(authorizePath())).status).to.equal(200);
    // The password alone no longer signs in: the person enrols a factor first.
    const again = await new FormAgent(box).signIn(email, 'a-good-password');
    expect(again.status).to.equal(303);
    expect(new URL(again.headers.get('location')!, box.url).pathname).to.equal('/auth/sign-in/enrol');

    await eventually('the reset in the audit log', async () =>
      box.logs.some((l) => l.includes('"event":"factor"') && l.includes('"action":"reset"') && l.includes(`"user":"${id}"`)),
    );
    await eventually('the close in the audit log', async () => box.logs.some((l) => l.includes('"how":"factors-reset"')));
  });

  it('a sign-in committing while a reset runs: the reset waits for it, and its browser session ends too', async function () {
    const { id } = await person();
    await withFactors(id);
    // A sign-in's last step, caught between its INSERT and its COMMIT: the browser session of a
    // second factor the reset is about to remove.
    const token = randomBytes(32).toString('base64url');
    let commit!: () => void;
    let inserted!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const written = new Promise<void>((resolve) => (inserted = resolve));
    const signingIn = withTransaction(pool, async (tx) => {
      await createBrowserSession(tx, tokenHash(token), {
        userId: id,
        expiresAt: new Date(Date.now() + 3600_000),
        amr: ['pwd', 'otp', 'mfa'],
        provider: null,
        proven: true,
        authTime: new Date(),
        proofAt: new Date(),
        from: { address: '127.0.0.1', userAgent: null },
      });
      inserted();
      await committed;
    });
    await written;
    let answered = false;
    const reset = box.json('POST', `/users/${id}/factors/reset`, undefined, root).finally(() => (answered = true));
    const waiting = async (): Promise<boolean> =>
      (
        await pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM users%'",
        )
      ).rows[0]!.n > 0;
    // The reset either waits for the sign-in to commit, or answers without having seen its session.
    const first = await eventually(
      'the reset waiting or answered',
      async () => (answered ? 'answered' : (await waiting()) && 'waits'),
      30_000,
      20,
    );
    commit();
    await signingIn;
    expect((await reset).status).to.equal(200);
    const browser = await box.request('GET', authorizePath(), { headers: { Cookie: `boxauth_session=${token}` } });
    expect(browser.status, 'the browser session outlived the reset').to.equal(200);
    expect(first).to.equal('waits');
  });

  it('an unknown user is 404, and changes nothing', async function () {
    expect((await box.json('GET', '/users/999999/factors', undefined, root)).status).to.equal(404);
    expect((await box.json('POST', '/users/999999/factors/reset', undefined, root)).status).to.equal(404);
    expect((await box.json('POST', '/users/nobody/factors/reset', undefined, root)).status).to.equal(404);
  });

  it('a client without a policy, or with one for other users, is refused and changes nothing', async function () {
    const { id } = await person();
    const other = await person();
    await withFactors(id);
    await withFactors(other.id);
    await box.addClient('naive', {}, { secret: 'naive-secret-123', policy: false });
    await box.addClient('helpdesk', {}, { secret: 'helpdesk-secret-123', policy: false });
    // The helpdesk may read and reset the factors of one person only.
    const policy = await box.json(
      'PUT',
      '/AccessPolicy/helpdesk-one-user',
      {
        engine: 'matcho',
        link: [{ id: 'helpdesk', resourceType: 'Client' }],
        matcho: { 'request-method': { $enum: ['get', 'post'] }, uri: `#^/users/${other.id}/factors` },
      },
      root,
    );
    expect(policy.status, policy.text).to.be.oneOf([200, 201]);
    const token = async (client: string, secret: string): Promise<string> =>
      (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(client, secret) })).body.access_token;
    const naive = await token('naive', 'naive-secret-123');
    const helpdesk = await token('helpdesk', 'helpdesk-secret-123');

    expect((await box.json('GET', `/users/${id}/factors`, undefined, naive)).status).to.equal(403);
    expect((await box.json('POST', `/users/${id}/factors/reset`, undefined, naive)).status).to.equal(403);
    expect((await box.json('POST', `/users/${id}/factors/reset`, undefined, helpdesk)).status).to.equal(403);
    const still = await box.json('GET', `/users/${id}/factors`, undefined, root);
    expect(still.body.factors).to.have.length(2);
    expect(still.body.must_enrol).to.equal(false);

    const allowed = await box.json('POST', `/users/${other.id}/factors/reset`, undefined, helpdesk);
    expect(allowed.status, allowed.text).to.equal(200);
    expect(allowed.body.must_enrol).to.equal(true);
  });

  it("a group's require_second_factor round-trips, is validated, and makes its members enrol", async function () {
    const bad = await box.json('POST', '/groups', { name: 'operators', require_second_factor: 'yes' }, root);
    expect(bad.status, bad.text).to.equal(422);
    expect(bad.body.errors).to.have.key('require_second_factor');
    expect((await box.json('GET', '/groups?name=operators', undefined, root)).body).to.deep.equal([]);

    const created = await box.json('POST', '/groups', { name: 'operators', require_second_factor: true }, root);
    expect(created.status, created.text).to.equal(201);
    expect(created.body.require_second_factor).to.equal(true);
    const plain = await box.json('POST', '/groups', { name: 'readers' }, root);
    expect(plain.body.require_second_factor).to.equal(false);

    const { id, email } = await person();
    expect((await box.json('PUT', `/users/${id}`, { 'group-ids': [created.body.id] }, root)).status).to.equal(200);
    expect((await box.json('GET', `/users/${id}/factors`, undefined, root)).body.group_requires).to.equal(true);
    const signIn = await new FormAgent(box).signIn(email, 'a-good-password');
    expect(new URL(signIn.headers.get('location')!, box.url).pathname).to.equal('/auth/sign-in/enrol');

    const badChange = await box.json('PUT', `/groups/${created.body.id}`, { require_second_factor: null }, root);
    expect(badChange.status, badChange.text).to.equal(422);
    const changed = await box.json('PUT', `/groups/${created.body.id}`, { require_second_factor: false }, root);
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body).to.include({ name: 'operators', require_second_factor: false });
    expect((await box.json('GET', `/groups/${created.body.id}`, undefined, root)).body.require_second_factor).to.equal(false);
    const after = await new FormAgent(box).signIn(email, 'a-good-password');
    expect(new URL(after.headers.get('location')!, box.url).pathname).to.equal('/auth/signed-in');
  });

  describe('a rule turned on holds for the grants already issued, at their next refresh', function () {
    const refresh = (refreshToken: string, client = 'app') =>
      box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { Authorization: basic(client, `${client}-secret-123`) },
      );
    const expectRefused = (res: { status: number; body: Record<string, string> }, what: RegExp): void => {
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.error).to.equal('invalid_grant');
      expect(res.body.error_description).to.match(/the sign-in behind this grant \(urn:boxauth:acr:[a-z]+\) no longer meets what/);
      expect(res.body.error_description, res.body.error_description).to.match(what);
      expect(res.body.error_description).to.match(/sign in again$/);
    };

    before(async function () {
      await box.addClient(
        'kube',
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
        },
        { secret: 'kube-secret-123', policy: false },
      );
    });

    /** A person with an authenticator app, enrolled on their account page; then signed in with the password and a code, and a grant of `client`. */
    async function signedInWithCode(email: string, client: string): Promise<SignedIn> {
      const enrolling = new FormAgent(box);
      expect((await enrolling.signIn(email, 'a-good-password', '/auth/account')).status).to.equal(303);
      const { secret, step } = await appOnAccountPage(enrolling);

      const browser = new FormAgent(box);
      const password = await browser.signIn(email, 'a-good-password', authorizePath(client));
      const asked = await browser.get(password.headers.get('location')!);
      expect(asked.text).to.include('id="code"');
      const given = await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(asked.text), code: totpCode(secret, step + 1) });
      expect(given.status, given.text).to.equal(303);
      return { browser, ...(await grantThrough(box, browser, client)) };
    }

    it("a group's second factor turned on: a password's grant is refused at its refresh, a code's is not", async function () {
      const group = await box.json('POST', '/groups', { name: 'cluster-admins' }, root);
      expect(group.status, group.text).to.equal(201);
      const withPassword = await person();
      const withCode = await person();
      for (const { id } of [withPassword, withCode])
        expect((await box.json('PUT', `/users/${id}`, { 'group-ids': [group.body.id] }, root)).status).to.equal(200);
      const passwordGrant = await signedInWithGrant(withPassword.email);
      const codeGrant = await signedInWithCode(withCode.email, 'app');
      expect((await refresh(passwordGrant.refreshToken)).status).to.equal(200);
      expect((await refresh(codeGrant.refreshToken)).status).to.equal(200);

      const on = await box.json('PUT', `/groups/${group.body.id}`, { require_second_factor: true }, root);
      expect(on.status, on.text).to.equal(200);
      expectRefused(await refresh(passwordGrant.refreshToken), /a group of this person requires \(a second factor: urn:boxauth:acr:mfa\)/);
      expectRefused(await refresh(passwordGrant.refreshToken), /a group of this person requires/);
      expect((await refresh(codeGrant.refreshToken)).status).to.equal(200);

      // Refused, not closed: the rule turned off again finds the grant as it was.
      expect((await box.json('PUT', `/groups/${group.body.id}`, { require_second_factor: false }, root)).status).to.equal(200);
      expect((await refresh(passwordGrant.refreshToken)).status).to.equal(200);
    });

    it("a client's minimum_acr raised: the grants whose sign-in proved less are refused at their refresh", async function () {
      const withPassword = await person();
      const withCode = await person();
      const passwordGrant = await signedInAt(box, withPassword.email, 'a-good-password', 'kube');
      const codeGrant = await signedInWithCode(withCode.email, 'kube');
      const kube = (await box.json('GET', '/Client/kube', undefined, root)).body;
      const { meta: _meta, ...spec } = kube;
      const raise = async (minimum: string): Promise<void> => {
        const res = await box.json('PUT', '/Client/kube', { ...spec, minimum_acr: minimum }, root);
        expect(res.status, res.text).to.equal(200);
      };

      await raise('urn:boxauth:acr:mfa');
      expectRefused(await refresh(passwordGrant.refreshToken, 'kube'), /client 'kube' requires \(minimum_acr urn:boxauth:acr:mfa\)/);
      expect((await refresh(codeGrant.refreshToken, 'kube')).status).to.equal(200);
      await raise('phr');
      expectRefused(await refresh(codeGrant.refreshToken, 'kube'), /client 'kube' requires \(minimum_acr phr\)/);
    });
  });
});
