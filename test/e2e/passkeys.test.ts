// Passkeys in a real Chromium, with the DevTools WebAuthn virtual authenticator (a platform
// authenticator: ctap2, internal, resident keys, user verification): a person signs in with a
// password, adds a passkey on /auth/account/passkeys, signs out, and signs in with the passkey alone
// (the button, and the email field's autofill), and as the second factor after a password.
// What the sign-in proved is read from the ID token a client gets. A Hook that refuses a passkey's
// sign-in (signingIn, docs/guides/hooks.md): its words on the button's line, as text.
//
// WebAuthn wants a domain for the relying party id (not an address) and a secure context: the
// box is https://localhost:<port> with a certificate of the test's CA, which Chromium is told
// to accept (--ignore-certificate-errors).
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { randomBytes } from 'node:crypto';
import { Box } from '../support/box.js';
import { HookServer } from '../support/hook-servers.js';
import { addVirtualAuthenticator, CHROMIUM, screenshot, withoutPasskeyAutofill, type VirtualAuthenticator } from '../support/browser.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { testCa, type TestCa } from '../support/tls.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };

describe('passkeys in Chromium (virtual authenticator)', function () {
  this.timeout(60_000);
  let box: Box;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let authenticator: VirtualAuthenticator;
  let client: http.Server;
  let rp: CodeClient;
  let ca: TestCa;

  before(async function () {
    ca = testCa();
    // The client's callback: a page, so that the browser has somewhere to land.
    client = http.createServer((_req, res) => res.end('the client'));
    await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
    const clientPort = (client.address() as AddressInfo).port;
    [box, browser] = await Promise.all([
      Box.start({
        hostname: 'localhost',
        tls: { ...ca.issue('box'), dispatcher: ca.dispatcher },
        env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' },
      }),
      chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--ignore-certificate-errors', '--disable-dev-shm-usage'],
      }),
    ]);
    origin = box.url;
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    rp = await codeClient(box, root, `http://127.0.0.1:${clientPort}/callback`);
    // One browser, one authenticator, for the whole story: the passkey made is the one used after.
    context = await browser.newContext({ ignoreHTTPSErrors: true });
    page = await context.newPage();
    authenticator = await addVirtualAuthenticator(context, page);
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
    await new Promise((resolve) => client?.close(resolve));
  });

  const authorizeUrl = (): string => `${origin}${rp.authorizePath()}`;

  /** The ID token's claims for the code `signIn` brings the browser to the client's callback with. */
  async function idToken(signIn: () => Promise<unknown>): Promise<Record<string, unknown>> {
    const callback = page.waitForRequest((req) => req.url().includes('/callback?'));
    await signIn();
    const code = new URL((await callback).url()).searchParams.get('code')!;
    // The browser's navigation to the callback ends before the test moves it elsewhere (a goto meanwhile is "interrupted").
    await page.waitForURL(/\/callback\?/);
    return rp.claimsOf(code);
  }

  async function signOut(): Promise<void> {
    await page.goto(`${origin}/auth/sign-out`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
  }

  it('a person signed in with a password adds a passkey on their passkeys page', async function () {
    await page.goto(`${origin}/auth/sign-in?return_to=${encodeURIComponent('/auth/account/passkeys')}`);
    expect(await page.locator('#email').getAttribute('autocomplete')).to.equal('username webauthn');
    await page.locator('#email').fill(ANN.email);
    await page.locator('#password').fill(ANN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
    await page.getByLabel('Name of the new passkey').fill('Laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('cell', { name: 'Laptop', exact: true }).waitFor();
    await screenshot(page, 'passkeys-page');
    const credentials = await authenticator.credentials();
    expect(credentials).to.have.length(1);
    expect(credentials[0]!.isResidentCredential).to.equal(true);
    expect(credentials[0]!.rpId).to.equal('localhost');
    await signOut();
  });

  it('signs in with the passkey the browser offers in the email field (autofill: conditional mediation)', async function () {
    // The virtual authenticator answers the page's conditional request as soon as it is made, where a
    // person picks the passkey from the email field's list: no button is clicked.
    const claims = await idToken(() => page.goto(authorizeUrl()));
    expect(claims.acr).to.equal('phr');
    expect(claims.amr).to.deep.equal(['hwk', 'user', 'mfa']);
    await signOut();
  });

  it('signs in with the passkey alone, by the button: amr hwk, user, mfa; acr phr', async function () {
    // From here on the browser offers no autofill (it would answer before the button is clicked).
    await withoutPasskeyAutofill(context);
    await page.goto(authorizeUrl());
    const claims = await idToken(() => page.getByRole('button', { name: 'Sign in with a passkey' }).click());
    expect(claims.amr).to.deep.equal(['hwk', 'user', 'mfa']);
    expect(claims.acr).to.equal('phr');
    await signOut();
  });

  it('after a password, the passkey is the second factor: amr pwd, hwk, user, mfa; acr phr', async function () {
    await page.goto(authorizeUrl());
    await page.locator('#email').fill(ANN.email);
    await page.locator('#password').fill(ANN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/auth\/sign-in\/second-factor\?/);
    const claims = await idToken(() => page.getByRole('button', { name: 'Use a passkey' }).click());
    expect(claims.amr).to.deep.equal(['pwd', 'hwk', 'user', 'mfa']);
    expect(claims.acr).to.equal('phr');
  });

  it("a hook that refuses the sign-in: the button's line says the hook's words, as text, and nobody is signed in", async function () {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const hook = await HookServer.start('python', secret, ca);
    const root = await box.rootToken();
    try {
      const body = { moments: ['signingIn'], url: `${hook.url}/refuse-markup`, caBundle: Buffer.from(ca.pem).toString('base64'), secret };
      expect((await box.json('PUT', '/Hook/risk', body, root)).status).to.equal(201);
      await signOut();
      await page.goto(authorizeUrl());
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      const line = page.locator('#passkey-error');
      await line.getByText('A check your organisation runs refused this').waitFor();
      expect(await line.textContent()).to.equal(
        'A check your organisation runs refused this. It says: “<img src=x onerror=alert(1)> "no licence" — über”',
      );
      expect(await page.locator('#passkey-error img').count(), 'no markup of the hook').to.equal(0);
      await screenshot(page, 'sign-in-passkey-hook-refused');
      expect((await page.request.get(`${origin}/auth/account`, { maxRedirects: 0 })).status()).to.equal(303);
    } finally {
      await box.json('DELETE', '/Hook/risk', undefined, root);
      await hook.kill();
    }
  });
});
