// Nobody adopts an account whose address was never proven (issue 49 item 2, docs/architecture.md §12).
// The attack as Microsoft Entra ID makes it possible: a stranger signs up with a new hire's address
// in another case (`nEw.HiRe@corp.example`, their own password, never proven); the directory then
// provisions the hire: `userName eq "New.Hire@corp.example"` matched the stranger, the directory
// PATCHed and grouped them, and the stranger's password signed in as a verified hire with the
// directory's groups. The same stranger came from an upstream provider not trusted for emails, or
// took the address on the account page of a box without mail. Now such a person is nobody to the
// directory (no match, 404, refused as a member, 409 uniqueness on POST), and an administrator's
// vouching for the address is an adoption that ends first what the stranger set — racing the
// stranger's refreshes and sign-ins too. Box A signs people up and in (no mail); box C is a public
// upstream provider A does not trust for emails. Real boxes, the directory's requests over HTTP.
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPool, withTransaction } from '../../api/db/pool.js';
import { recordConsent } from '../../api/store/consents.js';
import { replaceRecoveryCodes } from '../../api/store/recovery-codes.js';
import { Box, basic, eventually, sleep, type JsonResponse } from '../support/box.js';
import { addDummyPasskey } from '../support/factors.js';
import { FormAgent, formFields, hiddenFields } from '../support/form-agent.js';
import { ENTERPRISE, expectError, expectList, filter, GROUP, listed, patch, provisioner, USER, type Scim } from '../support/scim.js';
import { APP_REDIRECT, authorizePath, signedInAt, type SignedIn } from '../support/signed-in.js';
import { connectUpstream, idTokenIfAllowed, relyingParty, TwoHostBrowser } from '../support/upstream.js';

const PASSWORD = 'the-strangers-password-1';
const APP_SECRET = 'app-secret-123';

const tag = (): string => randomBytes(4).toString('hex');

/** A stranger who holds an address unproven: their REST id (row id), and the public sub clients are given of them. */
interface Stranger {
  id: number;
  sub: string;
}

describe('ATTACK: a directory adopts a stranger’s account', function () {
  this.timeout(300_000);
  let a: Box;
  let c: Box;
  let root: string;
  let scim: Scim;

  before(async function () {
    [a, c] = await Promise.all([
      Box.start({
        env: {
          // Self sign-up on a box without mail: the address is never proven, and the stranger signs in at once.
          BOXAUTH_REGISTRATION: 'true',
          BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '1000',
          BOXAUTH_SIGN_UP_MAX_PER_BOX: '1000',
          BOXAUTH_SIGN_IN_MAX_FAILURES: '1000',
        },
      }),
      Box.start({ hostname: 'localhost', env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' } }),
    ]);
    root = await a.rootToken();
    await connectUpstream(a, c, 'public', { displayName: 'Public' }); // not trusted for emails
    await relyingParty(a, 'rp');
    await a.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: APP_REDIRECT, refresh_token: true } },
      },
      { secret: APP_SECRET, policy: false },
    );
    // The directory's connection, as Entra ID makes its requests (test/integration/scim-entra-okta.test.ts).
    scim = await provisioner(a, 'entra-provisioning', { 'Content-Type': 'application/scim+json' });
  });
  after(async () => Promise.all([a?.stop(), c?.stop()]));

  const rest = (path: string): Promise<JsonResponse> => a.json('GET', path, undefined, root);
  const idOf = async (email: string): Promise<number> => {
    const found = await rest(`/users?email=${encodeURIComponent(email)}`);
    expect(found.body, `a person ${email}`).to.have.length(1);
    return found.body[0].id as number;
  };
  const refresh = (refreshToken: string): Promise<JsonResponse> =>
    a.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { Authorization: basic('app', APP_SECRET) });
  const introspect = async (token: string): Promise<boolean> =>
    (await a.form('/auth/introspect', { token }, { Authorization: basic('app', APP_SECRET) })).body.active;
  const stillSignedIn = async (browser: FormAgent): Promise<boolean> => (await browser.get(authorizePath())).status === 302;

  /** The stranger signs up with `email` and their password; their id. */
  async function signUp(email: string): Promise<number> {
    return (await signedUp(email)).id;
  }

  /**
   * The stranger signs up with `email` and their password, and is signed in: their REST id, and the
   * sub a public client is given of them — what the directory would name them by, were they its.
   */
  async function signedUp(email: string): Promise<Stranger & { browser: FormAgent }> {
    const browser = new FormAgent(a);
    const page = await browser.get('/auth/sign-up');
    const res = await browser.post('/auth/sign-up', { ...hiddenFields(page.text), email, password: PASSWORD });
    expect(res.status, res.text).to.equal(303);
    return { id: await idOf(email), sub: await publicSub(browser), browser };
  }

  /** The sub a public client (rp) is given of the person signed in with `browser`: a SCIM id, were the person the directory's. */
  const publicSub = async (browser: FormAgent): Promise<string> => (await idTokenIfAllowed(a, browser, 'rp'))!.claims.sub as string;

  /** A group of the directory's, empty: its id and name. */
  async function directoryGroup(): Promise<{ id: string; name: string }> {
    const name = `Engineering-${tag()}`;
    const made = await scim('POST', '/Groups', { schemas: [GROUP], displayName: name, members: [] });
    expect(made.status, made.text).to.equal(201);
    return { id: made.body.id as string, name };
  }

  /**
   * The directory provisions the new hire `userName` as Entra ID does, and the stranger holds the
   * address unproven: nothing of it reaches the stranger, by their public sub (what the directory
   * would name them by) or by their row id. The directory's group, for the checks after.
   */
  async function directoryProvisions(stranger: Stranger, userName: string): Promise<{ id: string; name: string }> {
    const { id, sub } = stranger;
    // Entra ID's match before a create (its "Get User by query"), in every case of the address.
    for (const name of [userName, userName.toLowerCase(), userName.toUpperCase()])
      expectList(await scim('GET', `/Users?${filter(`userName eq "${name}"`)}`), 0, `userName eq "${name}" finds the stranger`);
    for (const named of [sub, String(id)])
      expectList(await scim('GET', `/Users?${filter(`id eq "${named}"`)}`), 0, `the stranger by id ${named}`);
    expectList(await scim('GET', `/Users?${filter(`userName co "${userName.split('@')[0]}"`)}`), 0, 'the stranger by part of the name');
    const all = await scim('GET', '/Users?startIndex=1&count=1000');
    expect(listed(all).map((u) => u.id)).not.to.include.members([sub, String(id)]);

    // No match, so it creates the hire: the address is taken by an account the directory may not adopt.
    const created = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      externalId: randomUUID(),
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: userName }],
      name: { givenName: 'New', familyName: 'Hire' },
    });
    expectError(created, 409, 'uniqueness', 'POST of the hire');
    expect(created.body.detail)
      .to.match(/never proven/)
      .and.match(/vouch/)
      .and.match(/delete/);

    // The stranger's id is nobody's to the directory.
    expectError(await scim('GET', `/Users/${sub}`), 404, undefined, 'GET');
    expectError(await scim('PATCH', `/Users/${sub}`, patch({ op: 'Replace', path: 'userName', value: userName })), 404, undefined, 'PATCH');
    expectError(
      await scim('PATCH', `/Users/${sub}`, patch({ op: 'Replace', path: 'active', value: 'False' })),
      404,
      undefined,
      'PATCH active',
    );
    expectError(await scim('PUT', `/Users/${sub}`, { schemas: [USER], userName, active: true }), 404, undefined, 'PUT');
    expectError(await scim('DELETE', `/Users/${sub}`), 404, undefined, 'DELETE');

    // Nor a member of the directory's groups: refused as an id of nobody is.
    const group = await directoryGroup();
    expectError(
      await scim('PATCH', `/Groups/${group.id}`, patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: sub }] })),
      400,
      'invalidValue',
      'the stranger added to a group',
    );
    expectError(
      await scim('PUT', `/Groups/${group.id}`, { schemas: [GROUP], displayName: group.name, members: [{ value: sub }] }),
      400,
      'invalidValue',
      'a group replaced with the stranger in it',
    );
    expectError(
      await scim('POST', '/Groups', { schemas: [GROUP], displayName: `Other-${tag()}`, members: [{ value: sub }] }),
      400,
      'invalidValue',
      'a group made with the stranger in it',
    );

    // The stranger is as they were: unproven, on, in no group of the directory's.
    const person = await rest(`/users/${id}`);
    expect(person.body).to.include({ email_verified: false, active: true });
    expect(person.body['group-ids']).not.to.include(Number(group.id));
    return group;
  }

  /** What an app is told of the stranger signed in with `browser`: not verified, not in the directory's group. */
  async function expectNobodyVerified(browser: FormAgent, group: { name: string }): Promise<void> {
    const token = await idTokenIfAllowed(a, browser, 'rp');
    expect(token, 'the stranger is signed in').to.not.equal(undefined);
    expect(token!.claims.email_verified).to.equal(false);
    expect(token!.claims.groups ?? []).not.to.include(group.name);
  }

  it('a stranger who signed up with the hire’s address in another case: no match, 409, 404, refused as a member', async function () {
    const t = tag();
    const stranger = await signedUp(`nEw.HiRe-${t}@corp.example`);
    const group = await directoryProvisions(stranger, `New.Hire-${t}@corp.example`);
    const browser = new FormAgent(a);
    expect((await browser.signIn(`new.hire-${t}@corp.example`, PASSWORD)).status).to.equal(303);
    await expectNobodyVerified(browser, group);
  });

  it('a stranger made at an upstream provider not trusted for emails: the same', async function () {
    const t = tag();
    const email = `uP.HiRe-${t}@corp.example`;
    // At C the stranger may say the address is proven: A does not take C's word for it.
    const atC = await c.json('POST', '/users', { email, password: PASSWORD, email_verified: true }, await c.rootToken());
    expect(atC.status, atC.text).to.equal(201);
    const stranger = new TwoHostBrowser(a, c);
    expect((await stranger.signIn('public', email, PASSWORD)).status, 'made at A').to.equal(303);
    const id = await idOf(email);
    const group = await directoryProvisions({ id, sub: await publicSub(stranger.atA) }, `Up.Hire-${t}@corp.example`);
    await expectNobodyVerified(stranger.atA, group);
  });

  it('an address taken on the account page of a box without mail: the same', async function () {
    const t = tag();
    const own = `someone-${t}@elsewhere.example`;
    const made = await a.json('POST', '/users', { email: own, password: PASSWORD }, root);
    expect(made.body.email_verified).to.equal(true);
    const browser = new FormAgent(a);
    expect((await browser.signIn(own, PASSWORD)).status).to.equal(303);
    const taken = `aCcOuNt.HiRe-${t}@corp.example`;
    const form = formFields((await browser.get('/auth/account')).text, '/auth/account/email');
    const moved = await browser.post('/auth/account/email', { ...form, new_email: taken, email_password: PASSWORD });
    expect(moved.status, moved.text).to.equal(303);
    expect((await rest(`/users/${made.body.id}`)).body).to.include({ email: taken, email_verified: false });
    const group = await directoryProvisions({ id: made.body.id, sub: await publicSub(browser) }, `Account.Hire-${t}@corp.example`);
    await expectNobodyVerified(browser, group);
  });

  it('a verified person is still found and adopted by the directory; a person it named without an address stays its own', async function () {
    const t = tag();
    const hire = `Verified.Hire-${t}@corp.example`;
    const made = await a.json('POST', '/users', { email: hire.toLowerCase(), password: PASSWORD }, root);
    const found = await scim('GET', `/Users?${filter(`userName eq "${hire}"`)}`);
    expectList(found, 1, 'the verified person');
    const hireId = listed(found)[0].id as string;
    const patched = await scim(
      'PATCH',
      `/Users/${hireId}`,
      patch({ op: 'Replace', path: 'userName', value: hire }, { op: 'Replace', path: 'active', value: 'True' }),
    );
    expect(patched.status, patched.text).to.be.oneOf([200, 204]);
    const group = await directoryGroup();
    const added = await scim('PATCH', `/Groups/${group.id}`, patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: hireId }] }));
    expect(added.status, added.text).to.be.oneOf([200, 204]);
    expect((await rest(`/users/${made.body.id}`)).body['group-ids']).to.include(Number(group.id));

    // A userName that is no address is the directory's own: it sees and groups that person as before.
    const named = await scim('POST', '/Users', { schemas: [USER], userName: `hire-${t}`, active: true });
    expect(named.status, named.text).to.equal(201);
    expectList(await scim('GET', `/Users?${filter(`userName eq "hire-${t}"`)}`), 1, 'the named person');
    expect((await scim('GET', `/Users/${named.body.id}`)).status).to.equal(200);
    const both = await scim(
      'PATCH',
      `/Groups/${group.id}`,
      patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: named.body.id }] }),
    );
    expect(both.status, both.text).to.be.oneOf([200, 204]);
    const members = (await scim('GET', `/Groups/${group.id}`)).body.members.map((m: { value: string }) => m.value);
    expect(members.sort()).to.deep.equal([hireId, named.body.id].sort());
  });

  it('a member the directory does not see is neither listed to it nor taken out by its writes', async function () {
    const t = tag();
    const { id, sub } = await signedUp(`listed-${t}@corp.example`);
    const group = await directoryGroup();
    const put = await a.json('PUT', `/users/${id}`, { 'group-ids': [Number(group.id)] }, root); // an administrator's act
    expect(put.status, put.text).to.equal(200);
    expect((await scim('GET', `/Groups/${group.id}`)).body.members ?? []).to.deep.equal([]);
    expectList(await scim('GET', `/Groups?${filter(`members[value eq "${sub}"]`)}`), 0, 'the group by its hidden member');
    const replaced = await scim('PUT', `/Groups/${group.id}`, { schemas: [GROUP], displayName: group.name, members: [] });
    expect(replaced.status, replaced.text).to.equal(200);
    expect((await rest(`/users/${id}`)).body['group-ids']).to.include(Number(group.id));
  });

  describe('an administrator vouching for an address nobody proved adopts the account', function () {
    /** Second factors, recovery codes and a consent of the stranger's, put in place in the database. */
    async function strangerSetsMore(id: number): Promise<void> {
      await addDummyPasskey(a.databaseUrl!, id, 'strangers-key');
      const pool = createPool(a.databaseUrl!, 1);
      try {
        await withTransaction(pool, (tx) => replaceRecoveryCodes(tx, id, [randomBytes(32), randomBytes(32)]));
        await recordConsent(pool, id, 'rp', ['openid', 'email']);
      } finally {
        await pool.end();
      }
    }
    const consents = async (id: number): Promise<number> => {
      const db = new pg.Client({ connectionString: a.databaseUrl });
      await db.connect();
      try {
        return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM consents WHERE user_id = $1', [id])).rows[0]!.n;
      } finally {
        await db.end();
      }
    };

    it('ends the stranger’s password, browsers, grants, factors, recovery codes and consents, audited', async function () {
      const email = `vouched-${tag()}@corp.example`;
      const id = await signUp(email);
      const session: SignedIn = await signedInAt(a, email, PASSWORD);
      await strangerSetsMore(id);
      expect((await rest(`/users/${id}/factors`)).body.factors).to.have.length(1);
      expect(await consents(id)).to.equal(1);

      const vouched = await a.json('PUT', `/users/${id}`, { email_verified: true }, root);
      expect(vouched.status, vouched.text).to.equal(200);
      expect(vouched.body).to.include({ email_verified: true });

      expect((await new FormAgent(a).signIn(email, PASSWORD)).status, 'the stranger’s password').to.not.equal(303);
      expect(await stillSignedIn(session.browser), 'the stranger’s browser').to.equal(false);
      const refreshed = await refresh(session.refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(400);
      expect(await introspect(session.accessToken)).to.equal(false);
      const factors = (await rest(`/users/${id}/factors`)).body;
      expect(factors.factors).to.deep.equal([]);
      expect(factors.recovery_codes_left).to.equal(0);
      expect(await consents(id)).to.equal(0);
      await eventually('the adoption audited', async () =>
        a.logs.some((l) => l.includes('"event":"account"') && l.includes('"action":"adopted"') && l.includes(`"user":"${id}"`)),
      );

      // Now the directory sees the person it may provision.
      expectList(await scim('GET', `/Users?${filter(`userName eq "${email.toUpperCase()}"`)}`), 1, 'the adopted person');
    });

    it('with a new password in the same change: that password signs in; the stranger’s does not, nor their factors', async function () {
      const email = `vouched-pw-${tag()}@corp.example`;
      const id = await signUp(email);
      await strangerSetsMore(id);
      const given = 'the-hires-own-password-2';
      const vouched = await a.json('PUT', `/users/${id}`, { email_verified: true, password: given }, root);
      expect(vouched.status, vouched.text).to.equal(200);
      expect((await rest(`/users/${id}/factors`)).body.factors).to.deep.equal([]);
      expect((await new FormAgent(a).signIn(email, PASSWORD)).status).to.not.equal(303);
      expect((await new FormAgent(a).signIn(email, given)).status).to.equal(303);
    });

    it('a stranger made at an untrusted provider loses the link: signing in there again reaches nobody', async function () {
      const email = `up-vouched-${tag()}@corp.example`;
      expect((await c.json('POST', '/users', { email, password: PASSWORD }, await c.rootToken())).status).to.equal(201);
      const stranger = new TwoHostBrowser(a, c);
      expect((await stranger.signIn('public', email, PASSWORD)).status).to.equal(303);
      const id = await idOf(email);
      expect((await rest(`/users/${id}/identities`)).body).to.have.length(1);

      expect((await a.json('PUT', `/users/${id}`, { email_verified: true }, root)).status).to.equal(200);
      expect(await stillSignedIn(stranger.atA)).to.equal(false);
      expect((await rest(`/users/${id}/identities`)).body).to.deep.equal([]);
      const again = new TwoHostBrowser(a, c);
      const res = await again.signIn('public', email, PASSWORD);
      expect(res.status, 'the untrusted provider reaches the adopted account').to.not.equal(303);
      expect(await idTokenIfAllowed(a, again.atA, 'rp')).to.equal(undefined);
    });

    it('racing: the vouching against 20 sign-ins of the stranger through the untrusted provider leaves none signed in', async function () {
      const email = `up-race-${tag()}@corp.example`;
      expect((await c.json('POST', '/users', { email, password: PASSWORD }, await c.rootToken())).status).to.equal(201);
      expect((await new TwoHostBrowser(a, c).signIn('public', email, PASSWORD)).status, 'made at A').to.equal(303);
      const id = await idOf(email);
      // Twenty browsers back from the provider, each with its callback to A in hand.
      const strangers = Array.from({ length: 20 }, () => new TwoHostBrowser(a, c));
      const callbacks = await Promise.all(strangers.map(async (s) => s.atUpstream(await s.start('public'), email, PASSWORD)));

      // A callback asks the provider for its tokens before it admits anyone: the callbacks are spread
      // over the time that takes, so that some are admitted before the vouching and sign in after it.
      const [vouched, arrived] = await Promise.all([
        sleep(150).then(() => a.json('PUT', `/users/${id}`, { email_verified: true }, root)),
        Promise.all(strangers.map(async (s, i) => sleep(i * 15).then(() => s.callback(callbacks[i]!)))),
      ]);
      expect(vouched.status, vouched.text).to.equal(200);
      const won = arrived.filter((r) => r.status === 303 && !r.headers.get('location')!.startsWith('/auth/sign-in')).length;
      for (const s of strangers) expect(await stillSignedIn(s.atA), `a browser of the race (${won} got through first)`).to.equal(false);
      expect((await rest(`/users/${id}/identities`)).body).to.deep.equal([]);
    });

    it('racing: the vouching against 20 refreshes and 20 sign-ins of the stranger leaves nothing of theirs alive', async function () {
      let racedIn = 0;
      for (let round = 0; round < 3; round++) {
        const email = `race-${round}-${tag()}@corp.example`;
        const id = await signUp(email);
        // Twenty grants of the stranger's, each its own refresh token, through one signed-in browser.
        const first = await signedInAt(a, email, PASSWORD);
        const grants: SignedIn[] = [first];
        while (grants.length < 20) {
          const authorized = await first.browser.get(authorizePath());
          const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
          const granted = await a.form(
            '/auth/token',
            { grant_type: 'authorization_code', code, redirect_uri: APP_REDIRECT },
            { Authorization: basic('app', APP_SECRET) },
          );
          expect(granted.status, granted.text).to.equal(200);
          grants.push({ browser: first.browser, accessToken: granted.body.access_token, refreshToken: granted.body.refresh_token });
        }
        // Twenty browsers with the sign-in page open, posted at once with the vouching.
        const browsers = Array.from({ length: 20 }, () => new FormAgent(a));
        const forms = await Promise.all(browsers.map(async (b) => hiddenFields((await b.get('/auth/sign-in')).text)));

        const [vouched, refreshed, signIns] = await Promise.all([
          a.json('PUT', `/users/${id}`, { email_verified: true }, root),
          Promise.all(grants.map((g) => refresh(g.refreshToken))),
          Promise.all(browsers.map((b, i) => b.post('/auth/sign-in', { ...forms[i], email, password: PASSWORD }))),
        ]);
        expect(vouched.status, vouched.text).to.equal(200);

        for (const r of refreshed.filter((r) => r.status === 200)) {
          racedIn++;
          expect(await introspect(r.body.access_token), `round ${round}: an access token refreshed in the race`).to.equal(false);
          expect((await refresh(r.body.refresh_token)).status, `round ${round}: a refresh token of the race`).to.equal(400);
        }
        for (const g of grants) expect(await introspect(g.accessToken), `round ${round}: an access token before`).to.equal(false);
        for (const [i, b] of browsers.entries()) {
          // A sign-in that found the password changed under it is sent to sign in again (a 303 too).
          if (signIns[i]!.status === 303 && !signIns[i]!.headers.get('location')!.startsWith('/auth/sign-in')) racedIn++;
          expect(await stillSignedIn(b), `round ${round}: a browser signed in in the race`).to.equal(false);
        }
        expect(await stillSignedIn(first.browser)).to.equal(false);
        expect((await new FormAgent(a).signIn(email, PASSWORD)).status).to.not.equal(303);
      }
      // The race is a race: some of the stranger's requests got through before the vouching closed them.
      expect(racedIn, 'refreshes and sign-ins that won before the close').to.be.greaterThan(0);
    });
  });
});
