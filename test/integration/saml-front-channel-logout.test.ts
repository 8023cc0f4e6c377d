// SAML Single Logout through the browser (docs/guides/saml-apps.md "Single Logout"): a person signs
// out in their browser, and each SAML app their box session signed in to that has only an
// HTTP-Redirect SingleLogoutService is visited in turn: the browser carries the box's signed
// LogoutRequest there, and the app's signed LogoutResponse back (test SPs here check and sign as an
// SP does), then the next app, then the place the sign-out was going. An app with a SOAP endpoint is
// told by the outbox instead. And the attacks on the chain: answers replayed, of another chain,
// unsigned, signed by another key, brought by another browser, a handle guessed, a tampered end.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { idpCertificates, testSamlKey, type TestSamlKey } from '../support/saml.js';
import { declareSamlApp, samlAppMetadata, samlAppSignIn } from '../support/saml-apps.js';
import { decodeRedirectMessage, encodeRedirectMessage } from '../../api/saml/bindings.js';
import { signRedirectQuery } from '../../api/saml/sign.js';
import { verifyRedirectSignature } from '../../api/saml/verify.js';
import { childElements, readSamlXml, SAML_NS, textOf } from '../../api/saml/xml.js';

const PASSWORD = 'a-long-password-1';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const PARTIAL = 'urn:oasis:names:tc:SAML:2.0:status:PartialLogout';
const SOAP_NS = 'http://schemas.xmlsoap.org/soap/envelope/';

const spKey = testSamlKey('sp.example');
const otherKey = testSamlKey('attacker.example');
const entity = (app: string): string => `https://${app}.example/saml`;

/** What an app was given at its sign-in. */
interface Given {
  app: string;
  nameId: string;
  sessionIndex: string;
}

/** A LogoutRequest an app received through the browser, as the app read it (after checking the box's signature). */
interface Received {
  app: string;
  id: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string;
  reason: string | null;
  destination: string | null;
  relayState: string;
}

/** How a test SP answers: Success signed with its key, unless a test says otherwise. */
interface Answer {
  status?: string;
  key?: TestSamlKey | 'unsigned';
  inResponseTo?: string;
  issuer?: string;
}

/** The SOAP SingleLogoutService of the one app that has one: it takes every LogoutRequest, and says which it took. */
class SoapApp {
  readonly told: string[] = [];
  private server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.told.push(/<samlp:SessionIndex>([^<]*)</.exec(body)?.[1] ?? '');
        const id = /ID="([^"]+)"/.exec(body)?.[1] ?? '_x';
        res
          .writeHead(200, { 'Content-Type': 'text/xml' })
          .end(
            `<soap:Envelope xmlns:soap="${SOAP_NS}"><soap:Body><samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" ` +
              `ID="_${randomBytes(8).toString('hex')}" Version="2.0" IssueInstant="${new Date().toISOString()}" InResponseTo="${id}">` +
              `<samlp:Status><samlp:StatusCode Value="${SUCCESS}"/></samlp:Status></samlp:LogoutResponse></soap:Body></soap:Envelope>`,
          );
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/soap`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('SAML Single Logout through the browser (HTTP-Redirect)', function () {
  this.timeout(180_000);
  let box: Box;
  let root: string;
  let boxCertificates: string[];
  const soap = new SoapApp();

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_NOTICE_FIRST_RETRY_SECONDS: '1' } });
    root = await box.rootToken();
    await soap.start();
    boxCertificates = await idpCertificates(box);
    // alpha and beta: only an HTTP-Redirect SingleLogoutService; gamma: a SOAP one as well.
    const apps: Record<string, string | undefined> = { alpha: undefined, beta: undefined, gamma: soap.url };
    for (const [id, soapSlo] of Object.entries(apps))
      await declareSamlApp(box, root, id, { metadata: { xml: samlAppMetadata(entity(id), spKey.certificatePem, soapSlo) } });
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code'],
        secret: 'rp-secret-123',
        first_party: true,
        auth: { authorization_code: { redirect_uri: 'https://rp.example/callback' } },
        post_logout_redirect_uris: ['https://rp.example/bye'],
      },
      root,
    );
    expect(rp.status, rp.text).to.equal(201);
  });
  after(async function () {
    await soap.stop();
    await box?.stop();
  });

  let n = 0;
  async function signedIn(): Promise<FormAgent> {
    const email = `fslo-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    expect((await box.json('POST', '/users', { email, password: PASSWORD }, root)).status).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    return browser;
  }

  const samlSignIn = async (browser: FormAgent, app: string): Promise<Given> => ({ app, ...(await samlAppSignIn(browser, entity(app))) });

  /** A browser signed in to alpha, beta and gamma. */
  async function takingPart(): Promise<{ browser: FormAgent; given: Record<string, Given> }> {
    const browser = await signedIn();
    const given: Record<string, Given> = {};
    for (const app of ['alpha', 'beta', 'gamma']) given[app] = await samlSignIn(browser, app);
    return { browser, given };
  }

  /** The app a redirect of the box sends the browser to with a LogoutRequest, when it is one. */
  const appOf = (location: string | null): string | undefined =>
    /^https:\/\/(\w+)\.example\/saml\/slo\?SAMLRequest=/.exec(location ?? '')?.[1];

  /** The test SP at the box's redirect `location`: the LogoutRequest it carries, checked as an SP checks it. */
  async function received(location: string): Promise<Received> {
    const url = new URL(location);
    const rawQuery = location.slice(location.indexOf('?') + 1);
    expect(verifyRedirectSignature(rawQuery, boxCertificates), "the box's signature over the query").to.equal(true);
    const doc = await readSamlXml(decodeRedirectMessage(url.searchParams.get('SAMLRequest')!), 'protocol');
    const request = doc.documentElement;
    expect(request.localName).to.equal('LogoutRequest');
    expect(textOf(childElements(request, SAML_NS.assertion, 'Issuer')[0]!)).to.equal(`${box.url}/auth/saml/metadata`);
    return {
      app: appOf(location)!,
      id: request.getAttribute('ID')!,
      nameId: textOf(childElements(request, SAML_NS.assertion, 'NameID')[0]!),
      nameIdFormat: childElements(request, SAML_NS.assertion, 'NameID')[0]!.getAttribute('Format'),
      sessionIndex: textOf(childElements(request, SAML_NS.protocol, 'SessionIndex')[0]!),
      reason: request.getAttribute('Reason'),
      destination: request.getAttribute('Destination'),
      relayState: url.searchParams.get('RelayState')!,
    };
  }

  /** The path on the box of an app's LogoutResponse to `request` (HTTP-Redirect), as the test SP signs it. */
  function answerPath(request: Received, answer: Answer = {}): string {
    const xml =
      `<samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
      `Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${box.url}/auth/saml/slo" ` +
      `InResponseTo="${answer.inResponseTo ?? request.id}"><saml:Issuer>${answer.issuer ?? entity(request.app)}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="${answer.status ?? SUCCESS}"/></samlp:Status></samlp:LogoutResponse>`;
    const params = { SAMLResponse: encodeRedirectMessage(xml), RelayState: request.relayState };
    const key = answer.key ?? spKey;
    const query =
      key === 'unsigned'
        ? new URLSearchParams(params).toString()
        : signRedirectQuery(params, { privateKey: key.privateKey, certificatePem: key.certificatePem });
    return `/auth/saml/slo?${query}`;
  }

  /** The browser follows the box through every app it is sent to, each answering as `answers` says: what each received, and the last answer. */
  async function walk(
    browser: FormAgent,
    first: JsonResponse,
    answers: Record<string, Answer> = {},
  ): Promise<{ visited: Received[]; last: JsonResponse }> {
    const visited: Received[] = [];
    let res = first;
    for (let app = appOf(res.headers.get('location')); app; app = appOf(res.headers.get('location'))) {
      expect(res.status).to.equal(303);
      const request = await received(res.headers.get('location')!);
      visited.push(request);
      res = await browser.get(answerPath(request, answers[app]));
    }
    return { visited, last: res };
  }

  async function signOut(browser: FormAgent, returnTo: string): Promise<JsonResponse> {
    const page = await browser.get(`/auth/sign-out?return_to=${encodeURIComponent(returnTo)}`);
    return browser.post('/auth/sign-out', hiddenFields(page.text));
  }

  /** An app's own LogoutRequest (HTTP-Redirect, signed) for what it was given, with its RelayState. */
  function appLogoutPath(given: Given, id: string): string {
    const request =
      `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${id}" ` +
      `Version="2.0" IssueInstant="${new Date().toISOString()}"><saml:Issuer>${entity(given.app)}</saml:Issuer>` +
      `<saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent">${given.nameId}</saml:NameID>` +
      `<samlp:SessionIndex>${given.sessionIndex}</samlp:SessionIndex></samlp:LogoutRequest>`;
    return `/auth/saml/slo?${signRedirectQuery({ SAMLRequest: encodeRedirectMessage(request), RelayState: 'app-state' }, spKey)}`;
  }

  /** The box's LogoutResponse at the end of an app's own sign-out: checked as the app checks it. */
  async function finalAnswer(res: JsonResponse, app: string, inResponseTo: string): Promise<string[]> {
    const location = res.headers.get('location') ?? '';
    expect(location, res.text.slice(0, 300)).to.match(new RegExp(`^${entity(app)}/slo\\?SAMLResponse=`));
    expect(verifyRedirectSignature(location.slice(location.indexOf('?') + 1), boxCertificates)).to.equal(true);
    const url = new URL(location);
    expect(url.searchParams.get('RelayState')).to.equal('app-state');
    const doc = await readSamlXml(decodeRedirectMessage(url.searchParams.get('SAMLResponse')!), 'protocol');
    const response = doc.documentElement;
    expect(response.getAttribute('InResponseTo')).to.equal(inResponseTo);
    const codes: string[] = [];
    for (let el = childElements(response, SAML_NS.protocol, 'Status')[0]; el; el = childElements(el, SAML_NS.protocol, 'StatusCode')[0])
      if (el.localName === 'StatusCode') codes.push(el.getAttribute('Value')!);
    return codes;
  }

  const isSignedOut = async (browser: FormAgent): Promise<boolean> =>
    !(await browser.get('/auth/signed-in')).text.includes('You are signed in');

  it('a sign-out at the box takes the browser through both Redirect-only apps, then to return_to; the SOAP app is told by the outbox', async function () {
    const { browser, given } = await takingPart();
    const { visited, last } = await walk(browser, await signOut(browser, '/auth/account'));
    expect(visited.map((v) => v.app).sort()).to.deep.equal(['alpha', 'beta']);
    for (const v of visited) {
      expect([v.nameId, v.sessionIndex]).to.deep.equal([given[v.app]!.nameId, given[v.app]!.sessionIndex]);
      expect(v.nameIdFormat, 'as the assertion said it').to.equal('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
      expect(v.reason).to.equal('urn:oasis:names:tc:SAML:2.0:logout:user');
      expect(v.destination).to.equal(`${entity(v.app)}/slo`);
      expect(v.relayState.length).to.be.at.most(80);
    }
    expect(visited[0]!.relayState, 'one chain').to.equal(visited[1]!.relayState);
    expect(last.status).to.equal(303);
    expect(last.headers.get('location')).to.equal('/auth/account');
    await eventually('the SOAP app told', async () => soap.told.includes(given.gamma!.sessionIndex), 20_000);
    expect(await isSignedOut(browser)).to.equal(true);
  });

  it("OpenID Connect's RP-initiated logout goes through the apps, then to the registered post_logout_redirect_uri", async function () {
    const { browser } = await takingPart();
    const params = new URLSearchParams({ client_id: 'rp', post_logout_redirect_uri: 'https://rp.example/bye', state: 'st' });
    const page = await browser.get(`/auth/logout?${params}`);
    const { visited, last } = await walk(browser, await browser.post('/auth/logout', hiddenFields(page.text)));
    expect(visited.map((v) => v.app).sort()).to.deep.equal(['alpha', 'beta']);
    expect(last.headers.get('location')).to.equal('https://rp.example/bye?state=st');
  });

  it("the account page's sign-out of this very browser goes through the apps too, then to the signed-out page", async function () {
    const { browser } = await takingPart();
    const account = await browser.get('/auth/account');
    const forms = [...account.text.matchAll(/<form method="post" action="\/auth\/account\/sign-ins\/end"[^>]*>([\s\S]*?)<\/form>/g)];
    expect(forms, 'one sign-in: this browser').to.have.length(1);
    const { visited, last } = await walk(browser, await browser.post('/auth/account/sign-ins/end', hiddenFields(forms[0]![1]!)));
    expect(visited.map((v) => v.app).sort()).to.deep.equal(['alpha', 'beta']);
    expect(last.headers.get('location')).to.equal('/auth/signed-in');
    expect(await isSignedOut(browser)).to.equal(true);
  });

  it("an app's own LogoutRequest reaches the other Redirect-only app and returns to the app with Success", async function () {
    const { browser, given } = await takingPart();
    const { visited, last } = await walk(browser, await browser.get(appLogoutPath(given.alpha!, '_alpha1')));
    expect(visited.map((v) => v.app)).to.deep.equal(['beta']);
    expect(await finalAnswer(last, 'alpha', '_alpha1')).to.deep.equal([SUCCESS]);
    expect(await isSignedOut(browser)).to.equal(true);
  });

  for (const [what, answer] of [
    ['signed by another key', { key: otherKey }],
    ['unsigned', { key: 'unsigned' }],
    ['not Success', { status: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }],
    ['from another issuer', { issuer: entity('alpha') }],
  ] as Array<[string, Answer]>) {
    it(`an answer of the other app ${what}: the chain goes on, and the first app is told PartialLogout`, async function () {
      const { browser, given } = await takingPart();
      const { visited, last } = await walk(browser, await browser.get(appLogoutPath(given.alpha!, '_alpha2')), { beta: answer });
      expect(visited.map((v) => v.app)).to.deep.equal(['beta']);
      expect(await finalAnswer(last, 'alpha', '_alpha2')).to.deep.equal([SUCCESS, PARTIAL]);
      // Logged, with the app and why; never the chain's handle.
      await eventually('the failure logged', async () =>
        box.logs.some((l) => l.includes('"event":"saml_logout_app_failed"') && l.includes('"client":"beta"')),
      );
      expect(box.logs.filter((l) => l.includes(visited[0]!.relayState))).to.deep.equal([]);
    });
  }

  /** A sign-out begun, stopped at its first app: the request that app holds. */
  async function begun(): Promise<{ browser: FormAgent; request: Received }> {
    const { browser } = await takingPart();
    const res = await signOut(browser, '/auth/account');
    return { browser, request: await received(res.headers.get('location')!) };
  }

  it('an answer replayed, or brought with a guessed handle, moves nothing and sends the browser nowhere', async function () {
    const { browser, request } = await begun();
    const good = answerPath(request);
    const next = await browser.get(good);
    expect(appOf(next.headers.get('location')), 'the second app').to.be.a('string');
    const replayed = await browser.get(good);
    expect([replayed.status, replayed.headers.get('location')]).to.deep.equal([400, null]);
    const guessed = await browser.get(answerPath({ ...request, relayState: randomBytes(32).toString('base64url') }));
    expect([guessed.status, guessed.headers.get('location')]).to.deep.equal([400, null]);
    // The chain is where it was: the second app's answer ends it.
    const { last } = await walk(browser, next);
    expect(last.headers.get('location')).to.equal('/auth/account');
  });

  it("an answer with another chain's InResponseTo, or brought by another browser, moves nothing", async function () {
    const mine = await begun();
    const theirs = await begun();
    const crossed = await mine.browser.get(answerPath(mine.request, { inResponseTo: theirs.request.id }));
    expect([crossed.status, crossed.headers.get('location')]).to.deep.equal([400, null]);
    const stranger = new FormAgent(box);
    await stranger.get('/auth/sign-in');
    const stolen = await stranger.get(answerPath(mine.request));
    expect([stolen.status, stolen.headers.get('location')]).to.deep.equal([400, null]);
    // Another browser signed in as the same kind of person, with its own cookies: nothing either.
    const stolenByTheOther = await theirs.browser.get(answerPath(mine.request));
    expect([stolenByTheOther.status, stolenByTheOther.headers.get('location')]).to.deep.equal([400, null]);
    // Both chains still go on with their own answers.
    for (const { browser, request } of [mine, theirs]) {
      const { last } = await walk(browser, await browser.get(answerPath(request)));
      expect(last.headers.get('location')).to.equal('/auth/account');
    }
  });

  it('two tabs racing one answer: of 16 parallel requests, one moves the chain on', async function () {
    const { browser, request } = await begun();
    const path = answerPath(request);
    const answers = await Promise.all(Array.from({ length: 16 }, () => browser.get(path)));
    const moved = answers.filter((a) => a.status === 303);
    // 400: the answer was taken; 503: the schema check was full (api/saml/xml.ts), nothing of it read.
    expect(
      answers.map((a) => a.status),
      answers.map((a) => a.text.slice(0, 200)).join('\n'),
    ).to.satisfy((s: number[]) => s.every((x) => x === 303 || x === 400 || x === 503));
    expect(moved).to.have.length(1);
    expect(appOf(moved[0]!.headers.get('location'))).to.be.a('string');
  });

  it('the end of the chain is the return_to the box checked: an address of another site is not it', async function () {
    const { browser } = await takingPart();
    const { visited, last } = await walk(browser, await signOut(browser, 'https://evil.example/'));
    expect(visited).to.have.length(2);
    expect(last.headers.get('location')).to.equal('/auth/signed-in');
  });
});
