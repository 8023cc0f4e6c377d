// Hooks (docs/guides/hooks.md) at sign-in, on real parts: a box with self sign-up, and hooks in
// other processes (Python, Go). signingIn: refused with the hook's words on the sign-in page, or a
// step-up the box then asks for. personCreating: a sign-up refused in the hook's words, or made with
// the data and groups the hook set (never the admins group). passwordImport: a person without a
// password of the box signs in with the old system's, and the box keeps its own hash of it.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Box, boxForSuite } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { HookServer } from '../support/hook-servers.js';
import { provisioner, USER } from '../support/scim.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { declareSamlApp, samlAppAuthnRequest, samlAppMetadata, samlAppResponse } from '../support/saml-apps.js';
import { samlKeyPair } from '../support/saml-idp.js';
import { encodeRedirectMessage } from '../../api/saml/bindings.js';
import { readSamlXml, SAML_NS, textOf } from '../../api/saml/xml.js';
import { testCa, type TestCa } from '../support/tls.js';
import { startAll } from '../support/start-all.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

describe('hooks at sign-in: signingIn, personCreating, passwordImport', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let ca: TestCa;
  let python: HookServer;
  let go: HookServer;
  const secret = newSecret();
  boxForSuite((b, r) => ([box, root] = [b, r]), {
    env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_REGISTRATION: 'true' },
  });

  before(async function () {
    ca = testCa();
    [python, go] = await startAll([HookServer.start('python', secret, ca), HookServer.start('go', secret, ca)]);
    expect((await box.json('POST', '/users', { email: 'ada@example.com', password: 'a-good-password' }, root)).status).to.equal(201);
    expect((await box.json('POST', '/groups', { name: 'staff' }, root)).status).to.equal(201);
  });
  after(async function () {
    await Promise.all([python?.kill(), go?.kill()]);
  });
  afterEach(async function () {
    await box.json('DELETE', '/Hook/h', undefined, root);
  });

  async function putHook(url: string, moments: string[]): Promise<void> {
    const body = { moments, url, caBundle: Buffer.from(ca.pem).toString('base64'), secret };
    const res = await box.json('PUT', '/Hook/h', body, root);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  it('signingIn: a refusal is the sign-in page with the hook’s words, and nobody is signed in', async function () {
    await putHook(`${python.url}/refuse`, ['signingIn']);
    const browser = new FormAgent(box);
    const res = await browser.signIn('ada@example.com', 'a-good-password');
    expect(res.status).to.equal(403);
    expect(res.text).to.include('the licence of this team has expired');
    // Nobody is signed in: the account page sends the browser to sign in.
    expect((await browser.get('/auth/account')).status).to.equal(303);
    const [call] = (await python.seen()).slice(-1);
    expect(call).to.include({ problem: null, moment: 'signingIn', hook: 'h', box: box.url });
    expect(JSON.parse(call!.body).request).to.deep.include({ signIn: { way: 'password', amr: ['pwd'] } });
  });

  it('signingIn: a step-up the hook asks for is asked of the person (a second factor to enrol)', async function () {
    await putHook(`${go.url}/stepup/urn:boxauth:acr:mfa`, ['signingIn']);
    const res = await new FormAgent(box).signIn('ada@example.com', 'a-good-password');
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.include('/auth/sign-in/enrol');
    await box.json('DELETE', '/Hook/h', undefined, root);
    const plain = await new FormAgent(box).signIn('ada@example.com', 'a-good-password');
    expect(plain.headers.get('location')).to.equal('/auth/signed-in');
  });

  it('personCreating: a sign-up the hook refuses is not made; one it allows is made with its data and groups', async function () {
    await putHook(`${python.url}/person`, ['personCreating']);
    const refused = await (await new FormAgent(box).signUpPoster())('eve@elsewhere.example', 'a-long-good-password-1');
    expect(refused.status).to.equal(403);
    expect(String(refused.body)).to.include('only addresses of example.com may sign up');
    const none = await box.json('GET', `/users?email=${encodeURIComponent('eve@elsewhere.example')}`, undefined, root);
    expect(none.body).to.deep.equal([]);
    const made = await (await new FormAgent(box).signUpPoster())('bob@example.com', 'a-long-good-password-1');
    expect(made.status, String(made.body)).to.equal(303);
    const found = await box.json('GET', `/users?email=${encodeURIComponent('bob@example.com')}`, undefined, root);
    expect(JSON.stringify(found.body[0])).to.include('E-1').and.include('staff');
    // The REST API and a SCIM directory make people through the same moment.
    const byApi = await box.json('POST', '/users', { email: 'mallory@elsewhere.example', password: 'a-good-password' }, root);
    expect(byApi.status).to.equal(403);
    expect(byApi.text).to.include('only addresses of example.com may sign up');
    const scim = await provisioner(box, 'hr', { 'Content-Type': 'application/scim+json' });
    const byScim = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'carol@example.com',
      emails: [{ value: 'carol@example.com', primary: true }],
    });
    expect(byScim.status, byScim.text).to.equal(201);
    const carol = await box.json('GET', `/users?email=${encodeURIComponent('carol@example.com')}`, undefined, root);
    expect(JSON.stringify(carol.body[0])).to.include('E-1').and.include('staff');
    const vias = (await python.seen()).filter((s) => s.moment === 'personCreating').map((s) => JSON.parse(s.body).request.person.via);
    expect(vias).to.deep.equal(['signUp', 'signUp', 'api', 'scim']);
  });

  it('samlAssertionIssuing: a hook adds attributes to a SAML app’s assertion (never over the box’s), or refuses it', async function () {
    const app = 'https://wiki-saml.example/saml';
    await declareSamlApp(box, root, 'wiki-saml', {
      metadata: { xml: samlAppMetadata(app, samlKeyPair('wiki-saml.example').certificatePem) },
    });
    await putHook(`${python.url}/claims`, ['samlAssertionIssuing']);
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'a-good-password')).status).to.equal(303);
    const doc = await readSamlXml(Buffer.from(await samlAppResponse(browser, app), 'base64').toString('utf8'), 'protocol');
    const list = <T>(c: { length: number; item(i: number): T | null }): T[] => Array.from({ length: c.length }, (_, i) => c.item(i)!);
    const attributes = Object.fromEntries(
      list(doc.getElementsByTagNameNS(SAML_NS.assertion, 'Attribute')).map((a) => [
        a.getAttribute('Name'),
        list(a.getElementsByTagNameNS(SAML_NS.assertion, 'AttributeValue')).map((v) => textOf(v)),
      ]),
    );
    expect(attributes).to.deep.include({ licence: ['gold'], hook_lang: ['python'] });
    expect(attributes.email).to.not.include('root@evil.example');
    expect(attributes.groups ?? []).to.not.include('admins');
    await putHook(`${go.url}/refuse`, ['samlAssertionIssuing']);
    const refused = await browser.get(`/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(samlAppAuthnRequest(app)))}`);
    expect(refused.status).to.equal(403);
    expect(refused.text).to.include('the licence of this team has expired');
  });

  it('passwordImport: the old system vouches for a password once, and the box keeps its own hash', async function () {
    // A person a directory made (SCIM): no password of the box.
    const scim = await provisioner(box, 'directory', { 'Content-Type': 'application/scim+json' });
    const made = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'old@example.com',
      emails: [{ value: 'old@example.com', primary: true }],
    });
    expect(made.status, made.text).to.equal(201);
    expect((await new FormAgent(box).signIn('old@example.com', 'old-system-pass-1')).status).to.equal(401);
    await putHook(`${go.url}/password/old-system-pass-1`, ['passwordImport']);
    expect((await new FormAgent(box).signIn('old@example.com', 'not-the-password')).status).to.equal(401);
    expect((await new FormAgent(box).signIn('old@example.com', 'old-system-pass-1')).status).to.equal(303);
    const calls = (await go.seen()).filter((s) => s.moment === 'passwordImport');
    expect(calls).to.have.length(2);
    // Without the hook, the password is the box's own now.
    await box.json('DELETE', '/Hook/h', undefined, root);
    expect((await new FormAgent(box).signIn('old@example.com', 'old-system-pass-1')).status).to.equal(303);
    expect((await new FormAgent(box).signIn('old@example.com', 'not-the-password')).status).to.equal(401);
  });
});

describe("hooks at an upstream provider's first sign-in: personCreating", function () {
  this.timeout(180_000);
  let a: Box;
  let b: Box;
  let python: HookServer;
  let caPem: string;
  const secret = newSecret();
  before(async function () {
    const ca = testCa();
    caPem = ca.pem;
    python = await HookServer.start('python', secret, ca);
    [a, b] = await Promise.all([
      Box.start({ env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } }),
      Box.start({ hostname: 'localhost' }),
    ]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
    const rootA = await a.rootToken();
    expect((await a.json('POST', '/groups', { name: 'staff' }, rootA)).status).to.equal(201);
    const body = { moments: ['personCreating'], url: `${python.url}/person`, caBundle: Buffer.from(ca.pem).toString('base64'), secret };
    expect((await a.json('PUT', '/Hook/h', body, rootA)).status).to.equal(201);
    const rootB = await b.rootToken();
    for (const email of ['eve@elsewhere.example', 'dan@example.com'])
      expect((await b.json('POST', '/users', { email, password: 'a-good-password' }, rootB)).status).to.equal(201);
  });
  after(async function () {
    await Promise.all([a?.stop(), b?.stop(), python?.kill()]);
  });

  it('makes nobody the hook refuses, in its words; makes the one it allows with its data and groups', async function () {
    const refused = await new TwoHostBrowser(a, b).signIn('corp', 'eve@elsewhere.example', 'a-good-password');
    expect(refused.status).to.equal(403);
    expect(refused.text).to.include('only addresses of example.com may sign up');
    const root = await a.rootToken();
    expect((await a.json('GET', `/users?email=${encodeURIComponent('eve@elsewhere.example')}`, undefined, root)).body).to.deep.equal([]);
    const made = await new TwoHostBrowser(a, b).signIn('corp', 'dan@example.com', 'a-good-password');
    expect(made.status, made.text).to.equal(303);
    const dan = await a.json('GET', `/users?email=${encodeURIComponent('dan@example.com')}`, undefined, root);
    expect(JSON.stringify(dan.body[0])).to.include('E-1').and.include('staff');
    const vias = (await python.seen()).filter((s) => s.moment === 'personCreating').map((s) => JSON.parse(s.body).request.person.via);
    expect(vias).to.deep.equal(['upstream', 'upstream']);
  });

  it('signingIn: a sign-in through the provider the hook refuses signs nobody in, and says so in the hook’s words', async function () {
    const root = await a.rootToken();
    const body = { moments: ['signingIn'], url: `${python.url}/refuse`, caBundle: Buffer.from(caPem).toString('base64'), secret };
    expect((await a.json('PUT', '/Hook/h', body, root)).status).to.equal(200);
    const browser = new TwoHostBrowser(a, b);
    const answer = await browser.signIn('corp', 'dan@example.com', 'a-good-password');
    // Where the provider's answer arrives: the hook's words, as the organisation's check's.
    expect(answer.status).to.equal(403);
    expect(answer.text).to.include('A check your organisation runs refused this').and.include('the licence of this team has expired');
    expect((await browser.atA.get('/auth/account')).status).to.equal(303);
    const [call] = (await python.seen()).filter((s) => s.moment === 'signingIn').slice(-1);
    expect(JSON.parse(call!.body).request.signIn.way).to.equal('upstream');
  });
});
