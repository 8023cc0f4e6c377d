// Sign-in codes by email as people use them and as attackers try them (docs/guides/second-factors.md):
// set up on the account page and in a sign-in's enrolment, given at a sign-in's second step, shown
// and removed by the person and by an administrator. The codes are read from the mails the box
// sends to a real SMTP server (test/support/smtp.ts), never from the box. Attacks: guesses counted
// and throttled, a code too old (the box's clock moved, not waited for), one code sent many times at
// once, another person's code, a code asked for in another browser's sign-in, mails asked for
// without end; and the code in no log line and no column.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { runCli } from '../support/cli.js';
import { mailedCode as mailedCodeOf } from '../support/email-codes.js';
import { FormAgent, formFields, hiddenFields } from '../support/form-agent.js';
import { TestSmtp } from '../support/smtp.js';

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
const codesOf = (page: JsonResponse): string[] => [...page.text.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);

describe('sign-in codes by email', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let db: pg.Client;
  /** Every code the box mailed, to look for in its logs at the end. */
  const mailed: string[] = [];

  before(async function () {
    smtp = await TestSmtp.start();
    // The limits are ten wrong codes an account (forty an address). The clock moves in the last test only.
    box = await Box.start({
      movableClock: true,
      env: { ...smtp.boxEnv(), BOXAUTH_SMTP_SIGN_IN_CODES: 'second-factor', BOXAUTH_SIGN_IN_MAX_FAILURES: '10' },
    });
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code'],
        secret: SECRET,
        first_party: true,
        auth: { authorization_code: { redirect_uri: CALLBACK } },
      },
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
  /** A new person with a proven address (an administrator's vouching), and their id. */
  async function person(groupIds: number[] = []): Promise<{ id: number; email: string }> {
    const email = `mia-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const made = await box.json('POST', '/users', { email, password: PASSWORD, 'group-ids': groupIds }, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    return { id: Number(made.body.id), email };
  }

  /** Does `ask` (which makes the box mail a code to `email`), then waits for that new mail: its code (kept, to look for in the logs). */
  async function mailedCode(email: string, ask: () => Promise<JsonResponse>): Promise<{ code: string; page: JsonResponse }> {
    const got = await mailedCodeOf(smtp, email, ask);
    mailed.push(got.code);
    return got;
  }

  /** Sets up codes by email on the account page of a browser signed in with the password just now: the recovery codes page. */
  async function enrolOnAccount(browser: FormAgent, email: string): Promise<JsonResponse> {
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('Get sign-in codes by email');
    const { code, page } = await mailedCode(email, () =>
      browser.post('/auth/account/email-codes', formFields(account.text, '/auth/account/email-codes')),
    );
    expect(page.text).to.include('id="email-code-sent"');
    const done = await browser.post('/auth/account/email-codes', { ...hiddenFields(page.text), email_code: code });
    expect(done.status, done.text).to.equal(200);
    expect(codesOf(done)).to.have.length(10);
    return done;
  }

  /** A person with codes by email, set up on their account page. */
  async function enrolled(): Promise<{ id: number; email: string }> {
    const who = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(who.email, PASSWORD, '/auth/account')).status).to.equal(303);
    await enrolOnAccount(browser, who.email);
    return who;
  }

  /** A browser past the password of `email`, on its second-factor page. */
  async function atSecondFactor(email: string, returnTo = '/auth/signed-in'): Promise<{ browser: FormAgent; page: JsonResponse }> {
    const browser = new FormAgent(box);
    const next = await browser.signIn(email, PASSWORD, returnTo);
    expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor/);
    const page = await browser.get(location(next));
    expect(page.status, page.text).to.equal(200);
    return { browser, page };
  }

  /** "Send a code" on the browser's second-factor page: the code mailed. */
  const sendCode = async (browser: FormAgent, email: string): Promise<string> =>
    (
      await mailedCode(email, async () => {
        const page = await browser.get('/auth/sign-in/second-factor');
        return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), send: 'email' });
      })
    ).code;

  /** Types `code` on the browser's second-factor page. */
  async function give(browser: FormAgent, code: string): Promise<JsonResponse> {
    const page = await browser.get('/auth/sign-in/second-factor');
    return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), email_code: code });
  }

  const signedIn = async (browser: FormAgent): Promise<boolean> =>
    (await browser.get('/auth/signed-in')).text.includes('You are signed in as');

  const factorsOf = async (id: number): Promise<{ kind: string; id: number; name: string }[]> => {
    const res = await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken());
    expect(res.status, res.text).to.equal(200);
    return res.body.factors;
  };

  it('set up on the account page: REST, the audit trail and a mail say so; a sign-in then asks for a mailed code (amr pwd, otp, mfa)', async function () {
    const { id, email } = await enrolled();
    const factors = await factorsOf(id);
    expect(factors.map((f) => f.kind)).to.deep.equal(['email']);
    // The CLI lists what REST says, kind and all.
    const cli = await runCli(['user', 'factors', email], {
      PATH: process.env.PATH,
      BOXAUTH_URL: box.url,
      BOXAUTH_CLIENT_ID: 'root',
      BOXAUTH_CLIENT_SECRET: box.rootSecret,
    });
    expect(cli.code, cli.stderr).to.equal(0);
    expect((JSON.parse(cli.stdout) as { factors: { kind: string }[] }).factors.map((f) => f.kind)).to.deep.equal(['email']);
    const events = await box.json('GET', `/AuditEvent?user=${id}&event=factor`, undefined, await box.rootToken());
    const enrolledEvent = (events.body.entry as { resource: any }[]).map((e) => e.resource).find((e) => e.action === 'enrolled');
    expect(enrolledEvent.detail).to.include({ kind: 'email', factor: String(factors[0]!.id) });
    const notice = await smtp.waitForMail((m) => m.to.includes(email) && /added/i.test(m.parsed.subject ?? ''));
    expect(notice.parsed.text).to.include('sign-in codes by email');

    const { browser, page } = await atSecondFactor(email, authorizePath());
    expect(page.text).to.include('id="email-codes"').and.include('id="email_code"').and.include('id="send-email-code"');
    // The pages carry the authorization request on (return_to) through "send" and the code.
    const sent = await mailedCode(email, () => browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), send: 'email' }));
    const done = await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(sent.page.text), email_code: sent.code });
    expect(done.status, done.text).to.equal(303);
    const back = await browser.get(location(done));
    expect(back.status, `${location(done)} → ${back.status} ${location(back)} ${back.text.slice(0, 400)}`).to.equal(302);
    const authCode = new URL(location(back)).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: authCode, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    expect(decodeJwt(tokens.body.id_token).amr).to.deep.equal(['pwd', 'otp', 'mfa']);
  });

  it('set up in the enrolment of a sign-in that must have a factor, beside an app', async function () {
    const group = await box.json('POST', '/groups', { name: 'mailers' }, await box.rootToken());
    expect(group.status, group.text).to.equal(201);
    await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [group.body.id]);
    const { id, email } = await person([group.body.id]);
    const browser = new FormAgent(box);
    const next = await browser.signIn(email, PASSWORD);
    expect(location(next)).to.match(/^\/auth\/sign-in\/enrol/);
    const enrol = await browser.get(location(next));
    expect(enrol.text).to.include('totp-secret').and.include('id="send-email-code"');
    const { code, page } = await mailedCode(email, () =>
      browser.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), send: 'email' }),
    );
    expect(
      (await browser.post('/auth/sign-in/enrol', { ...hiddenFields(page.text), email_code: '000000' === code ? '111111' : '000000' }))
        .status,
    ).to.equal(401);
    expect(await factorsOf(id)).to.deep.equal([]);
    const codes = await browser.post('/auth/sign-in/enrol', { ...hiddenFields(page.text), email_code: code });
    expect(codes.status, codes.text).to.equal(200);
    expect(codesOf(codes)).to.have.length(10);
    expect(await signedIn(browser)).to.equal(false); // an enrolment is no sign-in until Continue
    expect((await browser.post('/auth/sign-in/continue', hiddenFields(codes.text))).status).to.equal(303);
    expect(await signedIn(browser)).to.equal(true);
    expect((await factorsOf(id)).map((f) => f.kind)).to.deep.equal(['email']);
  });

  it('wrong codes are counted with the account: past the limit even the right one is refused', async function () {
    const { email } = await enrolled();
    const { browser } = await atSecondFactor(email);
    const code = await sendCode(browser, email);
    const wrong = code === '123456' ? '654321' : '123456';
    for (let i = 0; i < 10; i++) expect((await give(browser, wrong)).status).to.equal(401);
    const refused = await give(browser, code);
    expect(refused.status).to.equal(429);
    expect(refused.text).to.include('Too many wrong codes');
    expect(await signedIn(browser)).to.equal(false);
  });

  it('a code ten minutes old is refused; a new one replaces it', async function () {
    const { id, email } = await enrolled();
    const { browser } = await atSecondFactor(email);
    const old = await sendCode(browser, email);
    const expiry = async (): Promise<Date> =>
      (await db.query<{ at: Date }>("SELECT email_code_expires_at AS at FROM factors WHERE user_id = $1 AND kind = 'email'", [id])).rows[0]!
        .at;
    const left = (await expiry()).getTime() - Date.now();
    expect(left).to.be.within(9 * 60_000, 10 * 60_000 + 5000);
    // Ten minutes on for the code alone: the sign-in's step lasts as long, and would end with it.
    await db.query("UPDATE factors SET email_code_expires_at = email_code_expires_at - interval '10 minutes' WHERE user_id = $1", [id]);
    expect((await give(browser, old)).status).to.equal(401);
    const first = await sendCode(browser, email);
    const second = await sendCode(browser, email);
    if (first !== second) expect((await give(browser, first)).status, 'the code before the last').to.equal(401);
    expect((await give(browser, second)).status).to.equal(303);
    expect(await signedIn(browser)).to.equal(true);
  });

  it('one code sent many times at once signs in once', async function () {
    const { email } = await enrolled();
    const { browser, page } = await atSecondFactor(email);
    const code = await sendCode(browser, email);
    const fields = { ...hiddenFields(page.text), email_code: code };
    const answers = await Promise.all(Array.from({ length: 8 }, () => browser.post('/auth/sign-in/second-factor', fields)));
    expect(answers.filter((a) => a.status === 303)).to.have.length(1);
    // Once used, gone: the same code in a new sign-in of the same browser is refused.
    const again = await atSecondFactor(email);
    expect((await give(again.browser, code)).status).to.equal(401);
  });

  it("another person's code, and a code asked for in another browser's sign-in, are refused", async function () {
    const ann = await enrolled();
    const bob = await enrolled();
    const annHere = await atSecondFactor(ann.email);
    const annThere = await atSecondFactor(ann.email);
    const bobs = await atSecondFactor(bob.email);
    const code = await sendCode(annHere.browser, ann.email);
    expect((await give(bobs.browser, code)).status, "another person's code").to.equal(401);
    expect((await give(annThere.browser, code)).status, "another browser's code").to.equal(401);
    expect(await signedIn(annThere.browser)).to.equal(false);
    expect((await give(annHere.browser, code)).status, 'where it was asked for').to.equal(303);
  });

  it('a person cannot be mail-bombed: the codes they ask for are counted', async function () {
    const { email } = await enrolled(); // one mail already
    const { browser } = await atSecondFactor(email);
    for (let i = 0; i < 4; i++) await sendCode(browser, email);
    const page = await browser.get('/auth/sign-in/second-factor');
    const refused = await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), send: 'email' });
    expect(refused.status).to.equal(429);
    expect(refused.text).to.include('Too many codes were mailed');
  });

  it('removed on the account page, and by an administrator reset', async function () {
    const mine = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(mine.email, PASSWORD, '/auth/account')).status).to.equal(303);
    await enrolOnAccount(browser, mine.email);
    const [factor] = await factorsOf(mine.id);
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('Codes by email');
    const removed = await browser.post('/auth/account/factors/remove', {
      csrf: hiddenFields(account.text).csrf!,
      factor: String(factor!.id),
    });
    expect(removed.status, removed.text).to.equal(200);
    expect(await factorsOf(mine.id)).to.deep.equal([]);

    const theirs = await enrolled();
    const reset = await box.json('POST', `/users/${theirs.id}/factors/reset`, undefined, await box.rootToken());
    expect(reset.status, reset.text).to.equal(200);
    expect(reset.body.factors).to.deep.equal([]);
    // Its code goes with it: the person enrols anew after the password.
    const again = new FormAgent(box);
    expect(location(await again.signIn(theirs.email, PASSWORD))).to.match(/^\/auth\/sign-in\/enrol/);
  });

  it('no code is in a log line, and only its keyed hash is stored', async function () {
    const { id, email } = await enrolled();
    const { browser } = await atSecondFactor(email);
    const code = await sendCode(browser, email);
    const { rows } = await db.query<{ email_code_hash: Buffer }>(
      "SELECT email_code_hash FROM factors WHERE user_id = $1 AND kind = 'email'",
      [id],
    );
    expect(rows[0]!.email_code_hash).to.have.length(32);
    expect(rows[0]!.email_code_hash.equals(createHash('sha256').update(code).digest())).to.equal(false);
    const outbox = await db.query('SELECT detail FROM mail_outbox');
    for (const row of outbox.rows) expect(JSON.stringify(row)).not.to.include(code);
    expect(mailed.length).to.be.greaterThan(10);
    const logs = box.logs.join('\n');
    for (const sent of mailed) expect(logs, 'a code in the logs').not.to.match(new RegExp(`(?<![0-9])${sent}(?![0-9])`));
  });

  it('not offered where the box does not offer them; codes set up already still sign in there', async function () {
    const { email } = await enrolled();
    // A process of the same box without BOXAUTH_SMTP_SIGN_IN_CODES (the release that brought them, before the rollout ends).
    const off = await box.startAnother({ ...smtp.boxEnv(), BOXAUTH_SIGN_IN_MAX_FAILURES: '10' });
    try {
      const other = await person();
      const browser = new FormAgent(off);
      expect((await browser.signIn(other.email, PASSWORD, '/auth/account')).status).to.equal(303);
      const account = await browser.get('/auth/account');
      expect(account.text).not.to.include('/auth/account/email-codes');
      const forged = await browser.post('/auth/account/email-codes', { csrf: hiddenFields(account.text).csrf! });
      expect(forged.status).to.equal(409);
      expect(forged.text).to.include('does not offer sign-in codes by email');
      expect(await factorsOf(other.id)).to.deep.equal([]);

      const signingIn = new FormAgent(off);
      const next = await signingIn.signIn(email, PASSWORD);
      expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor/);
      const code = await sendCode(signingIn, email);
      expect((await give(signingIn, code)).status).to.equal(303);
      expect(await signedIn(signingIn)).to.equal(true);
    } finally {
      await off.stop();
    }
  });

  // Last: it moves the box's clock on.
  it('set up on the account page only after a recent proof, as every factor', async function () {
    const { id, email } = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    const account = await browser.get('/auth/account');
    const mails = smtp.mailsTo(email).length;
    box.advanceClock(11 * 60);
    const stale = await browser.post('/auth/account/email-codes', formFields(account.text, '/auth/account/email-codes'));
    expect(stale.status).to.equal(303);
    expect(location(stale)).to.match(/^\/auth\/account\/confirm/);
    expect(await factorsOf(id)).to.deep.equal([]);
    const { rows } = await db.query("SELECT 1 FROM mail_outbox WHERE user_id = $1 AND kind = 'sign-in-code'", [id]);
    expect(rows).to.have.length(0);
    expect(smtp.mailsTo(email)).to.have.length(mails);
  });
});
