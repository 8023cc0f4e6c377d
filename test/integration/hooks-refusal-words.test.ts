// A Hook's refusal (docs/guides/hooks.md) on every sign-in form: the hook's words are a third
// party's, so each form shows them quoted, said to come from the organisation's check, and as text
// (markup escaped on a page, textContent for the passkey script's JSON) — the password form, the
// sign-up form, a passkey, a SAML identity provider's sign-in and first sign-in. The hook (Python,
// in another process) answers with markup and characters an HTML page must escape.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Box, boxForSuite, type JsonResponse } from '../support/box.js';
import { SoftAuthenticator } from '../support/authenticator.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { HookServer } from '../support/hook-servers.js';
import { authnRequestOf, postResponse, startSaml, TestSamlIdp } from '../support/saml-idp.js';
import { testCa, type TestCa } from '../support/tls.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const LABEL = 'A check your organisation runs refused this. It says:';
const WORDS = '<img src=x onerror=alert(1)> "no licence" — über';
/** The hook's words as an HTML page must carry them: quoted, markup escaped. */
const ESCAPED = '“&lt;img src=x onerror=alert(1)&gt; &quot;no licence&quot; — über”';

describe("hooks: a refusal's words on every sign-in form", function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let ca: TestCa;
  let python: HookServer;
  const key = { current: undefined as SoftAuthenticator | undefined };
  const idp = new TestSamlIdp();
  const secret = newSecret();
  boxForSuite((b, r) => ([box, root] = [b, r]), {
    env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_REGISTRATION: 'true' },
  });

  before(async function () {
    ca = testCa();
    python = await HookServer.start('python', secret, ca);
    expect((await box.json('POST', '/users', { email: 'ada@example.com', password: 'a-good-password' }, root)).status).to.equal(201);
    // Ada's passkey, added before any Hook is asked about her sign-ins.
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'a-good-password')).status).to.equal(303);
    const csrf = { 'x-csrf-token': hiddenFields((await browser.get('/auth/account/passkeys')).text).csrf! };
    key.current = new SoftAuthenticator(box.url);
    const options = await browser.postJson('/auth/passkeys/register/options', {}, csrf);
    expect((await browser.postJson('/auth/passkeys/register', { response: key.current.register(options.body) }, csrf)).status).to.equal(
      200,
    );
    const provider = await box.json(
      'PUT',
      '/IdentityProvider/corp',
      {
        type: 'saml',
        displayName: 'Corp SAML',
        saml: { entityId: idp.entityId, metadata: { xml: idp.metadataXml() }, emailVerified: true },
        linking: { trustEmail: true },
      },
      root,
    );
    expect(provider.status, provider.text).to.be.oneOf([200, 201]);
  });
  after(async function () {
    await python?.kill();
  });
  afterEach(async function () {
    await box.json('DELETE', '/Hook/h', undefined, root);
  });

  async function putHook(moments: string[]): Promise<void> {
    const body = { moments, url: `${python.url}/refuse-markup`, caBundle: Buffer.from(ca.pem).toString('base64'), secret };
    const res = await box.json('PUT', '/Hook/h', body, root);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  /** The page shows the hook's words as the organisation's check's, escaped; never as markup. */
  function showsTheWords(page: JsonResponse): void {
    expect(page.text).to.include(LABEL).and.include(ESCAPED);
    expect(page.text).to.not.include('<img src=x');
  }

  const nobodySignedIn = async (browser: FormAgent): Promise<void> => {
    expect((await browser.get('/auth/account')).status, 'nobody signed in').to.equal(303);
  };

  /** A sign-in at the SAML identity provider as `email`: the ACS's answer and the browser. */
  async function throughSaml(email: string): Promise<{ answer: JsonResponse; browser: FormAgent }> {
    const browser = new FormAgent(box);
    const { id } = authnRequestOf(await startSaml(browser, 'corp'));
    const answer = await postResponse(
      browser,
      'corp',
      idp.response(box, 'corp', { requestId: id, nameId: email, attributes: { email: [email] } }),
    );
    return { answer, browser };
  }

  it('the password form', async function () {
    await putHook(['signingIn']);
    const browser = new FormAgent(box);
    const res = await browser.signIn('ada@example.com', 'a-good-password');
    expect(res.status).to.equal(403);
    showsTheWords(res);
    await nobodySignedIn(browser);
  });

  it('the sign-up form', async function () {
    await putHook(['personCreating']);
    const res = await (await new FormAgent(box).signUpPoster())('eve@example.com', 'a-long-good-password-1');
    expect(res.status).to.equal(403);
    showsTheWords(res);
  });

  it('a passkey: the script is told the words as text, which it shows as text (textContent)', async function () {
    await putHook(['signingIn']);
    const browser = new FormAgent(box);
    const csrf = { 'x-csrf-token': hiddenFields((await browser.get('/auth/sign-in')).text).csrf! };
    const options = await browser.postJson('/auth/passkeys/authenticate/options', {}, csrf);
    const res = await browser.postJson('/auth/passkeys/authenticate', { response: key.current!.assert(options.body) }, csrf);
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.deep.equal({ error: `${LABEL} “${WORDS}”` });
    await nobodySignedIn(browser);
  });

  it('a SAML identity provider: a sign-in the hook refuses is refused where the answer arrives, in its words', async function () {
    await putHook(['signingIn']);
    const { answer, browser } = await throughSaml('ada@example.com');
    expect(answer.status, answer.text).to.equal(403);
    expect(answer.text).to.include('Not signed in');
    showsTheWords(answer);
    await nobodySignedIn(browser);
    const [call] = (await python.seen()).filter((s) => s.moment === 'signingIn').slice(-1);
    expect(JSON.parse(call!.body).request.signIn.way).to.equal('upstream');
  });

  it("a SAML identity provider's first sign-in: a person the hook refuses is not made, in its words", async function () {
    await putHook(['personCreating']);
    const { answer, browser } = await throughSaml('new@example.com');
    expect(answer.status, answer.text).to.equal(403);
    showsTheWords(answer);
    await nobodySignedIn(browser);
    expect((await box.json('GET', `/users?email=${encodeURIComponent('new@example.com')}`, undefined, root)).body).to.deep.equal([]);
  });
});
