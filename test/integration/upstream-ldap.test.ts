// People from the company's directory (issue 38): an IdentityProvider of type ldap against Debian's
// slapd (test/support/slapd.ts), through the box's pages. The directory's own form and the sign-in
// page's password form (ldap.passwordForm) sign a person in with their bind; their groups follow
// the directory by the provider's rules, nested ones too, and a person in 500 directory groups
// brings only the mapped ones into their tokens. And what must sign nobody in: a wrong or empty
// password, a username that is filter syntax, a directory that is down (the page says so).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Box, boxForSuite } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { freePort } from '../support/ports.js';
import { directorySettings, PEOPLE, SERVICE, startSlapd, type Slapd } from '../support/slapd.js';
import { idTokenOf, relyingParty } from '../support/upstream.js';

describe('signing in through an LDAP directory (Debian slapd)', function () {
  this.timeout(120_000);
  let box: Box;
  let slapd: Slapd;
  boxForSuite((b) => (box = b));
  before(async () => {
    slapd = await startSlapd();
    await relyingParty(box, 'rp');
  });
  after(async () => slapd?.stop());

  const directory = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
    type: 'ldap',
    displayName: 'Example Directory',
    ldap: directorySettings(slapd, over),
    secret: SERVICE.password,
    groups: [
      { group: 'staff', upstream: 'staff' },
      { group: 'team-7', upstream: 'g007' },
    ],
  });

  async function provider(id: string, spec: Record<string, unknown>): Promise<void> {
    const res = await box.json('PUT', `/IdentityProvider/${id}`, spec, await box.rootToken());
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  /** The directory's own form at the box: the answer to its post. */
  async function throughForm(browser: FormAgent, id: string, username: string, password: string) {
    const page = await browser.get(`/auth/upstream/${id}?return_to=${encodeURIComponent('/auth/signed-in')}`);
    expect(page.status, page.text).to.equal(200);
    return browser.post(`/auth/upstream/${id}`, { ...hiddenFields(page.text), username, password });
  }

  it("signs a person in with the directory's form, their nested groups mapped, only those", async () => {
    await provider('dir', directory());
    const browser = new FormAgent(box);
    const res = await throughForm(browser, 'dir', 'alice', PEOPLE.alice.password);
    expect(res.status, res.text).to.equal(303);
    const { claims } = await idTokenOf(box, browser, 'rp');
    expect(claims.email).to.equal(PEOPLE.alice.mail);
    // alice is in eng, eng in staff: staff is mapped; eng, everyone and the rings are not.
    expect(claims.groups).to.deep.equal(['staff']);
    expect(claims.email_verified).to.equal(false); // the directory is not said to check addresses
  });

  it('refuses a claim rule naming an attribute the box does not read (422 naming those it reads); a named one matches', async () => {
    const root = await box.rootToken();
    const withRule = (claim: { name: string; value: string }, over: Record<string, unknown> = {}) => ({
      ...directory(over),
      groups: [{ group: 'by-mail', claim }],
    });
    // `email` is the ID token's name of the claim; the directory's attribute is `mail`: this rule would never match.
    const refused = await box.json('PUT', '/IdentityProvider/dir-claims', withRule({ name: 'email', value: PEOPLE.alice.mail }), root);
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.errors.groups.join(' ')).to.include('dn').and.to.include('entryUUID, mail and cn');
    expect((await box.json('GET', '/IdentityProvider/dir-claims', undefined, root)).status).to.equal(404);
    // The attributes the settings name are the claims, exactly as they name them: `mail` no longer, once emailAttribute is another.
    const userSearch = { ...directorySettings(slapd).userSearch, emailAttribute: 'description' };
    const moved = await box.json('PUT', '/IdentityProvider/dir-claims', withRule({ name: 'mail', value: 'x' }, { userSearch }), root);
    expect(moved.status, moved.text).to.equal(422);
    const named = await box.json(
      'PUT',
      '/IdentityProvider/dir-claims',
      withRule({ name: 'description', value: 'x' }, { userSearch }),
      root,
    );
    expect(named.status, named.text).to.equal(201);

    // alice's provider (she is linked to it) with a rule on her `mail`: she is in its group at her next sign-in.
    await provider('dir', withRule({ name: 'mail', value: PEOPLE.alice.mail }));
    const browser = new FormAgent(box);
    const res = await throughForm(browser, 'dir', 'alice', PEOPLE.alice.password);
    expect(res.status, res.text).to.equal(303);
    expect((await idTokenOf(box, browser, 'rp')).claims.groups).to.include('by-mail');
    await provider('dir', directory());
  });

  it('$check: connects, binds as the service account, finds the search bases; says which fails, never the password', async () => {
    const root = await box.rootToken();
    const check = async (id: string) => {
      const res = await box.json('POST', `/IdentityProvider/${id}/$check`, undefined, root);
      expect(res.status, res.text).to.equal(200);
      return res;
    };
    await provider('dir-check', directory());
    const good = await check('dir-check');
    expect(good.body.ok, good.text).to.equal(true);
    expect(good.body.checks.map((c: { check: string }) => c.check)).to.deep.equal([
      'connect',
      'bind',
      'userSearch.baseDN',
      'groupSearch.baseDN',
    ]);

    const wrong = 'not-the-service-password-9';
    await provider('dir-check', { ...directory(), secret: wrong });
    const badBind = await check('dir-check');
    expect(badBind.body.ok).to.equal(false);
    expect(badBind.body.checks.map((c: { check: string; ok: boolean }) => [c.check, c.ok])).to.deep.equal([
      ['connect', true],
      ['bind', false],
    ]);
    expect(badBind.text).not.to.include(wrong);

    const ldap = directorySettings(slapd);
    await provider('dir-check', {
      ...directory(),
      ldap: { ...ldap, userSearch: { ...ldap.userSearch, baseDN: 'ou=nobody,dc=example,dc=org' } },
    });
    const noBase = await check('dir-check');
    const base = noBase.body.checks.find((c: { check: string }) => c.check === 'userSearch.baseDN');
    expect(base).to.deep.include({ ok: false });
    expect(base.detail).to.include('ou=nobody,dc=example,dc=org');

    await provider('dir-check', { ...directory(), ldap: { ...ldap, url: `ldap://127.0.0.1:${await freePort()}` } });
    const down = await check('dir-check');
    expect(down.body.checks.map((c: { check: string; ok: boolean }) => [c.check, c.ok])).to.deep.equal([['connect', false]]);
  });

  it('keeps the ID token of a person in 500 directory groups small: the mapped group only', async () => {
    const browser = new FormAgent(box);
    expect((await throughForm(browser, 'dir', 'carol', PEOPLE.carol.password)).status).to.equal(303);
    const { claims, bytes } = await idTokenOf(box, browser, 'rp');
    expect(claims.groups).to.deep.equal(['team-7']);
    expect(bytes).to.be.below(2048);
  });

  it('signs nobody in with a wrong or empty password or a username that is filter syntax', async () => {
    for (const [username, password] of [
      ['alice', 'not her password'],
      ['alice', ''],
      ['*', PEOPLE.alice.password],
      ['alice)(uid=*', PEOPLE.alice.password],
      ['*)(|(uid=*', PEOPLE.bob.password],
    ] as const) {
      const browser = new FormAgent(box);
      const res = await throughForm(browser, 'dir', username, password);
      expect(res.status, `${username}: ${res.text.slice(0, 200)}`).to.equal(401);
      expect(res.text).to.include('The username or the password is wrong.');
      expect((await browser.get('/auth/account')).status).to.equal(303);
    }
  });

  it("checks the directory from the sign-in page's own form, where passwordForm says so", async () => {
    await provider('dir', directory({ passwordForm: true }));
    const browser = new FormAgent(box);
    const page = await browser.get('/auth/sign-in');
    expect(page.text).to.include('Email or username');
    const res = await browser.signIn('bob', PEOPLE.bob.password);
    expect(res.status, res.text.slice(0, 300)).to.equal(303);
    expect((await idTokenOf(box, browser, 'rp')).claims.email).to.equal(PEOPLE.bob.mail);
    // A person of the box with a password of the box is still checked by the box.
    const own = `own-${randomBytes(3).toString('hex')}@example.com`;
    await box.json('POST', '/users', { email: own, password: 'a-good-password-1' }, await box.rootToken());
    expect((await new FormAgent(box).signIn(own, 'a-good-password-1')).status).to.equal(303);
    await provider('dir', directory());
  });

  it('says the directory is not answering when it is down, and counts nothing against the person', async () => {
    await provider('down', directory({ url: `ldap://127.0.0.1:${await freePort()}` }));
    const browser = new FormAgent(box);
    const res = await throughForm(browser, 'down', 'alice', PEOPLE.alice.password);
    expect(res.status).to.equal(503);
    expect(res.text).to.include('did not answer in time');
    await box.json('DELETE', '/IdentityProvider/down', undefined, await box.rootToken());
  });
});
