// Sign-in codes by email as attackers try them beyond ./email-codes.test.ts (docs/guides/
// second-factors.md): whoever reads the person's mailbox, through a password reset, against a
// person who also has an app; a code asked for in a sign-in the same browser then began anew; forms
// naming a kind the person does not hold, or two kinds at once; a sign-in asked for a passkey
// (acr phr) answered with a mailed code; one code setting up codes by email posted many times at
// once; codes by email set up on an address not proven.
// The codes are read from the mails the box sends to a real SMTP server (test/support/smtp.ts).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, type JsonResponse } from '../support/box.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { isCodeMail, mailedCode as mailedCodeOf } from '../support/email-codes.js';
import { FormAgent, formFields, hiddenFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';
import { appOnAccountPage, stepAt, totpCode } from '../support/totp.js';

const PASSWORD = 'a-good-password-1';
const CALLBACK = 'https://rp.example/callback';
const location = (res: JsonResponse): string => res.headers.get('location') ?? '';
/** The reset link in a received mail's text, as a path of the box. */
const resetLinkIn = (mail: ReceivedMail): string => {
  const found = /https?:\/\/[^\s"<>]+\/auth\/reset\/confirm\?token=[A-Za-z0-9_-]+/.exec(mail.parsed.text ?? '');
  expect(found, mail.parsed.text).to.not.equal(null);
  const url = new URL(found![0]);
  return `${url.pathname}${url.search}`;
};

describe('sign-in codes by email: attacks', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let db: pg.Client;
  /** A client of the code flow, to ask for a sign-in with acr_values. */
  let rp: CodeClient;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_SMTP_SIGN_IN_CODES: 'first-step', BOXAUTH_SIGN_IN_MAX_FAILURES: '10' } });
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    rp = await codeClient(box, await box.rootToken(), CALLBACK);
  });
  after(async function () {
    await db?.end();
    await box?.stop();
    await smtp?.stop();
  });

  let n = 0;
  /** A new person with a proven address (an administrator's vouching). */
  async function person(): Promise<{ id: number; email: string }> {
    const email = `eve-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const made = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    return { id: Number(made.body.id), email };
  }

  const mailedCode = (email: string, ask: () => Promise<JsonResponse>) => mailedCodeOf(smtp, email, ask);

  /** Sets up codes by email on the account page of `browser`, signed in with the password just now. */
  async function emailCodesOnAccount(browser: FormAgent, email: string): Promise<void> {
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('Get sign-in codes by email');
    const { code, page } = await mailedCode(email, () =>
      browser.post('/auth/account/email-codes', formFields(account.text, '/auth/account/email-codes')),
    );
    const done = await browser.post('/auth/account/email-codes', { ...hiddenFields(page.text), email_code: code });
    expect(done.status, done.text).to.equal(200);
  }

  const factorKinds = async (id: number): Promise<{ kind: string; id: number }[]> => {
    const res = await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken());
    expect(res.status, res.text).to.equal(200);
    return res.body.factors;
  };

  /** A browser past the password of `email`, on its second-factor page. */
  async function atSecondFactor(email: string, password = PASSWORD, browser = new FormAgent(box)) {
    const next = await browser.signIn(email, password);
    expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor/);
    const page = await browser.get(location(next));
    expect(page.status, page.text).to.equal(200);
    return { browser, page };
  }

  /** Posts "send a code" on the browser's second-factor page. */
  async function askCode(browser: FormAgent): Promise<JsonResponse> {
    const page = await browser.get('/auth/sign-in/second-factor');
    return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), send: 'email' });
  }

  async function give(browser: FormAgent, code: string): Promise<JsonResponse> {
    const page = await browser.get('/auth/sign-in/second-factor');
    return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), email_code: code });
  }

  const signedIn = async (browser: FormAgent): Promise<boolean> =>
    (await browser.get('/auth/signed-in')).text.includes('You are signed in as');

  it('ATTACK: the mailbox alone, through a reset, gets past an app: codes by email go with a reset that leaves another factor', async function () {
    const { id, email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await appOnAccountPage(own);
    await emailCodesOnAccount(own, email);
    const held = await factorKinds(id);
    expect(held.map((f) => f.kind)).to.have.members(['totp', 'email']);
    const app = held.find((f) => f.kind === 'totp')!;

    // Whoever reads the mailbox (and not the phone) asks for a reset, and follows its link.
    const mailbox = new FormAgent(box);
    const asked = await mailbox.get('/auth/reset');
    expect((await mailbox.post('/auth/reset', { ...hiddenFields(asked.text), email })).status).to.equal(200);
    const resets = (): ReceivedMail[] => smtp.mailsTo(email).filter((m) => /^Reset your password/.test(m.parsed.subject ?? ''));
    await smtp.waitForMail(() => resets().length >= 1);
    const link = resetLinkIn(resets()[0]!);
    const form = await mailbox.get(link);
    expect(form.status, form.text).to.equal(200);
    // Removing the app and keeping the codes the mailbox reads would leave nothing but the mailbox: refused.
    const dropApp = await mailbox.post('/auth/reset/confirm', {
      ...hiddenFields(form.text),
      password: 'the-mailbox-password-7',
      remove: String(app.id),
    });
    expect(dropApp.status, 'the app removed, only the codes by email left').to.equal(422);
    expect((await factorKinds(id)).map((f) => f.kind)).to.have.members(['totp', 'email']);
    // Keeping every factor: the codes by email go with the reset (they prove the mailbox the link just proved).
    const reset = await mailbox.post('/auth/reset/confirm', { ...hiddenFields(form.text), password: 'the-mailbox-password-7' });
    expect(reset.status, reset.text).to.equal(200);
    expect((await factorKinds(id)).map((f) => f.kind)).to.deep.equal(['totp']);

    // Signing in with the new password, the mailbox has no code to offer: the app is asked.
    const { browser, page } = await atSecondFactor(email, 'the-mailbox-password-7');
    expect(page.text).not.to.include('id="send-email-code"');
    const mails = smtp.mailsTo(email).filter(isCodeMail).length;
    expect((await askCode(browser)).status).to.equal(400);
    await new Promise((r) => setTimeout(r, 1500));
    expect(smtp.mailsTo(email).filter(isCodeMail), 'no code mailed after the reset').to.have.length(mails);
    expect(await signedIn(browser)).to.equal(false);
  });

  it('a person whose only factor is codes by email keeps them through a reset (the mailbox is their account, as the docs say)', async function () {
    const { id, email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await emailCodesOnAccount(own, email);
    const mailbox = new FormAgent(box);
    const asked = await mailbox.get('/auth/reset');
    expect((await mailbox.post('/auth/reset', { ...hiddenFields(asked.text), email })).status).to.equal(200);
    const resets = (): ReceivedMail[] => smtp.mailsTo(email).filter((m) => /^Reset your password/.test(m.parsed.subject ?? ''));
    await smtp.waitForMail(() => resets().length >= 1);
    const form = await mailbox.get(resetLinkIn(resets()[0]!));
    const reset = await mailbox.post('/auth/reset/confirm', { ...hiddenFields(form.text), password: 'the-mailbox-password-8' });
    expect(reset.status, reset.text).to.equal(200);
    expect((await factorKinds(id)).map((f) => f.kind)).to.deep.equal(['email']);
  });

  it('wrong app codes and wrong mailed codes share the account count; a new code gives no guesses back; REST shows no code', async function () {
    const { id, email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    const app = await appOnAccountPage(own);
    await emailCodesOnAccount(own, email);
    const { browser } = await atSecondFactor(email);
    const appCode = totpCode(app.secret, stepAt(Date.now()));
    const wrongApp = appCode === '123456' ? '654321' : '123456';
    for (let i = 0; i < 5; i++) {
      const page = await browser.get('/auth/sign-in/second-factor');
      expect((await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code: wrongApp })).status).to.equal(401);
    }
    const first = await mailedCode(email, () => askCode(browser));
    const wrongMailed = first.code === '123456' ? '654321' : '123456';
    for (let i = 0; i < 5; i++) expect((await give(browser, wrongMailed)).status).to.equal(401);
    // Ten wrong codes of both ways: a new code mailed now is refused too, and so is the app's.
    const fresh = await mailedCode(email, () => askCode(browser));
    expect((await give(browser, fresh.code)).status, 'a new code after ten wrong ones').to.equal(429);
    const page = await browser.get('/auth/sign-in/second-factor');
    const viaApp = await browser.post('/auth/sign-in/second-factor', {
      ...hiddenFields(page.text),
      code: totpCode(app.secret, stepAt(Date.now())),
    });
    expect(viaApp.status, "the app's code after ten wrong ones").to.equal(429);
    expect(await signedIn(browser)).to.equal(false);
    // An administrator's view of the factors names no code, its hash, its binding or its expiry.
    const listed = await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken());
    expect(listed.text).not.to.match(/code_?(hash|for|expires)/i);
  });

  it("ATTACK: strangers' asks for codes to a person's address do not stop their second factor: the password holder has a count of their own", async function () {
    const { email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await emailCodesOnAccount(own, email);
    // Strangers, in fresh browsers, press "Email me a sign-in code" for the address until refused.
    const strangers: number[] = [];
    for (let i = 0; i < 7; i++) {
      const stranger = new FormAgent(box);
      const page = await stranger.get('/auth/sign-in');
      strangers.push((await stranger.post('/auth/sign-in', { ...hiddenFields(page.text), email, send: 'email-code' })).status);
    }
    expect(strangers.slice(-2)).to.deep.equal([429, 429]);
    // The person, past their password in a new browser, still gets their second factor's code, and signs in.
    const { browser } = await atSecondFactor(email);
    const { code } = await mailedCode(email, () => askCode(browser));
    expect((await give(browser, code)).status).to.equal(303);
    expect(await signedIn(browser)).to.equal(true);
  });

  it('ATTACK: a code mailed to the old address still signed in after the address became another; now void, as its links', async function () {
    const { id, email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await emailCodesOnAccount(own, email);
    const { browser } = await atSecondFactor(email);
    const { code } = await mailedCode(email, () => askCode(browser));
    // The old mailbox is not the person's any more (a recycled address): an administrator gives them their new one.
    const moved = await box.json('PUT', `/users/${id}`, { email: `new-${email}`, email_verified: true }, await box.rootToken());
    expect(moved.status, moved.text).to.equal(200);
    expect((await give(browser, code)).status, 'a code mailed to the old address').to.equal(401);
    expect(await signedIn(browser)).to.equal(false);
    // The next code goes to the new address, and signs in.
    const next = await mailedCode(`new-${email}`, () => askCode(browser));
    expect((await give(browser, next.code)).status).to.equal(303);
  });

  it('ATTACK: a code asked instead of a password, mailed to the old address, signed in after the change; now void', async function () {
    const { id, email } = await person();
    await db.query('UPDATE users SET password_set = false WHERE id = $1', [id]); // as an IdentityProvider or SCIM makes them
    const browser = new FormAgent(box);
    const { code, page } = await mailedCode(email, async () => {
      const signIn = await browser.get('/auth/sign-in');
      return browser.post('/auth/sign-in', { ...hiddenFields(signIn.text), email, send: 'email-code' });
    });
    const moved = await box.json('PUT', `/users/${id}`, { email: `new-${email}`, email_verified: true }, await box.rootToken());
    expect(moved.status, moved.text).to.equal(200);
    const given = await browser.post('/auth/sign-in/email-code', { ...hiddenFields(page.text), email: `new-${email}`, email_code: code });
    expect(given.status, 'a code mailed to the old address, typed with the new one').not.to.equal(303);
    expect(await signedIn(browser)).to.equal(false);
  });

  it('a code asked for in a sign-in is refused once the same browser began a new one', async function () {
    const { email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await emailCodesOnAccount(own, email);
    const { browser } = await atSecondFactor(email);
    const { code } = await mailedCode(email, () => askCode(browser));
    // The same browser signs in again from the start (a new step), without asking a new code.
    await atSecondFactor(email, PASSWORD, browser);
    expect((await give(browser, code)).status, 'a code of the sign-in before').to.equal(401);
    expect(await signedIn(browser)).to.equal(false);
  });

  it('"send a code" without a sign-in step mails nothing', async function () {
    const { email } = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    await emailCodesOnAccount(own, email);
    const mails = smtp.mailsTo(email).filter(isCodeMail).length;
    // A stranger with the form (a CSRF cookie of their own) and no step: nothing is sent, nothing said of the person.
    const stranger = new FormAgent(box);
    const page = await stranger.get('/auth/sign-in');
    const sent = await stranger.post('/auth/sign-in/second-factor', { csrf: hiddenFields(page.text).csrf!, send: 'email' });
    expect(sent.status).to.equal(403);
    expect(sent.text).not.to.include(email);
    await new Promise((r) => setTimeout(r, 1500));
    expect(smtp.mailsTo(email).filter(isCodeMail)).to.have.length(mails);
  });

  /** The code mails sent to `email` so far (after a moment for one on its way). */
  const codeMails = async (email: string): Promise<number> => {
    await new Promise((r) => setTimeout(r, 1500));
    return smtp.mailsTo(email).filter(isCodeMail).length;
  };

  /** A person signed in with the password in a browser of their own. */
  async function signedInPerson(): Promise<{ id: number; email: string; own: FormAgent }> {
    const who = await person();
    const own = new FormAgent(box);
    expect((await own.signIn(who.email, PASSWORD, '/auth/account')).status).to.equal(303);
    return { ...who, own };
  }

  it('ATTACK: send= of a kind not held, of no mailed kind, or beside a code, and a mailed code of one with an app only: nothing mailed, nobody in', async function () {
    const { email, own } = await signedInPerson();
    const { secret, step } = await appOnAccountPage(own);
    const { browser, page } = await atSecondFactor(email);
    const fields = hiddenFields(page.text);
    const post = (more: Record<string, string>) => browser.post('/auth/sign-in/second-factor', { ...fields, ...more });
    const right = totpCode(secret, step + 1);
    for (const send of ['email', 'totp', 'passkey', 'EMAIL', '__proto__', 'constructor', 'toString', ''])
      expect((await post({ send })).status, `send=${send}`).to.equal(400);
    // A field of a kind the person does not hold wins over nothing: it is refused, and the app's right code beside it is not spent.
    expect((await post({ send: 'email', code: right })).status, 'send=email beside a code').to.equal(400);
    expect((await post({ email_code: '123456' })).status, 'a mailed code, none held').to.equal(401);
    expect((await post({ email_code: '123456', code: right })).status, 'a mailed code beside the app code').to.equal(401);
    expect(await signedIn(browser)).to.equal(false);
    expect(await codeMails(email)).to.equal(0);
    expect((await post({ code: right })).status, 'the app code alone, still good').to.equal(303);
    expect(await signedIn(browser)).to.equal(true);
  });

  it('ATTACK: a passkey holder asked for acr phr answers with codes by email: none mailed, none taken, the code stays good; no phr without a passkey', async function () {
    const { id, email, own } = await signedInPerson();
    await emailCodesOnAccount(own, email);
    await db.query(
      `INSERT INTO factors (user_id, kind, name, credential_id, public_key, sign_count) VALUES ($1, 'passkey', 'Laptop', $2, $3, 0)`,
      [id, randomBytes(16), randomBytes(65)],
    );
    const mails = await codeMails(email);
    const { browser, page } = await atSecondFactor(email);
    const post = (more: Record<string, string>) => browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), ...more });
    expect((await post({ acr: 'phr', send: 'email' })).status, 'send a code under phr').to.equal(400);
    expect(await codeMails(email), 'no code mailed under phr').to.equal(mails);
    const { code } = await mailedCode(email, () => askCode(browser));
    const refused = await post({ acr: 'phr', email_code: code });
    expect(refused.status, 'a right mailed code under phr').to.equal(400);
    expect(refused.text).to.include('asks for a passkey');
    expect(await signedIn(browser)).to.equal(false);
    expect((await post({ email_code: code })).status, 'the same code, without phr: it was not taken').to.equal(303);

    // The sign-in of a client asking for phr, the code given with acr left out of the form: the
    // second step passes (otp), but the client gets no code for it: the passkey is asked again.
    const agent = new FormAgent(box);
    const next = await agent.signIn(email, PASSWORD, rp.authorizePath({ acr_values: 'phr' }));
    expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor\?.*acr=phr/);
    const second = await agent.get(location(next));
    const { code: rpCode } = await mailedCode(email, () =>
      agent.post('/auth/sign-in/second-factor', { ...hiddenFields(second.text), acr: '', send: 'email' }),
    );
    let went = await agent.post('/auth/sign-in/second-factor', { ...hiddenFields(second.text), acr: '', email_code: rpCode });
    for (let hops = 0; went.status >= 300 && went.status < 400 && hops < 5; hops++) {
      expect(location(went), 'no code for the client without a passkey').not.to.include(CALLBACK);
      went = await agent.get(location(went));
    }
    expect(went.text).to.include('asks for a passkey');
  });

  it('ATTACK: one code setting up codes by email, posted 20 times at once: one set of recovery codes, one factor', async function () {
    const { id, email, own } = await signedInPerson();
    const account = await own.get('/auth/account');
    const { code, page } = await mailedCode(email, () =>
      own.post('/auth/account/email-codes', formFields(account.text, '/auth/account/email-codes')),
    );
    const fields = { ...hiddenFields(page.text), email_code: code };
    const answers = await Promise.all(Array.from({ length: 20 }, () => own.post('/auth/account/email-codes', fields)));
    expect(answers.map((a) => a.status).filter((s) => s >= 500)).to.deep.equal([]);
    expect(answers.filter((a) => a.status === 200 && a.text.includes('<li><code>'))).to.have.length(1);
    expect((await factorKinds(id)).filter((f) => f.kind === 'email')).to.have.length(1);
  });

  it('ATTACK: codes by email set up on an address not proven: refused, with or without a code forged in the form; no mail, no factor', async function () {
    const { id, email, own } = await signedInPerson();
    const unproven = await box.json('PUT', `/users/${id}`, { email_verified: false }, await box.rootToken());
    expect(unproven.status, unproven.text).to.equal(200);
    const account = await own.get('/auth/account');
    expect(account.text).not.to.include('Get sign-in codes by email');
    const { csrf } = hiddenFields(account.text);
    for (const forged of [{}, { email_code: '123456' }] as Record<string, string>[]) {
      const res = await own.post('/auth/account/email-codes', { csrf: csrf!, ...forged });
      expect(res.status, JSON.stringify(forged)).to.equal(409);
      expect(res.text).to.include('confirm yours first');
    }
    expect(await codeMails(email)).to.equal(0);
    expect(await factorKinds(id)).to.deep.equal([]);
    expect((await db.query('SELECT count(*)::int AS n FROM factors WHERE user_id = $1', [id])).rows[0].n, 'not even pending').to.equal(0);
  });

  it('ATTACK: one code setting up codes by email in a sign-in that must enrol, posted 20 times at once: one enrolment, never a 5xx', async function () {
    const group = await box.json('POST', '/groups', { name: `enrolling-${randomBytes(3).toString('hex')}` }, await box.rootToken());
    expect(group.status, group.text).to.equal(201);
    await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [group.body.id]);
    const { id, email } = await person();
    expect((await box.json('PUT', `/users/${id}`, { 'group-ids': [group.body.id] }, await box.rootToken())).status).to.equal(200);
    const browser = new FormAgent(box);
    const next = await browser.signIn(email, PASSWORD);
    expect(location(next)).to.match(/^\/auth\/sign-in\/enrol/);
    const enrol = await browser.get(location(next));
    const { code, page } = await mailedCode(email, () =>
      browser.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), send: 'email' }),
    );
    const fields = { ...hiddenFields(page.text), email_code: code };
    const answers = await Promise.all(Array.from({ length: 20 }, () => browser.post('/auth/sign-in/enrol', fields)));
    expect(answers.map((a) => a.status).filter((s) => s >= 500)).to.deep.equal([]);
    expect(answers.filter((a) => a.status === 200 && a.text.includes('<li><code>'))).to.have.length(1);
    expect((await factorKinds(id)).filter((f) => f.kind === 'email')).to.have.length(1);
  });

  it('ATTACK: "send a code" posted 20 times at once by the password holder mails no more than asking one by one does', async function () {
    const { email, own } = await signedInPerson();
    await emailCodesOnAccount(own, email); // one mail already
    const { browser, page } = await atSecondFactor(email);
    const fields = { ...hiddenFields(page.text), send: 'email' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => browser.post('/auth/sign-in/second-factor', fields)));
    expect([...new Set(answers.map((a) => a.status))].sort()).to.deep.equal([200, 429]);
    // Asked one by one, the fifth mail is the last (./email-codes.test.ts): four more here at most.
    expect(answers.filter((a) => a.status === 200).length).to.be.at.most(4);
    expect(await codeMails(email)).to.be.at.most(5);
  });
});
