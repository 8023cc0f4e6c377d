// TOTP and recovery codes as people use them and as attackers try them (docs/guides/second-factors.md):
// enrolment through the pages, sign-in in two steps, RFC 6238's window and "a code used once
// is refused again" (across two processes too), guesses counted before they are checked, a
// second factor that cannot be skipped, recovery codes that work once and end everything
// else, and a group that requires a factor. Codes come from test/support/totp.ts, an
// implementation of its own (node:crypto), never from the box's otpauth.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { strayTexts } from '../support/page-words.js';
import { LANGUAGES } from '../../api/ui/language.js';

const GERMAN = LANGUAGES.find((l) => l.tag === 'de')!;

const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const PASSWORD = 'a-good-password-1';

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

const authorizePath = (extra: Record<string, string> = {}): string =>
  `/auth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'rp',
    redirect_uri: CALLBACK,
    scope: 'openid email',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  })}`;
const codeIn = (res: JsonResponse): string | null =>
  res.status === 302 ? new URL(res.headers.get('location')!).searchParams.get('code') : null;
const isSignInPage = (res: JsonResponse): boolean => res.status === 200 && res.text.includes('action="/auth/sign-in"');
const location = (res: JsonResponse): string => res.headers.get('location') ?? '';
const secretOf = (page: JsonResponse): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!);
const codesOf = (page: JsonResponse): string[] => [...page.text.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);

/** A box, its clients, and what a person does on its pages. */
class Scene {
  /** How far the box's clock is ahead of the test's (movableClock). */
  skew = 0;
  constructor(readonly box: Box) {}

  static async on(box: Box): Promise<Scene> {
    const root = await box.rootToken();
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code'],
        secret: SECRET,
        first_party: true,
        auth: { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } },
      },
      root,
    );
    expect(rp.status, rp.text).to.be.oneOf([200, 201]);
    return new Scene(box);
  }

  now(): number {
    return Date.now() + this.skew * 1000;
  }

  /** The box's current time step, its clock moved (when it can be) to one second into a fresh step, so no step ends mid-test. */
  freshStep(movable: boolean): number {
    if (movable) {
      const into = (this.now() / 1000) % 30;
      const by = 30 - into + 1;
      this.box.advanceClock(by);
      this.skew += by;
    }
    return stepAt(this.now());
  }

  async person(email: string, groupIds: number[] = []): Promise<void> {
    const res = await this.box.json('POST', '/users', { email, password: PASSWORD, 'group-ids': groupIds }, await this.box.rootToken());
    expect(res.status, res.text).to.equal(201);
  }

  /** A browser past the password: on its step's page (or signed in, for a person without factors). */
  async afterPassword(
    email: string,
    returnTo = '/auth/signed-in',
    sent: Record<string, string> = {},
  ): Promise<{ browser: FormAgent; next: JsonResponse }> {
    const browser = new FormAgent(this.box, sent);
    const next = await browser.signIn(email, PASSWORD, returnTo);
    expect(next.status, next.text).to.equal(303);
    return { browser, next };
  }

  /** Enrols a TOTP from /auth/account (a person without factors signs in with the password alone); its secret, the step its code was for, the recovery codes. */
  async enrolled(email: string, movable: boolean): Promise<{ secret: Buffer; step: number; codes: string[]; browser: FormAgent }> {
    await this.person(email);
    const { browser, next } = await this.afterPassword(email, '/auth/account');
    expect(location(next)).to.equal('/auth/account');
    const account = await browser.get('/auth/account');
    expect(account.status, account.text).to.equal(200);
    const setup = await browser.post('/auth/account/totp', hiddenFields(account.text));
    expect(setup.status, setup.text).to.equal(200);
    expect(setup.text).to.include('<svg');
    const secret = secretOf(setup);
    const step = this.freshStep(movable);
    const done = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code: totpCode(secret, step) });
    expect(done.status, done.text).to.equal(200);
    const codes = codesOf(done);
    expect(codes).to.have.length(10);
    // The code confirmed in this browser counts as its second factor: /auth/account stays open to it.
    expect((await browser.get('/auth/account')).text).to.include('Authenticator app');
    return { secret, step, codes, browser };
  }

  /** Posts a TOTP code (or a recovery code) on the browser's second-factor page. */
  async give(browser: FormAgent, field: 'code' | 'recovery_code', value: string): Promise<JsonResponse> {
    const page = await browser.get('/auth/sign-in/second-factor');
    return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), [field]: value });
  }

  async tokens(answer: JsonResponse): Promise<{ id_token: string; refresh_token: string; access_token: string }> {
    const code = codeIn(answer);
    expect(code, `${answer.status} ${answer.text.slice(0, 300)}`).to.be.a('string');
    const res = await this.box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }

  async signedInAs(browser: FormAgent): Promise<boolean> {
    return (await browser.get('/auth/signed-in')).text.includes('You are signed in as');
  }
}

describe('second factors: TOTP and recovery codes', function () {
  this.timeout(120_000);
  let box: Box;
  let scene: Scene;

  before(async function () {
    // The clock moves instead of the test waiting for the next 30-second step; many failures
    // come from one address here, so the limits are the throttling suite's business below.
    box = await Box.start({ movableClock: true, env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '200' } });
    scene = await Scene.on(box);
    // An app whose people sign in at the box (its url the box's own origin, so /.boxauth/* reaches the box).
    await box.addAppAtBox();
  });
  after(async function () {
    await box?.stop();
  });

  it('enrolled through the pages, a person signs in with password then code; the ID token says pwd, otp, mfa', async function () {
    const { secret, step } = await scene.enrolled('tess@example.com', true);
    const { browser, next } = await scene.afterPassword('tess@example.com', authorizePath());
    expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor\?return_to=%2Fauth%2Fauthorize%3F/);
    const page = await browser.get(location(next));
    expect(page.status).to.equal(200);
    expect(page.text).to.include('id="code"').and.include('id="recovery_code"').and.include('Lost your phone?');
    expect(page.text).not.to.include('use-passkey');
    const done = await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code: totpCode(secret, step + 1) });
    expect(done.status, done.text).to.equal(303);
    const back = await browser.get(location(done));
    const idToken = decodeJwt((await scene.tokens(back)).id_token);
    expect(idToken.amr).to.deep.equal(['pwd', 'otp', 'mfa']);
    expect(idToken.acr).to.equal('urn:boxauth:acr:mfa');
  });

  it('a code is taken within one step either side, never twice, never two steps off', async function () {
    const { secret, step } = await scene.enrolled('uma@example.com', true);
    const { browser } = await scene.afterPassword('uma@example.com');
    for (const used of [totpCode(secret, step), totpCode(secret, step + 2), totpCode(secret, step - 2), '000000x', '']) {
      const refused = await scene.give(browser, 'code', used);
      expect(refused.status, used).to.be.oneOf([400, 401]);
      expect(await scene.signedInAs(browser)).to.equal(false);
    }
    expect((await scene.give(browser, 'code', totpCode(secret, step + 1))).status).to.equal(303); // +1
    expect(await scene.signedInAs(browser)).to.equal(true);

    // The same code in another browser: used once, refused.
    const other = (await scene.afterPassword('uma@example.com')).browser;
    expect((await scene.give(other, 'code', totpCode(secret, step + 1))).status).to.equal(401);
    // Later (step + 3): the code of the step before now (-1) is taken, two steps ahead (+2) is not.
    scene.freshStep(true);
    scene.freshStep(true);
    const now = scene.freshStep(true);
    expect(now).to.equal(step + 3);
    expect((await scene.give(other, 'code', totpCode(secret, now + 2))).status).to.equal(401);
    expect((await scene.give(other, 'code', totpCode(secret, now - 1))).status).to.equal(303);
    expect(await scene.signedInAs(other)).to.equal(true);
  });

  it('a second factor skipped: past the password alone, no page of the box, no app and no API sees anyone signed in', async function () {
    const { secret, step } = await scene.enrolled('vic@example.com', true);
    const { browser, next } = await scene.afterPassword('vic@example.com', authorizePath());
    expect(location(next)).to.match(/^\/auth\/sign-in\/second-factor/);
    const csrf = hiddenFields((await browser.get(location(next))).text).csrf!;

    const authorize = await browser.get(authorizePath());
    expect(codeIn(authorize)).to.equal(null);
    expect(isSignInPage(authorize), authorize.text.slice(0, 200)).to.equal(true);
    const params = Object.fromEntries(new URL(authorizePath(), box.url).searchParams);
    const consent = await browser.post('/auth/consent', { ...params, csrf, decision: 'allow' });
    expect(codeIn(consent)).to.equal(null);
    expect(consent.status).not.to.equal(302);
    const device = await browser.get('/auth/device/verify');
    expect(device.text).not.to.include('Signed in as');
    expect(isSignInPage(device) || device.status === 303 || device.status === 302).to.equal(true);
    expect(await scene.signedInAs(browser)).to.equal(false);
    const account = await browser.get('/auth/account');
    expect(account.status).to.equal(303);
    expect(location(account)).to.equal('/auth/sign-in?return_to=%2Fauth%2Faccount');
    // An app's sign-in (its /.boxauth/callback): the authorization answers no code, the callback signs nobody in.
    const start = await browser.get('/.boxauth/start?rd=/docs');
    expect(start.status, start.text).to.equal(302);
    const appAuthorize = new URL(location(start));
    const atBox = await browser.get(`${appAuthorize.pathname}${appAuthorize.search}`);
    expect(codeIn(atBox)).to.equal(null);
    expect(isSignInPage(atBox)).to.equal(true);
    const state = appAuthorize.searchParams.get('state')!;
    const callback = await browser.get(`/.boxauth/callback?code=made-up&state=${encodeURIComponent(state)}`);
    expect(callback.headers.getSetCookie().some((c) => c.startsWith('boxauth-app-wiki=') && !c.startsWith('boxauth-app-wiki=;'))).to.equal(
      false,
    );
    expect(callback.status).not.to.equal(302);
    // The step's own pages: Continue completes only a step whose factor was given (and uses up any
    // other: sign in again); enrolling over it is refused.
    const cont = await browser.post('/auth/sign-in/continue', { csrf, return_to: '/auth/signed-in' });
    expect(cont.status).to.equal(403);
    expect(cont.text).to.include('Sign in again');
    expect(await scene.signedInAs(browser)).to.equal(false);
    const enrol = await browser.get('/auth/sign-in/enrol');
    expect(enrol.status).to.equal(403);
    expect(enrol.text).not.to.include('totp-secret');
    // The step survived Continue? It was used up: the browser signs in again, then gives its code.
    const again = await scene.afterPassword('vic@example.com');
    expect((await scene.give(again.browser, 'code', totpCode(secret, step + 1))).status).to.equal(303);
  });

  it('the second step offers what the person has: a passkey too when they have one, only the passkey when acr=phr is asked', async function () {
    const { secret, step } = await scene.enrolled('pia@example.com', true);
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO factors (user_id, kind, name, credential_id, public_key, sign_count)
         SELECT id, 'passkey', 'Laptop', $1, $2, 0 FROM users WHERE email = 'pia@example.com'`,
        [randomBytes(16), randomBytes(65)],
      );
    } finally {
      await db.end();
    }
    const { browser } = await scene.afterPassword('pia@example.com');
    const page = await browser.get('/auth/sign-in/second-factor');
    expect(page.text).to.include(
      '<button type="button" id="use-passkey" data-begin="/auth/passkeys/authenticate/options" data-finish="/auth/passkeys/authenticate" hidden>Use a passkey</button>',
    );
    expect(page.text).to.include('<script type="module" src="/assets/passkeys.js"></script>');
    expect(page.headers.get('content-security-policy')).to.include("script-src 'self'");
    expect(page.text).to.include('id="code"');

    const phr = await browser.get('/auth/sign-in/second-factor?acr=phr');
    expect(phr.text).to.include('id="use-passkey"').and.include('asks for a passkey');
    expect(phr.text).not.to.include('id="code"');
    expect(phr.text).not.to.include('id="recovery_code"');
    const code = await browser.post('/auth/sign-in/second-factor', {
      ...hiddenFields(page.text),
      acr: 'phr',
      code: totpCode(secret, step + 1),
    });
    expect(code.status).to.equal(400);
    expect(await scene.signedInAs(browser)).to.equal(false);
    // Without acr=phr, the same code is still good: it was not used.
    expect((await scene.give(browser, 'code', totpCode(secret, step + 1))).status).to.equal(303);
  });

  it('a step cookie tampered with, or missing from another browser, gets nothing for a right code', async function () {
    const { secret, step } = await scene.enrolled('wes@example.com', true);
    const { browser } = await scene.afterPassword('wes@example.com');
    const page = await browser.get('/auth/sign-in/second-factor');
    const token = browser.cookie('boxauth_step')!;
    expect(token).to.be.a('string');
    browser.setCookie(
      'boxauth_step',
      token.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')),
    );
    const tampered = await browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code: totpCode(secret, step + 1) });
    expect(tampered.status).to.equal(403);
    expect(tampered.text).to.include('Sign in again');
    // Another browser with its own CSRF token and no step.
    const other = new FormAgent(box);
    const own = await other.get('/auth/sign-in');
    const stranger = await other.post('/auth/sign-in/second-factor', {
      csrf: hiddenFields(own.text).csrf!,
      code: totpCode(secret, step + 1),
    });
    expect(stranger.status).to.equal(403);
    expect(await scene.signedInAs(other)).to.equal(false);
    // The code was never accepted for either: with the real step, it is.
    browser.setCookie('boxauth_step', token);
    expect((await scene.give(browser, 'code', totpCode(secret, step + 1))).status).to.equal(303);
  });

  it('a recovery code signs in once (20 at once: one wins), ends every other sign-in and the old factor, and enrolment follows', async function () {
    const { secret, step, codes, browser: first } = await scene.enrolled('xia@example.com', true);
    // Another browser fully signed in, with an app's tokens.
    const { browser: phone } = await scene.afterPassword('xia@example.com', authorizePath());
    expect((await scene.give(phone, 'code', totpCode(secret, step + 1))).status).to.equal(303);
    const appTokens = await scene.tokens(await phone.get(authorizePath()));
    expect(await scene.signedInAs(phone)).to.equal(true);
    expect(await scene.signedInAs(first)).to.equal(true);

    const { browser: lost, next: lostNext } = await scene.afterPassword('xia@example.com', authorizePath());
    const page = await lost.get(location(lostNext));
    const tries = await Promise.all(
      Array.from({ length: 20 }, () =>
        lost.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), recovery_code: codes[3]!.toUpperCase().replace(/-/g, ' ') }),
      ),
    );
    const won = tries.filter((r) => r.status === 303);
    expect(won, tries.map((r) => r.status).join(' ')).to.have.length(1);
    expect(location(won[0]!)).to.match(/^\/auth\/sign-in\/enrol\?return_to=%2Fauth%2Fauthorize/);

    // Every other sign-in of the person ended: browsers, tokens.
    expect(await scene.signedInAs(phone)).to.equal(false);
    expect(await scene.signedInAs(first)).to.equal(false);
    const refresh = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: appTokens.refresh_token },
      { Authorization: basic('rp', SECRET) },
    );
    expect(refresh.status).to.equal(400);

    // The same code again, and another of the ten: refused (the codes went with the factors).
    const { browser: again, next } = await scene.afterPassword('xia@example.com');
    expect(location(next), 'no factor left: enrolment, not a code').to.match(/^\/auth\/sign-in\/enrol/);
    const refusedAgain = await again.post('/auth/sign-in/second-factor', {
      ...hiddenFields((await again.get(location(next))).text),
      recovery_code: codes[3]!,
    });
    expect(refusedAgain.status).not.to.equal(303);
    expect(await scene.signedInAs(again)).to.equal(false);

    // Enrolment: a new authenticator, new codes shown once, then on to the app.
    const enrol = await lost.get(location(won[0]!));
    expect(enrol.status, enrol.text).to.equal(200);
    const fresh = secretOf(enrol);
    const now = scene.freshStep(true);
    const made = await lost.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code: totpCode(fresh, now) });
    expect(made.status, made.text).to.equal(200);
    expect(codesOf(made)).to.have.length(10);
    const onward = await lost.post('/auth/sign-in/continue', hiddenFields(made.text));
    expect(onward.status).to.equal(303);
    const idToken = decodeJwt((await scene.tokens(await lost.get(location(onward)))).id_token);
    expect(idToken.amr).to.deep.equal(['pwd', 'otp', 'mfa']);

    // The old phone's codes no longer work; the new one's do.
    const later = await scene.afterPassword('xia@example.com');
    expect(location(later.next)).to.match(/^\/auth\/sign-in\/second-factor/);
    expect((await scene.give(later.browser, 'code', totpCode(secret, now + 1))).status).to.equal(401);
    expect((await scene.give(later.browser, 'code', totpCode(fresh, now + 1))).status).to.equal(303);
  });

  describe('a group that requires a second factor', function () {
    let groupId: number;
    before(async function () {
      const root = await box.rootToken();
      const group = await box.json('POST', '/groups', { name: 'operators' }, root);
      expect(group.status, group.text).to.equal(201);
      groupId = group.body.id;
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [groupId]);
      } finally {
        await db.end();
      }
    });

    it('sends a member without factors to enrol after the password, before any code is issued', async function () {
      await scene.person('yan@example.com', [groupId]);
      const { browser, next } = await scene.afterPassword('yan@example.com', authorizePath());
      expect(location(next)).to.match(/^\/auth\/sign-in\/enrol\?return_to=%2Fauth%2Fauthorize/);
      expect(codeIn(await browser.get(authorizePath()))).to.equal(null);
      expect(await scene.signedInAs(browser)).to.equal(false);

      const passkeyOnly = await browser.get(`${location(next)}&acr=phr`);
      expect(passkeyOnly.text).to.include(
        '<button type="button" id="add-passkey" data-begin="/auth/passkeys/register/options" data-finish="/auth/passkeys/register" hidden>Add a passkey</button>',
      );
      expect(passkeyOnly.text).not.to.include('totp-secret');
      const enrol = await browser.get(location(next));
      // The QR code is inline SVG (no image source to allow); a passkey is offered beside it, by the box's own script.
      expect(enrol.text).to.include('<svg').and.include('id="code"').and.include('id="add-passkey"');
      expect(enrol.headers.get('content-security-policy')).to.include("script-src 'self'").and.include("img-src 'self'");
      const secret = secretOf(enrol);
      const step = scene.freshStep(true);
      const wrong = await browser.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code: totpCode(secret, step + 3) });
      expect(wrong.status).to.equal(401);
      const page = wrong; // a new secret is shown with the error
      const secret2 = secretOf(page);
      const codes = await browser.post('/auth/sign-in/enrol', { ...hiddenFields(page.text), code: totpCode(secret2, step) });
      expect(codes.status, codes.text).to.equal(200);
      expect(codesOf(codes)).to.have.length(10);
      expect(await scene.signedInAs(browser)).to.equal(false); // not until Continue
      const onward = await browser.post('/auth/sign-in/continue', hiddenFields(codes.text));
      expect(onward.status).to.equal(303);
      const idToken = decodeJwt((await scene.tokens(await browser.get(location(onward)))).id_token);
      expect(idToken.amr).to.deep.equal(['pwd', 'otp', 'mfa']);
      expect(idToken.acr).to.equal('urn:boxauth:acr:mfa');
      // Continue twice: the step is used up.
      expect((await browser.post('/auth/sign-in/continue', hiddenFields(codes.text))).status).to.equal(403);

      // Removing the last factor is refused: the group requires one.
      const account = await browser.get('/auth/account');
      expect(account.status, account.text).to.equal(200);
      const removed = await browser.post('/auth/account/factors/remove', hiddenFields(account.text));
      expect(removed.status).to.equal(409);
      expect(removed.text).to.include('a group of yours requires one');
      expect((await browser.get('/auth/account')).text).to.include('Authenticator app');
    });
  });

  it('/auth/account: removing a factor and making new codes need the CSRF token; the old codes stop working', async function () {
    const { secret, step, codes } = await scene.enrolled('zed@example.com', true);
    const { browser } = await scene.afterPassword('zed@example.com', '/auth/account');
    expect((await scene.give(browser, 'code', totpCode(secret, step + 1))).status).to.equal(303);
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('10 of 10 recovery codes left');
    expect((await browser.post('/auth/account/recovery-codes', {})).status).to.equal(403);
    const made = await browser.post('/auth/account/recovery-codes', { csrf: hiddenFields(account.text).csrf! });
    const fresh = codesOf(made);
    expect(fresh).to.have.length(10);
    expect(fresh).not.to.include(codes[0]);
    const { browser: other } = await scene.afterPassword('zed@example.com');
    expect((await scene.give(other, 'recovery_code', codes[0]!)).status).to.equal(401);

    expect((await browser.post('/auth/account/factors/remove', { factor: hiddenFields(account.text).factor! })).status).to.equal(403);
    const removed = await browser.post('/auth/account/factors/remove', hiddenFields(account.text));
    expect(removed.status, removed.text).to.equal(200);
    expect(removed.text).to.include('You have no second factor');
    expect(location((await scene.afterPassword('zed@example.com')).next)).to.equal('/auth/signed-in');
  });
});

describe('second factors across processes, and guesses counted', function () {
  this.timeout(120_000);
  let a: Box;
  let b: Box;
  let scene: Scene;
  // Two replicas share the factor key as they share the database (a Secret in a cluster).
  const env = { BOXAUTH_SIGN_IN_MAX_FAILURES: '5', BOXAUTH_FACTOR_KEY: randomBytes(32).toString('base64') };

  before(async function () {
    a = await Box.start({ env });
    b = await a.startAnother(env);
    scene = await Scene.on(a);
  });
  after(async function () {
    await b?.stop();
    await a?.stop();
  });

  it('a process given another factor key refuses to start, naming BOXAUTH_FACTOR_KEY, and the box goes on', async function () {
    const other = randomBytes(32).toString('base64');
    let failure = '';
    await a.startAnother({ ...env, BOXAUTH_FACTOR_KEY: other }).then(
      async (started) => {
        await started.stop();
      },
      (err: Error) => {
        failure = err.message;
      },
    );
    expect(failure).to.include('the factor key (BOXAUTH_FACTOR_KEY) is not the one');
    expect(failure).not.to.include(other);
    const { secret, step } = await scene.enrolled('dee@example.com', false);
    const { browser } = await scene.afterPassword('dee@example.com');
    expect((await scene.give(browser, 'code', totpCode(secret, step + 1))).status).to.equal(303);
  });

  it('a German browser locked out of codes is told so in German: every sentence of the page is the catalogue’s', async function () {
    const { secret, step } = await scene.enrolled('gerd@example.com', false);
    const wrong = String((Number(totpCode(secret, step + 1)) + 1) % 1_000_000).padStart(6, '0');
    const { browser } = await scene.afterPassword('gerd@example.com', '/auth/signed-in', { 'Accept-Language': 'de' });
    for (let i = 0; i < 5; i++) expect((await scene.give(browser, 'code', wrong)).status).to.equal(401);
    const locked = await scene.give(browser, 'code', wrong);
    expect(locked.status).to.equal(429);
    expect(locked.text).to.include('Zu viele falsche Codes');
    expect(strayTexts(locked.text, GERMAN, ['default', 'gerd@example.com'])).to.deep.equal([]);
  });

  it('a right password does not wipe the wrong codes counted: the password again buys no more guesses', async function () {
    const { secret, step } = await scene.enrolled('cy@example.com', false);
    const wrong = String((Number(totpCode(secret, step + 1)) + 1) % 1_000_000).padStart(6, '0');
    const first = await scene.afterPassword('cy@example.com');
    for (let i = 0; i < 4; i++) expect((await scene.give(first.browser, 'code', wrong)).status).to.equal(401);
    const second = await scene.afterPassword('cy@example.com');
    expect((await scene.give(second.browser, 'code', wrong)).status).to.equal(401);
    const locked = await scene.give(second.browser, 'code', totpCode(secret, step + 1));
    expect(locked.status).to.equal(429);
  });

  it('one code sent to two processes of one box at once: exactly one signs in', async function () {
    const { secret, step } = await scene.enrolled('ann@example.com', false);
    const atA = await new Scene(a).afterPassword('ann@example.com');
    const atB = await new Scene(b).afterPassword('ann@example.com');
    const code = totpCode(secret, step + 1);
    const answers = await Promise.all([new Scene(a).give(atA.browser, 'code', code), new Scene(b).give(atB.browser, 'code', code)]);
    expect(answers.map((r) => r.status).sort()).to.deep.equal([303, 401]);
  });

  it('40 guesses at once: no more than BOXAUTH_SIGN_IN_MAX_FAILURES are checked, the rest 429; the right code is refused while locked', async function () {
    const { secret, step } = await scene.enrolled('bo@example.com', false);
    const { browser } = await scene.afterPassword('bo@example.com');
    const page = await browser.get('/auth/sign-in/second-factor');
    const right = totpCode(secret, step + 1);
    const wrong = Array.from({ length: 40 }, (_, i) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0'));
    const answers = await Promise.all(
      wrong.map((code) => browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code })),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).to.be.at.most(5);
    expect(statuses.filter((s) => s === 429).length).to.be.at.least(35);
    expect(statuses.every((s) => s === 401 || s === 429)).to.equal(true);
    const locked = await scene.give(browser, 'code', right);
    expect(locked.status).to.equal(429);
    expect(locked.text).to.include('Too many wrong codes');
    expect(await scene.signedInAs(browser)).to.equal(false);
  });
});
