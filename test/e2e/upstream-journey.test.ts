// People from where they already are, in a real Chromium (docs/guides/upstream-providers.md):
// box B is the upstream OpenID Provider of box A, real on both sides (test/support/upstream.ts).
// Pat, a person of B only, signs in to A's wiki through B and the wiki gets A's groups; Dana, a
// person of both with an authenticator app at each, links B from her account page at A, is
// still asked A's code after B's while A does not trust B's second factors, is not asked once it
// does, and unlinks B. A is http://127.0.0.1:<port>, B http://localhost:<port>: two hosts, whose
// cookies the browser keeps apart. The screenshots of the guide come from here
// (test-artifacts/upstream-*.png).
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { connectUpstream } from '../support/upstream.js';

const PAT = { email: 'pat@corp.example', password: 'pat-password-1' };
const DANA = { email: 'dana@corp.example', password: 'dana-password-1' };

/** The days of the story: both boxes' clocks move on together (ID tokens from B stay fresh at A), an hour a day. */
const DAY_SECONDS = 3600;
let days = 0;
const storyNow = (): number => Date.now() + days * DAY_SECONDS * 1000;

/** An authenticator app holding one key: each code it gives is for a later time step than the one before (a code is accepted once). */
class AuthenticatorApp {
  private lastStep = 0;
  constructor(private readonly key: Buffer) {}
  code(): string {
    this.lastStep = Math.max(stepAt(storyNow()), this.lastStep + 1);
    return totpCode(this.key, this.lastStep);
  }
}

/** Sets up an authenticator app on `box`'s account page for a person who signs in with a password alone (the set-up, not the story). */
async function enrolTotp(box: Box, email: string, password: string): Promise<AuthenticatorApp> {
  const browser = new FormAgent(box);
  expect((await browser.signIn(email, password, '/auth/account')).status).to.equal(303);
  const setup = await browser.post('/auth/account/totp', hiddenFields((await browser.get('/auth/account')).text));
  expect(setup.status, setup.text).to.equal(200);
  const app = new AuthenticatorApp(base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!));
  const done = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code: app.code() });
  expect(done.status, done.text).to.equal(200);
  return app;
}

describe('signing in through an upstream box, in Chromium', function () {
  this.timeout(60_000);
  let a: Box;
  let b: Box;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let danaAtA: AuthenticatorApp;
  let danaAtB: AuthenticatorApp;
  /** The wiki's server: its callback answers, and the test reads the code off the browser's address. */
  let wikiServer: http.Server;
  let wikiCallback: string;
  let wiki: CodeClient;

  before(async function () {
    wikiServer = http.createServer((_req, res) => res.end('the wiki'));
    await new Promise<void>((resolve) => wikiServer.listen(0, '127.0.0.1', resolve));
    wikiCallback = `http://127.0.0.1:${(wikiServer.address() as AddressInfo).port}/callback`;
    [a, b, browser] = await Promise.all([
      Box.start({ movableClock: true }),
      Box.start({ hostname: 'localhost', movableClock: true }),
      launchBrowser(),
    ]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', groups: [{ group: 'engineers', upstream: 'eng' }] });
    wiki = await codeClient(a, await a.rootToken(), wikiCallback, 'wiki', 'openid email groups');
    const rootB = await b.rootToken();
    const eng = (await b.json('POST', '/groups', { name: 'eng' }, rootB)).body.id;
    const lunch = (await b.json('POST', '/groups', { name: 'lunch-club' }, rootB)).body.id;
    for (const person of [PAT, DANA]) {
      const res = await b.json('POST', '/users', { ...person, email_verified: true, 'group-ids': [eng, lunch] }, rootB);
      expect(res.status, res.text).to.equal(201);
    }
    const res = await a.json('POST', '/users', DANA, await a.rootToken());
    expect(res.status, res.text).to.equal(201);
    [danaAtA, danaAtB] = await Promise.all([enrolTotp(a, DANA.email, DANA.password), enrolTotp(b, DANA.email, DANA.password)]);
    context = await browser.newContext();
    page = await context.newPage();
  });
  after(async function () {
    await Promise.all([browser?.close(), a?.stop(), b?.stop()]);
    wikiServer?.close();
  });

  /** Another day: a code of each app is one of a new time step, and the browser has forgotten every cookie, A's and B's. */
  async function anotherDay(): Promise<void> {
    days += 1;
    a.advanceClock(DAY_SECONDS);
    b.advanceClock(DAY_SECONDS);
    await context.clearCookies();
  }

  /** The wiki sends the browser to A's /auth/authorize; the claims of the ID token its server gets for the code. */
  async function wikiSignIn(steps: () => Promise<void>): Promise<Record<string, any>> {
    await page.goto(`${a.url}${wiki.authorizePath()}`);
    await steps();
    await page.waitForURL((url) => url.href.startsWith(wikiCallback));
    return wiki.claimsOf(new URL(page.url()).searchParams.get('code')!);
  }

  /** On B's pages: the password, and the code of the app when B asks for it. */
  async function signInAtB(person: { email: string; password: string }, app?: AuthenticatorApp): Promise<void> {
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    expect(new URL(page.url()).origin).to.equal(b.url);
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    if (!app) return void (await page.waitForURL((url) => url.origin !== b.url));
    await page.getByRole('heading', { name: 'One more step' }).waitFor();
    expect(new URL(page.url()).origin).to.equal(b.url);
    await page.getByLabel('Code from your authenticator app').fill(app.code());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((url) => url.origin !== b.url);
  }

  async function pressCorp(): Promise<void> {
    expect(new URL(page.url()).origin).to.equal(a.url);
    await page.getByRole('button', { name: 'Sign in with Corp' }).click();
  }

  it("Pat, a person of B, signs in to A's wiki through B: made at A, with the groups A maps and only those", async function () {
    const claims = await wikiSignIn(async () => {
      await page.getByRole('button', { name: 'Sign in with Corp' }).waitFor();
      await screenshot(page, 'upstream-sign-in');
      await pressCorp();
      await signInAtB(PAT);
    });
    expect(claims.email).to.equal(PAT.email);
    expect(claims.groups).to.deep.equal(['engineers']);
    // Signed in at A now: the wiki's next sign-in asks nothing.
    expect((await wikiSignIn(async () => undefined)).sub).to.equal(claims.sub);
  });

  it('Dana, a person of A, links B from her account page (her code at A, then her password and code at B)', async function () {
    await anotherDay();
    await page.goto(`${a.url}/auth/sign-in?return_to=${encodeURIComponent('/auth/account')}`);
    await page.getByLabel('Email').fill(DANA.email);
    await page.getByLabel('Password').fill(DANA.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByLabel('Code from your authenticator app').fill(danaAtA.code());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(await page.locator('#linked-providers li').textContent()).to.include('Corp: not linked');
    await page.getByRole('button', { name: 'Link' }).click();
    await signInAtB(DANA, danaAtB);
    await page.waitForURL(`${a.url}/auth/account?changed=provider-linked`);
    const linked = page.locator('#linked-providers li');
    expect(await linked.textContent()).to.include(`Corp: linked (${DANA.email})`);
    await page.locator('#linked-providers').scrollIntoViewIfNeeded();
    await screenshot(page, 'upstream-account');
  });

  it('another day, through B: A asks for her own code after B, while A does not trust B with second factors', async function () {
    await anotherDay();
    const claims = await wikiSignIn(async () => {
      await pressCorp();
      await signInAtB(DANA, danaAtB);
      // B asked for its code, and says so in its amr: A asks for its own all the same.
      await page.getByRole('heading', { name: 'One more step' }).waitFor();
      expect(new URL(page.url()).origin).to.equal(a.url);
      await screenshot(page, 'upstream-second-factor');
      await page.getByLabel('Code from your authenticator app').fill(danaAtA.code());
      await page.getByRole('button', { name: 'Continue' }).click();
    });
    expect(claims.email).to.equal(DANA.email);
    expect(claims.groups).to.deep.equal(['engineers']);
  });

  it("once A trusts B's second factors: B's code is enough, and the wiki's ID token says mfa", async function () {
    const res = await a.json('GET', '/IdentityProvider/corp', undefined, await a.rootToken());
    const put = await a.json('PUT', '/IdentityProvider/corp', { ...res.body, linking: { trustMFA: true } }, await a.rootToken());
    expect(put.status, put.text).to.equal(200);
    await anotherDay();
    const claims = await wikiSignIn(async () => {
      await pressCorp();
      await signInAtB(DANA, danaAtB);
    });
    expect(claims.email).to.equal(DANA.email);
    expect(claims.amr).to.include('mfa');
    // Pat gave B no second factor: his sign-in through B is one factor, trusted or not.
    await anotherDay();
    const pat = await wikiSignIn(async () => {
      await pressCorp();
      await signInAtB(PAT);
    });
    expect(pat.amr).to.not.include('mfa');
  });

  it('Dana unlinks B on her account page: B signs her in no more', async function () {
    await anotherDay();
    await page.goto(`${a.url}/auth/sign-in?return_to=${encodeURIComponent('/auth/account')}`);
    await pressCorp();
    await signInAtB(DANA, danaAtB);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByRole('button', { name: 'Unlink' }).click();
    await page.waitForURL(`${a.url}/auth/account?changed=provider-unlinked`);
    expect(await page.locator('#linked-providers li').textContent()).to.include('Corp: not linked');

    await anotherDay();
    await page.goto(`${a.url}/auth/sign-in`);
    await pressCorp();
    await signInAtB(DANA, danaAtB);
    await page.getByText('Sign in the way you usually do').waitFor();
    expect(new URL(page.url()).origin).to.equal(a.url);
  });
});
