// The password rule (NIST SP 800-63B §5.1.1.2, docs/security.md) at every door where a password
// is set: the REST API, self sign-up, a reset by mailed link, the account page and SCIM (the CLI
// goes through the REST API: test/e2e/cli.test.ts). Each refusal says why, and changes nothing:
// no person is made, the old password still signs in, a reset link stays good. A box asking 12
// characters asks them everywhere, and starts with a first admin's password that breaks the rule,
// saying so in its log without the password.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { TestSmtp } from '../support/smtp.js';

const GOOD = 'a-good-password-1';
const COMMON = 'is one of the most used passwords: choose another';
const LIKE_EMAIL = 'is too much like the email address: choose another';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** What a page says, its HTML entities read back (the reasons hold an apostrophe at times). */
const textOf = (res: JsonResponse): string =>
  res.text
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

describe('the password rule at every door', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let root: string;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_REGISTRATION: 'true', BOXAUTH_MAIL_MAX_PER_RECIPIENT: '100' } });
    root = await box.rootToken();
  });
  after(async function () {
    await box?.stop();
    await smtp?.stop();
  });

  let n = 0;
  const newEmail = (name = 'person'): string => `${name}-${++n}-${randomBytes(3).toString('hex')}@example.com`;

  async function person(password = GOOD): Promise<{ id: number; email: string }> {
    const email = newEmail();
    const res = await box.json('POST', '/users', { email, password }, root);
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }

  const signsIn = async (email: string, password: string): Promise<boolean> =>
    (await new FormAgent(box).signIn(email, password)).status === 303;
  const exists = async (email: string): Promise<boolean> =>
    (await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root)).body.length > 0;

  describe('the REST API', function () {
    it('POST /users refuses a weak password with 422 and the reason, never echoing it, and makes nobody', async function () {
      const cases: [password: string, reason: string | RegExp][] = [
        ['password', COMMON],
        ['12345678', COMMON],
        ['Password1', COMMON],
        ['PASSWORD', COMMON],
        ['iloveyou!', COMMON],
        ['password-1', COMMON],
        ['short', 'is too short: at least 8 characters'],
        ['aaaaaaaaaaaa', /^is repeated or sequential characters/],
        ['abcd5678', /^is repeated or sequential characters/],
      ];
      for (const [password, reason] of cases) {
        const email = newEmail();
        const res = await box.json('POST', '/users', { email, password }, root);
        expect(res.status, password).to.equal(422);
        expect(res.body.errors, password).to.have.keys('password');
        expect(res.body.errors.password, password).to.have.length(1);
        if (typeof reason === 'string') expect(res.body.errors.password[0], password).to.equal(reason);
        else expect(res.body.errors.password[0], password).to.match(reason);
        expect(res.body.entity, 'the password is never echoed').to.deep.equal({ email });
        expect(await exists(email), password).to.equal(false);
      }
    });

    it('refuses a password too much like the address it is given with', async function () {
      const email = `ann.lee-${++n}@example.com`;
      const res = await box.json('POST', '/users', { email, password: `Ann.Lee-${n}!` }, root);
      expect(res.status).to.equal(422);
      expect(res.body.errors).to.deep.equal({ password: [LIKE_EMAIL] });
    });

    it('takes 8 characters that are none of these, and a long passphrase', async function () {
      for (const password of ['k7#pQ2vL', 'correct horse battery staple by the old lighthouse at dawn']) {
        const email = newEmail();
        const res = await box.json('POST', '/users', { email, password }, root);
        expect(res.status, res.text).to.equal(201);
        expect(await signsIn(email, password)).to.equal(true);
      }
    });

    it('PUT /users/<id> refuses a weak password, and the one like the address the person has; nothing changes', async function () {
      const { id, email } = await person();
      for (const [password, reason] of [
        ['12345678', COMMON],
        [`${email.split('@')[0]}!`, LIKE_EMAIL],
      ] as const) {
        const res = await box.json('PUT', `/users/${id}`, { password, data: '{"changed":true}' }, root);
        expect(res.status, password).to.equal(422);
        expect(res.body.errors).to.deep.equal({ password: [reason] });
        expect(res.body.entity).to.deep.equal({ data: '{"changed":true}' });
      }
      expect((await box.json('GET', `/users/${id}`, undefined, root)).body.data).to.equal(null);
      expect(await signsIn(email, GOOD), 'the old password still signs in').to.equal(true);
      // A new address comes with the password: the password must not be like the new one.
      const renamed = newEmail('renamed');
      const like = await box.json('PUT', `/users/${id}`, { email: renamed, password: `${renamed.split('@')[0]}#` }, root);
      expect(like.status).to.equal(422);
      expect(like.body.errors).to.deep.equal({ password: [LIKE_EMAIL] });
      expect((await box.json('PUT', `/users/${id}`, { password: 'another-good-password-2' }, root)).status).to.equal(200);
      expect(await signsIn(email, 'another-good-password-2')).to.equal(true);
    });
  });

  it('sign-up refuses a weak password on its page, saying why, and makes no account', async function () {
    const browser = new FormAgent(box);
    const page = await browser.get('/auth/sign-up');
    const email = newEmail('newcomer');
    const refused = await browser.post('/auth/sign-up', { ...hiddenFields(page.text), email, password: 'Password1' });
    expect(refused.status).to.equal(422);
    expect(textOf(refused)).to.include(COMMON);
    expect(refused.text).to.include('aria-invalid="true" aria-describedby="password-error"');
    expect(refused.text).to.include(`value="${email}"`);
    expect(await exists(email)).to.equal(false);
    expect(smtp.mailsTo(email)).to.have.length(0);
    const again = await browser.post('/auth/sign-up', { ...hiddenFields(refused.text), email, password: GOOD });
    expect(again.status, again.text).to.equal(200);
    expect(await exists(email)).to.equal(true);
  });

  it('says why in German on a German page (the API keeps English: it is for programs)', async function () {
    const browser = new FormAgent(box, { 'Accept-Language': 'de-DE, de;q=0.9' });
    const page = await browser.get('/auth/sign-up');
    const email = newEmail('neu');
    const common = await browser.post('/auth/sign-up', { ...hiddenFields(page.text), email, password: 'Password1' });
    expect(common.status).to.equal(422);
    expect(textOf(common)).to.include('gehört zu den meistverwendeten Passwörtern: Wählen Sie ein anderes').and.not.include(COMMON);
    expect(common.text).to.include('aria-invalid="true" aria-describedby="password-error"');
    const short = await browser.post('/auth/sign-up', { ...hiddenFields(common.text), email, password: 'kurz' });
    expect(textOf(short)).to.include('ist zu kurz: mindestens 8 Zeichen');
    const badEmail = await browser.post('/auth/sign-up', { ...hiddenFields(short.text), email: 'kein Name', password: GOOD });
    expect(textOf(badEmail)).to.include('ist keine gültige E-Mail-Adresse');
    const api = await box.json('POST', '/users', { email, password: 'Password1' }, await box.rootToken(), { 'Accept-Language': 'de' });
    expect(api.status).to.equal(422);
    expect(JSON.stringify(api.body)).to.include(COMMON);
  });

  it('a reset by mailed link refuses a weak password, says why, and the link stays good', async function () {
    const { email } = await person();
    const ask = new FormAgent(box);
    const askPage = await ask.get('/auth/reset');
    expect((await ask.post('/auth/reset', { ...hiddenFields(askPage.text), email })).status).to.equal(200);
    const mail = await smtp.waitForMail((m) => m.to.includes(email));
    const link = new URL(/https?:\/\/\S+\/auth\/reset\/confirm\?token=[\w-]+/.exec(mail.parsed.text ?? '')![0]);

    const browser = new FormAgent(box);
    const form = await browser.get(`${link.pathname}${link.search}`);
    expect(form.status).to.equal(200);
    for (const [password, reason] of [
      ['qwertyuiop', COMMON],
      [`${email.split('@')[0]}.2024`, LIKE_EMAIL],
      ['short', 'is too short: at least 8 characters'],
    ] as const) {
      const refused = await browser.post('/auth/reset/confirm', { ...hiddenFields(form.text), password });
      expect(refused.status, password).to.equal(422);
      expect(textOf(refused), password).to.include(reason);
    }
    expect(await signsIn(email, GOOD), 'the old password still signs in').to.equal(true);
    const done = await browser.post('/auth/reset/confirm', { ...hiddenFields(form.text), password: 'a-new-good-password-3' });
    expect(done.status, done.text).to.equal(200);
    expect(await signsIn(email, 'a-new-good-password-3')).to.equal(true);
  });

  it("the account page's password change refuses a weak password, says why, and keeps the old one", async function () {
    const { email } = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, GOOD)).status).to.equal(303);
    const page = await browser.get('/auth/account');
    const csrf = hiddenFields(page.text).csrf!;
    for (const [password, reason] of [
      ['trustno1', COMMON],
      [`boxauth-${n}`, 'is too much like the name of this service: choose another'],
      ['98765432', /is repeated or sequential characters/],
    ] as const) {
      const refused = await browser.post('/auth/account/password', { csrf, current_password: GOOD, new_password: password });
      expect(refused.status, password).to.equal(422);
      expect(textOf(refused), password).to.match(typeof reason === 'string' ? new RegExp(reason) : reason);
      expect(refused.text, password).to.include('id="new_password-error"');
    }
    expect(await signsIn(email, GOOD), 'the old password still signs in').to.equal(true);
    const changed = await browser.post('/auth/account/password', { csrf, current_password: GOOD, new_password: 'my-own-good-password-4' });
    expect(changed.status, changed.text).to.equal(303);
    expect(await signsIn(email, 'my-own-good-password-4')).to.equal(true);
  });

  describe('SCIM', function () {
    let directory: string;
    before(async function () {
      const dir = await box.addClient('directory', {});
      directory = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(dir.id, dir.secret) })).body
        .access_token as string;
    });

    const scim = (method: string, path: string, body: unknown) =>
      box.request(method, `/scim/v2${path}`, {
        headers: { Authorization: `Bearer ${directory}`, 'Content-Type': 'application/scim+json' },
        body: JSON.stringify(body),
      });
    /** RFC 7644 §3.12: a value the server refuses is 400 invalidValue, with a detail that says why. */
    const expectRefused = (res: JsonResponse, reason: string): void => {
      expect(res.status, res.text).to.equal(400);
      const error = JSON.parse(res.text);
      expect(error.scimType).to.equal('invalidValue');
      expect(error.detail).to.equal(`password ${reason}`);
      expect(res.text).not.to.include('"letmein"');
    };

    it('POST /Users refuses a weak password with 400 invalidValue and the reason, and makes nobody', async function () {
      const userName = newEmail('scim');
      expectRefused(
        await scim('POST', '/Users', { schemas: [USER], userName, password: 'letmein' }),
        'is too short: at least 8 characters',
      );
      expectRefused(await scim('POST', '/Users', { schemas: [USER], userName, password: 'sunshine' }), COMMON);
      expect(await exists(userName)).to.equal(false);
    });

    it('PUT and PATCH refuse a weak password with 400 invalidValue; the person and their password stay as they were', async function () {
      const userName = newEmail('scim');
      const made = await scim('POST', '/Users', { schemas: [USER], userName, password: GOOD });
      expect(made.status, made.text).to.equal(201);
      const { id, meta } = JSON.parse(made.text);

      expectRefused(await scim('PUT', `/Users/${id}`, { schemas: [USER], userName, displayName: 'Changed', password: 'football' }), COMMON);
      expectRefused(
        await scim('PATCH', `/Users/${id}`, {
          schemas: [PATCH_OP],
          Operations: [
            { op: 'replace', path: 'displayName', value: 'Changed' },
            { op: 'replace', path: 'password', value: `${userName.split('@')[0]}99` },
          ],
        }),
        LIKE_EMAIL,
      );
      expectRefused(
        await scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { password: 'Password1' } }] }),
        COMMON,
      );
      const now = JSON.parse(
        (await box.request('GET', `/scim/v2/Users/${id}`, { headers: { Authorization: `Bearer ${directory}` } })).text,
      );
      expect(now.meta.version).to.equal(meta.version);
      expect(await signsIn(userName, GOOD), 'the old password still signs in').to.equal(true);

      const patched = await scim('PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'password', value: 'a-directory-password-5' }],
      });
      expect(patched.status, patched.text).to.equal(200);
      expect(await signsIn(userName, 'a-directory-password-5')).to.equal(true);
    });
  });

  describe('a box asking 12 characters (BOXAUTH_PASSWORD_MIN_LENGTH=12), its first admin given a common password', function () {
    let strict: Box;
    before(async function () {
      strict = await Box.start({ env: { BOXAUTH_PASSWORD_MIN_LENGTH: '12', BOXAUTH_ADMIN_PASSWORD: 'Password1234' } });
    });
    after(async function () {
      await strict?.stop();
    });

    it('asks 12 characters at its doors: 11 are refused, saying so, 12 are taken', async function () {
      const token = await strict.rootToken();
      const short = await strict.json('POST', '/users', { email: 'eleven@example.com', password: 'k7#pQ2vLx9m' }, token);
      expect(short.status).to.equal(422);
      expect(short.body.errors).to.deep.equal({ password: ['is too short: at least 12 characters'] });
      const made = await strict.json('POST', '/users', { email: 'twelve@example.com', password: 'k7#pQ2vLx9mR' }, token);
      expect(made.status, made.text).to.equal(201);
      const browser = new FormAgent(strict);
      expect((await browser.signIn('twelve@example.com', 'k7#pQ2vLx9mR')).status).to.equal(303);
      const page = await browser.get('/auth/account');
      const refused = await browser.post('/auth/account/password', {
        ...hiddenFields(page.text),
        current_password: 'k7#pQ2vLx9mR',
        new_password: 'Tr4vel!ng-7',
      });
      expect(refused.status).to.equal(422);
      expect(refused.text).to.include('is too short: at least 12 characters');
    });

    it('starts with the admin password it was given, warning in its log which rule it breaks, never the password', async function () {
      expect((await new FormAgent(strict).signIn('admin@localhost', 'Password1234')).status, 'the admin signs in').to.equal(303);
      const warning = strict.logs.find((l) => l.includes('BOXAUTH_ADMIN_PASSWORD breaks'));
      expect(warning, strict.logs.join('\n')).to.be.a('string');
      expect(JSON.parse(warning!)).to.include({ level: 'warn', user: 'admin@localhost', rule: `the password ${COMMON}` });
      for (const line of strict.logs) expect(line).not.to.include('Password1234');
    });
  });
});
