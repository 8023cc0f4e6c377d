// A stolen browser stays a browser (docs/security.md#what-a-sign-in-proves): whoever holds a
// browser signed in minutes or hours ago, without its person's password, tries to become the
// account — by a step-up that enrols a factor of their own (an authenticator app, a passkey), by
// an enrolment that renews the sign-in's time for max_age, by a password change continuing the
// session under a new sid, and by adding or removing factors on the account page. A session's
// proof is what it proved at its own time: a step-up and an enrolment keep its sign-in's time,
// an enrolment is no proof, and every change of a factor asks for a recent one (the password
// again on "confirm it is you", or a sign-in again) and is mailed. A person asked for a passkey
// who has only an app gives its code and adds a passkey, instead of a dead end.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Box, type JsonResponse } from '../support/box.js';
import { SoftAuthenticator } from '../support/authenticator.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { addDummyPasskey } from '../support/factors.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';

const PASSWORD = 'a-good-password-1';
const MFA = 'urn:boxauth:acr:mfa';

const where = (res: JsonResponse): string => res.headers.get('location') ?? '';
const codeIn = (res: JsonResponse): string | null => (res.status === 302 ? new URL(where(res)).searchParams.get('code') : null);
const isSignInPage = (res: JsonResponse): boolean => res.status === 200 && res.text.includes('action="/auth/sign-in"');
const secretOf = (page: JsonResponse): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!);

/** A box and what a person (or whoever holds their browser) does on its pages, on the box's clock. */
class Scene {
  /** How far the box's clock is ahead of the test's (a movable clock only). */
  private skew = 0;
  private n = 0;
  /** The last step a code was made for, per secret. */
  private readonly lastSteps = new Map<string, number>();

  constructor(
    readonly box: Box,
    readonly rp: CodeClient,
    private readonly movable: boolean,
  ) {}

  static async on(box: Box, movable: boolean): Promise<Scene> {
    return new Scene(box, await codeClient(box, await box.rootToken(), 'https://rp.example/callback', 'rp', 'openid email'), movable);
  }

  /** Moves the box's clock on by `seconds` (its proofs age; PostgreSQL's clock stays). */
  pass(seconds: number): void {
    this.box.advanceClock(seconds);
    this.skew += seconds;
  }

  now(): number {
    return Date.now() + this.skew * 1000;
  }

  /**
   * A code of `secret` the box takes now and has not taken yet: on a movable clock, of the step its
   * clock is moved one second into; on the real clock, of this step or (a code of this step used
   * already) of the next, which the box takes one step early (RFC 6238 §5.2).
   */
  async codeFor(secret: Buffer): Promise<string> {
    const into = (this.now() / 1000) % 30;
    if (this.movable) this.pass(30 - into + 1);
    else if (into > 27) await new Promise((resolve) => setTimeout(resolve, (30 - into + 1) * 1000));
    const key = secret.toString('hex');
    const step = Math.max(stepAt(this.now()), (this.lastSteps.get(key) ?? 0) + 1);
    this.lastSteps.set(key, step);
    return totpCode(secret, step);
  }

  async person(name: string): Promise<{ id: number; email: string }> {
    const email = `${name}-${++this.n}-${randomBytes(3).toString('hex')}@example.com`;
    // The box's clock may have moved: a root token of its own time each time.
    const res = await this.box.json('POST', '/users', { email, password: PASSWORD }, await this.box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }

  /** A browser past the password, sent on to `returnTo` (or to its second factor's page). */
  async signedIn(email: string, returnTo = '/auth/signed-in'): Promise<{ browser: FormAgent; next: JsonResponse }> {
    const browser = new FormAgent(this.box);
    const next = await browser.signIn(email, PASSWORD, returnTo);
    expect(next.status, next.text).to.equal(303);
    return { browser, next };
  }

  /** Sets up an authenticator app from the account page of `browser`: its secret. */
  async addApp(browser: FormAgent): Promise<Buffer> {
    const account = await browser.get('/auth/account');
    const setup = await browser.post('/auth/account/totp', hiddenFields(account.text));
    expect(setup.status, setup.text).to.equal(200);
    const secret = secretOf(setup);
    const code = await this.codeFor(secret);
    const done = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code });
    expect(done.status, done.text).to.equal(200);
    return secret;
  }

  /** Enrols an app on the enrolment page at `path`, then continues past the recovery codes: where the sign-in went back to. */
  async enrolApp(browser: FormAgent, path: string): Promise<JsonResponse> {
    const enrol = await browser.get(path);
    expect(enrol.status, enrol.text).to.equal(200);
    const code = await this.codeFor(secretOf(enrol));
    const done = await browser.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code });
    expect(done.status, done.text).to.equal(200);
    const continued = await browser.post('/auth/sign-in/continue', hiddenFields(done.text));
    expect(continued.status, continued.text).to.equal(303);
    return browser.get(where(continued));
  }

  /** Gives the app's code on the second-factor page the sign-in went on to (`next`). */
  async giveCode(browser: FormAgent, secret: Buffer, next: JsonResponse): Promise<JsonResponse> {
    const page = await browser.get(where(next));
    expect(page.status, page.text).to.equal(200);
    return browser.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code: await this.codeFor(secret) });
  }

  /** A person with an authenticator app, and a browser they signed in with password and code. */
  async withApp(name: string): Promise<{ who: { id: number; email: string }; secret: Buffer; browser: FormAgent }> {
    const who = await this.person(name);
    const secret = await this.addApp((await this.signedIn(who.email, '/auth/account')).browser);
    const { browser, next } = await this.signedIn(who.email);
    expect((await this.giveCode(browser, secret, next)).status).to.equal(303);
    return { who, secret, browser };
  }

  idToken(answer: JsonResponse): Promise<Record<string, unknown>> {
    const code = codeIn(answer);
    expect(code, `${answer.status} ${where(answer)} ${answer.text.slice(0, 300)}`).to.be.a('string');
    return this.rp.claimsOf(code!);
  }

  async factorsOf(id: number): Promise<{ id: string; kind: string; name: string }[]> {
    const res = await this.box.json('GET', `/users/${id}/factors`, undefined, await this.box.rootToken());
    return (res.body as { factors: { id: string; kind: string; name: string }[] }).factors;
  }
}

/** The account page's change of password posted without the current password: the page's answer. */
async function newPasswordWithoutCurrent(browser: FormAgent): Promise<JsonResponse> {
  const page = await browser.get('/auth/account');
  expect(page.status, page.text).to.equal(200);
  const form = /<form method="post" action="\/auth\/account\/password">([\s\S]*?)<\/form>/.exec(page.text)![1]!;
  return browser.post('/auth/account/password', { ...hiddenFields(form), new_password: 'a-thief-s-password-9' });
}

describe('a stolen browser stays a browser', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let scene: Scene;

  before(async function () {
    smtp = await TestSmtp.start();
    const box = await Box.start({ movableClock: true, env: { ...smtp.boxEnv(), BOXAUTH_SIGN_IN_MAX_FAILURES: '100' } });
    scene = await Scene.on(box, true);
  });
  after(async function () {
    await scene?.box.stop();
    await smtp?.stop();
  });

  const mailsAbout = (email: string, subject: RegExp): ReceivedMail[] =>
    smtp.mailsTo(email).filter((m) => subject.test(m.parsed.subject ?? ''));

  it('a step-up to mfa from a browser signed in long ago does not enrol: it asks for the password first', async function () {
    const ann = await scene.person('ann');
    const { browser } = await scene.signedIn(ann.email);
    scene.pass(11 * 60);
    // The thief, at Ann's browser, asks an app for a second factor Ann has not set up.
    const stepUp = await browser.get(scene.rp.authorizePath({ acr_values: MFA }));
    expect(stepUp.status, stepUp.text).to.equal(303);
    expect(where(stepUp))
      .to.match(/^\/auth\/sign-in\?/)
      .and.include('reason=enrol');
    const page = await browser.get(where(stepUp));
    expect(isSignInPage(page)).to.equal(true);
    expect(page.text).to.include('sign in again first').and.include(ann.email);
    // No enrolment to be had, none through the account page either, and no new password without the old one.
    expect((await browser.get(`/auth/sign-in/enrol?acr=${encodeURIComponent(MFA)}`)).status).to.equal(403);
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('confirm it is you').and.not.include('action="/auth/account/totp"');
    const setup = await browser.post('/auth/account/totp', hiddenFields(account.text));
    expect(setup.status).to.equal(303);
    expect(where(setup)).to.equal('/auth/account/confirm?return_to=%2Fauth%2Faccount');
    const changed = await newPasswordWithoutCurrent(browser);
    expect(changed.status).to.equal(422);
    expect(await scene.factorsOf(ann.id)).to.deep.equal([]);
    expect((await new FormAgent(scene.box).signIn(ann.email, PASSWORD)).status, 'her password still signs in').to.equal(303);
  });

  it('Ann herself: the password again, then the enrolment, in one sign-in; the ID token dates that sign-in', async function () {
    const ann = await scene.person('ann');
    const { browser } = await scene.signedIn(ann.email);
    scene.pass(11 * 60);
    const again = await browser.get(where(await browser.get(scene.rp.authorizePath({ acr_values: MFA }))));
    const toEnrol = await browser.post('/auth/sign-in', { ...hiddenFields(again.text), email: ann.email, password: PASSWORD });
    expect(where(toEnrol)).to.match(/^\/auth\/sign-in\/enrol\?/);
    const signInTime = Math.floor(scene.now() / 1000);
    const claims = await scene.idToken(await scene.enrolApp(browser, where(toEnrol)));
    expect(claims.acr).to.equal(MFA);
    expect(claims.amr).to.include.members(['pwd', 'otp']);
    expect(claims.auth_time).to.be.within(signInTime - 1, signInTime + 40);
    await smtp.waitForMail(() => mailsAbout(ann.email, /was added/).length > 0);
  });

  it('a step-up minutes after a sign-in enrols; the session keeps its sign-in time, and what it enrolled stands for no password', async function () {
    const ivy = await scene.person('ivy');
    const { browser } = await scene.signedIn(ivy.email);
    const signInTime = Math.floor(scene.now() / 1000);
    scene.pass(60);
    const toEnrol = await browser.get(scene.rp.authorizePath({ acr_values: MFA }));
    expect(where(toEnrol)).to.match(/^\/auth\/sign-in\/enrol\?/);
    const claims = await scene.idToken(await scene.enrolApp(browser, where(toEnrol)));
    expect(claims.acr).to.equal(MFA);
    expect(claims.auth_time, 'the sign-in, not the step-up').to.be.within(signInTime - 1, signInTime + 1);
    // An app enrolled in a step-up proves nothing of who holds the browser: a new password still needs the current one.
    expect((await newPasswordWithoutCurrent(browser)).status).to.equal(422);
  });

  it('a step-up to a passkey from an old sign-in with an app does not take a passkey the thief made', async function () {
    const { who: bob, browser } = await scene.withApp('bob');
    scene.pass(11 * 60);
    const stepUp = await browser.get(scene.rp.authorizePath({ acr_values: 'phr' }));
    expect(where(stepUp))
      .to.match(/^\/auth\/sign-in\?/)
      .and.include('reason=enrol');
    // The thief's own passkey: neither a step nor the signed-in browser may add it.
    const key = new SoftAuthenticator(scene.box.url);
    const passkeysPage = await browser.get('/auth/account/passkeys');
    expect(passkeysPage.text).to.include('confirm it is you').and.not.include('id="add-passkey"');
    const csrf = { 'x-csrf-token': hiddenFields((await browser.get('/auth/account')).text).csrf! };
    const options = await browser.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(403);
    expect(options.body.location).to.equal('/auth/account/confirm?return_to=%2Fauth%2Faccount%2Fpasskeys');
    const forged = await browser.postJson(
      '/auth/passkeys/register',
      { response: key.register({ challenge: 'AAAA', user: { id: 'AAAA' } }), return_to: '/auth/signed-in', acr: 'phr' },
      csrf,
    );
    expect(forged.status).to.be.oneOf([400, 403]);
    expect((await scene.factorsOf(bob.id)).map((f) => f.kind)).to.deep.equal(['totp']);
  });

  it('every change of a factor asks for a recent proof: confirm it is you with the password, then it is made, and mailed', async function () {
    const fay = await scene.person('fay');
    const { browser } = await scene.signedIn(fay.email, '/auth/account');
    await scene.addApp(browser);
    await smtp.waitForMail(() => mailsAbout(fay.email, /was added/).length > 0);
    expect(mailsAbout(fay.email, /was added/)[0]!.parsed.text).to.include('an authenticator app');
    scene.pass(11 * 60);
    const account = await browser.get('/auth/account');
    expect(account.text).to.include('confirm it is you').and.not.include('action="/auth/account/factors/remove"');
    const csrf = hiddenFields(account.text).csrf!;
    const [app] = await scene.factorsOf(fay.id);
    const factorId = String(app!.id);
    for (const [path, fields] of [
      ['/auth/account/factors/remove', { csrf, factor: factorId }],
      ['/auth/account/recovery-codes', { csrf }],
      ['/auth/account/totp', { csrf }],
      ['/auth/account/passkeys/remove', { csrf, id: factorId }],
    ] as const) {
      const res = await browser.post(path, fields);
      expect(res.status, `${path}: ${res.text}`).to.equal(303);
      expect(where(res), path).to.match(/^\/auth\/account\/confirm\?return_to=/);
    }
    expect((await scene.factorsOf(fay.id)).map((f) => f.name)).to.deep.equal([app!.name]);
    // Confirming: a wrong password is refused, the right one goes back to the page, and the change is made.
    const confirm = await browser.get('/auth/account/confirm?return_to=%2Fauth%2Faccount');
    expect(confirm.status).to.equal(200);
    expect(confirm.text).to.include('Confirm it is you');
    const wrong = await browser.post('/auth/account/confirm', { ...hiddenFields(confirm.text), password: 'not-her-password' });
    expect(wrong.status).to.equal(422);
    const right = await browser.post('/auth/account/confirm', { ...hiddenFields(confirm.text), password: PASSWORD });
    expect(right.status).to.equal(303);
    expect(where(right)).to.equal('/auth/account');
    const removed = await browser.post('/auth/account/factors/remove', { csrf, factor: factorId });
    expect(removed.status, removed.text).to.equal(200);
    expect(await scene.factorsOf(fay.id)).to.deep.equal([]);
    await smtp.waitForMail(() => mailsAbout(fay.email, /was removed/).length > 0);
    // A confirmation is a proof for minutes, not for ever.
    scene.pass(11 * 60);
    expect(where(await browser.post('/auth/account/totp', { csrf }))).to.match(/^\/auth\/account\/confirm/);
  });

  it('a reset shows the factors with their dates and removes the ones ticked, but never every one', async function () {
    const gus = await scene.person('gus');
    const { browser } = await scene.signedIn(gus.email, '/auth/account');
    await scene.addApp(browser);
    await addDummyPasskey(scene.box.databaseUrl!, gus.id, 'Not mine');
    const reset = new FormAgent(scene.box);
    const ask = await reset.get('/auth/reset');
    await reset.post('/auth/reset', { ...hiddenFields(ask.text), email: gus.email });
    await smtp.waitForMail(() => mailsAbout(gus.email, /Reset your password/).length > 0);
    const body = mailsAbout(gus.email, /Reset your password/)[0]!.parsed.text ?? '';
    const link = new URL(/(http\S+\/auth\/reset\/confirm\?token=[\w-]+)/.exec(body)![1]!);
    const page = await reset.get(`${link.pathname}${link.search}`);
    expect(page.status, page.text).to.equal(200);
    expect(page.text)
      .to.include('Authenticator app')
      .and.include('Not mine')
      .and.match(/added \d{4}-\d\d-\d\d/);
    const ids = [...page.text.matchAll(/name="remove" value="(\d+)"/g)].map((m) => m[1]!);
    expect(ids).to.have.length(2);
    const notMine = /name="remove" value="(\d+)"> Remove Passkey “Not mine”/.exec(page.text)![1]!;
    const fields = hiddenFields(page.text);
    const form = (remove: string[]): string =>
      new URLSearchParams([
        ...Object.entries(fields),
        ['password', 'a-new-good-password-2'],
        ...remove.map((r) => ['remove', r]),
      ]).toString();
    const post = (remove: string[]) =>
      scene.box.request('POST', '/auth/reset/confirm', {
        headers: { ...reset.cookieHeader(), 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form(remove),
      });
    const all = await post(ids);
    expect(all.status, all.text).to.equal(422);
    expect(all.text).to.include('Keep at least one');
    expect((await new FormAgent(scene.box).signIn(gus.email, PASSWORD)).status, 'nothing changed').to.equal(303);
    expect(await scene.factorsOf(gus.id)).to.have.length(2);
    const one = await post([notMine]);
    expect(one.status, one.text).to.equal(200);
    expect((await scene.factorsOf(gus.id)).map((f) => f.kind)).to.deep.equal(['totp']);
    await smtp.waitForMail(() => mailsAbout(gus.email, /was removed/).length > 0);
    expect(mailsAbout(gus.email, /was removed/)[0]!.parsed.text).to.include('a passkey named “\u2068Not mine\u2069”');
  });

  it('asked for a passkey, a person with only an app gives its code and adds a passkey: no dead end', async function () {
    const hal = await scene.person('hal');
    const setup = await scene.signedIn(hal.email, '/auth/account');
    const secret = await scene.addApp(setup.browser);
    const browser = new FormAgent(scene.box);
    const request = scene.rp.authorizePath({ acr_values: 'phr' });
    const signInPage = await browser.get(request);
    expect(isSignInPage(signInPage)).to.equal(true);
    const toCode = await browser.post('/auth/sign-in', { ...hiddenFields(signInPage.text), email: hal.email, password: PASSWORD });
    expect(where(toCode)).to.match(/^\/auth\/sign-in\/second-factor\?/);
    const codePage = await browser.get(where(toCode));
    expect(codePage.status, codePage.text).to.equal(200);
    expect(codePage.text).to.include('you have none yet').and.include('name="code"');
    const afterCode = await browser.post('/auth/sign-in/second-factor', {
      ...hiddenFields(codePage.text),
      code: await scene.codeFor(secret),
    });
    expect(afterCode.status, afterCode.text).to.equal(303);
    expect(where(afterCode))
      .to.match(/^\/auth\/sign-in\/enrol\?/)
      .and.include('acr=phr');
    const enrol = await browser.get(where(afterCode));
    expect(enrol.status, enrol.text).to.equal(200);
    expect(enrol.text).to.include('Add a passkey');
    const csrf = { 'x-csrf-token': hiddenFields(enrol.text).csrf! };
    const key = new SoftAuthenticator(scene.box.url);
    const options = await browser.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(200);
    const made = await browser.postJson(
      '/auth/passkeys/register',
      { response: key.register(options.body), return_to: hiddenFields(enrol.text).return_to, acr: 'phr' },
      csrf,
    );
    expect(made.status, made.text).to.equal(200);
    const claims = await scene.idToken(await browser.get(made.body.location as string));
    expect(claims.acr).to.equal('phr');
    await smtp.waitForMail(() => mailsAbout(hal.email, /was added/).some((m) => (m.parsed.text ?? '').includes('a passkey named')));
  });
});

describe('max_age waits for a sign-in made for it, on the real clock', function () {
  this.timeout(120_000);
  let scene: Scene;

  before(async function () {
    // The clock is not moved here: what an enrolment or a password change writes is compared with what a sign-in wrote, both real.
    scene = await Scene.on(await Box.start(), false);
  });
  after(async function () {
    await scene?.box.stop();
  });

  const moment = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  it('an app enrolled in a session does not renew its auth_time: max_age still asks for a sign-in', async function () {
    const cy = await scene.person('cy');
    const { browser } = await scene.signedIn(cy.email);
    await moment(4500);
    const request = scene.rp.authorizePath({ max_age: '3' });
    expect(isSignInPage(await browser.get(request))).to.equal(true);
    // The holder adds an app (the sign-in is seconds old: a recent proof, so the page lets them).
    await scene.addApp(browser);
    const after = await browser.get(request);
    expect(isSignInPage(after), `${after.status} ${where(after)}`).to.equal(true);
    expect(codeIn(after)).to.equal(null);
  });

  it('a password changed with a fresh second factor continues the session: the request waiting for a sign-in still waits', async function () {
    const { browser } = await scene.withApp('dee');
    await moment(4500);
    const page = await browser.get(scene.rp.authorizePath({ max_age: '3' }));
    expect(isSignInPage(page)).to.equal(true);
    const wayBack = hiddenFields(page.text).return_to!;
    expect(wayBack).to.include('sign_in_after');
    // A sign-in with a second factor seconds ago stands for the password: changed without it, this browser continued.
    const changed = await newPasswordWithoutCurrent(browser);
    expect(changed.status, changed.text).to.equal(303);
    const after = await browser.get(wayBack);
    expect(isSignInPage(after), `${after.status} ${where(after)}`).to.equal(true);
  });
});

describe('a stolen browser links no provider of its own, and an unlink beats a sign-in through it', function () {
  this.timeout(180_000);
  let a: Box;
  let b: Box;

  before(async function () {
    // Ten sign-ins of one person at once at B: more than its throttle lets through by default.
    [a, b] = await Promise.all([
      Box.start({ movableClock: true }),
      Box.start({ hostname: 'localhost', env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '100' } }),
    ]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
  });
  after(async () => Promise.all([a?.stop(), b?.stop()]));

  async function personAt(box: Box, name: string): Promise<{ id: number; email: string }> {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id as number, email };
  }
  const identities = async (id: number): Promise<string[]> =>
    ((await a.json('GET', `/users/${id}/identities`, undefined, await a.rootToken())).body as { provider: string }[]).map(
      (i) => i.provider,
    );

  it('linking or unlinking a provider from a browser signed in long ago asks to confirm it is you first', async function () {
    const ann = await personAt(a, 'ann');
    const thief = await personAt(b, 'thief');
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.atA.signIn(ann.email, PASSWORD)).status).to.equal(303);
    a.advanceClock(11 * 60);
    // The thief's own identity at the provider, linked from Ann's browser: refused until it is Ann who confirms.
    const start = await browser.start('corp', '/auth/account', true);
    expect(start.status).to.equal(303);
    expect(start.headers.get('location')).to.equal('/auth/account/confirm?return_to=%2Fauth%2Faccount');
    expect(await identities(ann.id)).to.deep.equal([]);
    const confirm = await browser.atA.get('/auth/account/confirm?return_to=%2Fauth%2Faccount');
    expect((await browser.atA.post('/auth/account/confirm', { ...hiddenFields(confirm.text), password: PASSWORD })).status).to.equal(303);
    const linked = await browser.callback(
      await browser.atUpstream(await browser.start('corp', '/auth/account', true), thief.email, PASSWORD),
    );
    expect(linked.headers.get('location')).to.equal('/auth/account?changed=provider-linked');
    expect(await identities(ann.id)).to.deep.equal(['corp']);
    a.advanceClock(11 * 60);
    const page = await browser.atA.get('/auth/account');
    const unlink = await browser.atA.post('/auth/account/providers/unlink', { csrf: hiddenFields(page.text).csrf!, provider: 'corp' });
    expect(unlink.status).to.equal(303);
    expect(unlink.headers.get('location')).to.match(/^\/auth\/account\/confirm\?/);
    expect(await identities(ann.id)).to.deep.equal(['corp']);
  });

  it("an administrator's unlink racing ten sign-ins through the provider: none of them stays signed in", async function () {
    const bea = await personAt(b, 'bea');
    // Her first sign-in through corp makes her a person of A.
    expect((await new TwoHostBrowser(a, b).signIn('corp', bea.email, PASSWORD)).status).to.equal(303);
    const atA = (await a.json('GET', `/users?email=${encodeURIComponent(bea.email)}`, undefined, await a.rootToken())).body;
    const id = Number((atA.entry?.[0]?.resource ?? atA[0]).id);
    // Ten browsers at the provider's redirect back, then every callback and the unlink at once.
    const browsers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const browser = new TwoHostBrowser(a, b);
        return { browser, back: await browser.atUpstream(await browser.start('corp'), bea.email, PASSWORD) };
      }),
    );
    const root = await a.rootToken();
    const [unlinked] = await Promise.all([
      new Promise((resolve) => setTimeout(resolve, 15)).then(() => a.json('DELETE', `/users/${id}/identities/corp`, undefined, root)),
      ...browsers.map(({ browser, back }) => browser.callback(back)),
    ]);
    expect(unlinked.status, unlinked.text).to.equal(204);
    for (const { browser } of browsers)
      expect((await browser.atA.get('/auth/signed-in')).text, 'a browser through corp after the unlink').to.not.include(
        'You are signed in as',
      );
  });
});
