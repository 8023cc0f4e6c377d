// response_mode=form_post (OAuth 2.0 Form Post Response Mode) as a client and a browser without
// JavaScript (FormAgent) see it: the code posted by a page and exchanged (oauth4webapi), an error
// posted after the consent page and with prompt=none, a pushed request's mode honoured, the modes
// refused; and the attack: a state and a registered redirect URI carrying markup, which the page
// must show as text, never run.
import { expect } from 'chai';
import * as oauth from 'oauth4webapi';
import { Box, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/callback';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';
const insecure = { [oauth.allowInsecureRequests]: true };
const HOSTILE_STATE = `"><script>alert(1)</script><img src=x onerror=alert(2)>'`;

/** The form of a form_post page: where it posts and what, read as a browser would. */
interface PostedForm {
  action: string;
  fields: URLSearchParams;
}

function postedForm(res: JsonResponse): PostedForm {
  expect(res.status, `${res.status} ${res.headers.get('location')} ${res.text.slice(0, 300)}`).to.equal(200);
  expect(res.headers.get('location')).to.equal(null);
  const form = /<form method="post" action="([^"]*)" id="form-post">([\s\S]*?)<\/form>/.exec(res.text);
  expect(form, res.text).to.not.equal(null);
  const action = form![1]!
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
  return { action, fields: new URLSearchParams(hiddenFields(form![2]!)) };
}

describe('response_mode=form_post (OAuth 2.0 Form Post Response Mode)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let as: oauth.AuthorizationServer;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' } });
    root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const code = { authorization_code: { redirect_uri: CALLBACK } };
    for (const [id, client] of Object.entries({
      web: { first_party: true, secret: SECRET, auth: code },
      asks: { secret: SECRET, auth: code, scope: ['openid', 'email'] },
      spa: { first_party: true, grant_types: ['implicit'], auth: { implicit: { redirect_uri: CALLBACK } } },
    })) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], ...client }, root);
      expect(res.status, res.text).to.equal(201);
    }
    const issuer = new URL(box.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  });
  after(async function () {
    await box?.stop();
  });

  /** Registers a confidential code client of `id` coming back to `redirectUri`: the answer of PUT /Client. */
  const registerCodeClient = (id: string, redirectUri: string): Promise<JsonResponse> =>
    box.json(
      'PUT',
      `/Client/${id}`,
      {
        grant_types: ['authorization_code'],
        first_party: true,
        secret: SECRET,
        auth: { authorization_code: { redirect_uri: redirectUri } },
      },
      root,
    );

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  /** A code request of `clientId` with PKCE, its state and verifier. */
  async function codeRequest(clientId: string, extra: Record<string, string> = {}) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const params = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    };
    return { params, state, verifier, path: `/auth/authorize?${new URLSearchParams(params)}` };
  }

  /** The client's side: the posted answer checked (state, iss) and its code exchanged. */
  async function exchange(posted: PostedForm, state: string, verifier: string, clientId = 'web') {
    expect(posted.action).to.equal(CALLBACK);
    const client = { client_id: clientId };
    const params = oauth.validateAuthResponse(as, client, posted.fields, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(SECRET),
      params,
      CALLBACK,
      verifier,
      insecure,
    );
    return oauth.processAuthorizationCodeResponse(as, client, response);
  }

  it('discovery lists the modes, in the OpenID and the RFC 8414 documents', async function () {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const res = await box.request('GET', path);
      expect(res.body.response_modes_supported, path).to.deep.equal(['query', 'fragment', 'form_post']);
    }
  });

  it('a code: a page that posts code, state and iss to the redirect URI, never cached, its one script allowed by its hash; the client exchanges the code', async function () {
    const browser = await signedInBrowser();
    const asked = await codeRequest('web', { response_mode: 'form_post' });
    const page = await browser.get(asked.path);
    const posted = postedForm(page);
    expect([...posted.fields.keys()].sort()).to.deep.equal(['code', 'iss', 'state']);
    expect(posted.fields.get('iss')).to.equal(box.url);
    expect(posted.fields.get('state')).to.equal(asked.state);
    expect(page.headers.get('cache-control')).to.equal('no-store');
    expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).to.match(/(^|; )script-src 'sha256-[A-Za-z0-9+/]{43}='(;|$)/);
    expect(csp).to.not.match(/unsafe-inline|script-src[^;]*'self'/);
    // Without scripts, a button posts the form.
    expect(page.text).to.match(/<noscript>[\s\S]*<button type="submit">Continue<\/button><\/noscript>\s*<\/form>/);
    const tokens = await exchange(posted, asked.state, asked.verifier);
    expect(tokens.access_token).to.be.a('string');
    // The code went out once, in the form: not in a query a log or a Referer header could read.
    expect(page.text).to.not.include(`${CALLBACK}?`);
  });

  it('an error is posted too: a denial on the consent page, and login_required with prompt=none', async function () {
    const browser = await signedInBrowser();
    const asked = await codeRequest('asks', { response_mode: 'form_post', scope: 'openid email', nonce: 'n-1' });
    const consent = await browser.get(asked.path);
    expect(consent.status).to.equal(200);
    expect(hiddenFields(consent.text).response_mode).to.equal('form_post');
    const denied = postedForm(await browser.consent(consent, 'deny'));
    expect(denied.action).to.equal(CALLBACK);
    expect(Object.fromEntries(denied.fields)).to.deep.include({ error: 'access_denied', state: asked.state, iss: box.url });

    const nobody = new FormAgent(box);
    const silent = await codeRequest('web', { response_mode: 'form_post', prompt: 'none' });
    const required = postedForm(await nobody.get(silent.path));
    expect(Object.fromEntries(required.fields)).to.deep.include({ error: 'login_required', state: silent.state, iss: box.url });
  });

  it('through the sign-in page: the mode survives the way back, and the page posts the code', async function () {
    const browser = new FormAgent(box);
    const asked = await codeRequest('web', { response_mode: 'form_post' });
    const signInPage = await browser.get(asked.path);
    expect(signInPage.status).to.equal(200);
    const signedIn = await browser.post('/auth/sign-in', { ...hiddenFields(signInPage.text), email: ANN.email, password: ANN.password });
    expect(signedIn.status).to.equal(303);
    const back = signedIn.headers.get('location')!;
    expect(new URL(back, box.url).searchParams.get('response_mode')).to.equal('form_post');
    const tokens = await exchange(postedForm(await browser.get(back)), asked.state, asked.verifier);
    expect(tokens.access_token).to.be.a('string');
  });

  it('implicit tokens are posted, not put in a fragment', async function () {
    const browser = await signedInBrowser();
    const page = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'token', client_id: 'spa', state: 'imp', response_mode: 'form_post' })}`,
    );
    const posted = postedForm(page);
    expect(posted.action).to.equal(CALLBACK);
    expect(Object.fromEntries(posted.fields)).to.include({ token_type: 'Bearer', state: 'imp', iss: box.url });
    expect(posted.fields.get('access_token')).to.be.a('string');
  });

  it('a pushed request (RFC 9126) carrying response_mode is answered in that mode', async function () {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const pushed = await oauth.pushedAuthorizationRequest(
      as,
      { client_id: 'web' },
      oauth.ClientSecretBasic(SECRET),
      {
        response_type: 'code',
        redirect_uri: CALLBACK,
        state,
        response_mode: 'form_post',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      },
      insecure,
    );
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, { client_id: 'web' }, pushed);
    const browser = await signedInBrowser();
    // A response_mode beside the request_uri is not the pushed request's: the pushed one wins.
    const page = await browser.get(`/auth/authorize?${new URLSearchParams({ client_id: 'web', request_uri, response_mode: 'query' })}`);
    const tokens = await exchange(postedForm(page), state, verifier);
    expect(tokens.access_token).to.be.a('string');
  });

  it('refused: query for a response type that returns tokens (in the fragment), and an unknown mode (in the default mode)', async function () {
    const browser = await signedInBrowser();
    const query = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'token', client_id: 'spa', state: 'q', response_mode: 'query' })}`,
    );
    expect(query.status).to.equal(302);
    const inFragment = new URL(query.headers.get('location')!);
    expect(inFragment.search).to.equal('');
    const fragment = new URLSearchParams(inFragment.hash.slice(1));
    expect(Object.fromEntries(fragment)).to.deep.include({ error: 'invalid_request', state: 'q', iss: box.url });
    expect(fragment.get('access_token')).to.equal(null);

    const asked = await codeRequest('web', { response_mode: 'web_message' });
    const unknown = await browser.get(asked.path);
    expect(unknown.status).to.equal(302);
    const inQuery = new URL(unknown.headers.get('location')!).searchParams;
    expect(Object.fromEntries(inQuery)).to.deep.include({ error: 'invalid_request', state: asked.state, iss: box.url });
    expect(inQuery.get('error_description')).to.match(/response_mode must be one of: query, fragment, form_post/);
    expect(inQuery.get('code')).to.equal(null);
  });

  describe('attack: markup in the state and in a registered redirect URI', function () {
    // Characters a URI may carry that mean something in HTML: quotes, an ampersand, a script's name.
    const ODD_CALLBACK = `https://rp.example/cb?next='x'&a=1&tag=%3Cscript%3E&q=%22%3E`;

    before(async function () {
      const res = await registerCodeClient('odd', ODD_CALLBACK);
      expect(res.status, res.text).to.equal(201);
    });

    /** Every script element of a page, with what it runs. */
    const scriptsOf = (html: string): string[] => [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gi)].map((m) => m[0]);

    it("the page shows them as text: one script, the box's own, and the values given back exactly", async function () {
      const browser = await signedInBrowser();
      const verifier = oauth.generateRandomCodeVerifier();
      const path = `/auth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: 'odd',
        redirect_uri: ODD_CALLBACK,
        state: HOSTILE_STATE,
        response_mode: 'form_post',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })}`;
      const page = await browser.get(path);
      const posted = postedForm(page);
      expect(scriptsOf(page.text)).to.deep.equal(["<script>document.getElementById('form-post').submit();</script>"]);
      expect(page.text).to.not.include('<img');
      // Every quote of a value is escaped, so no value leaves its attribute.
      expect(page.text).to.include('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&#39;"');
      expect(page.text).to.include(`action="https://rp.example/cb?next=&#39;x&#39;&amp;a=1&amp;tag=%3Cscript%3E&amp;q=%22%3E"`);
      // What a browser posts is what the client sent and registered, to the letter.
      expect(posted.action).to.equal(ODD_CALLBACK);
      expect(posted.fields.get('state')).to.equal(HOSTILE_STATE);
    });

    it('a redirect URI with markup that is not a URI is not registered, so no page ever carries it', async function () {
      const res = await registerCodeClient('hostile', 'https://rp.example/cb"><script>alert(1)</script>');
      expect(res.status, res.text).to.equal(422);
    });

    it('a redirect URI that is no web address gets no form (its action would be run, not posted to)', async function () {
      const put = await registerCodeClient('native', 'javascript:alert(document.domain)//');
      // The Client schema takes any URI (format: uri), so the request must be what refuses it.
      expect(put.status, put.text).to.equal(201);
      const browser = await signedInBrowser();
      const res = await browser.get(
        `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'native', response_mode: 'form_post', state: 's' })}`,
      );
      expect(res.text).to.not.include('<form method="post" action="javascript:');
      expect(scriptsOf(res.text)).to.deep.equal([]);
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.match(
        /[?&]error=invalid_request&error_description=response_mode%3Dform_post\+needs\+an\+http/,
      );
    });
  });
});
