// SAML Single Logout tied to the box's sessions (docs/guides/saml-apps.md "Single Logout"): a person
// signs in to SAML apps and to an OpenID Connect app with back-channel logout; every way their box
// session closes (a sign-out at the box, an admin's close, a password change) sends each SAML app
// with a SOAP SingleLogoutService one LogoutRequest, signed with a certificate of the box's
// metadata (A1's verifiedSignedMessage checks it as an SP would), naming the NameID and
// SessionIndex its assertion gave, and the OpenID Connect app its logout token. An app whose
// endpoint fails is tried again; an app the person never signed in to, and another person's
// close, tell nothing.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { Box, basic, eventually, sleep } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { idpCertificates } from '../support/saml.js';
import { declareSamlApp, samlAppAuthnRequest, samlAppMetadata, samlAppSignIn } from '../support/saml-apps.js';
import { decodeRedirectMessage, encodeRedirectMessage } from '../../api/saml/bindings.js';
import { selfSignedCertificate } from '../../api/saml/certificate.js';
import { signRedirectQuery } from '../../api/saml/sign.js';
import { verifiedSignedMessage } from '../../api/saml/verify.js';
import { childElements, readSamlXml, SAML_NS, textOf } from '../../api/saml/xml.js';

const PASSWORD = 'a-long-password-1';
const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const SOAP_NS = 'http://schemas.xmlsoap.org/soap/envelope/';

// The key an app signs its own LogoutRequests with (its metadata publishes the certificate).
const spKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const spCert = selfSignedCertificate(spKeys, 'sp.example', new Date('2026-01-01T00:00:00Z'), new Date('2030-01-01T00:00:00Z'));

/** What an SP was told: the LogoutRequest as its signature covers it. */
interface Told {
  app: string;
  nameId: string;
  sessionIndex: string;
  issuer: string;
  destination: string | null;
  notOnOrAfter: string | null;
  id: string;
}

/**
 * SAML apps' SOAP SingleLogoutServices, each at /<app>, and an OpenID Connect app's back-channel
 * logout endpoint at /rp: each LogoutRequest is checked as an SP checks it (schema, then the
 * signature with the box's metadata certificates) and answered Success; `failing` apps answer 500
 * (or a LogoutResponse of another status) that many times first.
 */
class Receivers {
  readonly told: Told[] = [];
  readonly refused: string[] = [];
  readonly logoutTokens: Array<{ sub: string; sid: string }> = [];
  readonly failing = new Map<string, number>();
  readonly attempts = new Map<string, number>();
  private server!: http.Server;
  url = '';

  async start(certificates: () => Promise<string[]>): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const app = (req.url ?? '/').slice(1);
        if (app === 'rp') {
          const claims = decodeJwt(new URLSearchParams(body).get('logout_token') ?? '');
          this.logoutTokens.push({ sub: String(claims.sub), sid: String(claims.sid) });
          return void res.writeHead(200).end();
        }
        this.attempts.set(app, (this.attempts.get(app) ?? 0) + 1);
        const left = this.failing.get(app) ?? 0;
        if (left > 0) {
          this.failing.set(app, left - 1);
          // The first failure a broken server, the next a refusal in SAML's words: both are failures.
          if (left % 2 === 0) return void res.writeHead(500).end();
          return void res.writeHead(200, { 'Content-Type': 'text/xml' }).end(answer('urn:oasis:names:tc:SAML:2.0:status:Responder'));
        }
        this.check(app, req.headers['content-type'], body, certificates).then(
          (told) => {
            this.told.push(told);
            res.writeHead(200, { 'Content-Type': 'text/xml' }).end(answer('urn:oasis:names:tc:SAML:2.0:status:Success', told.id));
          },
          (err: Error) => {
            this.refused.push(`${app}: ${err.message}`);
            res.writeHead(500).end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async check(app: string, contentType: string | undefined, body: string, certificates: () => Promise<string[]>): Promise<Told> {
    if (!/^text\/xml/.test(contentType ?? '')) throw new Error(`content type ${contentType}`);
    const envelope = /^<soap:Envelope xmlns:soap="([^"]+)"><soap:Body>([\s\S]*)<\/soap:Body><\/soap:Envelope>$/.exec(body);
    if (!envelope || envelope[1] !== SOAP_NS) throw new Error('no SOAP 1.1 envelope');
    const doc = await readSamlXml(envelope[2]!, 'protocol');
    const request = verifiedSignedMessage(doc, await certificates());
    if (request.localName !== 'LogoutRequest') throw new Error('not a LogoutRequest');
    return {
      app,
      id: request.getAttribute('ID')!,
      issuer: textOf(childElements(request, SAML_NS.assertion, 'Issuer')[0]!),
      nameId: textOf(childElements(request, SAML_NS.assertion, 'NameID')[0]!),
      sessionIndex: textOf(childElements(request, SAML_NS.protocol, 'SessionIndex')[0]!),
      destination: request.getAttribute('Destination'),
      notOnOrAfter: request.getAttribute('NotOnOrAfter'),
    };
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** An SP's LogoutResponse in a SOAP envelope. */
const answer = (status: string, inResponseTo = '_x'): string =>
  `<soap:Envelope xmlns:soap="${SOAP_NS}"><soap:Body>` +
  `<samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
  `Version="2.0" IssueInstant="${new Date().toISOString()}" InResponseTo="${inResponseTo}"><saml:Issuer>sp</saml:Issuer>` +
  `<samlp:Status><samlp:StatusCode Value="${status}"/></samlp:Status></samlp:LogoutResponse></soap:Body></soap:Envelope>`;

const spMetadata = (entityId: string, soapSlo: string | undefined): string => samlAppMetadata(entityId, spCert, soapSlo);

describe('SAML Single Logout: a close of the box reaches the SAML apps (SOAP)', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  const receivers = new Receivers();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const entity = (app: string): string => `https://${app}.example/saml`;

  before(async function () {
    // The SPs listen on loopback over http: the box must be told it may send there.
    box = await Box.start({ env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_NOTICE_FIRST_RETRY_SECONDS: '1' } });
    root = await box.rootToken();
    await receivers.start(() => idpCertificates(box));
    const apps: Record<string, Record<string, unknown>> = {
      // Two apps with a SOAP SingleLogoutService, one of them given the person's address as NameID.
      wiki: { metadata: { xml: spMetadata(entity('wiki'), `${receivers.url}/wiki`) } },
      payroll: { metadata: { xml: spMetadata(entity('payroll'), `${receivers.url}/payroll`) }, nameIdFormat: 'emailAddress' },
      // One whose endpoint fails at first.
      flaky: { metadata: { xml: spMetadata(entity('flaky'), `${receivers.url}/flaky`) } },
      // One the person never signs in to.
      bystander: { metadata: { xml: spMetadata(entity('bystander'), `${receivers.url}/bystander`) } },
      // One with only an HTTP-Redirect SingleLogoutService: nothing to send it.
      redirect: { metadata: { xml: spMetadata(entity('redirect'), undefined) } },
    };
    for (const [id, saml] of Object.entries(apps)) await declareSamlApp(box, root, id, saml);
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code'],
        secret: SECRET,
        first_party: true,
        auth: { authorization_code: { redirect_uri: CALLBACK } },
        backchannel_logout_uri: `${receivers.url}/rp`,
      },
      root,
    );
    expect(rp.status, rp.text).to.equal(201);
  });
  after(async function () {
    await receivers.stop();
    await box?.stop();
  });

  let n = 0;
  async function person(): Promise<{ email: string; id: string }> {
    const email = `slo-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, root);
    expect(res.status, res.text).to.equal(201);
    return { email, id: String(res.body.id) };
  }

  async function signedIn(email: string): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    return browser;
  }

  /** The browser signs in to SAML app `app`: the NameID and SessionIndex its assertion gave. */
  async function samlSignIn(browser: FormAgent, app: string): Promise<{ app: string; nameId: string; sessionIndex: string }> {
    return { app, ...(await samlAppSignIn(browser, entity(app))) };
  }

  /** The browser's OpenID Connect grant at rp (a code exchanged): its sid. */
  async function oidcSignIn(browser: FormAgent): Promise<string> {
    const answer = await browser.get(
      `/auth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: 'rp',
        redirect_uri: CALLBACK,
        scope: 'openid',
        state: 's',
        nonce: 'n',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })}`,
    );
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    const res = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic('rp', SECRET) },
    );
    expect(res.status, res.text).to.equal(200);
    return decodeJwt(res.body.id_token as string).sid as string;
  }

  /** A browser signed in to wiki, payroll, redirect and rp: what each SAML app was given. */
  async function takingPart(email: string) {
    const browser = await signedIn(email);
    const wiki = await samlSignIn(browser, 'wiki');
    const payroll = await samlSignIn(browser, 'payroll');
    await samlSignIn(browser, 'redirect');
    const sid = await oidcSignIn(browser);
    expect(wiki.sessionIndex).to.equal(sid);
    return { browser, wiki, payroll, sid };
  }

  const toldOf = (given: { app: string; nameId: string; sessionIndex: string }): Told[] =>
    receivers.told.filter((t) => t.app === given.app && t.nameId === given.nameId && t.sessionIndex === given.sessionIndex);

  /** Each app in `given` told once of what it was given, checked as an SP checks it; rp told of `sids`. */
  async function toldOnce(userId: string, given: Array<{ app: string; nameId: string; sessionIndex: string }>, sids: string[]) {
    await eventually(
      'the LogoutRequests and logout tokens',
      async () => given.every((g) => toldOf(g).length > 0) && sids.every((sid) => receivers.logoutTokens.some((t) => t.sid === sid)),
      20_000,
    );
    await sleep(1500); // a duplicate would come within this
    for (const g of given) {
      const [told, ...more] = toldOf(g);
      expect(more, `${g.app} told once`).to.deep.equal([]);
      expect(told!.issuer).to.equal(`${box.url}/auth/saml/metadata`);
      expect(told!.destination).to.equal(`${receivers.url}/${g.app}`);
      expect(Date.parse(told!.notOnOrAfter!) - Date.now()).to.be.within(0, 121_000);
    }
    for (const sid of sids) expect(receivers.logoutTokens.filter((t) => t.sid === sid).map((t) => t.sub)).to.have.length(1);
    expect(receivers.refused).to.deep.equal([]);
    void userId;
  }

  it('a sign-out at the box: each SAML app with a SOAP endpoint gets one signed LogoutRequest, the OIDC app its logout token', async function () {
    const ann = await person();
    const { browser, wiki, payroll, sid } = await takingPart(ann.email);
    expect(payroll.nameId).to.equal(ann.email);
    const page = await browser.get('/auth/sign-out');
    expect((await browser.post('/auth/sign-out', hiddenFields(page.text))).status).to.be.oneOf([200, 303]);
    await toldOnce(ann.id, [wiki, payroll], [sid]);
    // The app the person never signed in to, and the one with only a Redirect endpoint, were told nothing.
    expect(receivers.told.filter((t) => t.app === 'bystander' || t.app === 'redirect')).to.deep.equal([]);
    expect(receivers.attempts.get('bystander') ?? 0).to.equal(0);
  });

  it("an admin's close of the browser session does the same, and another person's close tells nothing of this one", async function () {
    const ann = await person();
    const bob = await person();
    const annAt = await takingPart(ann.email);
    const bobAt = await takingPart(bob.email);
    expect((await box.json('DELETE', `/users/${bob.id}/sessions/${bobAt.sid}`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(bob.id, [bobAt.wiki, bobAt.payroll], [bobAt.sid]);
    expect(receivers.told.filter((t) => t.sessionIndex === annAt.sid || t.nameId === annAt.wiki.nameId)).to.deep.equal([]);
    expect((await box.json('DELETE', `/users/${ann.id}/sessions/${annAt.sid}`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(ann.id, [annAt.wiki, annAt.payroll], [annAt.sid]);
  });

  it('a password change tells the apps of the sessions it closed', async function () {
    const ann = await person();
    const there = await takingPart(ann.email);
    const here = await signedIn(ann.email);
    const page = await here.get('/auth/account');
    const form = [...page.text.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(
      (m) => m[1] === '/auth/account/password',
    );
    const changed = await here.post('/auth/account/password', {
      ...hiddenFields(form![2]!),
      current_password: PASSWORD,
      new_password: 'another-long-password-2',
    });
    expect(changed.status, changed.text.slice(0, 300)).to.equal(303);
    await toldOnce(ann.id, [there.wiki, there.payroll], [there.sid]);
  });

  it('an app whose endpoint fails (a 500, a non-Success status) is tried again until it takes the LogoutRequest', async function () {
    const ann = await person();
    const browser = await signedIn(ann.email);
    const flaky = await samlSignIn(browser, 'flaky');
    receivers.failing.set('flaky', 2);
    const page = await browser.get('/auth/sign-out');
    await browser.post('/auth/sign-out', hiddenFields(page.text));
    await eventually('the LogoutRequest taken at last', async () => toldOf(flaky).length > 0, 30_000);
    expect(receivers.attempts.get('flaky')).to.equal(3);
    expect(toldOf(flaky)).to.have.length(1);
  });

  it("an app's own LogoutRequest (HTTP-Redirect) ends the box session: the other SOAP apps are told, the one that asked is not", async function () {
    const ann = await person();
    const { browser, wiki, payroll, sid } = await takingPart(ann.email);
    const request =
      `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
      `Version="2.0" IssueInstant="${new Date().toISOString()}"><saml:Issuer>${entity('wiki')}</saml:Issuer>` +
      `<saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent">${wiki.nameId}</saml:NameID>` +
      `<samlp:SessionIndex>${wiki.sessionIndex}</samlp:SessionIndex></samlp:LogoutRequest>`;
    const query = signRedirectQuery(
      { SAMLRequest: encodeRedirectMessage(request) },
      { privateKey: spKeys.privateKey, certificatePem: spCert },
    );
    const res = await browser.get(`/auth/saml/slo?${query}`);
    // The browser goes on to the app with only an HTTP-Redirect endpoint (test/integration/saml-front-channel-logout.test.ts walks it through).
    expect(res.status, res.text.slice(0, 300)).to.equal(303);
    expect(res.headers.get('location')).to.match(new RegExp(`^${entity('redirect')}/slo\\?SAMLRequest=`));
    await toldOnce(ann.id, [payroll], [sid]);
    expect(toldOf(wiki), 'the app that asked').to.deep.equal([]);
  });

  it('a LogoutRequest of an app this browser session never signed in to ends nothing, though it names the person', async function () {
    // An app given people's addresses as NameIDs knows anyone's: were it a session participant by that alone,
    // any page could send a signed-in person's browser to it and sign them out of the box and every other app.
    await declareSamlApp(box, root, 'mailer', { metadata: { xml: spMetadata(entity('mailer'), undefined) }, nameIdFormat: 'emailAddress' });
    const ann = await person();
    const { browser, wiki, payroll } = await takingPart(ann.email);
    const request =
      `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
      `Version="2.0" IssueInstant="${new Date().toISOString()}"><saml:Issuer>${entity('mailer')}</saml:Issuer>` +
      `<saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${ann.email}</saml:NameID></samlp:LogoutRequest>`;
    const query = signRedirectQuery(
      { SAMLRequest: encodeRedirectMessage(request) },
      { privateKey: spKeys.privateKey, certificatePem: spCert },
    );
    const res = await browser.get(`/auth/saml/slo?${query}`);
    expect(res.status, res.text.slice(0, 300)).to.equal(302);
    const answered = new URL(res.headers.get('location')!);
    expect(`${answered.origin}${answered.pathname}`).to.equal(`${entity('mailer')}/slo`);
    const status = await readSamlXml(decodeRedirectMessage(answered.searchParams.get('SAMLResponse')!), 'protocol');
    expect(status.getElementsByTagNameNS(SAML_NS.protocol, 'StatusCode')[1]?.getAttribute('Value')).to.equal(
      'urn:oasis:names:tc:SAML:2.0:status:PartialLogout',
    );
    // Still signed in (a sign-in to wiki needs no password), and the apps it signed in to are told nothing.
    await sleep(1500);
    expect((await samlSignIn(browser, 'wiki')).sessionIndex).to.equal(wiki.sessionIndex);
    expect([...toldOf(wiki), ...toldOf(payroll)]).to.deep.equal([]);
  });

  it('an AuthnRequest is taken once: of 20 parallel replays exactly one proceeds, and its ID is spent per app', async function () {
    const id = `_race${randomBytes(8).toString('hex')}`;
    const request = (app: string): string =>
      `<samlp:AuthnRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${id}" ` +
      `Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${entity(app)}/acs">` +
      `<saml:Issuer>${entity(app)}</saml:Issuer></samlp:AuthnRequest>`;
    const path = `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(request('wiki')))}`;
    // The apps' metadata read first (a cold box reads it with the first request, through the same schema check).
    const warm = await signedIn((await person()).email);
    await samlSignIn(warm, 'wiki');
    await samlSignIn(warm, 'payroll');
    const answers = await Promise.all(Array.from({ length: 20 }, () => new FormAgent(box).get(path)));
    // The schema check takes 18 documents at a time (two checked, sixteen waiting: api/saml/xml.ts); the
    // others are answered 503 before anything of them is read. Of those read, one proceeds.
    const seen = answers.map((a) => `${a.status} ${a.status === 400 ? '' : a.text.slice(0, 300)}`);
    expect(
      answers.filter((a) => a.status === 200),
      `one sign-in page: ${seen.join('\n')}`,
    ).to.have.length(1);
    const refused = answers.filter((a) => a.status !== 200 && a.status !== 503);
    expect(refused.length).to.be.at.least(17);
    for (const a of refused)
      expect([a.status, a.text]).to.satisfy(([status, text]: [number, string]) => status === 400 && text.includes('was used already'));
    expect((await new FormAgent(box).get(path)).status, 'a replay later').to.equal(400);
    // Another app's request with the same ID is its own.
    const other = await new FormAgent(box).get(
      `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(request('payroll')))}`,
    );
    expect(other.status, other.text.slice(0, 300)).to.equal(200);
  });

  it('a burst of AuthnRequests to an app whose metadata was not read yet: every one is answered', async function () {
    // The schema check runs in line (api/saml/xml.ts): no queue to fill, and the app's metadata, read
    // once for the whole burst, stands for each of its requests.
    const id = 'cold';
    await declareSamlApp(box, root, id, { metadata: { xml: spMetadata(entity(id), undefined) } });
    const path = (): string => `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(samlAppAuthnRequest(entity(id))))}`;
    const burst = await Promise.all(Array.from({ length: 40 }, () => new FormAgent(box).get(path())));
    expect(new Set(burst.map((a) => a.status))).to.deep.equal(new Set([200]));
  });

  it('a sign-in to a SAML app after the sign-out is not told of the closed session; ending it on the account page is', async function () {
    const ann = await person();
    const first = await signedIn(ann.email);
    const before = await samlSignIn(first, 'wiki');
    const page = await first.get('/auth/sign-out');
    await first.post('/auth/sign-out', hiddenFields(page.text));
    await eventually('the first LogoutRequest', async () => toldOf(before).length > 0, 20_000);
    const second = await signedIn(ann.email);
    const after = await samlSignIn(second, 'wiki');
    await sleep(1500);
    expect(toldOf(after), 'not by the first close').to.deep.equal([]);
    // The person sees the app among their sign-ins, as an OpenID Connect app's grant, and ending it there tells the app.
    const account = await second.get('/auth/account');
    const end = [...account.text.matchAll(/<form method="post" action="\/auth\/account\/grants\/end"[^>]*>([\s\S]*?)<\/form>/g)];
    expect(end, 'one grant to end: the SAML sign-in').to.have.length(1);
    expect((await second.post('/auth/account/grants/end', hiddenFields(end[0]![1]!))).status).to.equal(303);
    await eventually('the LogoutRequest of the ended sign-in', async () => toldOf(after).length > 0, 20_000);
  });
});
