// A person's own page, /account (docs/guides/account-page.md), as people use it and as others
// try it: the browsers signed in and the apps' grants listed with when, where from and with
// what, each ended from there; consent withdrawn (the app's tokens end, it asks again); the
// password changed with the current one (everywhere else signed out, this browser kept); and
// what a person cannot do — end another's grant or sign-in, change anything without the page's
// CSRF token or the current password. Ending races the grant's own refreshes: closing wins.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, basic, boxForSuite, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';

const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const PASSWORD = 'a-good-password-1';
const NEW_PASSWORD = 'another-good-password-2';

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');
const authorizePath = (client: string): string =>
  `/auth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: client,
    redirect_uri: CALLBACK,
    scope: 'openid email',
    state: randomBytes(8).toString('hex'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;

describe('the account page', function () {
  this.timeout(120_000);
  let box: Box;
  boxForSuite((b) => (box = b));

  before(async function () {
    const root = await box.rootToken();
    const auth = { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } };
    for (const [id, more] of [
      ['rp', { first_party: true }],
      ['asks-consent', {}],
    ] as const) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], secret: SECRET, auth, ...more }, root);
      expect(res.status, res.text).to.be.oneOf([200, 201]);
    }
  });

  let n = 0;
  async function person(): Promise<string> {
    const email = `person-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return email;
  }

  async function signedInBrowser(email: string, userAgent?: string): Promise<FormAgent> {
    const browser = new FormAgent(box, userAgent ? { 'User-Agent': userAgent } : {});
    const res = await browser.signIn(email, PASSWORD);
    expect(res.status, res.text).to.equal(303);
    return browser;
  }

  /** A code for `client` through `browser` (consent allowed when asked), exchanged: the refresh token. */
  async function grant(browser: FormAgent, client = 'rp'): Promise<string> {
    let res = await browser.get(authorizePath(client));
    if (res.status === 200 && res.text.includes('action="/auth/consent"')) res = await browser.consent(res, 'allow');
    expect(res.status, res.text).to.equal(302);
    const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic(client, SECRET) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    return tokens.body.refresh_token as string;
  }

  const refresh = (token: string, client = 'rp'): Promise<JsonResponse> =>
    box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: token }, { Authorization: basic(client, SECRET) });
  const signedIn = async (browser: FormAgent): Promise<boolean> =>
    (await browser.get('/auth/signed-in')).text.includes('You are signed in as');
  /** The hidden fields of the form posting to `action` on `page` whose fields include `match`. */
  function formOf(page: string, action: string, match?: string): Record<string, string> {
    const forms = [...page.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].filter((m) => m[1] === action);
    const form = forms.find((m) => !match || m[2]!.includes(match));
    expect(form, `a form to ${action}${match ? ` with ${match}` : ''}`).to.not.equal(undefined);
    return hiddenFields(form![2]!);
  }

  it('lists where the person is signed in — since, from where, which browser, with what — and ends another browser from here', async function () {
    const email = await person();
    const here = await signedInBrowser(email, 'Here/1.0');
    const there = await signedInBrowser(email, 'There/2.0');
    const thereToken = await grant(there);
    const page = await here.get('/account');
    expect(page.status).to.equal(302);
    const account = await here.get('/auth/account');
    expect(account.status, account.text).to.equal(200);
    expect(account.text).to.include('Here/1.0').and.include('There/2.0').and.include('This browser').and.include('127.0.0.1');
    expect(account.text).to.match(/<td>password<\/td>/);

    const sids = [...account.text.matchAll(/name="sid" value="([0-9a-f-]+)"/g)].map((m) => m[1]!);
    expect(sids).to.have.length(2);
    const thereRow = account.text.split('<tr>').find((row) => row.includes('There/2.0'))!;
    const thereSid = /name="sid" value="([0-9a-f-]+)"/.exec(thereRow)![1]!;
    const ended = await here.post('/auth/account/sign-ins/end', formOf(account.text, '/auth/account/sign-ins/end', thereSid));
    expect(ended.status, ended.text).to.equal(303);
    expect(await signedIn(there)).to.equal(false);
    expect(await signedIn(here)).to.equal(true);
    // What was issued through that browser ended with it.
    expect((await refresh(thereToken)).status).to.equal(400);
    expect((await here.get('/auth/account?changed=sign-in')).text)
      .to.include('Signed out there.')
      .and.not.include('There/2.0');
  });

  it("lists the apps' grants and ends one; another person's grant or sign-in cannot be ended from here", async function () {
    const ann = await person();
    const bob = await person();
    const annBrowser = await signedInBrowser(ann);
    const bobBrowser = await signedInBrowser(bob);
    const annToken = await grant(annBrowser);
    const bobToken = await grant(bobBrowser);
    const bobPage = await bobBrowser.get('/auth/account');
    const bobGrant = /name="grant" value="([0-9a-f-]+)"/.exec(bobPage.text)![1]!;
    const bobSid = /name="sid" value="([0-9a-f-]+)"/.exec(bobPage.text)![1]!;

    const annPage = await annBrowser.get('/auth/account');
    expect(annPage.text).to.match(/<td>rp<\/td>/);
    const annForm = formOf(annPage.text, '/auth/account/grants/end');
    // Ann posts Bob's grant and Bob's sign-in with her own page's token: nothing of Bob's ends.
    const notHers = await annBrowser.post('/auth/account/grants/end', { ...annForm, grant: bobGrant });
    expect(notHers.status).to.equal(404);
    const notHerSignIn = await annBrowser.post('/auth/account/sign-ins/end', { csrf: annForm.csrf!, sid: bobSid });
    expect(notHerSignIn.status).to.equal(404);
    expect(await signedIn(bobBrowser)).to.equal(true);
    const bobRefreshed = await refresh(bobToken);
    expect(bobRefreshed.status, bobRefreshed.text).to.equal(200);

    // Without the page's CSRF token, nothing ends either.
    const forged = await annBrowser.post('/auth/account/grants/end', { grant: annForm.grant! });
    expect(forged.status).to.equal(403);
    expect((await refresh(annToken)).status).to.equal(200);
  });

  it('ending a grant while its app refreshes it 20 times at once: nothing the app got works afterwards', async function () {
    const email = await person();
    const browser = await signedInBrowser(email);
    const token = await grant(browser);
    const page = await browser.get('/auth/account');
    const form = formOf(page.text, '/auth/account/grants/end');
    // A chain of refreshes racing the end: every token any of them got must be refused after it.
    const got: string[] = [];
    const chain = async (): Promise<void> => {
      let current = token;
      for (let i = 0; i < 20; i++) {
        const res = await refresh(current);
        if (res.status !== 200) return;
        current = res.body.refresh_token as string;
        got.push(current);
      }
    };
    const [, ended] = await Promise.all([chain(), browser.post('/auth/account/grants/end', form)]);
    expect(ended.status, ended.text).to.equal(303);
    for (const t of [token, ...got]) expect((await refresh(t)).status).to.equal(400);
  });

  it("withdrawing a consent ends the app's grants of the person, and the app asks again", async function () {
    const email = await person();
    const browser = await signedInBrowser(email);
    const token = await grant(browser, 'asks-consent');
    const page = await browser.get('/auth/account');
    expect(page.text)
      .to.include('What you allowed')
      .and.match(/<td>asks-consent<\/td>/);
    const withdrawn = await browser.post('/auth/account/consents/withdraw', formOf(page.text, '/auth/account/consents/withdraw'));
    expect(withdrawn.status, withdrawn.text).to.equal(303);
    expect((await refresh(token, 'asks-consent')).status).to.equal(400);
    const again = await browser.get(authorizePath('asks-consent'));
    expect(again.status).to.equal(200);
    expect(again.text).to.include('action="/auth/consent"');
  });

  it('a new password needs the current one; it signs out everywhere else and keeps this browser', async function () {
    const email = await person();
    const here = await signedInBrowser(email);
    const there = await signedInBrowser(email);
    const token = await grant(there);
    let page = await here.get('/auth/account');
    const form = formOf(page.text, '/auth/account/password');

    const wrong = await here.post('/auth/account/password', { ...form, current_password: 'not-the-password', new_password: NEW_PASSWORD });
    expect(wrong.status).to.equal(422);
    expect(wrong.text).to.include('is wrong');
    const short = await here.post('/auth/account/password', { ...form, current_password: PASSWORD, new_password: 'short' });
    expect(short.status).to.equal(422);
    expect((await new FormAgent(box).signIn(email, PASSWORD)).status, 'the old password still works after refusals').to.equal(303);
    const forged = await here.post('/auth/account/password', { current_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(forged.status).to.equal(403);

    page = await here.get('/auth/account');
    const changed = await here.post('/auth/account/password', {
      ...formOf(page.text, '/auth/account/password'),
      current_password: PASSWORD,
      new_password: NEW_PASSWORD,
    });
    expect(changed.status, changed.text).to.equal(303);
    expect(await signedIn(here)).to.equal(true);
    expect(await signedIn(there)).to.equal(false);
    expect((await refresh(token)).status).to.equal(400);
    expect((await new FormAgent(box).signIn(email, PASSWORD)).status).to.equal(401);
    expect((await new FormAgent(box).signIn(email, NEW_PASSWORD)).status).to.equal(303);
    expect((await here.get(changed.headers.get('location')!)).text).to.include('Your password is changed');
  });

  /** Sets up an authenticator app on the account page of `browser`: its key (the session is strengthened, not signed in anew). */
  async function enrolTotp(browser: FormAgent): Promise<Buffer> {
    const account = await browser.get('/auth/account');
    const setup = await browser.post('/auth/account/totp', formOf(account.text, '/auth/account/totp'));
    expect(setup.status, setup.text).to.equal(200);
    const secret = base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!);
    const done = await browser.post('/auth/account/totp/confirm', {
      ...hiddenFields(setup.text),
      code: totpCode(secret, stepAt(Date.now())),
    });
    expect(done.status, done.text).to.equal(200);
    return secret;
  }

  it('a factor enrolled in a session does not stand for the current password; one given at a sign-in minutes ago does', async function () {
    const email = await person();
    // Whoever holds this session (a stolen cookie) enrols an app of their own in it…
    const held = await signedInBrowser(email);
    const secret = await enrolTotp(held);
    const page = await held.get('/auth/account');
    expect(page.text).to.include('id="current_password"');
    const skipped = await held.post('/auth/account/password', {
      ...formOf(page.text, '/auth/account/password'),
      new_password: NEW_PASSWORD,
    });
    expect(skipped.status, 'no current password, only a factor enrolled since the sign-in').to.equal(422);
    const moved = await held.post('/auth/account/email', { ...formOf(page.text, '/auth/account/email'), new_email: `thief-${email}` });
    expect(moved.status).to.equal(422);
    expect((await new FormAgent(box).signIn(email, PASSWORD)).status, 'the password is as it was').to.equal(303);

    // …while a sign-in that gives the code is a fresh second factor: no password asked for minutes.
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const second = await browser.get('/auth/sign-in/second-factor');
    const step = stepAt(Date.now()) + 1; // a code is taken once: the next step's, which the window allows
    const signedInWithCode = await browser.post('/auth/sign-in/second-factor', {
      ...hiddenFields(second.text),
      code: totpCode(secret, step),
    });
    expect(signedInWithCode.status, signedInWithCode.text).to.equal(303);
    const fresh = await browser.get('/auth/account');
    expect(fresh.text).to.include('no password needed').and.not.include('id="current_password"');
    const changed = await browser.post('/auth/account/password', {
      ...formOf(fresh.text, '/auth/account/password'),
      new_password: NEW_PASSWORD,
    });
    expect(changed.status, changed.text).to.equal(303);
    expect((await new FormAgent(box).signIn(email, NEW_PASSWORD)).status).to.equal(303);
  });

  it('a password change racing an administrator ending the sessions: the browser never stays signed in', async function () {
    const root = await box.rootToken();
    for (let round = 0; round < 8; round++) {
      const email = await person();
      const id = (await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root)).body[0].id;
      const browser = await signedInBrowser(email);
      const page = await browser.get('/auth/account');
      const form = { ...formOf(page.text, '/auth/account/password'), current_password: PASSWORD, new_password: NEW_PASSWORD };
      const [changed, ended] = await Promise.all([
        browser.post('/auth/account/password', form),
        box.request('DELETE', `/users/${id}/sessions`, { headers: { Authorization: `Bearer ${root}` } }),
      ]);
      expect(ended.status, ended.text).to.be.oneOf([200, 204]);
      expect(changed.status).to.equal(303);
      // Whichever came first, the end of the sessions is the last word for this browser.
      expect(await signedIn(browser), `round ${round}: ${changed.headers.get('location')}`).to.equal(false);
    }
  });

  it("a new email needs the current password and cannot take another person's address", async function () {
    const email = await person();
    const other = await person();
    const browser = await signedInBrowser(email);
    const page = await browser.get('/auth/account');
    const form = formOf(page.text, '/auth/account/email');
    const taken = await browser.post('/auth/account/email', { ...form, new_email: other.toUpperCase(), email_password: PASSWORD });
    expect(taken.status).to.equal(422);
    expect(taken.text).to.include('has an account already');
    const noPassword = await browser.post('/auth/account/email', {
      ...form,
      new_email: `new-${email}`,
      email_password: 'wrong-password-9',
    });
    expect(noPassword.status).to.equal(422);
    const changed = await browser.post('/auth/account/email', { ...form, new_email: `new-${email}`, email_password: PASSWORD });
    expect(changed.status, changed.text).to.equal(303);
    const after = await browser.get(changed.headers.get('location')!);
    expect(after.text).to.include(`new-${email}`).and.include('(not confirmed)');
    expect(after.text).to.include('ask its administrator to confirm');
  });

  it('without mail, the reset page says to ask an administrator, and asking changes nothing', async function () {
    const browser = new FormAgent(box);
    const page = await browser.get('/auth/reset');
    expect(page.status).to.equal(200);
    expect(page.text).to.include('does not send mail').and.include('administrator').and.not.include('name="email"');
    // A form of another of the box's pages gives the browser's CSRF token (this page has no form).
    const csrf = hiddenFields((await browser.get('/auth/sign-in')).text).csrf!;
    const posted = await browser.post('/auth/reset', { csrf, email: 'admin@localhost' });
    expect(posted.status).to.equal(200);
    expect(posted.text).to.include('does not send mail');
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      expect((await db.query('SELECT count(*)::int AS n FROM mail_outbox')).rows[0].n).to.equal(0);
    } finally {
      await db.end();
    }
    expect((await browser.get('/auth/sign-in')).text).to.include('href="/auth/reset"');
    // Neither do the links' pages open anything.
    expect((await browser.get(`/auth/reset/confirm?token=${randomBytes(32).toString('base64url')}`)).status).to.equal(400);
  });
});
