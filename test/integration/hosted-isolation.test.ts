// Each hosted box stays its own: an attacker holding everything of box A — its tokens of every
// kind, codes, cookies, proofs and assertions, its SAML messages — presents each at box B of the same host, where
// clients, people and secrets have the same names as A's (an id collision is the attacker's best
// case). Every one is taken at A (the control: it is a live credential) and refused at B, and
// what B was asked to end (a revocation, DELETE /Session) leaves A's grants alive.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { appCookieName } from '../../api/decision/engine.js';
import { JWT_BEARER } from '../../api/credentials/workload/assertion.js';
import { encodeRedirectMessage } from '../../api/saml/bindings.js';
import { verifiedResponse } from '../../api/saml/verify.js';
import { readSamlXml, SAML_NS } from '../../api/saml/xml.js';
import { clientKey, type ClientKey } from '../support/assertion.js';
import { basic, eventually, sleep, type Box, type JsonResponse } from '../support/box.js';
import { ath, newKey, proof, type DpopKey } from '../support/dpop.js';
import { ACCESS_TOKEN, EXCHANGE, ORDERS } from '../support/exchange-chain.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { Host } from '../support/host.js';
import { idpCertificates, signedRedirectQuery, signEnveloped } from '../support/saml.js';
import { declareSamlApp, samlAppAuthnRequest, samlAppMetadata, samlAppResponse, samlAppSignIn } from '../support/saml-apps.js';
import { authnRequestOf, postResponse, samlKeyPair, startSaml, TestSamlIdp } from '../support/saml-idp.js';
import { APP_REDIRECT } from '../support/signed-in.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const WIKI = 'https://wiki.example';
const EMAIL = 'alice@example.com';
const PASSWORD = 'alice-has-a-long-password';
const WEB_SECRET = 'web-secret-123'; // the same in both boxes: the attacker's best case
/** The SAML app `wiki-saml` of both boxes: the same entity ID and the same key (an app of both teams). */
const SAML_APP = 'https://wiki-saml.example/saml';
const SAML_APP_KEY = samlKeyPair('wiki-saml.example');
/** The upstream SAML provider `corp` of both boxes: the same identity provider (the company's). */
const corp = new TestSamlIdp();

/** Everything of a box an attacker may hold. */
interface Loot {
  box: Box;
  root: string;
  /** Alice's browser, signed in (session, CSRF and device cookies). */
  browser: FormAgent;
  /** Alice's grant of `web` through it: opaque access token, refresh token, ID token. */
  accessToken: string;
  refreshToken: string;
  idToken: string;
  /** A JWT access token of `svc` (private_key_jwt), for the box. */
  jwt: string;
  /** A DPoP-bound token of `bound`, and the key its proofs are signed with. */
  dpopToken: string;
  dpopKey: DpopKey;
  /** A gate cookie of the App `wiki`: a token of `svc` for the wiki's audience. */
  gateCookie: string;
}

/** A code of `web` for alice, through `browser` (signed in). */
async function codeOf(browser: FormAgent, extra: Record<string, string> = {}): Promise<string> {
  const authorized = await browser.get(authorizePath(extra));
  expect(authorized.status, authorized.text.slice(0, 300)).to.equal(302);
  const code = new URL(authorized.headers.get('location')!).searchParams.get('code');
  expect(code, authorized.headers.get('location')!).to.be.a('string');
  return code!;
}

const authorizePath = (extra: Record<string, string> = {}): string =>
  `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: APP_REDIRECT, scope: 'openid', nonce: 'n-1', ...extra })}`;

const redeem = (box: Box, code: string): Promise<JsonResponse> =>
  box.form(
    '/auth/token',
    { grant_type: 'authorization_code', code, redirect_uri: APP_REDIRECT },
    { Authorization: basic('web', WEB_SECRET) },
  );

const refresh = (box: Box, refreshToken: string): Promise<JsonResponse> =>
  box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { Authorization: basic('web', WEB_SECRET) });

/** The same records in each box: clients `web`, `svc` (the same key), `bound`; App `wiki`; alice with the same password. */
async function furnish(box: Box, root: string, svcKey: ClientKey): Promise<void> {
  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await box.json('PUT', path, body, root);
    expect(res.status, `PUT ${path}: ${res.text}`).to.be.oneOf([200, 201]);
  };
  await put('/Client/web', {
    grant_types: ['authorization_code', DEVICE],
    secret: WEB_SECRET,
    first_party: true,
    auth: { authorization_code: { redirect_uri: APP_REDIRECT, refresh_token: true }, device_code: { refresh_token: true } },
  });
  await put('/Client/svc', {
    grant_types: ['client_credentials', EXCHANGE],
    jwks: svcKey.jwks,
    audience: [ORDERS, WIKI],
    auth: { client_credentials: { token_format: 'jwt' }, token_exchange: { token_format: 'jwt' } },
  });
  await put('/AccessPolicy/svc-allow', { engine: 'allow', link: [{ id: 'svc', resourceType: 'Client' }] });
  await put('/Client/bound', { grant_types: ['client_credentials'], secret: 'bound-secret-123', dpop_bound_access_tokens: true });
  await put('/AccessPolicy/bound-allow', { engine: 'allow', link: [{ id: 'bound', resourceType: 'Client' }] });
  await put('/App/wiki', { urls: [WIKI], audience: WIKI });
  await put('/AccessPolicy/wiki-svc', { app: 'wiki', engine: 'allow', link: [{ id: 'svc', resourceType: 'Client' }] });
  await declareSamlApp(box, root, 'wiki-saml', { metadata: { xml: samlAppMetadata(SAML_APP, SAML_APP_KEY.certificatePem) } });
  await put('/IdentityProvider/corp', {
    type: 'saml',
    displayName: 'Corp',
    saml: { entityId: corp.entityId, metadata: { xml: corp.metadataXml() }, emailVerified: true },
  });
  const alice = await box.json('POST', '/users', { email: EMAIL, password: PASSWORD }, root);
  expect(alice.status, alice.text).to.equal(201);
}

async function loot(box: Box, svcKey: ClientKey): Promise<Loot> {
  const root = await box.rootToken();
  await furnish(box, root, svcKey);
  const browser = new FormAgent(box);
  expect((await browser.signIn(EMAIL, PASSWORD)).status).to.equal(303);
  const granted = await redeem(box, await codeOf(browser));
  expect(granted.status, granted.text).to.equal(200);
  const svcToken = async (extra: Record<string, string> = {}): Promise<string> => {
    const res = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER,
      client_assertion: svcKey.assertion('svc', box.url),
      ...extra,
    });
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  };
  const dpopKey = await newKey();
  const bound = await box.form(
    '/auth/token',
    { grant_type: 'client_credentials' },
    { Authorization: basic('bound', 'bound-secret-123'), DPoP: await proof(dpopKey, { htm: 'POST', htu: `${box.url}/auth/token` }) },
  );
  expect(bound.status, bound.text).to.equal(200);
  expect(bound.body.token_type).to.equal('DPoP');
  return {
    box,
    root,
    browser,
    accessToken: granted.body.access_token,
    refreshToken: granted.body.refresh_token,
    idToken: granted.body.id_token,
    jwt: await svcToken(),
    dpopToken: bound.body.access_token,
    dpopKey,
    gateCookie: `${appCookieName({ id: 'wiki' } as never, true)}=${await svcToken({ resource: WIKI })}`,
  };
}

/**
 * One attack: `attempt(target)` presents A's credential at `target`; `taken` says from the answer
 * whether it was taken. At B never; then at A it must be (the credential is live, and B's attempt
 * did not spend a credential of one use: a code, an assertion's jti).
 */
interface Attack {
  name: string;
  attempt(target: Box): Promise<JsonResponse>;
  taken(res: JsonResponse): boolean;
}

const ok = (res: JsonResponse): boolean => res.status >= 200 && res.status < 300;
const codeIn = (res: JsonResponse): boolean => res.status === 302 && /[?&]code=/.test(res.headers.get('location') ?? '');
/** The page that posts a SAML Response (an assertion of the person) to the app. */
const samlResponseIn = (res: JsonResponse): boolean => res.status === 200 && res.text.includes('name="SAMLResponse"');

/** A LogoutRequest of the SAML app, signed by it (HTTP-Redirect), ending the sign-in `given`; addressed to `destination` when given. */
function samlLogoutQuery(given: { nameId: string; sessionIndex: string }, destination?: string): string {
  const xml =
    `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
    `Version="2.0" IssueInstant="${new Date().toISOString()}"${destination ? ` Destination="${destination}"` : ''}>` +
    `<saml:Issuer>${SAML_APP}</saml:Issuer>` +
    `<saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent">${given.nameId}</saml:NameID>` +
    `<samlp:SessionIndex>${given.sessionIndex}</samlp:SessionIndex></samlp:LogoutRequest>`;
  return signedRedirectQuery({ SAMLRequest: encodeRedirectMessage(xml) }, SAML_APP_KEY);
}

describe('each hosted box stays its own: box A’s everything, presented at box B', function () {
  this.timeout(180_000);
  let host: Host;
  let a: Loot;
  let b: Box;
  let bRoot: string;
  const svcKey = clientKey(); // the same key registered for `svc` in both boxes

  before(async function () {
    host = await Host.start([{ team: 'team-a' }, { team: 'team-b' }]);
    await Promise.all([host.ready('team-a'), host.ready('team-b')]);
    b = host.box('team-b');
    // B has the same records, and alice signed in there too: B's own credentials are live.
    const bLoot = await loot(b, svcKey);
    bRoot = bLoot.root;
    a = await loot(host.box('team-a'), svcKey);
  });
  after(async function () {
    await host?.stop();
  });

  const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

  /** Every API of a box a bearer token opens, each as a request a token of root (or alice's) is taken at. */
  const BEARER_ENDPOINTS: [method: string, path: string, token: () => string][] = [
    ['GET', '/Client', () => a.root],
    ['GET', '/Client/web', () => a.root],
    ['GET', '/AccessPolicy', () => a.root],
    ['GET', '/App', () => a.root],
    ['GET', '/users', () => a.root],
    ['GET', '/groups', () => a.root],
    ['GET', '/Session', () => a.root],
    ['GET', '/AuditEvent', () => a.root],
    ['GET', '/settings', () => a.root],
    ['GET', '/settings/notices', () => a.root],
    ['GET', '/keys', () => a.root],
    ['GET', '/authz/decisions?app=wiki', () => a.root],
    ['GET', '/scim/v2/Users', () => a.root],
    ['GET', '/scim/v2/Groups', () => a.root],
    ['GET', '/auth/userinfo', () => a.accessToken],
    ['GET', '/Client/svc', () => a.jwt],
  ];

  /**
   * A LogoutRequest the SAML app sent A for a sign-in of alice there (her NameID at A, the SessionIndex of A's
   * session), in alice's browser at B, signed in there and to the same app: taken when it signs the browser out.
   */
  function samlLogout(name: string, toA: boolean): Attack {
    let atA: Promise<{ browser: FormAgent; query: string }> | undefined;
    return {
      name,
      attempt: async (target) => {
        atA ??= (async () => {
          const browser = new FormAgent(a.box);
          expect((await browser.signIn(EMAIL, PASSWORD)).status).to.equal(303);
          const given = await samlAppSignIn(browser, SAML_APP);
          return { browser, query: samlLogoutQuery(given, toA ? `${a.box.url}/auth/saml/slo` : undefined) };
        })();
        const { browser: atAlice, query } = await atA;
        const browser = target === b ? await samlSignedInAtB() : atAlice;
        const answer = await browser.get(`/auth/saml/slo?${query}`);
        if (answer.status >= 500) return answer;
        // Signed out, the account page sends the browser to sign in.
        return { ...answer, status: (await browser.get('/auth/account')).status === 303 ? 200 : 403 };
      },
      taken: ok,
    };
  }

  const attacks: Attack[] = [
    ...BEARER_ENDPOINTS.map(([method, path, token]): Attack => ({
      name: `${method} ${path} with A's ${token === BEARER_ENDPOINTS[0]![2] ? 'root token' : 'token'}`,
      attempt: (target) => target.request(method, path, { headers: { ...bearer(token()), Accept: 'application/json' } }),
      taken: ok,
    })),
    {
      name: "A's JWT access token (A's key, a kid of the same shape) at the API",
      attempt: (target) => target.json('GET', '/Client/svc', undefined, a.jwt),
      taken: ok,
    },
    {
      name: "A's refresh token of web (same client id and secret at B)",
      attempt: async (target) => {
        const res = await refresh(target, a.refreshToken);
        if (target === a.box && ok(res)) a.refreshToken = res.body.refresh_token ?? a.refreshToken;
        return res;
      },
      taken: ok,
    },
    {
      name: "A's authorization code of web (B first: it must still be A's to redeem)",
      attempt: (() => {
        let code: Promise<string> | undefined;
        return async (target: Box) => redeem(target, await (code ??= codeOf(a.browser)));
      })(),
      taken: ok,
    },
    {
      name: "A's ID token as id_token_hint (prompt=none) in alice's browser at B",
      attempt: (target) => (target === b ? new FormAgent(b) : a.browser).get(authorizePath({ prompt: 'none', id_token_hint: a.idToken })),
      taken: codeIn,
    },
    {
      name: "A's access token of alice as a subject_token (token exchange by svc)",
      attempt: (target) =>
        target.form('/auth/token', {
          grant_type: EXCHANGE,
          subject_token: a.accessToken,
          subject_token_type: ACCESS_TOKEN,
          audience: ORDERS,
          client_assertion_type: JWT_BEARER,
          client_assertion: svcKey.assertion('svc', target.url),
        }),
      taken: ok,
    },
    {
      name: "a client assertion of svc signed for A's token endpoint (the same key registered at B; B first: its jti still A's)",
      attempt: (() => {
        let assertion: string | undefined;
        return (target: Box) => {
          assertion ??= svcKey.assertion('svc', a.box.url);
          return target.form('/auth/token', {
            grant_type: 'client_credentials',
            client_assertion_type: JWT_BEARER,
            client_assertion: assertion,
          });
        };
      })(),
      taken: ok,
    },
    {
      name: "A's DPoP-bound token with a fresh proof of its key for the request",
      attempt: async (target) => {
        const url = `${target.url}/Client/bound`;
        return target.request('GET', '/Client/bound', {
          headers: {
            Authorization: `DPoP ${a.dpopToken}`,
            DPoP: await proof(a.dpopKey, { htm: 'GET', htu: url, ath: ath(a.dpopToken) }),
          },
        });
      },
      taken: ok,
    },
    {
      name: "A's device code, polled at B by web",
      attempt: (() => {
        let deviceCode: Promise<string> | undefined;
        return async (target: Box) => {
          deviceCode ??= askDevice().then((r) => r.device_code);
          return target.form(
            '/auth/token',
            { grant_type: DEVICE, device_code: await deviceCode },
            { Authorization: basic('web', WEB_SECRET) },
          );
        };
      })(),
      // Pending is what a live device code answers; B knows none.
      taken: (res) => res.body?.error === 'authorization_pending' || res.body?.error === 'slow_down',
    },
    {
      name: "A's user code, typed into alice's signed-in browser at B",
      attempt: (() => {
        let userCode: Promise<string> | undefined;
        return async (target: Box) => {
          userCode ??= askDevice().then((r) => r.user_code);
          const code = await userCode;
          const browser = target === b ? await signedInAtB() : a.browser;
          const page = await browser.get(`/auth/device/verify?${new URLSearchParams({ user_code: code })}`);
          return { ...page, status: page.text.includes('name="decision"') && page.text.includes(code) ? 200 : 404 };
        };
      })(),
      taken: ok,
    },
    {
      name: "A's PAR request_uri, in alice's signed-in browser at B",
      attempt: (() => {
        let requestUri: Promise<string> | undefined;
        return async (target: Box) => {
          requestUri ??= a.box
            .form(
              '/auth/par',
              { response_type: 'code', client_id: 'web', redirect_uri: APP_REDIRECT, scope: 'openid' },
              { Authorization: basic('web', WEB_SECRET) },
            )
            .then((r) => {
              expect(r.status, r.text).to.equal(201);
              return r.body.request_uri as string;
            });
          const browser = target === b ? await signedInAtB() : a.browser;
          return browser.get(`/auth/authorize?${new URLSearchParams({ client_id: 'web', request_uri: await requestUri })}`);
        };
      })(),
      taken: codeIn,
    },
    {
      name: "A's browser cookies (session, CSRF, boxauth_device): signed in at B?",
      attempt: (target) => (target === b ? a.browser.at(b) : a.browser).get(authorizePath()),
      taken: codeIn,
    },
    {
      name: "A's sign-in form (its CSRF token and cookies) posted at B with alice's right password",
      attempt: async (target) => {
        const agent = new FormAgent(a.box);
        const fields = hiddenFields((await agent.get('/auth/sign-in')).text);
        return target.request('POST', '/auth/sign-in', {
          headers: { ...agent.cookieHeader('/auth/sign-in'), 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ ...fields, email: EMAIL, password: PASSWORD }).toString(),
        });
      },
      taken: (res) => res.status === 303 && res.headers.getSetCookie().length > 0,
    },
    {
      name: "A's account page cookies at B",
      attempt: (target) => (target === b ? a.browser.at(b) : a.browser).get('/auth/account'),
      taken: (res) => res.status === 200 && res.text.includes(EMAIL),
    },
    {
      name: "A's gate cookie of the App wiki (forward-auth)",
      attempt: (target) =>
        target.request('GET', '/authz/forward-auth/wiki', {
          headers: {
            'X-Forwarded-Method': 'GET',
            'X-Forwarded-Proto': 'https',
            'X-Forwarded-Host': new URL(WIKI).host,
            'X-Forwarded-Uri': '/page',
            Cookie: a.gateCookie,
          },
        }),
      taken: (res) => res.status === 200,
    },
    {
      name: "A's SAML AuthnRequest of wiki-saml, signed by the app for A's SSO URL (HTTP-Redirect), in alice's browser signed in at B",
      attempt: (() => {
        let query: string | undefined;
        return async (target: Box) => {
          const request = (): string => samlAppAuthnRequest(SAML_APP, `${a.box.url}/auth/saml/sso`);
          query ??= signedRedirectQuery({ SAMLRequest: encodeRedirectMessage(request()) }, SAML_APP_KEY);
          return (target === b ? await signedInAtB() : a.browser).get(`/auth/saml/sso?${query}`);
        };
      })(),
      taken: samlResponseIn,
    },
    {
      name: "A's SAML AuthnRequest of wiki-saml, signed in its XML for A's SSO URL (HTTP-POST), in alice's browser signed in at B",
      attempt: (() => {
        let request: string | undefined;
        return async (target: Box) => {
          const signed = (): string =>
            signEnveloped(samlAppAuthnRequest(SAML_APP, `${a.box.url}/auth/saml/sso`), 'AuthnRequest', SAML_APP_KEY);
          request ??= Buffer.from(signed()).toString('base64');
          const browser = target === b ? await signedInAtB() : a.browser;
          const posted = await browser.post('/auth/saml/sso', { SAMLRequest: request });
          return posted.status === 303 ? browser.get(posted.headers.get('location')!) : posted;
        };
      })(),
      taken: samlResponseIn,
    },
    samlLogout("A's SAML LogoutRequest of wiki-saml (signed, for A's SLO URL)", true),
    samlLogout("A's SAML LogoutRequest of wiki-saml without a Destination (signed: an app that leaves it out)", false),
    {
      name: "A's SAML Response from the provider both boxes trust (corp), posted to B's ACS in a browser that began a sign-in at B",
      attempt: (() => {
        let issued: Promise<{ browser: FormAgent; response: string }> | undefined;
        return async (target: Box) => {
          issued ??= (async () => {
            const browser = new FormAgent(a.box);
            const { id } = authnRequestOf(await startSaml(browser, 'corp'));
            const email = `carol-${randomBytes(3).toString('hex')}@example.com`;
            return {
              browser,
              response: corp.response(a.box, 'corp', { requestId: id, nameId: `corp-${email}`, attributes: { email: [email] } }),
            };
          })();
          const { browser, response } = await issued;
          if (target === a.box) return postResponse(browser, 'corp', response);
          const atB = new FormAgent(b);
          authnRequestOf(await startSaml(atB, 'corp'));
          return postResponse(atB, 'corp', response);
        };
      })(),
      taken: (res) => res.status === 303,
    },
    {
      name: "A's SCIM bearer creating a person at B",
      attempt: (target) =>
        target.request('POST', '/scim/v2/Users', {
          headers: { ...bearer(a.root), 'Content-Type': 'application/scim+json' },
          body: JSON.stringify({
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
            userName: `mallory-${randomBytes(3).toString('hex')}@example.com`,
          }),
        }),
      taken: ok,
    },
    {
      name: "A's token at B's SSF stream management",
      attempt: (target) => target.json('GET', '/ssf/streams', undefined, a.root),
      // A has root's token (403: it lacks the scope); B does not know it (401).
      taken: (res) => res.status !== 401,
    },
    {
      name: "A's token at B's AuthZEN evaluation",
      attempt: (target) =>
        target.json(
          'POST',
          '/apps/wiki/access/v1/evaluation',
          { subject: { type: 'client', id: 'svc' }, action: { name: 'GET' }, resource: { type: 'route', id: '/page' } },
          a.root,
        ),
      taken: (res) => res.status !== 401,
    },
  ];

  /** A device authorization of web at A. */
  const askDevice = async (): Promise<{ device_code: string; user_code: string }> => {
    const res = await a.box.form('/auth/device', { scope: 'openid' }, { Authorization: basic('web', WEB_SECRET) });
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  let bSamlBrowser: FormAgent | undefined;
  /** Alice's browser at B, signed in at B and to B's wiki-saml: a session the app takes part in, which its LogoutRequest could end. */
  async function samlSignedInAtB(): Promise<FormAgent> {
    if (!bSamlBrowser) {
      bSamlBrowser = new FormAgent(b);
      expect((await bSamlBrowser.signIn(EMAIL, PASSWORD)).status).to.equal(303);
      await samlAppSignIn(bSamlBrowser, SAML_APP);
    }
    return bSamlBrowser;
  }

  let bBrowser: FormAgent | undefined;
  /** Alice's own browser at B, signed in at B: the attacker's best place to use A's codes. */
  async function signedInAtB(): Promise<FormAgent> {
    if (!bBrowser) {
      bBrowser = new FormAgent(b);
      expect((await bBrowser.signIn(EMAIL, PASSWORD)).status).to.equal(303);
    }
    return bBrowser;
  }

  for (const attack of attacks) {
    it(`refuses at B: ${attack.name}`, async function () {
      const atB = await attack.attempt(b);
      expect(attack.taken(atB), `taken at B: ${atB.status} ${atB.text.slice(0, 300)}`).to.equal(false);
      if (atB.status >= 500) expect.fail(`B failed instead of refusing: ${atB.status} ${atB.text.slice(0, 300)}`);
      const atA = await attack.attempt(a.box);
      expect(attack.taken(atA), `the control at A: ${atA.status} ${atA.text.slice(0, 300)}`).to.equal(true);
    });
  }

  describe("B asked to end A's grants ends nothing of A's", function () {
    it('introspection of each of A’s tokens at B (B’s root, and web with the same id and secret): inactive', async function () {
      for (const token of [a.root, a.accessToken, a.refreshToken, a.jwt, a.dpopToken, a.idToken]) {
        for (const auth of [basic('root', b.rootSecret), basic('web', WEB_SECRET)]) {
          const res = await b.form('/auth/introspect', { token }, { Authorization: auth });
          expect(res.body, `introspected at B: ${res.text}`).to.deep.equal({ active: false });
        }
      }
    });

    it("revocation at B of A's refresh and access tokens, DELETE /Session at B with them: A's grant lives on", async function () {
      for (const token of [a.refreshToken, a.accessToken]) {
        const res = await b.form('/auth/revoke', { token }, { Authorization: basic('web', WEB_SECRET) });
        expect(res.status).to.be.oneOf([200, 400, 401]);
      }
      for (const token of [a.accessToken, a.root, a.jwt]) {
        expect((await b.request('DELETE', '/Session', { headers: bearer(token) })).status).to.equal(401);
      }
      // A's session by its id, with B's own root: B has no such session.
      const sessions = await a.box.json('GET', '/Session', undefined, a.root);
      const ids = (sessions.body.entry as { resource: { id: string } }[]).map((e) => e.resource.id);
      expect(ids.length).to.be.greaterThan(0);
      for (const id of ids) {
        const res = await b.json('DELETE', `/Session/${encodeURIComponent(id)}`, undefined, bRoot);
        expect(res.status, res.text).to.be.oneOf([404, 400]);
      }
      expect((await a.box.json('GET', '/auth/userinfo', undefined, a.accessToken)).status, "A's access token").to.equal(200);
      const refreshed = await refresh(a.box, a.refreshToken);
      expect(refreshed.status, `A's refresh token: ${refreshed.text}`).to.equal(200);
      a.refreshToken = refreshed.body.refresh_token ?? a.refreshToken;
      expect((await a.box.json('GET', '/Client', undefined, a.root)).status, "A's root token").to.equal(200);
    });

    it("a Response A's IdP issued to A's SAML app, at B's ACS of a provider that trusts A's IdP: refused", async function () {
      // B's attacker-friendliest set-up: B takes people from A's IdP, so A's signature is one B checks as good.
      const idpMetadata = (await a.box.request('GET', '/auth/saml/metadata')).text;
      const provider = await b.json(
        'PUT',
        '/IdentityProvider/team-a',
        { type: 'saml', displayName: 'Team A', saml: { entityId: `${a.box.url}/auth/saml/metadata`, metadata: { xml: idpMetadata } } },
        bRoot,
      );
      expect(provider.status, provider.text).to.be.oneOf([200, 201]);
      const browserA = new FormAgent(a.box);
      expect((await browserA.signIn(EMAIL, PASSWORD)).status).to.equal(303);
      const response = await samlAppResponse(browserA, SAML_APP);
      // It is A's, signed with the key B's provider trusts.
      const arrived = await readSamlXml(Buffer.from(response, 'base64').toString('utf8'), 'protocol');
      const certificates = await idpCertificates(a.box);
      expect(() => verifiedResponse(arrived, certificates, arrived)).to.not.throw();
      const atB = new FormAgent(b);
      const toA = authnRequestOf(await startSaml(atB, 'team-a'));
      expect(toA.url.origin).to.equal(new URL(a.box.url).origin);
      const answer = await postResponse(atB, 'team-a', response);
      expect(answer.status, answer.text.slice(0, 300)).to.equal(400);
      expect((await atB.get('/auth/account')).status, 'nobody signed in at B').to.equal(303);
    });

    it('A and B sign the same claims with keys of their own: no kid of A’s is in B’s key set', async function () {
      const kids = async (box: Box): Promise<string[]> =>
        ((await box.json('GET', '/.well-known/jwks.json')).body.keys as { kid: string }[]).map((k) => k.kid);
      const [ofA, ofB] = [await kids(a.box), await kids(b)];
      expect(ofA.filter((k) => ofB.includes(k))).to.deep.equal([]);
      const kidOf = (jwt: string): string => JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()).kid;
      expect(ofA).to.include(kidOf(a.jwt));
      expect(kidOf(a.jwt)).to.match(/^[\w-]+$/); // B's kids are of the same shape: nothing tells them apart but the key
    });
  });
});

describe("each hosted box's notices go out under its own rules, not the last box opened's", function () {
  this.timeout(120_000);
  let host: Host;
  const got: string[] = [];
  const receiver = http.createServer((req, res) => {
    got.push(req.url ?? '');
    req.resume();
    res.writeHead(204).end();
  });
  let base = '';

  before(async function () {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    // B's administrator allows its receivers at loopback; A's does not.
    host = await Host.start([{ team: 'team-a' }, { team: 'team-b', env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } }]);
    await Promise.all([host.ready('team-a'), host.ready('team-b')]);
  });
  after(async function () {
    await host?.stop();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it("B's webhook reaches its receiver while A is open too; A's is refused by A's own rules", async function () {
    // B opened first, A last: a process-wide allow-list would be A's now.
    const hook = async (team: string): Promise<Box> => {
      const box = host.box(team);
      const root = await box.rootToken();
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const body = { url: `${base}/${team}`, events: ['io.boxauth.resource.created'], secret };
      const res = await box.json('PUT', '/Webhook/changes', body, root);
      expect(res.status, res.text).to.equal(201);
      return box;
    };
    const b = await hook('team-b');
    const a = await hook('team-a');
    for (const box of [a, b]) {
      const res = await box.json(
        'PUT',
        '/Client/made',
        { grant_types: ['client_credentials'], secret: 'made-secret-123' },
        await box.rootToken(),
      );
      expect(res.status, res.text).to.equal(201);
    }
    await eventually('B’s notice delivered', async () => got.includes('/team-b'), 20_000);
    await sleep(2000); // A's had as long: it never comes
    expect(got).to.not.include('/team-a');
  });
});
