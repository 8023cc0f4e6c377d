// A password reset by mailed link (docs/guides/password-reset.md), received by a real SMTP
// server (test/support/smtp.ts, STARTTLS), and the attacks on it: a link used twice (20 at
// once: one wins), links guessed (counted as failed sign-ins of the address), enumeration by
// wording or timing (an address with an account and one without get the same page, as fast,
// even while the mail server is slow), a reset racing sign-ins with the old password (none of
// them stays signed in), header injection through the typed address, and a mail server that is
// down when the reset is asked for (the page answers at once; the mail comes when it is back).
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';

const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const PASSWORD = 'a-good-password-1';
const NEW_PASSWORD = 'a-new-password-22';

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');
const authorizePath = `/auth/authorize?${new URLSearchParams({
  response_type: 'code',
  client_id: 'rp',
  redirect_uri: CALLBACK,
  scope: 'openid email',
  code_challenge: challenge,
  code_challenge_method: 'S256',
})}`;

/** The link of `purpose` in a received mail's text, as a path of the box. */
export function linkIn(mail: ReceivedMail, path: '/auth/reset/confirm' | '/auth/verify-email' | '/auth/confirm-email'): string {
  const found = new RegExp(`https?://[^\\s"<>]+${path.replace(/\//g, '\\/')}\\?token=[A-Za-z0-9_-]+`).exec(mail.parsed.text ?? '');
  expect(found, `a ${path} link in: ${mail.parsed.text}`).to.not.equal(null);
  const url = new URL(found![0]);
  return `${url.pathname}${url.search}`;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('password reset by mailed link', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let db: pg.Client;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({
      env: {
        ...smtp.boxEnv(),
        BOXAUTH_SIGN_IN_MAX_FAILURES: '3',
        BOXAUTH_MAIL_MAX_PER_RECIPIENT: '4',
        BOXAUTH_RESET_MAX_PER_ADDRESS: '1000',
        // The guessing test comes from an address of its own, through the test as a trusted proxy.
        BOXAUTH_TRUSTED_PROXIES: '127.0.0.1/32',
      },
    });
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code'],
        secret: SECRET,
        first_party: true,
        auth: { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } },
      },
      await box.rootToken(),
    );
    expect(rp.status, rp.text).to.be.oneOf([200, 201]);
  });
  after(async function () {
    await db?.end();
    await box?.stop();
    await smtp?.stop();
  });

  let n = 0;
  async function person(): Promise<string> {
    const email = `reset-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return email;
  }

  /** Asks for a reset of `email` from a browser of its own (each its own CSRF cookie). */
  async function askReset(email: string, browser = new FormAgent(box)): Promise<JsonResponse> {
    const page = await browser.get('/auth/reset');
    expect(page.status).to.equal(200);
    return browser.post('/auth/reset', { ...hiddenFields(page.text), email });
  }

  /** The reset link mailed to `email` (the `nth` reset mail to it, counting from 1: a reset used is mailed too). */
  async function resetLink(email: string, nth = 1): Promise<string> {
    const resets = (): ReceivedMail[] => smtp.mailsTo(email).filter((m) => /^Reset your password/.test(m.parsed.subject ?? ''));
    await smtp.waitForMail(() => resets().length >= nth);
    return linkIn(resets()[nth - 1]!, '/auth/reset/confirm');
  }

  async function setPassword(link: string, password: string, browser = new FormAgent(box)): Promise<JsonResponse> {
    const page = await browser.get(link);
    if (page.status !== 200) return page;
    return browser.post('/auth/reset/confirm', { ...hiddenFields(page.text), password });
  }

  const signedIn = async (browser: FormAgent): Promise<boolean> =>
    (await browser.get('/auth/signed-in')).text.includes('You are signed in as');

  it('a person gets a link by mail, over STARTTLS, and sets a new password; everything from before ends', async function () {
    const email = await person();
    const before = new FormAgent(box);
    expect((await before.signIn(email, PASSWORD)).status).to.equal(303);
    const authorized = await before.get(authorizePath);
    const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
    const pendingCode = new URL((await before.get(authorizePath)).headers.get('location')!).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(tokens.status).to.equal(200);

    const asked = await askReset(email);
    expect(asked.status).to.equal(200);
    expect(asked.text).to.include('Check your mail');
    const mail = await smtp.waitForMail((m) => m.to.includes(email));
    expect(mail.secure, 'sent over STARTTLS').to.equal(true);
    expect(mail.user).to.equal(smtp.user);
    expect(mail.parsed.html, 'an HTML part').to.be.a('string');
    const link = linkIn(mail, '/auth/reset/confirm');
    const token = new URLSearchParams(link.split('?')[1]).get('token')!;
    // Only its hash is kept.
    const kept = await db.query('SELECT token_hash FROM account_links WHERE purpose = $1', ['reset']);
    expect(kept.rows.map((r) => (r.token_hash as Buffer).toString('hex'))).to.include(createHash('sha256').update(token).digest('hex'));
    const dump = await db.query("SELECT count(*)::int AS n FROM account_links WHERE encode(token_hash, 'escape') LIKE '%' || $1 || '%'", [
      token,
    ]);
    expect(dump.rows[0].n).to.equal(0);

    const done = await setPassword(link, NEW_PASSWORD);
    expect(done.status, done.text).to.equal(200);
    expect(done.text).to.include('Your password is changed');

    expect(await signedIn(before)).to.equal(false);
    const refreshed = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token },
      { Authorization: basic('rp', SECRET) },
    );
    expect(refreshed.status).to.equal(400);
    const exchanged = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: pendingCode, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(exchanged.status, 'a code issued before the reset').to.equal(400);
    expect((await new FormAgent(box).signIn(email, PASSWORD)).status).to.equal(401);
    expect((await new FormAgent(box).signIn(email, NEW_PASSWORD)).status).to.equal(303);
  });

  it('a reset asked for from a German page is mailed in German (the built-in mail), and its link works', async function () {
    const email = await person();
    const german = new FormAgent(box, { 'Accept-Language': 'de-CH, de;q=0.9, en;q=0.5' });
    expect((await askReset(email, german)).text).to.include('Sehen Sie in Ihr Postfach');
    await smtp.waitForMail((m) => m.to.includes(email));
    const mail = smtp.mailsTo(email)[0]!;
    expect(mail.parsed.subject).to.equal(`Ihr Passwort bei ${new URL(box.url).host} zurücksetzen`);
    expect(mail.parsed.text)
      .to.include(`Jemand, hoffentlich Sie, möchte das Passwort von \u2068${email}\u2069`)
      .and.include('30 Minuten lang');
    expect(mail.parsed.html).to.include('Neues Passwort wählen');
    const link = linkIn(mail, '/auth/reset/confirm');
    const done = await setPassword(link, 'a German reset works too', german);
    expect(done.status, done.text).to.equal(200);
    expect(done.text).to.include('<html lang="de"').and.include('Ihr Passwort ist geändert');
    // The same ask from a page in a language the box has no mails for: English.
    const other = await person();
    await askReset(other, new FormAgent(box, { 'Accept-Language': 'fr-FR' }));
    await smtp.waitForMail((m) => m.to.includes(other));
    expect(smtp.mailsTo(other)[0]!.parsed.subject).to.match(/^Reset your password on /);
  });

  it('a link works once: used again, or by 20 requests at once, it sets one password', async function () {
    const email = await person();
    await askReset(email);
    const link = await resetLink(email);
    // Twenty browsers, each from an address of its own (one address's link checks are counted too).
    const browsers = Array.from({ length: 20 }, (_, i) => new FormAgent(box, { 'X-Forwarded-For': `203.0.113.${i + 1}` }));
    const pages = await Promise.all(browsers.map((b) => b.get(link)));
    expect(pages.map((p) => p.status)).to.deep.equal(Array(20).fill(200));
    const answers = await Promise.all(
      browsers.map((b, i) => b.post('/auth/reset/confirm', { ...hiddenFields(pages[i]!.text), password: `racing-password-${i}x` })),
    );
    const won = answers.map((a, i) => (a.status === 200 ? i : -1)).filter((i) => i >= 0);
    expect(won, answers.map((a) => a.status).join(',')).to.have.length(1);
    // The others: the link used up, or (argon2's sign-up lane full) the box too busy to try it.
    for (const a of answers) if (a.status !== 200) expect(`${a.status} ${a.text}`).to.match(/This link does not work|The box is busy/);
    expect((await new FormAgent(box).signIn(email, `racing-password-${won[0]}x`)).status).to.equal(303);
    expect((await setPassword(link, 'yet-another-password-3')).status).to.equal(400);
  });

  it('a link is void after 30 minutes, and once another reset was used', async function () {
    const email = await person();
    await askReset(email);
    await askReset(email);
    const first = await resetLink(email, 1);
    const second = await resetLink(email, 2);
    expect(first).to.not.equal(second);
    expect((await setPassword(second, NEW_PASSWORD)).status).to.equal(200);
    expect((await setPassword(first, 'first-link-password-4')).status, 'the other link went with the reset').to.equal(400);
    await askReset(email);
    const third = await resetLink(email, 3);
    const token = new URLSearchParams(third.split('?')[1]).get('token')!;
    // 30 minutes pass (the database's clock decides; the test moves the link's end instead).
    await db.query("UPDATE account_links SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [
      createHash('sha256').update(token).digest(),
    ]);
    expect((await new FormAgent(box).get(third)).status).to.equal(400);
  });

  it('guessed links count as failed sign-ins of the address: then 429, even for a right link', async function () {
    const email = await person();
    await askReset(email);
    const link = await resetLink(email);
    const guesser = { 'X-Forwarded-For': '198.51.100.7' };
    const answers: number[] = [];
    for (let i = 0; i < 14; i++) {
      answers.push(
        (await box.request('GET', `/auth/reset/confirm?token=${randomBytes(32).toString('base64url')}`, { headers: guesser })).status,
      );
    }
    expect(
      answers.slice(0, 12).every((s) => s === 400),
      answers.join(','),
    ).to.equal(true);
    expect(answers.slice(12)).to.deep.equal([429, 429]);
    expect((await new FormAgent(box, guesser).get(link)).status, 'a right link from the locked address').to.equal(429);
    expect((await new FormAgent(box).get(link)).status, 'the same link from another address').to.equal(200);
  });

  it('an address with an account and one without get the same page, as fast, even with the mail server slow', async function () {
    const email = await person();
    const nobody = `nobody-${randomBytes(3).toString('hex')}@example.com`;
    const a = await askReset(email);
    const b = await askReset(nobody);
    expect(a.status).to.equal(b.status);
    expect(a.text.replaceAll(email, 'X')).to.equal(b.text.replaceAll(nobody, 'X'));
    await smtp.waitForMail((m) => m.to.includes(email));

    await smtp.setMode({ kind: 'slow', seconds: 3 });
    try {
      const times: Record<'known' | 'unknown', number[]> = { known: [], unknown: [] };
      for (let i = 0; i < 3; i++) {
        for (const [kind, address] of [
          ['known', await person()],
          ['unknown', `nobody-${i}-${randomBytes(3).toString('hex')}@example.com`],
        ] as const) {
          const start = performance.now();
          const res = await askReset(address);
          times[kind].push(performance.now() - start);
          expect(res.status).to.equal(200);
        }
      }
      // A mail sent while the page waits would take the server's 3 s; the outbox sends after the answer.
      expect(median(times.known), JSON.stringify(times)).to.be.below(1500);
      expect(Math.abs(median(times.known) - median(times.unknown)), JSON.stringify(times)).to.be.below(500);
    } finally {
      await smtp.setMode({ kind: 'up' });
    }
    expect(smtp.mailsTo(nobody)).to.have.length(0);
  });

  it('asks for one address are counted: the same 429 whether or not it has an account', async function () {
    const email = await person();
    const nobody = `nobody-${randomBytes(3).toString('hex')}@example.com`;
    for (const address of [email, nobody]) {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await askReset(address)).status);
      expect(statuses, address).to.deep.equal([200, 200, 200, 200, 429]);
    }
  });

  it('a reset racing 20 sign-ins with the old password: none of those browsers stays signed in', async function () {
    const email = await person();
    await askReset(email);
    const link = await resetLink(email);
    const resetter = new FormAgent(box);
    const page = await resetter.get(link);
    // Each from an address of its own: twenty sign-ins in flight from the resetter's address would
    // hold its whole count, and the reset would rightly be refused (429) before it raced anything.
    const browsers = Array.from({ length: 20 }, (_, i) => new FormAgent(box, { 'X-Forwarded-For': `192.0.2.${i + 1}` }));
    const signInPages = await Promise.all(browsers.map((b) => b.get('/auth/sign-in')));
    const [reset, ...signIns] = await Promise.all([
      resetter.post('/auth/reset/confirm', { ...hiddenFields(page.text), password: NEW_PASSWORD }),
      ...browsers.map((b, i) => b.post('/auth/sign-in', { ...hiddenFields(signInPages[i]!.text), email, password: PASSWORD })),
    ]);
    expect(reset.status, reset.text).to.equal(200);
    for (const [i, b] of browsers.entries()) expect(await signedIn(b), `browser ${i} (${signIns[i]!.status})`).to.equal(false);
  });

  it('an address with a header in it reaches nobody but the mail server sees no header', async function () {
    const email = await person();
    const evil = `evil-${randomBytes(3).toString('hex')}@example.com`;
    const res = await askReset(`${email}\r\nBcc: ${evil}`);
    expect(res.status).to.be.oneOf([200, 400]);
    await askReset(email);
    await smtp.waitForMail((m) => m.to.includes(email));
    expect(smtp.received.filter((m) => m.to.includes(evil) || JSON.stringify(m.parsed.headerLines).includes(evil))).to.have.length(0);
  });

  it('a mail server down when the reset is asked: the page answers at once, and the mail comes once it is back', async function () {
    const email = await person();
    await smtp.setMode({ kind: 'stopped' });
    let res: JsonResponse;
    try {
      const start = performance.now();
      res = await askReset(email);
      expect(performance.now() - start).to.be.below(2000);
      expect(res.status).to.equal(200);
    } finally {
      await smtp.setMode({ kind: 'up' });
    }
    const link = linkIn(await smtp.waitForMail((m) => m.to.includes(email), 120_000), '/auth/reset/confirm');
    expect((await setPassword(link, NEW_PASSWORD)).status).to.equal(200);
  });
});
