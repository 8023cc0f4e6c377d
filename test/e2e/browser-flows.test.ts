// The browser flows in a real headless Chromium: sign-in, consent, the implicit
// flow through the example app, the code flow with PKCE exchanged by
// openid-client, registration, sign-out and throttling.
import { expect } from 'chai';
import * as oauth from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Box, eventually, sleep } from '../support/box.js';
import { launchBrowser, screenshot, startExampleApp, type ExampleApp } from '../support/browser.js';
import { startAll } from '../support/start-all.js';

describe('browser flows (Chromium)', function () {
  this.timeout(60_000);
  let box: Box;
  let app: ExampleApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let root: string;
  const password = 'ann-password-1';

  before(async function () {
    [box, app, browser] = await startAll([Box.start(), startExampleApp(), launchBrowser()]);
    root = await box.rootToken();
    const callback = `${app.url}/callback.html`;
    // The example app's client (examples/browser-app/client.yaml), pointed at this test's app server.
    await box.json(
      'PUT',
      '/Client/example-app',
      {
        grant_types: ['implicit', 'authorization_code'],
        description: 'The example browser app',
        auth: {
          implicit: { redirect_uri: callback, access_token_expiration: 600 },
          authorization_code: { redirect_uris: [`${app.url}/plain-callback`, callback] },
        },
      },
      root,
    );
    const user = await box.json('POST', '/users', { email: 'ann@example.com', password }, root);
    await box.json(
      'PUT',
      '/AccessPolicy/ann-reads-herself',
      {
        engine: 'matcho',
        link: [{ id: String(user.body.id), resourceType: 'User' }],
        matcho: { uri: `/users/${user.body.id}`, 'request-method': 'get' },
      },
      root,
    );
    // The app may read for the people signed in to it (docs/concepts/access-control.md: a person's token
    // acts within what both the person and the client were granted).
    await box.json(
      'PUT',
      '/AccessPolicy/example-app-reads',
      { engine: 'matcho', link: [{ id: 'example-app', resourceType: 'Client' }], matcho: { 'request-method': 'get' } },
      root,
    );
  });
  after(async function () {
    await browser?.close();
    await Promise.all([box?.stop(), app?.stop()]);
  });
  beforeEach(async function () {
    context = await browser.newContext();
    page = await context.newPage();
  });
  afterEach(async function () {
    await context.close();
  });

  async function signInOnPage(email = 'ann@example.com', pass = password): Promise<void> {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(pass);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  it('implicit flow: the example app gets an access and an ID token in the fragment, with its state; shows who signed in; sign-out ends it', async function () {
    await page.goto(`${app.url}/index.html?box=${encodeURIComponent(box.url)}&client_id=example-app`);
    await page.getByRole('button', { name: 'Sign in with the implicit flow' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'sign-in');
    await signInOnPage();
    await page.getByRole('heading', { name: /Allow example-app/ }).waitFor();
    // The example asks for "openid profile email" (make example-app's defaults), each in words and by name.
    expect(await page.getByRole('listitem').allTextContents())
      .to.have.length(3)
      .and.to.include('Your name and profile profile');
    await screenshot(page, 'consent');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByText('Signed in: the app holds an access token and an ID token.').waitFor();
    await screenshot(page, 'example-app-callback');
    await expectShownClaims();
    const stateSent = JSON.parse(await page.evaluate(() => sessionStorage.getItem('example.request') ?? '{}')).state;
    expect(await page.locator('#state').textContent()).to.equal(stateSent);
    expect(await page.locator('#expires').textContent()).to.equal('600 s');
    const token = (await page.locator('#token').textContent())!;

    const me = await box.json('GET', '/users?email=ann@example.com', undefined, root);
    const mine = await box.json('GET', `/users/${me.body[0].id}?access_token=${token}`);
    expect(mine.status).to.equal(200);
    expect((await box.json('GET', '/users', undefined, token)).status).to.equal(403); // only what her policy allows
    const session = (await box.json('GET', `/Session?client=example-app&user=${me.body[0].id}`, undefined, root)).body.entry[0].resource;
    expect(session).to.include({ type: 'implicit', active: true });
    expect(session.user).to.deep.equal({ id: String(me.body[0].id), resourceType: 'User' });
    expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
    expect((await box.json('GET', `/users/${me.body[0].id}?access_token=${token}`)).status).to.equal(401);
  });

  /** The example app's callback page shows the ID token's claims (the person, this client, this sign-in's nonce) and no error. */
  async function expectShownClaims(): Promise<void> {
    const nonceSent = JSON.parse(await page.evaluate(() => sessionStorage.getItem('example.request') ?? '{}')).nonce;
    expect(await page.locator('#claims-row').isVisible()).to.equal(true);
    const claims = JSON.parse((await page.locator('#claims').textContent())!);
    const me = (await box.json('GET', '/users?email=ann@example.com', undefined, root)).body[0];
    // A new box names people by an opaque id, never their row id (OpenID Connect Core §8; test/integration/subjects.test.ts).
    expect(claims.sub)
      .to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      .and.not.equal(String(me.id));
    expect(claims).to.include({ aud: 'example-app', iss: box.url, nonce: nonceSent });
    expect(await page.getByText('Error', { exact: true }).isVisible()).to.equal(false); // no empty "Error" label
    expect(await page.locator('#error-row').isHidden()).to.equal(true);
  }

  it('code flow with PKCE: the example app exchanges the code itself and shows the ID token’s claims', async function () {
    await page.goto(`${app.url}/index.html?box=${encodeURIComponent(box.url)}&client_id=example-app`);
    await page.getByRole('button', { name: 'Sign in with the code flow (PKCE)' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signInOnPage();
    const allow = page.getByRole('button', { name: 'Allow' });
    const done = page.getByText('Signed in: the app holds an access token and an ID token.');
    await Promise.race([allow.waitFor(), done.waitFor()]);
    if (await allow.isVisible()) await allow.click();
    await done.waitFor();
    await expectShownClaims();
    expect(await page.locator('#flow').textContent()).to.equal('code');
  });

  it('the example app shows an error only when there is one', async function () {
    await page.goto(`${app.url}/index.html?box=${encodeURIComponent(box.url)}&client_id=example-app`);
    await page.locator('#scope').fill('openid no-such-scope-here');
    await page.getByRole('button', { name: 'Sign in with the implicit flow' }).click();
    await page
      .getByText('The box refused.')
      .or(page.getByRole('heading', { name: 'Sign in' }))
      .waitFor();
    if (await page.getByRole('heading', { name: 'Sign in' }).isVisible()) {
      // The box asks who signs in before it refuses a scope: deny at consent instead.
      await signInOnPage();
      await page.getByRole('button', { name: 'Deny' }).click();
    }
    await page.getByText('The box refused.').waitFor();
    expect(await page.locator('#error-row').isVisible()).to.equal(true);
    expect(await page.locator('#error').textContent()).to.match(/^(access_denied|invalid_scope): /);
    expect(await page.locator('#claims-row').isHidden()).to.equal(true);
  });

  it('a wrong redirect_uri or an unknown client gets an error page, never a redirect', async function () {
    const bad = `${box.url}/auth/authorize?response_type=token&client_id=example-app&redirect_uri=${encodeURIComponent('https://evil.example/steal')}&state=s`;
    const res = await page.goto(bad);
    expect(res!.status()).to.equal(400);
    expect(page.url()).to.equal(bad);
    // The page names neither the client nor the redirect URI: it must not tell strangers which clients exist.
    expect(await page.getByRole('alert').textContent()).to.match(/a client or a redirect URI that this box does not know/);
    await screenshot(page, 'error-page');
    const unknown = await page.goto(
      `${box.url}/auth/authorize?response_type=token&client_id=nobody&redirect_uri=${encodeURIComponent(`${app.url}/callback.html`)}`,
    );
    expect(unknown!.status()).to.equal(400);
    const unknownText = await page.getByRole('alert').textContent();
    expect(unknownText).to.match(/a client or a redirect URI that this box does not know/);
    expect(unknownText).not.to.include('nobody');
  });

  describe('authorization code with PKCE, exchanged by openid-client', function () {
    let config: oauth.Configuration;
    const redirectUri = (): string => `${app.url}/plain-callback`;

    before(async function () {
      config = await oauth.discovery(new URL(box.url), 'example-app', undefined, oauth.None(), {
        algorithm: 'oauth2',
        execute: [oauth.allowInsecureRequests],
      });
    });

    /** Runs the browser part of the flow; returns the URL the box redirected to, holding the code. */
    async function authorize(verifier: string, state: string): Promise<URL> {
      const url = oauth.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri(),
        scope: 'profile',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      await page.goto(url.href);
      await signInOnPage();
      // Consent is asked the first time only: wait for whichever comes.
      const back = (u: URL): boolean => u.href.startsWith(redirectUri());
      const allow = page.getByRole('button', { name: 'Allow' });
      await Promise.race([page.waitForURL(back).catch(() => undefined), allow.waitFor().catch(() => undefined)]);
      if (!back(new URL(page.url()))) {
        await allow.click();
        await page.waitForURL(back);
      }
      return new URL(page.url());
    }

    it('the library exchanges the code; the token belongs to the user', async function () {
      const verifier = oauth.randomPKCECodeVerifier();
      const state = oauth.randomState();
      const callback = await authorize(verifier, state);
      expect(callback.searchParams.get('state')).to.equal(state);
      const tokens = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
      expect(tokens.access_token).to.be.a('string');
      const info = await box.form(
        '/auth/introspect',
        { token: tokens.access_token },
        { Authorization: `Basic ${Buffer.from(`root:${box.rootSecret}`).toString('base64')}` },
      );
      expect(info.body).to.include({ active: true, client_id: 'example-app', scope: 'profile' });
    });

    it('a reused code is refused, and the tokens it gave are revoked', async function () {
      const verifier = oauth.randomPKCECodeVerifier();
      const state = oauth.randomState();
      const callback = await authorize(verifier, state);
      const first = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
      const me = (await box.json('GET', '/users?email=ann@example.com', undefined, root)).body[0];
      expect((await box.json('GET', `/users/${me.id}`, undefined, first.access_token)).status).to.equal(200);
      try {
        await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
        expect.fail('the second exchange should be refused');
      } catch (err) {
        expect((err as { error?: string }).error).to.equal('invalid_grant');
      }
      expect((await box.json('GET', `/users/${me.id}`, undefined, first.access_token)).status).to.equal(401);
      // And the audit says why the tokens died.
      // The access log stream is flushed at least every 100 ms: wait for the line.
      const closedByReplay = await eventually('the code replay in the audit log', async () => {
        const found = box.logs
          .filter((l) => l.includes('"audit":true'))
          .map((l) => JSON.parse(l) as { event: string; how?: string; by?: { client?: string } })
          .filter((e) => e.event === 'session_closed' && e.how === 'code-replay');
        return found.length > 0 && found;
      });
      expect(closedByReplay.map((e) => e.by)).to.deep.equal([{ client: 'example-app' }]);
    });

    it('a wrong verifier is refused', async function () {
      const state = oauth.randomState();
      const callback = await authorize(oauth.randomPKCECodeVerifier(), state);
      try {
        await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: oauth.randomPKCECodeVerifier(), expectedState: state });
        expect.fail('a wrong verifier should be refused');
      } catch (err) {
        expect((err as { error?: string }).error).to.equal('invalid_grant');
        expect((err as { error_description?: string }).error_description).to.match(/code_verifier/);
      }
    });

    it('an expired code is refused', async function () {
      const shortBox = await Box.start({ env: { BOXAUTH_AUTH_CODE_TTL_SECONDS: '1' } });
      try {
        const t = await shortBox.rootToken();
        await shortBox.json(
          'PUT',
          '/Client/example-app',
          { grant_types: ['authorization_code'], first_party: true, auth: { authorization_code: { redirect_uri: redirectUri() } } },
          t,
        );
        await shortBox.json('POST', '/users', { email: 'ann@example.com', password }, t);
        const shortConfig = await oauth.discovery(new URL(shortBox.url), 'example-app', undefined, oauth.None(), {
          algorithm: 'oauth2',
          execute: [oauth.allowInsecureRequests],
        });
        const verifier = oauth.randomPKCECodeVerifier();
        const state = oauth.randomState();
        await page.goto(
          oauth.buildAuthorizationUrl(shortConfig, {
            redirect_uri: redirectUri(),
            state,
            code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
            code_challenge_method: 'S256',
          }).href,
        );
        const landed = page.waitForURL((u) => u.href.startsWith(redirectUri()));
        await signInOnPage();
        await landed; // first party: no consent page
        await sleep(1500);
        try {
          await oauth.authorizationCodeGrant(shortConfig, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
          expect.fail('an expired code should be refused');
        } catch (err) {
          expect((err as { error_description?: string }).error_description).to.match(/expired/);
        }
      } finally {
        await shortBox.stop();
      }
    });
  });

  it('consent denied: access_denied goes back to the app with the state', async function () {
    await page.goto(`${box.url}/auth/authorize?response_type=token&client_id=example-app&state=deny-me&scope=contacts`);
    await signInOnPage();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('The box refused.').waitFor();
    expect(await page.locator('#error').textContent()).to.match(/^access_denied/);
    expect(await page.locator('#state').textContent()).to.equal('deny-me');
  });

  it('a consent given once is not asked again; a signed-in browser skips sign-in', async function () {
    const url = `${box.url}/auth/authorize?response_type=token&client_id=example-app&redirect_uri=${encodeURIComponent(`${app.url}/callback.html`)}&state=a&scope=calendar`;
    await page.goto(url);
    await signInOnPage();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${app.url}/callback.html`));
    // Same browser, same scope: straight back to the app.
    await page.goto(url.replace('state=a', 'state=b'));
    await page.waitForURL((u) => u.href.startsWith(`${app.url}/callback.html`));
    expect(page.url()).to.include('access_token=');
    expect(page.url()).to.include('state=b');
  });

  it('the signed-in cookie is HttpOnly and SameSite=Lax, and pages refuse framing', async function () {
    const res = await page.goto(`${box.url}/auth/sign-in`);
    expect(res!.headers()['content-security-policy']).to.include("frame-ancestors 'none'");
    await signInOnPage();
    const cookies = await context.cookies(`${box.url}/auth/`);
    const session = cookies.find((c) => c.name === 'boxauth_session')!;
    expect(session).to.include({ httpOnly: true, sameSite: 'Lax', path: '/auth' });
    for (const c of cookies) expect(c.httpOnly, c.name).to.equal(true);
    // Over http the box's cookies are its pages' only: a server on another port of the host (an app) is not sent them.
    const elsewhere = new URL(box.url);
    elsewhere.port = String(Number(elsewhere.port) + 1);
    expect((await context.cookies(`${elsewhere.origin}/`)).map((c) => c.name)).to.deep.equal([]);
  });

  it('a form without its CSRF token is refused', async function () {
    await page.goto(`${box.url}/auth/sign-in`);
    await page.locator('input[name=csrf]').evaluate((el) => {
      (el as HTMLInputElement).value = 'forged';
    });
    await signInOnPage();
    expect(await page.getByRole('heading').textContent()).to.equal('This form has expired');
    const cookies = await context.cookies(`${box.url}/auth/`);
    expect(cookies.map((c) => c.name)).not.to.include('boxauth_session');
  });

  it('sign-out: the next authorize asks to sign in again', async function () {
    const url = `${box.url}/auth/authorize?response_type=token&client_id=example-app&state=x&scope=profile`;
    await page.goto(url);
    await signInOnPage();
    await page.goto(`${box.url}/auth/sign-out`);
    await screenshot(page, 'sign-out');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    await page.goto(url);
    expect(await page.getByRole('heading', { name: 'Sign in' }).isVisible()).to.equal(true);
  });

  it('throttles failed sign-ins per account', async function () {
    await box.json('POST', '/users', { email: 'target@example.com', password: 'target-password' }, root);
    await page.goto(`${box.url}/auth/sign-in`);
    for (let i = 0; i < 5; i++) {
      await signInOnPage('target@example.com', `wrong-${i}-password`);
      expect(await page.getByRole('alert').textContent()).to.equal('The email or the password is wrong.');
    }
    await signInOnPage('target@example.com', 'target-password');
    expect(await page.getByRole('alert').textContent()).to.match(/Too many failed sign-ins/);
    expect((await context.cookies(`${box.url}/auth/`)).map((c) => c.name)).not.to.include('boxauth_session');
  });
});

describe('registration (Chromium)', function () {
  this.timeout(60_000);
  let browser: Browser;

  before(async function () {
    browser = await launchBrowser();
  });
  after(async function () {
    await browser?.close();
  });

  it('on: people sign up from the sign-in page, join the default group, and a taken email is told plainly', async function () {
    const box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_REGISTRATION_GROUP: 'members' } });
    const page = await browser.newPage();
    try {
      const root = await box.rootToken();
      await box.json(
        'PUT',
        '/Client/shop',
        { grant_types: ['implicit'], first_party: true, auth: { implicit: { redirect_uri: `${box.url}/healthz` } } },
        root,
      );
      await box.json('POST', '/users', { email: 'taken@example.com', password: 'taken-password' }, root);
      await page.goto(`${box.url}/auth/authorize?response_type=token&client_id=shop&state=reg`);
      await page.getByRole('link', { name: 'Sign up' }).click();
      await page.getByRole('heading', { name: 'Sign up' }).waitFor();
      await page.getByLabel('Email').fill('Taken@example.com');
      await page.getByLabel('Password').fill('new-password-1');
      await page.getByRole('button', { name: 'Sign up' }).click();
      expect(await page.getByRole('alert').textContent()).to.equal('This email already has an account. Sign in instead.');
      await screenshot(page, 'sign-up-taken');
      await page.getByLabel('Email').fill('new@example.com');
      await page.getByLabel('Password').fill('new-password-1');
      const landed = page.waitForURL((u) => u.href.startsWith(`${box.url}/healthz#`));
      await page.getByRole('button', { name: 'Sign up' }).click();
      await landed;
      expect(page.url()).to.include('access_token=');
      const user = (await box.json('GET', '/users?email=new@example.com', undefined, root)).body[0];
      expect(user.groups.map((g: { name: string }) => g.name)).to.deep.equal(['members']);
    } finally {
      await page.close();
      await box.stop();
    }
  });

  it('off: no sign-up link, and the sign-up page is not there', async function () {
    const box = await Box.start();
    const page = await browser.newPage();
    try {
      await page.goto(`${box.url}/auth/sign-in`);
      expect(await page.getByRole('link', { name: 'Sign up' }).count()).to.equal(0);
      const res = await page.goto(`${box.url}/auth/sign-up`);
      expect(res!.status()).to.equal(404);
      const post = await box.form('/auth/sign-up', { email: 'x@example.com', password: 'a-good-password-1' });
      expect(post.status).to.equal(404);
    } finally {
      await page.close();
      await box.stop();
    }
  });
});
