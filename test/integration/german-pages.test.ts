// A German browser through the box's pages beyond the sign-in (issue 85): the consent page, the
// device pages, the page that posts an answer back (form_post), the pages of sign-ins through an
// identity provider, the problems of an authorization request and the error pages. Each is in
// German with no sentence from outside the catalogue (test/support/page-words.ts); what a third
// party chose (a client's description, a provider's name) and the API's own reason are values.
import { expect } from 'chai';
import { LANGUAGES, type MessageKey } from '../../api/ui/language.js';
import { SoftAuthenticator } from '../support/authenticator.js';
import { Box, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { strayTexts } from '../support/page-words.js';

const GERMAN = LANGUAGES.find((l) => l.tag === 'de')!;
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const CALLBACK = 'https://rp.example/callback';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

/** What the box shows that it did not write: the clients' descriptions, the provider's name, the box's name, the person's address. */
const DATA = ['default', ANN.email, 'Wiki der Firma', 'kubectl auf Ihrem Rechner', 'Firmen-Login', 'Firmenverzeichnis'];

describe('a German browser’s pages beyond the sign-in, every sentence from the catalogue', function () {
  this.timeout(60_000);
  let box: Box;
  let browser: FormAgent;

  before(async function () {
    box = await Box.start();
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const code = { authorization_code: { redirect_uri: CALLBACK } };
    for (const [id, client] of Object.entries({
      web: { first_party: true, secret: SECRET, auth: code },
      asks: { secret: SECRET, auth: code, scope: ['openid', 'email'], description: 'Wiki der Firma' },
      kubectl: { grant_types: [DEVICE], description: 'kubectl auf Ihrem Rechner', scope: ['openid', 'email'], auth: { device_code: {} } },
    })) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], ...client }, root);
      expect(res.status, res.text).to.equal(201);
    }
    for (const [id, provider] of Object.entries({
      elsewhere: {
        type: 'oauth2',
        displayName: 'Firmen-Login',
        oauth2: {
          authorizationUrl: 'https://idp.example/authorize',
          tokenUrl: 'https://idp.example/token',
          userinfoUrl: 'https://idp.example/userinfo',
          clientId: 'box',
        },
        secret: 'elsewhere-secret-1',
      },
      // A directory nobody answers at: its form is the box's, and so is what a post to it is told.
      dir: {
        type: 'ldap',
        displayName: 'Firmenverzeichnis',
        ldap: {
          url: 'ldaps://127.0.0.1:9',
          bindDN: 'cn=box,dc=example,dc=org',
          timeoutSeconds: 2,
          userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', usernameAttribute: 'uid' },
        },
        secret: 'directory-secret-1',
      },
    })) {
      const res = await box.json('PUT', `/IdentityProvider/${id}`, provider, root);
      expect(res.status, res.text).to.equal(201);
    }
    browser = new FormAgent(box, { Accept: BROWSER, 'Accept-Language': 'de' });
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
  });
  after(async function () {
    await box?.stop();
  });

  /** The page is German, and holds no text but the catalogue's words and `data`. */
  function german(page: JsonResponse, status: number, what: string, data: readonly string[] = []): void {
    expect(page.status, `${what}: ${page.text.slice(0, 400)}`).to.equal(status);
    expect(page.text, what).to.include('<html lang="de"');
    expect(strayTexts(page.text, GERMAN, [...DATA, ...data]), what).to.deep.equal([]);
  }

  const authorize = (params: Record<string, string>): string =>
    `/auth/authorize?${new URLSearchParams({ response_type: 'code', redirect_uri: CALLBACK, state: 's', ...params })}`;

  it('the consent page, and the page that posts the answer back to the application', async function () {
    const consent = await browser.get(authorize({ client_id: 'asks', scope: 'openid email' }));
    german(consent, 200, 'consent', ['asks', 'openid', 'email']);
    const posted = await browser.get(authorize({ client_id: 'web', response_mode: 'form_post' }));
    german(posted, 200, 'form_post');
  });

  it('the problems of an authorization request, shown on a page', async function () {
    const problems: [string, number, string[]][] = [
      [authorize({}), 400, []],
      [authorize({ client_id: 'nobody' }), 400, []],
      [`${authorize({ client_id: 'web' })}&state=again`, 400, ['state']],
      ['/auth/authorize?client_id=web&request_uri=urn:ietf:params:oauth:request_uri:gone', 400, []],
    ];
    for (const [path, status, data] of problems) german(await browser.get(path), status, path, data);
  });

  it('the device pages: the code, a wrong one, the request to allow, and the device connected', async function () {
    german(await browser.get('/auth/device/verify'), 200, 'device code form');
    german(await browser.get('/auth/device/verify?user_code=BBBB-BBBB'), 400, 'wrong code');
    const asked = await box.form('/auth/device', { client_id: 'kubectl', scope: 'openid email' });
    expect(asked.status, asked.text).to.equal(200);
    const page = await browser.get(`/auth/device/verify?user_code=${asked.body.user_code}`);
    german(page, 200, 'device consent', ['kubectl', asked.body.user_code, 'openid', 'email']);
    german(await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' }), 200, 'device connected');
  });

  it('the pages of a sign-in through an identity provider: its button, a directory’s form, and their refusals', async function () {
    const visitor = new FormAgent(box, { Accept: BROWSER, 'Accept-Language': 'de' });
    german(await visitor.get('/auth/sign-in'), 200, 'sign-in with a provider');
    german(await visitor.get('/auth/upstream/elsewhere/callback?code=c&state=s'), 400, 'a callback of no sign-in begun');
    const form = await visitor.get('/auth/upstream/dir?return_to=%2Fauth%2Fsigned-in');
    german(form, 200, 'directory form');
    const answer = await visitor.post('/auth/upstream/dir', { ...hiddenFields(form.text), username: 'ann', password: 'not-it' });
    german(answer, 503, 'a directory that does not answer');
  });

  it('the account page', async function () {
    const account = await browser.get('/auth/account');
    // Its browsers are named by their User-Agent (fetch's is "node") and dated, as values.
    german(account, 200, 'account', ['node', ...(account.text.match(/\d{4}-\d\d-\d\d \d\d:\d\d UTC/g) ?? [])]);
  });

  it('what the passkeys script of a page is answered, and shows on it: the refusals of the ceremonies', async function () {
    // The script's calls (fetch) carry the browser's cookies and Accept-Language, and the page's CSRF token.
    const script =
      (agent: FormAgent) => async (path: string, body: unknown, csrf: Record<string, string>, status: number, key: MessageKey) => {
        const res = await agent.postJson(path, body, { Accept: '*/*', ...csrf });
        expect([res.status, res.body.error], path).to.deep.equal([status, GERMAN.messages[key]]);
        return res;
      };
    const csrfOf = async (agent: FormAgent, page: string) => ({ 'x-csrf-token': hiddenFields((await agent.get(page)).text).csrf! });

    const visitor = new FormAgent(box, { Accept: BROWSER, 'Accept-Language': 'de' });
    const onSignIn = await csrfOf(visitor, '/auth/sign-in');
    const call = script(visitor);
    await call('/auth/passkeys/authenticate/options', {}, {}, 403, 'passkey.pageExpired');
    await call('/auth/passkeys/register/options', {}, onSignIn, 401, 'passkey.signInFirst');
    const options = await visitor.postJson('/auth/passkeys/authenticate/options', {}, onSignIn);
    expect(options.status, options.text).to.equal(200);
    const stranger = new SoftAuthenticator(box.url); // a passkey the box never saw
    await call('/auth/passkeys/authenticate', { response: stranger.assert(options.body) }, onSignIn, 401, 'passkey.notAccepted');

    // Ann, signed in minutes ago, adds a passkey on her passkeys page with a name too long.
    const onPasskeys = await csrfOf(browser, '/auth/account/passkeys');
    const made = await browser.postJson('/auth/passkeys/register/options', {}, onPasskeys);
    expect(made.status, made.text).to.equal(200);
    const response = stranger.register(made.body);
    await script(browser)('/auth/passkeys/register', { response, name: 'x'.repeat(65) }, onPasskeys, 422, 'passkey.badName');
  });

  it('ATTACK: odd Accept-Language headers on the passkeys script’s answers: a catalogue’s words, plain, never a 5xx', async function () {
    const english = LANGUAGES.find((l) => l.tag === 'en')!.messages['passkey.pageExpired'];
    const german = GERMAN.messages['passkey.pageExpired'];
    const cases: [string, string][] = [
      ['*', english],
      ['de;q=abc', english], // a weight that is no qvalue: the range is not read
      ['de;q=0, *', english],
      ['fr;q=0.9, de;q=0.5', german],
      [`${'x'.repeat(4000)}, de`, german], // a range too long is passed over, not the header
      [`${Array.from({ length: 40 }, () => 'fr').join(', ')}, de`, english], // past the 32 ranges read
      ['de-CH-1901-x-<script>', english],
    ];
    for (const [header, words] of cases) {
      const res = await new FormAgent(box, { 'Accept-Language': header }).postJson('/auth/passkeys/authenticate/options', {});
      expect([res.status, res.body.error], header.slice(0, 40)).to.deep.equal([403, words]);
      expect(res.headers.get('content-type'), header.slice(0, 40)).to.match(/^application\/json/);
      expect(res.headers.get('vary') ?? '').to.match(/Accept-Language/i);
    }
  });

  it('the error pages, the API’s own reason shown as a value', async function () {
    const program = (token?: string): FormAgent =>
      new FormAgent(box, { Accept: BROWSER, 'Accept-Language': 'de', ...(token ? { Authorization: `Bearer ${token}` } : {}) });
    german(await program(await box.rootToken()).get('/nowhere'), 404, 'not found', ['no such endpoint']);
    german(await program().get('/users'), 401, 'no token', ['an access token is required (Authorization: Bearer <token>)']);
  });
});
