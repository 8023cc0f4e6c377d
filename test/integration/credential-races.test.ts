// An attacker's pass over "what a sign-in proves" (docs/security.md#what-a-sign-in-proves): what a
// close (an unlink, a reset, a sign-out) leaves of a sign-in or a credential change that was under
// way when it came — closing beats using: nothing begun before a close completes after it —, what a
// sign-in through a provider taken over stands for, and whether every credential change is told to
// its person. Real boxes over HTTP; a race the test cannot win by timing is staged by holding the
// person's row, as a reset holds it (test/integration/passkeys.test.ts does the same).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { addDummyPasskey } from '../support/factors.js';
import { TestSmtp } from '../support/smtp.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { startAll } from '../support/start-all.js';

const PASSWORD = 'a-good-password-1';
const MFA = 'urn:boxauth:acr:mfa';

const secretOf = (page: JsonResponse): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!);
const where = (res: JsonResponse): string => res.headers.get('location') ?? '';

describe('an identity at a provider taken over', function () {
  this.timeout(120_000);
  let a: Box;
  let b: Box;

  before(async function () {
    [a, b] = await startAll([Box.start(), Box.start({ hostname: 'localhost' })]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
  });
  after(async () => Promise.all([a?.stop(), b?.stop()]));

  /** A sign-in at A through corp (as `email`, with `password` there) asking for mfa, back to `returnTo`: sent to enrol. */
  async function askingMfaThroughCorp(browser: TwoHostBrowser, email: string, password: string, returnTo: string): Promise<JsonResponse> {
    const page = await browser.atA.get(`/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
    const start = await browser.atA.post('/auth/upstream/corp/start', {
      csrf: hiddenFields(page.text).csrf!,
      return_to: returnTo,
      acr: MFA,
    });
    const back = await browser.callback(await browser.atUpstream(start, email, password));
    expect(back.status, back.text).to.equal(303);
    expect(where(back)).to.match(/^\/auth\/sign-in\/enrol\?/);
    return back;
  }

  it("ATTACK: a thief at the provider, half-way through a sign-in asked for mfa, enrols after the administrator's unlink", async function () {
    const email = `bea-${randomBytes(3).toString('hex')}@example.com`;
    expect((await b.json('POST', '/users', { email, password: PASSWORD }, await b.rootToken())).status).to.equal(201);
    // Bea's first sign-in through corp makes her a person of A, with no factor yet.
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
    const found = (await a.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await a.rootToken())).body;
    const id = Number((found.entry?.[0]?.resource ?? found[0]).id);

    // Her account at corp is taken over: the thief signs in to A through it, asking for mfa, and
    // is sent to enrol an authenticator app of their own (she has none to give).
    const thief = new TwoHostBrowser(a, b);
    const back = await askingMfaThroughCorp(thief, email, PASSWORD, '/auth/signed-in');

    // The administrator answers the takeover as the guides say: the identity is unlinked.
    const unlinked = await a.json('DELETE', `/users/${id}/identities/corp`, undefined, await a.rootToken());
    expect(unlinked.status, unlinked.text).to.equal(204);

    // The thief's sign-in through corp goes no further: no enrolment, no browser signed in as Bea.
    const enrol = await thief.atA.get(where(back));
    if (enrol.status === 200) {
      const code = totpCode(secretOf(enrol), stepAt(Date.now()));
      const done = await thief.atA.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code });
      if (done.status === 200) await thief.atA.post('/auth/sign-in/continue', hiddenFields(done.text));
    }
    expect((await thief.atA.get('/auth/signed-in')).text).to.not.include('You are signed in as');
    const factors = await a.json('GET', `/users/${id}/factors`, undefined, await a.rootToken());
    expect(factors.body.factors, 'a factor the thief enrolled after the unlink').to.deep.equal([]);
    expect(enrol.status, 'the enrolment page after the unlink').to.equal(403);
  });

  it("ATTACK: a sign-in through it that enrols an app of the thief's does not stand for the password of the box", async function () {
    // Bea has a password of the box (an administrator made her account) and an identity at corp, linked
    // by its verified email at her first sign-in there. She has no second factor.
    const email = `bea-${randomBytes(3).toString('hex')}@example.com`;
    expect((await a.json('POST', '/users', { email, password: PASSWORD }, await a.rootToken())).status).to.equal(201);
    expect((await b.json('POST', '/users', { email, password: 'her-corp-password-1' }, await b.rootToken())).status).to.equal(201);
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, 'her-corp-password-1')).status).to.equal(303);

    // The thief at corp signs in to A through it asking for mfa, and enrols an app of their own.
    const thief = new TwoHostBrowser(a, b);
    const back = await askingMfaThroughCorp(thief, email, 'her-corp-password-1', '/auth/account');
    const enrol = await thief.atA.get(where(back));
    const code = totpCode(secretOf(enrol), stepAt(Date.now()));
    const codes = await thief.atA.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code });
    expect(codes.status, codes.text).to.equal(200);
    const signedIn = await thief.atA.post('/auth/sign-in/continue', hiddenFields(codes.text));
    expect(signedIn.status, signedIn.text).to.equal(303);

    // An app enrolled, not given: the account page still asks for the password of the box it does not know.
    const account = await thief.atA.get('/auth/account');
    expect(account.status, account.text).to.equal(200);
    const form = /<form method="post" action="\/auth\/account\/password">([\s\S]*?)<\/form>/.exec(account.text)![1]!;
    const changed = await thief.atA.post('/auth/account/password', { ...hiddenFields(form), new_password: 'a-thief-s-password-9' });
    expect(changed.status, 'a new password without the current one').to.equal(422);
    expect((await new TwoHostBrowser(a, b).atA.signIn(email, PASSWORD)).status, 'her password still signs in').to.equal(303);
  });
});

describe('a provider linked or unlinked is told by mail, as a factor is', function () {
  this.timeout(120_000);
  let smtp: TestSmtp;
  let a: Box;
  let b: Box;

  before(async function () {
    smtp = await TestSmtp.start();
    [a, b] = await startAll([Box.start({ env: smtp.boxEnv() }), Box.start({ hostname: 'localhost' })]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
  });
  after(async function () {
    await Promise.all([a?.stop(), b?.stop()]);
    await smtp?.stop();
  });

  const person = async (box: Box, name: string): Promise<{ id: number; email: string }> => {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  };
  const mailAbout = (email: string, subject: RegExp) =>
    smtp.waitForMail((m) => m.to.includes(email) && subject.test(m.parsed.subject ?? ''));

  it('ATTACK: a provider identity of the thief linked minutes after a sign-in is mailed, and so is its unlink', async function () {
    // Ann signed in minutes ago; whoever holds her browser links their own identity at corp, a way in that needs no password of hers.
    const ann = await person(a, 'ann');
    const thief = await person(b, 'thief');
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.atA.signIn(ann.email, PASSWORD)).status).to.equal(303);
    const linked = await browser.callback(
      await browser.atUpstream(await browser.start('corp', '/auth/account', true), thief.email, PASSWORD),
    );
    expect(linked.headers.get('location')).to.equal('/auth/account?changed=provider-linked');
    const added = await mailAbout(ann.email, /was added/);
    expect(added.parsed.text).to.include('Corp');

    const root = await a.rootToken();
    expect((await a.json('DELETE', `/users/${ann.id}/identities/corp`, undefined, root)).status).to.equal(204);
    const removed = await mailAbout(ann.email, /was removed/);
    expect(removed.parsed.text).to.include('Corp');
  });

  it('ATTACK: a password changed minutes after a sign-in with a second factor, without the current one, is mailed', async function () {
    // Cy signed in with her app minutes ago; whoever holds her browser sets a password of their own.
    const cy = await person(a, 'cy');
    const browser = new FormAgent(a);
    expect((await browser.signIn(cy.email, PASSWORD, '/auth/account')).status).to.equal(303);
    const setup = await browser.post('/auth/account/totp', hiddenFields((await browser.get('/auth/account')).text));
    const secret = secretOf(setup);
    const first = stepAt(Date.now());
    const confirmed = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code: totpCode(secret, first) });
    expect(confirmed.status, confirmed.text).to.equal(200);
    const thief = new FormAgent(a);
    const next = await thief.signIn(cy.email, PASSWORD);
    const second = await thief.get(where(next));
    const given = await thief.post('/auth/sign-in/second-factor', { ...hiddenFields(second.text), code: totpCode(secret, first + 1) });
    expect(given.status, given.text).to.equal(303);
    const account = await thief.get('/auth/account');
    const form = /<form method="post" action="\/auth\/account\/password">([\s\S]*?)<\/form>/.exec(account.text)![1]!;
    const changed = await thief.post('/auth/account/password', { ...hiddenFields(form), new_password: 'a-thief-s-password-9' });
    expect(changed.status, changed.text).to.equal(303);
    const told = await mailAbout(cy.email, /password .*was changed/i);
    expect(told.parsed.text).to.include('/auth/reset');
  });

  it('a password an administrator sets, or a reset sets, is mailed too', async function () {
    const dee = await person(a, 'dee');
    const root = await a.rootToken();
    expect((await a.json('PUT', `/users/${dee.id}`, { password: 'an-admin-s-password-7' }, root)).status).to.equal(200);
    await mailAbout(dee.email, /password .*was changed/i);
    const browser = new FormAgent(a);
    const ask = await browser.get('/auth/reset');
    expect((await browser.post('/auth/reset', { ...hiddenFields(ask.text), email: dee.email })).status).to.equal(200);
    const mail = await mailAbout(dee.email, /Reset your password/);
    const link = new URL(/(http\S+\/auth\/reset\/confirm\?token=[\w-]+)/.exec(mail.parsed.text ?? '')![1]!);
    const page = await browser.get(`${link.pathname}${link.search}`);
    const reset = await browser.post('/auth/reset/confirm', { ...hiddenFields(page.text), password: 'her-own-new-password-3' });
    expect(reset.status, reset.text).to.equal(200);
    await smtp.waitForMail(
      () => smtp.mailsTo(dee.email).filter((m) => /password .*was changed/i.test(m.parsed.subject ?? '')).length === 2,
    );
  });

  it('a provider linked by its verified email at a first sign-in there is mailed too', async function () {
    const bea = await person(a, 'bea');
    expect((await b.json('POST', '/users', { email: bea.email, password: PASSWORD }, await b.rootToken())).status).to.equal(201);
    expect((await new TwoHostBrowser(a, b).signIn('corp', bea.email, PASSWORD)).status).to.equal(303);
    const added = await mailAbout(bea.email, /was added/);
    expect(added.parsed.text).to.include('Corp');
  });
});

describe('a credential change posted from a browser lands only while that browser is signed in', function () {
  this.timeout(120_000);
  let box: Box;
  let db: pg.Client;

  before(async function () {
    box = await Box.start({ movableClock: true });
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
  });
  after(async function () {
    await db?.end();
    await box?.stop();
  });

  async function person(name: string): Promise<{ id: number; email: string }> {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }

  async function signedIn(email: string, returnTo = '/auth/account'): Promise<{ browser: FormAgent; next: JsonResponse }> {
    const browser = new FormAgent(box);
    const next = await browser.signIn(email, PASSWORD, returnTo);
    expect(next.status, next.text).to.equal(303);
    return { browser, next };
  }

  /** How far the box's clock is ahead of the test's. */
  let skew = 0;
  /** A code of `secret` the box takes now and has not taken yet: of the step its clock is moved one second into. */
  function codeFor(secret: Buffer): string {
    const into = ((Date.now() + skew * 1000) / 1000) % 30;
    const seconds = Math.ceil(30 - into + 1);
    box.advanceClock(seconds);
    skew += seconds;
    return totpCode(secret, stepAt(Date.now() + skew * 1000));
  }

  /** The authenticator app's page from the account page of `browser` (its secret not confirmed yet). */
  async function appSetup(browser: FormAgent): Promise<JsonResponse> {
    const setup = await browser.post('/auth/account/totp', hiddenFields((await browser.get('/auth/account')).text));
    expect(setup.status, setup.text).to.equal(200);
    return setup;
  }

  const factorsOf = async (id: number): Promise<{ factors: { id: string; kind: string }[]; recovery_codes_left: number }> =>
    (await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken())).body;

  /**
   * What `change` answers when the person's sign-ins end while it waits for their row: a reset (or a
   * password change, or an end from the account page) holds the row while it ends them. Here the
   * test holds it, so the change is caught between its own checks and its write, every time.
   * `newPassword`: the reset sets one too (the person's PASSWORD is hers no more).
   */
  async function endedWhileWaiting(id: number, change: () => Promise<JsonResponse>, newPassword = false): Promise<JsonResponse> {
    const reset = new pg.Client({ connectionString: box.databaseUrl });
    await reset.connect();
    try {
      await reset.query('BEGIN');
      await reset.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [id]);
      const answer = change();
      await eventually(
        'the change waiting for the person',
        async () =>
          (
            await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
          ).rows[0]!.n > 0,
        30_000,
        20,
      );
      await reset.query('DELETE FROM browser_sessions WHERE user_id = $1', [id]);
      await reset.query('DELETE FROM sign_in_steps WHERE user_id = $1', [id]);
      if (newPassword) await reset.query("UPDATE users SET password_hash = password_hash || 'reset' WHERE id = $1", [id]);
      await reset.query('COMMIT');
      return await answer;
    } finally {
      await reset.end();
    }
  }

  it('ATTACK: an authenticator app confirmed on the account page as a reset signs that browser out is not added', async function () {
    const ann = await person('ann');
    const { browser } = await signedIn(ann.email);
    const setup = await appSetup(browser);
    const code = codeFor(secretOf(setup));
    const answer = await endedWhileWaiting(ann.id, () => browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code }));
    expect(answer.status, answer.text).to.equal(303);
    expect(where(answer)).to.match(/^\/auth\/sign-in\?/);
    expect((await factorsOf(ann.id)).factors, 'an app confirmed from a browser signed out first').to.deep.equal([]);
  });

  it('ATTACK: an authenticator app enrolled in a sign-in as a reset ends that sign-in is not added', async function () {
    const bob = await person('bob');
    // Asked for a second factor that Bob has not: the sign-in enrols one.
    const browser = new FormAgent(box);
    const page = await browser.get('/auth/sign-in?return_to=%2Fauth%2Fsigned-in');
    const step = await browser.post('/auth/sign-in', { ...hiddenFields(page.text), email: bob.email, password: PASSWORD, acr: MFA });
    expect(where(step)).to.match(/^\/auth\/sign-in\/enrol\?/);
    const enrol = await browser.get(where(step));
    expect(enrol.status, enrol.text).to.equal(200);
    const code = codeFor(secretOf(enrol));
    const answer = await endedWhileWaiting(bob.id, () => browser.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code }));
    expect(answer.status, answer.text).to.equal(403);
    expect((await factorsOf(bob.id)).factors, 'an app confirmed in a sign-in ended first').to.deep.equal([]);
  });

  it('ATTACK: a recovery code given after the old password, as a reset ends that sign-in, signs nobody in', async function () {
    const fay = await person('fay');
    const { browser } = await signedIn(fay.email);
    const setup = await appSetup(browser);
    const done = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code: codeFor(secretOf(setup)) });
    const codes = [...done.text.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(codes).to.have.length(10);

    // The thief knows Fay's old password and holds one of her recovery codes (printed, left in a drawer).
    const thief = new FormAgent(box);
    const next = await thief.signIn(fay.email, PASSWORD);
    const page = await thief.get(where(next));
    expect(page.text).to.include('id="recovery_code"');
    // Fay resets her password as the code is given: the reset holds her row while it ends her sign-ins.
    const given = await endedWhileWaiting(
      fay.id,
      () => thief.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), recovery_code: codes[0]! }),
      true,
    );
    if (given.status === 303 && /^\/auth\/sign-in\/enrol\?/.test(where(given))) {
      const enrol = await thief.get(where(given));
      const enrolled = await thief.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code: codeFor(secretOf(enrol)) });
      if (enrolled.status === 200) await thief.post('/auth/sign-in/continue', hiddenFields(enrolled.text));
    }
    expect((await thief.get('/auth/signed-in')).text, 'the thief, after the reset').to.not.include('You are signed in as');
    expect(
      (await factorsOf(fay.id)).factors.map((f) => f.kind),
      'her app',
    ).to.deep.equal(['totp']);
  });

  it('ATTACK: recovery codes made, or a factor removed, as a reset signs that browser out: neither happens', async function () {
    const cy = await person('cy');
    const { browser } = await signedIn(cy.email);
    const setup = await appSetup(browser);
    const confirmed = await browser.post('/auth/account/totp/confirm', {
      ...hiddenFields(setup.text),
      code: codeFor(secretOf(setup)),
    });
    expect(confirmed.status, confirmed.text).to.equal(200);
    const [app] = (await factorsOf(cy.id)).factors;

    // A browser signed in with the app's code (a sign-in minutes ago: a recent proof).
    const withApp = async (): Promise<FormAgent> => {
      const { browser: again, next } = await signedIn(cy.email);
      const second = await again.get(where(next));
      const code = codeFor(secretOf(setup));
      const done = await again.post('/auth/sign-in/second-factor', { ...hiddenFields(second.text), code });
      expect(done.status, done.text).to.equal(303);
      return again;
    };
    const codesAt = await withApp();
    const codesForm = hiddenFields((await codesAt.get('/auth/account')).text);
    const codes = await endedWhileWaiting(cy.id, () => codesAt.post('/auth/account/recovery-codes', codesForm));
    expect(codes.status, 'new recovery codes shown to a browser signed out first').to.equal(303);
    expect(where(codes)).to.match(/^\/auth\/sign-in\?/);

    const removeAt = await withApp();
    const removeForm = { ...hiddenFields((await removeAt.get('/auth/account')).text), factor: app!.id };
    const removed = await endedWhileWaiting(cy.id, () => removeAt.post('/auth/account/factors/remove', removeForm));
    expect(removed.status, 'a factor removed from a browser signed out first').to.equal(303);
    expect(where(removed)).to.match(/^\/auth\/sign-in\?/);
    expect((await factorsOf(cy.id)).factors.map((f) => f.kind)).to.deep.equal(['totp']);
  });
});

describe('resets racing each other, each with its own link, at two replicas', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let replica: Box;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_MAIL_MAX_PER_RECIPIENT: '100' } });
    replica = await box.startAnother(smtp.boxEnv());
  });
  after(async function () {
    await replica?.stop();
    await box?.stop();
    await smtp?.stop();
  });

  it('ATTACK: links used at once, each removing another factor: one reset wins, never a 5xx, a factor stays', async function () {
    const statuses: number[] = [];
    // A replica hashes one new password at a time: two replicas, two at once, and so on for several people.
    for (let round = 0; round < 5; round++) {
      const email = `dee-${round}-${randomBytes(3).toString('hex')}@example.com`;
      const made = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
      expect(made.status, made.text).to.equal(201);
      const id = made.body.id as number;
      await addDummyPasskey(box.databaseUrl!, id, 'Phone');
      await addDummyPasskey(box.databaseUrl!, id, 'Laptop');
      const links = 4;
      for (let i = 0; i < links; i++) {
        const asker = new FormAgent(box);
        const ask = await asker.get('/auth/reset');
        expect((await asker.post('/auth/reset', { ...hiddenFields(ask.text), email })).status).to.equal(200);
      }
      await smtp.waitForMail(() => smtp.mailsTo(email).length >= links);
      // Each link's page loaded in a browser of its own (at one replica or the other), then every
      // new password sent at once: half remove the phone's passkey, half the laptop's.
      const forms = await Promise.all(
        smtp.mailsTo(email).map(async (mail, i) => {
          const browser = new FormAgent(i % 2 ? box : replica);
          const link = new URL(/(http\S+\/auth\/reset\/confirm\?token=[\w-]+)/.exec(mail.parsed.text ?? '')![1]!);
          const page = await browser.get(`${link.pathname}${link.search}`);
          expect(page.status, page.text).to.equal(200);
          const name = Math.floor(i / 2) % 2 ? 'Phone' : 'Laptop';
          const remove = new RegExp(`name="remove" value="(\\d+)"> Remove Passkey “${name}”`).exec(page.text)![1]!;
          return { browser, fields: { ...hiddenFields(page.text), password: `a-new-good-password-${i}x`, remove } };
        }),
      );
      const answers = await Promise.all(forms.map(({ browser, fields }) => browser.post('/auth/reset/confirm', fields)));
      statuses.push(...answers.map((a) => a.status));
      expect(
        answers.filter((a) => a.status === 200),
        `answers ${statuses.join(' ')}`,
      ).to.have.length(1);
      const factors = (await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken())).body.factors as unknown[];
      expect(factors).to.have.length(1);
    }
    expect(
      statuses.filter((s) => s >= 500),
      `answers ${statuses.join(' ')}`,
    ).to.deep.equal([]);
  });
});
