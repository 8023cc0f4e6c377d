// The headers of every page the box shows a person: sign-in, sign-up, sign-out,
// consent, the authorization endpoint's errors, RP-initiated logout, the device
// pages, error pages, an app's sign-out page and the gate's refusal, the admin UI.
// Each names its scripts outright (script-src): none at all, but for the admin
// UI's own file and the passkeys script of the pages offering a passkey (the
// sign-in page, the passkeys page); and each page is checked to run no other, inline or not.
import { expect } from 'chai';
import { Box, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const CALLBACK = 'https://rp.example/callback';

/** The directives of a Content-Security-Policy, by name. */
function directives(csp: string | null): Record<string, string> {
  expect(csp, 'a Content-Security-Policy header').to.be.a('string');
  return Object.fromEntries(
    csp!
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name!, values.join(' ')]),
  );
}

describe('the headers of every page', function () {
  this.timeout(60_000);
  let box: Box;
  let tvSecret: string;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true' } });
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const code = { authorization_code: { redirect_uri: CALLBACK } };
    await box.addClient('asks', { grant_types: ['authorization_code'], scope: ['email'], auth: code }, { policy: false });
    ({ secret: tvSecret } = await box.addClient(
      'tv',
      { grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] },
      { policy: false },
    ));
    await box.addClient(
      'wiki-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${box.url}/.boxauth/callback` } },
      },
      { policy: false },
    );
    // An app on the box's own host, so that its sign-out page is reached here; another without sign-in.
    expect(
      (await box.json('PUT', '/App/wiki', { urls: [box.url], audience: 'https://wiki.example', signIn: { client: 'wiki-sso' } }, root))
        .status,
    ).to.equal(201);
    expect((await box.json('PUT', '/App/other', { urls: ['https://other.example'] }, root)).status).to.equal(201);
  });
  after(async function () {
    await box?.stop();
  });

  /** A page of the box: HTML, no script of any kind but the box's own `script` file, and a policy that allows no other. */
  function expectPage(name: string, res: JsonResponse, script?: 'admin' | 'passkeys'): void {
    expect(res.headers.get('content-type'), name).to.match(/^text\/html/);
    const csp = directives(res.headers.get('content-security-policy'));
    const scripts = script ? "'self'" : "'none'";
    expect(csp, name).to.include({ 'default-src': "'none'", 'script-src': scripts, 'frame-ancestors': "'none'", 'base-uri': "'none'" });
    if (!script) expect(res.text, name).not.to.match(/<script|\son[a-z]+\s*=|javascript:/i);
    else {
      expect(res.text, name).not.to.match(/\son[a-z]+\s*=|javascript:/i);
      expect(
        [...res.text.matchAll(/<script[^>]*>/gi)].map((m) => m[0]),
        name,
      ).to.deep.equal([`<script type="module" src="/assets/${script}.js">`]);
    }
  }

  it('the pages of signing in, up and out, and the box home page', async function () {
    const browser = new FormAgent(box);
    expectPage('home', await box.request('GET', '/', { headers: { Accept: BROWSER } }));
    expectPage('sign-in', await browser.get('/auth/sign-in'), 'passkeys');
    expectPage('sign-up', await browser.get('/auth/sign-up'));
    expectPage('a form from elsewhere', await browser.post('/auth/sign-in', { email: ANN.email, password: ANN.password }));
    const wrong = await browser.post('/auth/sign-in', {
      ...hiddenFields((await browser.get('/auth/sign-in')).text),
      ...ANN,
      password: 'wrong',
    });
    expectPage('a wrong password', wrong, 'passkeys');
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    expectPage('signed in', await browser.get('/auth/signed-in'));
    expectPage('passkeys', await browser.get('/auth/account/passkeys'), 'passkeys');
    const signOut = await browser.get('/auth/sign-out');
    expectPage('sign-out', signOut);
    expectPage('signed out', await browser.post('/auth/sign-out', hiddenFields(signOut.text)));
  });

  it('the authorization endpoint: sign-in, consent, its error pages', async function () {
    const request = new URLSearchParams({ response_type: 'code', client_id: 'asks', redirect_uri: CALLBACK, scope: 'email' });
    const browser = new FormAgent(box);
    expectPage('authorize: sign-in', await browser.get(`/auth/authorize?${request}`), 'passkeys');
    expectPage('authorize: unknown client', await browser.get('/auth/authorize?response_type=code&client_id=nobody'));
    expectPage(
      'authorize: unknown request_uri',
      await browser.get('/auth/authorize?client_id=asks&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Anone'),
    );
    await browser.signIn(ANN.email, ANN.password);
    expectPage('consent', await browser.get(`/auth/authorize?${request}`));
  });

  it('RP-initiated logout', async function () {
    const browser = new FormAgent(box);
    await browser.signIn(ANN.email, ANN.password);
    const ask = await browser.get('/auth/logout');
    expectPage('logout: asked', ask);
    expectPage('logout: done', await browser.post('/auth/logout', hiddenFields(ask.text)));
    expectPage('logout: a bad request', await browser.get('/auth/logout?post_logout_redirect_uri=https%3A%2F%2Fevil.example'));
  });

  it('the device pages', async function () {
    const device = await box.form('/auth/device', { client_id: 'tv', client_secret: tvSecret });
    expect(device.status, device.text).to.equal(200);
    const browser = new FormAgent(box);
    await browser.signIn(ANN.email, ANN.password);
    expectPage('device: the code', await browser.get('/auth/device/verify'));
    expectPage('device: a wrong code', await browser.get('/auth/device/verify?user_code=BCDF-GHJK'));
    const consent = await browser.get(`/auth/device/verify?user_code=${encodeURIComponent(device.body.user_code as string)}`);
    expectPage('device: consent', consent);
    expectPage('device: connected', await browser.post('/auth/device/verify', { ...hiddenFields(consent.text), decision: 'allow' }));
  });

  it("error pages, an app's sign-out page and the gate's refusal", async function () {
    const notFound = await box.request('GET', '/nowhere', {
      headers: { Accept: BROWSER, Authorization: `Bearer ${await box.rootToken()}` },
    });
    expect(notFound.status).to.equal(404);
    expectPage('404', notFound);
    expectPage('401', await box.request('GET', '/users', { headers: { Accept: BROWSER } }));
    expectPage('app sign-out', await box.request('GET', '/.boxauth/sign-out', { headers: { Accept: BROWSER } }));
    const refused = await box.request('GET', '/authz/forward-auth/other', {
      headers: {
        Accept: BROWSER,
        'X-Forwarded-Method': 'GET',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'other.example',
        'X-Forwarded-Uri': '/',
      },
    });
    expect(refused.status).to.equal(401);
    expectPage('gate refusal', refused);
  });

  it("the admin UI: its own script only, and the API's origin to call", async function () {
    for (const path of ['/admin', '/admin/callback']) {
      const res = await box.request('GET', path, { headers: { Accept: BROWSER } });
      expectPage(path, res, 'admin');
      expect(directives(res.headers.get('content-security-policy'))).to.include({
        'connect-src': `'self' ${new URL(box.url).origin}`,
        'form-action': "'self'",
      });
    }
  });
});
