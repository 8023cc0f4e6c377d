// A code by email instead of a password (docs/guides/second-factors.md "A code instead of a
// password"), for people without a password of the box, on a box with
// BOXAUTH_SMTP_SIGN_IN_CODES=first-step. The codes are read from the mails the box sends to a real
// SMTP server (test/support/smtp.ts). What an attacker tries: learning which addresses may use it
// (the same page for everyone, and nobody else mailed), guessing (counted and throttled), one code
// sent many times at once, a code asked for in another browser, two codes of one mailbox as "two
// factors", and the code on a box that does not offer it.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { Box, basic, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, formFields, hiddenFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';

const PASSWORD = 'a-good-password-1';
const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

const authorizePath = (): string =>
  `/auth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'rp',
    redirect_uri: CALLBACK,
    scope: 'openid email',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;
const location = (res: JsonResponse): string => res.headers.get('location') ?? '';
const isCodeMail = (m: ReceivedMail): boolean => /sign-in code/.test(m.parsed.subject ?? '');

describe('sign-in codes by email instead of a password', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let db: pg.Client;

  before(async function () {
    smtp = await TestSmtp.start();
    // Ten wrong codes an account.
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_SMTP_SIGN_IN_CODES: 'first-step', BOXAUTH_SIGN_IN_MAX_FAILURES: '10' } });
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      { grant_types: ['authorization_code'], secret: SECRET, first_party: true, auth: { authorization_code: { redirect_uri: CALLBACK } } },
      await box.rootToken(),
    );
    expect(rp.status, rp.text).to.be.oneOf([200, 201]);
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
  });
  after(async function () {
    await db?.end();
    await box?.stop();
    await smtp?.stop();
  });

  let n = 0;
  /** A person with a password and a proven address (an administrator's vouching). */
  async function withPassword(): Promise<{ id: number; email: string }> {
    const email = `ida-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const made = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    return { id: Number(made.body.id), email };
  }
  /** A person without a password of the box, as an IdentityProvider or SCIM makes them. */
  async function withoutPassword(): Promise<{ id: number; email: string }> {
    const who = await withPassword();
    await db.query('UPDATE users SET password_set = false WHERE id = $1', [who.id]);
    return who;
  }

  /** "Email me a sign-in code" for `email` on the sign-in page of `browser` (of `on`, this box by default). */
  async function ask(browser: FormAgent, email: string, returnTo = '/auth/signed-in'): Promise<JsonResponse> {
    const page = await browser.get(`/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
    expect(page.text).to.include('Email me a sign-in code');
    return browser.post('/auth/sign-in', { ...hiddenFields(page.text), email, send: 'email-code' });
  }

  /** The code mailed to `email` after `ask`. */
  async function mailedCode(email: string, asked: () => Promise<JsonResponse>): Promise<{ code: string; page: JsonResponse }> {
    const before = smtp.mailsTo(email).filter(isCodeMail).length;
    const page = await asked();
    expect(page.status, page.text).to.equal(200);
    const mail = await smtp.waitForMail(
      (m) => m.to.includes(email) && isCodeMail(m) && smtp.mailsTo(email).filter(isCodeMail).indexOf(m) >= before,
    );
    const code = /Your code: (\d{6})/.exec(mail.parsed.text ?? '')?.[1];
    expect(code, mail.parsed.text).to.be.a('string');
    return { code: code!, page };
  }

  /** Types `code` on the code page `page`. */
  const give = (browser: FormAgent, page: JsonResponse, code: string, extra: Record<string, string> = {}): Promise<JsonResponse> =>
    browser.post('/auth/sign-in/email-code', { ...hiddenFields(page.text), email_code: code, ...extra });

  const signedIn = async (browser: FormAgent): Promise<boolean> =>
    (await browser.get('/auth/signed-in')).text.includes('You are signed in as');

  /** Waits until the box has handled every mail queued to `address` (sent, or found to be for nobody). */
  const outboxDone = (address: string): Promise<boolean> =>
    eventually(`the outbox done with ${address}`, async () => {
      const { rows } = await db.query('SELECT 1 FROM mail_outbox WHERE lower(address) = lower($1)', [address]);
      return rows.length === 0;
    });

  /** A page with what differs between two browsers and two addresses taken out. */
  const shape = (page: JsonResponse, email: string): string =>
    page.text.replaceAll(email, 'EMAIL').replace(/name="csrf" value="[^"]*"/g, 'name="csrf" value=""');

  it('a person without a password signs in with a mailed code: amr otp, the audit says so', async function () {
    const { id, email } = await withoutPassword();
    const browser = new FormAgent(box);
    const { code, page } = await mailedCode(email, () => ask(browser, email, authorizePath()));
    expect(page.text).to.include('id="email_code"');
    const done = await give(browser, page, code);
    expect(done.status, done.text).to.equal(303);
    const back = await browser.get(location(done));
    expect(back.status, back.text.slice(0, 400)).to.equal(302);
    const authCode = new URL(location(back)).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: authCode, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    const idToken = decodeJwt(tokens.body.id_token);
    expect(idToken.amr).to.deep.equal(['otp']);
    expect(idToken.acr).to.equal('urn:boxauth:acr:password');
    const events = await eventually('the sign-in audited', async () => {
      const res = await box.json('GET', `/AuditEvent?user=${id}&event=sign_in&outcome=success`, undefined, await box.rootToken());
      const found = (res.body.entry as { resource: any }[]).map((e) => e.resource);
      return found.length ? found : undefined;
    });
    expect(events.map((e) => e.detail.reason)).to.deep.equal(['email code']);
  });

  it("ATTACK: strangers' asks for a person's address do not stop the person's own browser getting a code; it has a bound of its own", async function () {
    const { email } = await withoutPassword();
    // The person signs in once with a code in their own browser, then signs out.
    const own = new FormAgent(box);
    const first = await mailedCode(email, () => ask(own, email));
    expect((await give(own, first.page, first.code)).status).to.equal(303);
    const out = await own.get('/auth/sign-out');
    expect((await own.post('/auth/sign-out', hiddenFields(out.text))).status).to.be.oneOf([200, 303]);
    expect(await signedIn(own)).to.equal(false);

    // Strangers, each in a fresh browser, ask for codes to that address until the box refuses them.
    const strangers: number[] = [];
    for (let i = 0; i < 8; i++) strangers.push((await ask(new FormAgent(box), email)).status);
    expect(strangers.filter((s) => s === 200)).to.have.length(4); // the person's own first ask counted with strangers' asks
    expect(strangers.slice(4)).to.deep.equal([429, 429, 429, 429]);
    await outboxDone(email); // the strangers' mails delivered, so that the next one to arrive is the person's

    // The person's own browser still gets a code at once, and signs in with it.
    const again = await mailedCode(email, () => ask(own, email));
    expect((await give(own, again.page, again.code)).status).to.equal(303);
    expect(await signedIn(own)).to.equal(true);

    // That browser has a bound of its own (its cookie, made anew at this sign-in): a stolen device cookie does not flood the mailbox.
    const own2: number[] = [];
    for (let i = 0; i < 7; i++) own2.push((await ask(own, email)).status);
    expect(own2).to.deep.equal([200, 200, 200, 200, 200, 429, 429]);
    // …nor does it stand for another person: asks for another address count with strangers'.
    const other = await withoutPassword();
    for (let i = 0; i < 5; i++) expect((await ask(new FormAgent(box), other.email)).status).to.equal(200);
    expect((await ask(own, other.email)).status).to.equal(429);
  });

  it('answers a person with a password, an unknown address and a person whose factor is codes by email as it does anyone: no mail', async function () {
    const may = await withoutPassword();
    const hasPassword = await withPassword();
    const unknown = { email: `nobody-${randomBytes(4).toString('hex')}@example.com` };
    // Codes by email as their only factor: two mails to one mailbox are no two factors, so no code instead of a password either.
    const onlyMail = await withoutPassword();
    await db.query("INSERT INTO factors (user_id, kind, name, confirmed) VALUES ($1, 'email', 'Codes by email', true)", [onlyMail.id]);

    const { page: mailed } = await mailedCode(may.email, () => ask(new FormAgent(box), may.email));
    for (const other of [hasPassword, unknown, onlyMail]) {
      const page = await ask(new FormAgent(box), other.email);
      expect(page.status, other.email).to.equal(200);
      expect(shape(page, other.email), other.email).to.equal(shape(mailed, may.email));
      await outboxDone(other.email);
      expect(smtp.mailsTo(other.email).filter(isCodeMail), other.email).to.deep.equal([]);
    }
    const { rows } = await db.query('SELECT 1 FROM first_step_codes WHERE user_id = ANY($1)', [[hasPassword.id, onlyMail.id]]);
    expect(rows).to.have.length(0);
  });

  it('one code sent many times at once signs in once', async function () {
    const { email } = await withoutPassword();
    const browser = new FormAgent(box);
    const { code, page } = await mailedCode(email, () => ask(browser, email));
    const answers = await Promise.all(Array.from({ length: 8 }, () => give(browser, page, code)));
    expect(answers.filter((a) => a.status === 303)).to.have.length(1);
    expect(answers.filter((a) => a.status !== 303).map((a) => a.status)).to.satisfy((s: number[]) => s.every((x) => x === 401));
  });

  it('a code asked for in another browser is refused', async function () {
    const { email } = await withoutPassword();
    const here = new FormAgent(box);
    const there = new FormAgent(box);
    const { code, page } = await mailedCode(email, () => ask(here, email));
    // The code asked for there replaces this one (a person holds one code at a time).
    const { code: last, page: elsewhere } = await mailedCode(email, () => ask(there, email));
    expect((await give(here, page, last)).status, "the other browser's code").to.equal(401);
    expect(await signedIn(here)).to.equal(false);
    expect((await give(there, elsewhere, last)).status, 'where it was asked for').to.equal(303);
    expect(await signedIn(there)).to.equal(true);
    expect((await give(here, page, code)).status, 'the code it replaced').to.equal(401);
  });

  it('is not enough where the sign-in asks for two factors: nobody is signed in', async function () {
    const { email } = await withoutPassword();
    const browser = new FormAgent(box);
    const { code, page } = await mailedCode(email, () => ask(browser, email));
    const answer = await give(browser, page, code, { acr: 'urn:boxauth:acr:mfa' });
    expect(answer.status).to.equal(403);
    expect(answer.text).to.include('A code by email is not enough to sign in here');
    expect(await signedIn(browser)).to.equal(false);
  });

  it('a box without first-step offers nothing and mails nothing', async function () {
    const { email } = await withoutPassword();
    const other = await box.startAnother({
      ...smtp.boxEnv(),
      BOXAUTH_SMTP_SIGN_IN_CODES: 'second-factor',
      BOXAUTH_SIGN_IN_MAX_FAILURES: '10',
    });
    try {
      const browser = new FormAgent(other);
      const page = await browser.get('/auth/sign-in');
      expect(page.text).not.to.include('Email me a sign-in code');
      const forged = await browser.post('/auth/sign-in', { ...formFields(page.text, '/auth/sign-in'), email, send: 'email-code' });
      expect(forged.status).to.equal(401);
      const { rows } = await db.query("SELECT 1 FROM mail_outbox WHERE lower(address) = lower($1) AND kind = 'sign-in-code'", [email]);
      expect(rows).to.have.length(0);
      expect(smtp.mailsTo(email).filter(isCodeMail)).to.deep.equal([]);
      const typed = await browser.post('/auth/sign-in/email-code', {
        ...formFields(page.text, '/auth/sign-in'),
        email,
        email_code: '123456',
      });
      expect(typed.status).to.equal(401);
    } finally {
      await other.stop();
    }
  });
  // Last: its wrong codes count against the network address of every test.
  it('wrong codes are counted with the account and throttled: then the right one is refused too', async function () {
    const { email } = await withoutPassword();
    const browser = new FormAgent(box);
    const { code, page } = await mailedCode(email, () => ask(browser, email));
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 10; i++) {
      const answer = await give(browser, page, wrong);
      expect(answer.status, `wrong code ${i + 1}`).to.equal(401);
      expect(answer.text).to.include('That code is wrong');
    }
    const throttled = await give(browser, page, code);
    expect(throttled.status).to.equal(429);
    expect(await signedIn(browser)).to.equal(false);
  });
});
