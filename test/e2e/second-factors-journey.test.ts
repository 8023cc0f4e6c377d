// One person's whole story with second factors, in a real Chromium, at an app behind Debian's
// NGINX whose policies send people to the box to sign in (docs/guides/second-factors.md,
// docs/guides/passkeys.md): Ann signs in with her password; /admin wants a passkey, so her
// password-only sign-in is sent through step-up, where she adds her first passkey; she sets up an
// authenticator app on her account page, signs in with the app's code (and is stepped up again at
// /admin) and with the passkey alone, loses her phone, gets back in with a recovery code and sets
// up the new phone. Each step is read from what the app behind the gateway received.
//
// The authenticator app is test/support/totp.ts (a second TOTP implementation, reading the key the
// enrolment page shows); the passkey is held by the DevTools WebAuthn virtual authenticator. The box
// is http://localhost:<port> (a secure context for WebAuthn, rpID "localhost"); the app is
// http://127.0.0.1:<port>, another origin, as in a cluster. The screenshots of the guides come
// from here, named as docs/screenshots/ names them (test-artifacts/totp-enrol.png, …).
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import {
  addVirtualAuthenticator,
  launchBrowser,
  screenshot,
  withoutPasskeyAutofill,
  type VirtualAuthenticator,
} from '../support/browser.js';
import { onFreePorts } from '../support/ports.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { startGateway, startUpstream, type Gateway, type Received, type Upstream } from './gateways/launch.js';
import { startAll } from '../support/start-all.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const APP = 'wiki';

describe('second factors, one person in Chromium, an app behind NGINX', function () {
  this.timeout(60_000);
  let box: Box;
  let upstream: Upstream;
  let gateway: Gateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let authenticator: VirtualAuthenticator;
  let boxOrigin: string;
  /** The key of Ann's authenticator app, as she typed it from the enrolment page. */
  let appKey: Buffer;
  let recoveryCodes: string[] = [];
  /** The last time step whose code Ann's app gave (a code is accepted once: the next one is a later step). */
  let lastStep = 0;

  before(async function () {
    [box, upstream, browser] = await startAll([Box.start({ hostname: 'localhost' }), startUpstream(), launchBrowser()]);
    boxOrigin = box.url;
    const root = await box.rootToken();
    const staff = (await box.json('POST', '/groups', { name: 'staff' }, root)).body.id;
    expect((await box.json('POST', '/users', { ...ANN, 'group-ids': [staff] }, root)).status).to.equal(201);

    // The app's URL names the gateway's port: both again on a new one when another process took it first.
    gateway = await onFreePorts(1, async ([port]) => {
      const url = `http://127.0.0.1:${port}`;
      await box.addClient(
        `${APP}-sso`,
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: `${url}/.boxauth/callback` } },
        },
        { policy: false },
      );
      const put = async (path: string, body: Record<string, unknown>): Promise<void> => {
        const res = await box.json('PUT', path, body, root);
        expect(res.status, res.text).to.be.lessThan(300);
      };
      await put(`/App/${APP}`, { urls: [url], audience: 'https://wiki.example', signIn: { client: `${APP}-sso` } });
      const staffOnly = [{ id: 'staff', resourceType: 'Group' }];
      // Staff read /docs with any sign-in; /admin wants a passkey (acr phr); /health is open to all.
      await put(`/AccessPolicy/${APP}-docs`, { app: APP, engine: 'matcho', link: staffOnly, matcho: { path: '#^/docs' } });
      await put(`/AccessPolicy/${APP}-admin`, { app: APP, engine: 'matcho', link: staffOnly, matcho: { path: '#^/admin' }, acr: 'phr' });
      await put(`/AccessPolicy/${APP}-health`, { app: APP, engine: 'matcho', matcho: { path: '/health' } });
      return startGateway('nginx', {
        app: APP,
        port: port,
        box: `127.0.0.1:${box.port}`,
        upstream: upstream.address,
        readyPath: '/health',
      });
    });

    // One browser and one authenticator for the whole story: the passkey made is the one used after.
    context = await browser.newContext();
    page = await context.newPage();
    authenticator = await addVirtualAuthenticator(context, page);
  });
  after(async function () {
    await gateway?.stop();
    await Promise.all([browser?.close(), upstream?.stop(), box?.stop()]);
  });

  /** What the app behind NGINX received for the page the browser shows now. */
  async function appPage(path: string): Promise<Received> {
    await page.waitForURL(`${gateway.url}${path}`);
    return JSON.parse((await page.locator('body').textContent()) ?? '') as Received;
  }

  /** The next code of Ann's authenticator app: the current time step's, or a later one than any given before. */
  function nextCode(): string {
    lastStep = Math.max(stepAt(Date.now()), lastStep + 1);
    return totpCode(appKey, lastStep);
  }

  /** Another day: the browser has forgotten every cookie (the box's sign-in and the app's). */
  const anotherDay = (): Promise<void> => context.clearCookies();

  async function typePassword(): Promise<void> {
    await page.getByLabel('Email').fill(ANN.email);
    await page.getByLabel('Password').fill(ANN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  /** The authenticator app's enrolment page: the key read from it, the code it makes confirmed; then the ten recovery codes. */
  async function setUpAuthenticatorApp(shots: boolean): Promise<void> {
    await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
    expect(await page.getByRole('img', { name: 'QR code of the key below' }).locator('svg').count()).to.equal(1);
    if (shots) await screenshot(page, 'totp-enrol');
    appKey = base32Decode(((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, ''));
    lastStep = 0;
    await page.getByLabel('The code the app shows now').fill(nextCode());
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('heading', { name: 'Keep these recovery codes' }).waitFor();
    if (shots) await screenshot(page, 'recovery-codes');
    recoveryCodes = await page.locator('#recovery-codes code').allTextContents();
    expect(recoveryCodes).to.have.length(10);
    expect(new Set(recoveryCodes).size).to.equal(10);
  }

  it('signs in at the app with her password; /admin wants a passkey: step-up, where she adds her first one', async function () {
    await page.goto(`${gateway.url}/docs/start`);
    expect(new URL(page.url()).origin).to.equal(boxOrigin);
    await screenshot(page, 'sign-in-passkey');
    await typePassword();
    expect((await appPage('/docs/start')).headers['x-auth-request-email']).to.equal(ANN.email);

    // Her password-only sign-in is not let in: at the box, asked for a passkey; she has none, so she adds one.
    const before = upstream.received.length;
    await page.goto(`${gateway.url}/admin/users`);
    await page.getByRole('heading', { name: 'Add a passkey' }).waitFor();
    expect(new URL(page.url()).origin).to.equal(boxOrigin);
    expect(upstream.received.slice(before).map((r) => r.url)).to.deep.equal([]);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    expect((await appPage('/admin/users')).headers['x-auth-request-email']).to.equal(ANN.email);
    expect(await authenticator.credentials()).to.have.length(1);
    // From here on the browser offers no autofill (the virtual authenticator would answer the sign-in
    // page's conditional request at once, before a password is typed); the button signs in instead.
    await withoutPasskeyAutofill(context);
  });

  it('her passkeys page lists it; she sets up an authenticator app on her account page', async function () {
    await page.goto(`${boxOrigin}/auth/account/passkeys`);
    await page.getByRole('cell', { name: 'Passkey 1', exact: true }).waitFor();
    await screenshot(page, 'passkeys');

    await page.goto(`${boxOrigin}/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await setUpAuthenticatorApp(true);
    await page.getByRole('link', { name: 'Continue' }).click();
    await page.locator('#factors tbody tr').nth(1).waitFor();
    expect(await page.locator('#codes-left').textContent()).to.equal('10 of 10 recovery codes left.');
  });

  it('another day: password and the code of her authenticator app; /admin still asks for the passkey', async function () {
    await anotherDay();
    await page.goto(`${gateway.url}/docs/today`);
    await typePassword();
    await page.getByRole('heading', { name: 'One more step' }).waitFor();
    await screenshot(page, 'second-factor');
    await page.getByLabel('Code from your authenticator app').fill(nextCode());
    await page.getByRole('button', { name: 'Continue' }).click();
    expect((await appPage('/docs/today')).headers['x-auth-request-email']).to.equal(ANN.email);

    // A code from an app is a second factor, not a passkey: /admin is one more step away.
    const before = upstream.received.length;
    await page.goto(`${gateway.url}/admin/users`);
    await page.getByRole('heading', { name: 'One more step' }).waitFor();
    expect(await page.getByLabel('Code from your authenticator app').count()).to.equal(0);
    await screenshot(page, 'step-up');
    expect(upstream.received.slice(before).map((r) => r.url)).to.deep.equal([]);
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    expect((await appPage('/admin/users')).headers['x-auth-request-email']).to.equal(ANN.email);
  });

  it('another day: the passkey alone, and /admin lets her in without asking again', async function () {
    await anotherDay();
    await page.goto(`${gateway.url}/docs/today`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    expect((await appPage('/docs/today')).headers['x-auth-request-email']).to.equal(ANN.email);
    await page.goto(`${gateway.url}/admin/users`);
    expect((await appPage('/admin/users')).headers['x-auth-request-email']).to.equal(ANN.email);
  });

  it('loses her phone: a recovery code gets her back in, she sets up the new phone, the lost factors are gone', async function () {
    await anotherDay();
    const lostKey = appKey;
    await page.goto(`${gateway.url}/docs/lost-phone`);
    await typePassword();
    await page.getByRole('heading', { name: 'One more step' }).waitFor();
    await page.getByText('Lost your phone?').click();
    await page.getByLabel('Recovery code').fill(recoveryCodes[3]!);
    await page.getByRole('button', { name: 'Continue' }).last().click();
    // The code is no factor to sign in with: she sets up a new one before the app gets a token.
    await setUpAuthenticatorApp(false);
    expect(appKey.equals(lostKey)).to.equal(false);
    await page.getByRole('button', { name: 'Continue' }).click();
    expect((await appPage('/docs/lost-phone')).headers['x-auth-request-email']).to.equal(ANN.email);

    // The recovery code made the old phone and the old passkey worthless: only the new app is left.
    await page.goto(`${boxOrigin}/auth/account`);
    const kinds = await page.locator('#factors tbody tr td:nth-child(2)').allTextContents();
    expect(kinds).to.deep.equal(['Authenticator app']);
    expect(await page.locator('#codes-left').textContent()).to.equal('10 of 10 recovery codes left.');
  });

  it('the passkey left on the lost laptop signs no one in', async function () {
    await anotherDay();
    await page.goto(`${gateway.url}/docs/today`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.locator('#passkey-error').waitFor({ state: 'visible' });
    expect(new URL(page.url()).origin).to.equal(boxOrigin);
    // Nor does the app let her in: it sends her to sign in.
    await page.goto(`${gateway.url}/docs/today`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    expect(new URL(page.url()).origin).to.equal(boxOrigin);
  });
});
