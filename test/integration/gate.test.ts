// The decision point over HTTP, as gateways call it (forward-auth, Envoy's HTTP
// service); AuthZEN PEPs are in ./authzen.test.ts, real gateways in front of it in
// test/e2e/gateways/. Policies name their app; a policy of one target never
// decides for another; tokens must be for the app's audience; ambiguous paths are
// refused; people are sent to sign in and come back with the app's own cookie.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { FormAgent } from '../support/form-agent.js';
import { userToken } from '../support/user-token.js';

/** A GET with `target` as its request line holds it: no URL parser in between. */
function requestLine(port: number, target: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: target, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the decision point', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let wiki: string; // the app's url: the box's own origin, so that /.boxauth/* reaches the box with the app's Host
  let staffId: number;

  const policy = (id: string, body: Record<string, unknown>) => box.json('PUT', `/AccessPolicy/${id}`, body, root);

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password' } });
    root = await box.rootToken();
    wiki = box.url;
    const staff = (await box.json('POST', '/groups', { name: 'staff' }, root)).body.id;
    staffId = (await box.json('POST', '/users', { email: 'sam@example.com', password: 'sam-password-1', 'group-ids': [staff] }, root)).body
      .id;
    await box.json('POST', '/users', { email: 'ola@example.com', password: 'ola-password-1' }, root);
    // The app's sign-in client, and a service with tokens for the app's audience.
    await box.addClient(
      'wiki-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${wiki}/.boxauth/callback` } },
      },
      { secret: 'wiki-sso-secret', policy: false },
    );
    await box.addClient('indexer', { audience: ['https://wiki.example'] }, { secret: 'indexer-secret', policy: false });
    const put = await box.json(
      'PUT',
      '/App/wiki',
      { urls: [wiki], audience: 'https://wiki.example', signIn: { client: 'wiki-sso' }, policyHeaders: ['x-team'] },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    await box.json('PUT', '/App/other', { urls: ['https://other.example'] }, root);
    // The wiki: staff read and write, the indexer reads, /health is public.
    await policy('wiki-staff', { app: 'wiki', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] });
    await policy('wiki-indexer-reads', {
      app: 'wiki',
      engine: 'matcho',
      link: [{ id: 'indexer', resourceType: 'Client' }],
      matcho: { 'request-method': 'get', path: '#^/docs/' },
    });
    await policy('wiki-health', { app: 'wiki', engine: 'matcho', matcho: { path: '/health', 'request-method': 'get' } });
  });
  after(async function () {
    await box?.stop();
  });

  const indexerToken = async (audience = 'https://wiki.example'): Promise<string> =>
    (await box.form('/auth/token', { grant_type: 'client_credentials', audience }, { Authorization: basic('indexer', 'indexer-secret') }))
      .body.access_token;

  /** A forward-auth check, as Traefik sends it. */
  const forwardAuth = (uri: string, headers: Record<string, string> = {}, method = 'GET', app = 'wiki') =>
    box.request('GET', `/authz/forward-auth/${app}`, {
      headers: {
        'X-Forwarded-Method': method,
        'X-Forwarded-Proto': 'http',
        'X-Forwarded-Host': new URL(wiki).host,
        'X-Forwarded-Uri': uri,
        ...headers,
      },
    });

  describe('policies name their app', function () {
    it('a token of the app audience is allowed by the app policies; allow is exactly 200, with the caller in headers', async function () {
      const token = await indexerToken();
      const res = await forwardAuth('/docs/a?x=1', { Authorization: `Bearer ${token}` });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('x-auth-request-client')).to.equal('indexer');
      expect(res.headers.get('x-auth-request-user')).to.equal('');
      expect(res.headers.get('x-boxauth-decision')).to.match(/^[0-9a-f-]{36}$/);
      const write = await forwardAuth('/docs/a', { Authorization: `Bearer ${token}` }, 'POST');
      expect(write.status).to.equal(403);
      expect(write.body.error).to.equal('access_denied');
    });

    it('deny by default: anonymous callers get 401 with a challenge, except where a policy allows anyone', async function () {
      const res = await forwardAuth('/docs/a');
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.equal(
        `Bearer realm="wiki", resource_metadata="${wiki}/.well-known/oauth-protected-resource"`,
      );
      expect((await forwardAuth('/health')).status).to.equal(200);
      // The identity headers are emptied for anonymous callers, so that a client cannot send its own.
      const spoofed = await forwardAuth('/health', { 'X-Auth-Request-Email': 'boss@example.com' });
      expect(spoofed.headers.get('x-auth-request-email')).to.equal('');
    });

    it('a policy for one app never allows anything at another, nor on the box API, and box policies never allow at an app', async function () {
      // An allow-everything policy for the indexer on the box API, and one at app "other".
      await policy('indexer-box-everything', { engine: 'allow', link: [{ id: 'indexer', resourceType: 'Client' }] });
      await policy('indexer-other-everything', { app: 'other', engine: 'allow', link: [{ id: 'indexer', resourceType: 'Client' }] });
      try {
        const token = await indexerToken();
        expect((await forwardAuth('/admin', { Authorization: `Bearer ${token}` })).status).to.equal(403);
        // And the wiki's policies do not reach the box API: a box token of the indexer, wiki policies only.
        await box.json('DELETE', '/AccessPolicy/indexer-box-everything', undefined, root);
        const boxToken = (
          await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('indexer', 'indexer-secret') })
        ).body.access_token;
        await policy('wiki-indexer-everything', { app: 'wiki', engine: 'allow', link: [{ id: 'indexer', resourceType: 'Client' }] });
        expect((await box.json('GET', '/Client/indexer', undefined, boxToken)).status).to.equal(403);
      } finally {
        for (const id of ['indexer-box-everything', 'indexer-other-everything', 'wiki-indexer-everything']) {
          await box.json('DELETE', `/AccessPolicy/${id}`, undefined, root);
        }
      }
    });

    it("a policy's app cannot change, nor be added or removed", async function () {
      const moved = await policy('wiki-health', { app: 'other', engine: 'allow' });
      expect(moved.status).to.equal(422);
      expect(moved.body.errors.app[0]).to.match(/cannot change/);
      expect((await policy('wiki-health', { engine: 'allow' })).status).to.equal(422);
      expect((await box.json('GET', '/AccessPolicy/wiki-health', undefined, root)).body.app).to.equal('wiki');
    });

    it('tokens must be for the app: a box token (no audience) or another audience is refused with 401', async function () {
      const boxToken = (
        await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('indexer', 'indexer-secret') })
      ).body.access_token;
      const res = await forwardAuth('/docs/a', { Authorization: `Bearer ${boxToken}` });
      expect(res.status).to.equal(401);
      expect(res.body.error_description).to.match(/not this app/);
      expect(res.headers.get('www-authenticate')).to.match(/error="invalid_token"/);
    });

    it('a closed session is refused at the gate at once', async function () {
      const token = await indexerToken();
      expect((await forwardAuth('/docs/a', { Authorization: `Bearer ${token}` })).status).to.equal(200);
      expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
      expect((await forwardAuth('/docs/a', { Authorization: `Bearer ${token}` })).status).to.equal(401);
    });

    it('a policy change applies at once', async function () {
      const token = await indexerToken();
      expect((await forwardAuth('/notes/1', { Authorization: `Bearer ${token}` })).status).to.equal(403);
      await policy('wiki-indexer-notes', {
        app: 'wiki',
        engine: 'matcho',
        link: [{ id: 'indexer', resourceType: 'Client' }],
        matcho: { path: '#^/notes/' },
      });
      await eventually(
        'the new policy',
        async () => (await forwardAuth('/notes/1', { Authorization: `Bearer ${token}` })).status === 200,
        5000,
      );
      await box.json('DELETE', '/AccessPolicy/wiki-indexer-notes', undefined, root);
    });
  });

  describe('what the app is told', function () {
    it("the caller travels in the App's header names, and in a JWT the box signs for the app's audience", async function () {
      const put = await box.json(
        'PUT',
        '/App/api',
        {
          urls: ['https://api.example'],
          upstream: {
            headers: { user: 'X-User', email: 'X-Email', groups: 'X-Groups', client: 'X-Client' },
            token: { header: 'Authorization', lifetime: 30 },
          },
        },
        root,
      );
      expect(put.status, put.text).to.equal(201);
      await policy('api-staff', { app: 'api', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] });
      const token = await userToken(box, staffId, 'root', 'https://api.example');
      const allowed = await box.request('GET', '/authz/http/api/orders', {
        headers: { Authorization: `Bearer ${token}`, Host: 'api.example' },
      });
      expect(allowed.status, allowed.text).to.equal(200);
      expect(allowed.headers.get('x-user')).to.equal(String(staffId));
      expect(allowed.headers.get('x-email')).to.equal('sam@example.com');
      expect(allowed.headers.get('x-groups')).to.equal('staff');
      expect(allowed.headers.get('x-client')).to.equal('root');
      expect(allowed.headers.get('x-auth-request-user')).to.equal(null);

      // The app verifies the JWT offline with the box's JWKS: the box's issuer, the app's audience, short-lived.
      const jwt = /^Bearer (.+)$/.exec(allowed.headers.get('authorization') ?? '')?.[1];
      expect(jwt, 'Authorization: Bearer <jwt>').to.be.a('string');
      expect(jwt).to.not.equal(token);
      const jwks = createLocalJWKSet((await box.request('GET', '/.well-known/jwks.json')).body);
      const { payload } = await jwtVerify(jwt!, jwks, { issuer: box.url, audience: 'https://api.example' });
      expect(payload).to.include({ sub: String(staffId), email: 'sam@example.com', client_id: 'root' });
      expect(payload.groups).to.deep.equal(['staff']);
      expect(payload.exp! - payload.iat!).to.equal(30);
      // It is no key to the box's own API, and it ends with the session it was made for.
      expect((await box.json('GET', '/users', undefined, jwt)).status).to.equal(401);
      expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
      const after = await box.request('GET', '/authz/http/api/orders', {
        headers: { Authorization: `Bearer ${jwt}`, Host: 'api.example' },
      });
      expect(after.status).to.equal(401);
      await box.json('DELETE', '/AccessPolicy/api-staff', undefined, root);
      await box.json('DELETE', '/App/api', undefined, root);
    });
    it("with the JWT in Authorization, an anonymous request's own Authorization never reaches the app", async function () {
      await box.json('PUT', '/App/desk', { urls: ['https://desk.example'], upstream: { token: { header: 'Authorization' } } }, root);
      await policy('desk-staff', { app: 'desk', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] });
      await policy('desk-public', { app: 'desk', engine: 'matcho', matcho: { path: '#^/public/' } });
      try {
        const token = await userToken(box, staffId, 'root', 'https://desk.example');
        const ask = (path: string, authorization: string) =>
          box.request('GET', `/authz/http/desk${path}`, { headers: { Authorization: authorization, Host: 'desk.example' } });
        const jwt = (await ask('/private', `Bearer ${token}`)).headers.get('authorization')!;
        expect(jwt).to.match(/^Bearer ey/);
        // The session ends: the gate refuses its JWT; an app verifying it offline would not know.
        expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
        expect((await ask('/public/x', jwt)).status).to.equal(401);
        // Sent so that the gate reads no bearer token (a JWT library's looser parsing still finds it),
        // the request is anonymous, and allowed here: the app must not get that Authorization.
        for (const smuggled of [`${jwt} x`, `${jwt},Bearer x`, jwt.replace(' ', '\t')]) {
          const res = await ask('/public/x', smuggled);
          expect(res.status, res.text).to.equal(200);
          expect(res.headers.get('authorization'), JSON.stringify(smuggled)).to.equal('');
        }
      } finally {
        for (const id of ['desk-staff', 'desk-public']) await box.json('DELETE', `/AccessPolicy/${id}`, undefined, root);
        await box.json('DELETE', '/App/desk', undefined, root);
      }
    });

    it('the JWT names the caller as they are now: a new email or group is in the next one, however long the last one lives', async function () {
      await box.json(
        'PUT',
        '/App/notes',
        { urls: ['https://notes.example'], upstream: { token: { header: 'X-Jwt', lifetime: 3600 } } },
        root,
      );
      await policy('notes-staff', { app: 'notes', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] });
      const staff = (await box.json('GET', '/groups?name=staff', undefined, root)).body[0].id;
      const editors = (await box.json('POST', '/groups', { name: 'notes-editors' }, root)).body.id;
      const kim = (
        await box.json('POST', '/users', { email: 'kim@example.com', password: 'kim-password-1', 'group-ids': [staff, editors] }, root)
      ).body.id;
      try {
        const token = await userToken(box, kim, 'root', 'https://notes.example');
        const ask = () =>
          box.request('GET', '/authz/http/notes/page', { headers: { Authorization: `Bearer ${token}`, Host: 'notes.example' } });
        const claims = async () => {
          const res = await ask();
          expect(res.status, res.text).to.equal(200);
          return { header: res.headers.get('x-auth-request-groups'), jwt: decodeJwt(res.headers.get('x-jwt')!) };
        };
        expect((await claims()).jwt.groups).to.have.members(['notes-editors', 'staff']);
        // Kim is no longer an editor, and has a new address: the gate says so at once, and so must the JWT.
        expect((await box.json('PUT', `/users/${kim}`, { email: 'kim@new.example', 'group-ids': [staff] }, root)).status).to.equal(200);
        const now = await eventually('the gate to see the change', async () => {
          const c = await claims();
          return c.header === 'staff' && c;
        });
        expect(now.jwt.groups).to.deep.equal(['staff']);
        expect(now.jwt.email).to.equal('kim@new.example');
      } finally {
        await box.json('DELETE', `/users/${kim}`, undefined, root);
        await box.json('DELETE', `/groups/${editors}`, undefined, root);
        await box.json('DELETE', '/AccessPolicy/notes-staff', undefined, root);
        await box.json('DELETE', '/App/notes', undefined, root);
      }
    });
  });

  describe('one meaning per path', function () {
    it('decodes the path once: /%61dmin is tested as /admin', async function () {
      await policy('wiki-no-admin', { app: 'wiki', engine: 'matcho', matcho: { path: '#^/(?:public)/' } });
      try {
        expect((await forwardAuth('/public/x')).status).to.equal(200);
        expect((await forwardAuth('/%70ublic/x')).status).to.equal(200); // the same path, spelled otherwise
        expect((await forwardAuth('/admin')).status).to.equal(401);
      } finally {
        await box.json('DELETE', '/AccessPolicy/wiki-no-admin', undefined, root);
      }
    });

    for (const path of [
      '/public/../admin',
      '/public/%2e%2e/admin',
      '//admin',
      '/public%2F..%2Fadmin',
      '/public\\..\\admin',
      '/%ZZ',
      // Tomcat, Jetty and Spring drop ;parameters before resolving: /admin to them.
      '/public/..;/admin',
      '/public/..;jsessionid=x/admin',
      '/public/.;x/..;/admin',
      '/;x/admin',
    ]) {
      it(`refuses the ambiguous path ${path} (400), whatever the policies`, async function () {
        await policy('wiki-open', { app: 'wiki', engine: 'allow' });
        try {
          const res = await forwardAuth(path);
          expect(res.status, res.text).to.equal(400);
          // ingress-nginx sends it in X-Original-URL, as the client sent it: read as it is, not as a URL parser resolves it.
          const ingress = await box.request('GET', '/authz/forward-auth/wiki', {
            headers: { 'X-Original-URL': `${wiki}${path}`, 'X-Original-Method': 'GET' },
          });
          expect(ingress.status, `X-Original-URL: ${ingress.text}`).to.equal(400);
        } finally {
          await box.json('DELETE', '/AccessPolicy/wiki-open', undefined, root);
        }
      });
    }

    it("Envoy's HTTP door reads the original path as Envoy sent it, once: %3F, %23, %2F and %25 are no delimiters", async function () {
      await policy('wiki-public', { app: 'wiki', engine: 'matcho', matcho: { path: '#^/public/' } });
      try {
        // As Envoy sends them (undici's fetch would resolve the dot segments first).
        const raw = (target: string) => requestLine(box.port, `/authz/http/wiki${target}`);
        expect((await raw('/public/x')).status).to.equal(200);
        // An app (or a proxy before it) resolves these to /admin; read twice, the policy saw /public.
        for (const target of ['/public/x%3F/../../admin', '/public/x%23/../../admin', '/public/%3F/../../admin']) {
          const res = await raw(target);
          expect(res.status, `${target}: ${res.text}`).to.equal(400);
        }
        expect((await raw('/public%2Fx')).status, 'an encoded slash').to.equal(400);
        // %2570 is the three characters %70 to the app, not a p.
        expect((await raw('/%2570ublic/x')).status).to.equal(401);
      } finally {
        await box.json('DELETE', '/AccessPolicy/wiki-public', undefined, root);
      }
    });
  });

  describe('front doors', function () {
    it("Envoy's HTTP service: the original path follows the prefix; Host and method are the original's", async function () {
      const token = await indexerToken();
      const res = await box.request('GET', '/authz/http/wiki/docs/b?q=1', { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status, res.text).to.equal(200);
      expect((await box.request('DELETE', '/authz/http/wiki/docs/b', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(
        403,
      );
    });

    it('forward-auth reads NGINX (X-Original-URI, X-Original-Method) and ingress-nginx (X-Original-URL) too', async function () {
      const token = await indexerToken();
      const nginx = await box.request('GET', '/authz/forward-auth/wiki', {
        headers: { 'X-Original-URI': '/docs/c', 'X-Original-Method': 'GET', Authorization: `Bearer ${token}` },
      });
      expect(nginx.status, nginx.text).to.equal(200);
      const ingress = await box.request('GET', '/authz/forward-auth/wiki', {
        headers: { 'X-Original-URL': `${wiki}/docs/c`, 'X-Original-Method': 'DELETE', Authorization: `Bearer ${token}` },
      });
      expect(ingress.status).to.equal(403);
      const none = await box.request('GET', '/authz/forward-auth/wiki', {});
      expect(none.status).to.equal(400);
    });

    it('forward-auth without the original method is refused (400), not decided as a GET', async function () {
      // A DELETE the gateway forgot to name would pass a policy that allows reads.
      await policy('wiki-reads', { app: 'wiki', engine: 'matcho', matcho: { 'request-method': 'get' } });
      try {
        for (const [headers, header] of [
          [{ 'X-Original-URI': '/docs/c' }, 'X-Original-Method'],
          [{ 'X-Original-URL': `${wiki}/docs/c` }, 'X-Original-Method'],
          [{ 'X-Forwarded-Uri': '/docs/c', 'X-Forwarded-Host': new URL(wiki).host }, 'X-Forwarded-Method'],
        ] as const) {
          const res = await box.request('GET', '/authz/forward-auth/wiki', { headers });
          expect(res.status, res.text).to.equal(400);
          expect(res.body.error).to.equal('invalid_request');
          expect(res.body.error_description).to.include(header);
        }
        const odd = await forwardAuth('/docs/c', {}, 'GET /docs/x');
        expect(odd.status, odd.text).to.equal(400);
        expect((await forwardAuth('/docs/c', {}, 'get')).status).to.equal(200);
        expect((await forwardAuth('/docs/c', {}, 'DELETE')).status).to.equal(401);
      } finally {
        await box.json('DELETE', '/AccessPolicy/wiki-reads', undefined, root);
      }
    });

    it('a gateway that does not name the app is matched by host; an unknown host is refused', async function () {
      const token = await indexerToken();
      const byHost = await box.request('GET', '/authz/forward-auth', {
        headers: {
          'X-Forwarded-Method': 'GET',
          'X-Forwarded-Host': new URL(wiki).host,
          'X-Forwarded-Uri': '/docs/d',
          Authorization: `Bearer ${token}`,
        },
      });
      expect(byHost.status, byHost.text).to.equal(200);
      const unknown = await box.request('GET', '/authz/forward-auth', {
        headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Host': 'nowhere.example', 'X-Forwarded-Uri': '/' },
      });
      expect(unknown.status).to.equal(403);
    });

    it('a host two apps claim is refused by host, whichever was written last; each app named is still decided', async function () {
      await box.json('PUT', '/App/shop', { urls: ['https://shop.example'] }, root);
      await box.json('PUT', '/App/shop-copy', { urls: ['https://SHOP.example:443'] }, root);
      await policy('shop-copy-open', { app: 'shop-copy', engine: 'allow' });
      const byHost = () =>
        box.request('GET', '/authz/forward-auth', {
          headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Host': 'shop.example', 'X-Forwarded-Uri': '/admin' },
        });
      try {
        // Which of the two the database returns last changes as they are written: the answer must not.
        for (const rewritten of ['shop', 'shop-copy', 'shop']) {
          const url = rewritten === 'shop' ? 'https://shop.example' : 'https://SHOP.example:443';
          await box.json('PUT', `/App/${rewritten}`, { urls: [url], description: `written ${Date.now()}` }, root);
          await new Promise((resolve) => setTimeout(resolve, 100)); // the change feed
          const res = await byHost();
          expect(res.status, `${rewritten} written last: ${res.text}`).to.equal(403);
        }
        const named = (app: string) =>
          box.request('GET', `/authz/forward-auth/${app}`, { headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/admin' } });
        expect((await named('shop-copy')).status).to.equal(200);
        expect((await named('shop')).status).to.equal(401);
      } finally {
        await box.json('DELETE', '/AccessPolicy/shop-copy-open', undefined, root);
        for (const id of ['shop', 'shop-copy']) await box.json('DELETE', `/App/${id}`, undefined, root);
      }
    });

    it("refusals keep error_description within RFC 6749's characters, in the body and in the challenge", async function () {
      // RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E — no quote, no backslash, ASCII only.
      const allowed = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
      const unknown = await box.request('GET', '/authz/http/nosuchapp/x', { headers: { Accept: 'application/json' } });
      expect(unknown.status).to.equal(403);
      expect(unknown.body.error_description, unknown.text).to.match(allowed).and.include('nosuchapp');
      const forged = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"\u00e9\u00e8"}').toString('base64url')}.`;
      const bad = await forwardAuth('/docs/x', { Authorization: `Bearer ${forged}`, Accept: 'application/json' });
      expect(bad.status).to.equal(401);
      expect(bad.body.error_description, bad.text).to.match(allowed);
      const challenge = /error_description="([^"]*)"/.exec(bad.headers.get('www-authenticate') ?? '');
      expect(challenge?.[1], bad.headers.get('www-authenticate') ?? '').to.match(allowed);
    });
  });

  describe('people in browsers', function () {
    const browserHeaders = { Accept: 'text/html' };

    /** Signs `email` in at the wiki through the box (the flow the first test checks step by step): the app's cookie. */
    async function signedInAtWiki(email: string, password: string): Promise<string> {
      const browser = new FormAgent(box);
      await browser.signIn(email, password);
      const toBox = await browser.get('/.boxauth/start?rd=/docs/page');
      const authorize = new URL(toBox.headers.get('location')!);
      const callback = new URL((await browser.get(`${authorize.pathname}${authorize.search}`)).headers.get('location')!);
      const back = await browser.get(`${callback.pathname}${callback.search}`);
      return back.headers
        .getSetCookie()
        .find((c) => c.startsWith('boxauth-app-wiki='))!
        .split(';')[0]!;
    }

    it('are sent to the box sign-in and back to the page they asked for, with a cookie for the app; signing out of the box ends it', async function () {
      const first = await forwardAuth('/docs/page?x=1', browserHeaders);
      expect(first.status).to.equal(302);
      const start = new URL(first.headers.get('location')!);
      expect(`${start.origin}${start.pathname}`).to.equal(`${wiki}/.boxauth/start`);
      expect(start.searchParams.get('rd')).to.equal('/docs/page?x=1');

      const browser = new FormAgent(box);
      const toBox = await browser.get(`${start.pathname}${start.search}`);
      expect(toBox.status, toBox.text).to.equal(302);
      const authorize = new URL(toBox.headers.get('location')!);
      expect(authorize.searchParams.get('resource')).to.equal('https://wiki.example');
      expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
      expect((await browser.signIn('sam@example.com', 'sam-password-1', `${authorize.pathname}${authorize.search}`)).status).to.equal(303);
      const toApp = await browser.get(`${authorize.pathname}${authorize.search}`);
      const callback = new URL(toApp.headers.get('location')!);
      expect(callback.pathname).to.equal('/.boxauth/callback');
      const back = await browser.get(`${callback.pathname}${callback.search}`);
      expect(back.status, back.text).to.equal(302);
      expect(back.headers.get('location')).to.equal(`${wiki}/docs/page?x=1`);
      const cookie = back.headers.getSetCookie().find((c) => c.startsWith('boxauth-app-wiki='))!;
      expect(cookie).to.match(/HttpOnly; SameSite=Lax/);

      const withCookie = await forwardAuth('/docs/page', { Cookie: cookie.split(';')[0]!, ...browserHeaders });
      expect(withCookie.status, withCookie.text).to.equal(200);
      expect(withCookie.headers.get('x-auth-request-email')).to.equal('sam@example.com');
      expect(withCookie.headers.get('x-auth-request-groups')).to.equal('staff');

      // Sign out of the box: the app's session ends with the browser's.
      const page = await browser.get('/auth/sign-out');
      await browser.post(
        '/auth/sign-out',
        Object.fromEntries([...page.text.matchAll(/name="(csrf|return_to)" value="([^"]*)"/g)].map((m) => [m[1], m[2]])),
      );
      const after = await forwardAuth('/docs/page', { Cookie: cookie.split(';')[0]!, ...browserHeaders });
      expect(after.status).to.equal(302);
      expect(after.headers.getSetCookie().some((c) => c.startsWith('boxauth-app-wiki=;'))).to.equal(true);
    });

    it("signing out of the app is a form of the app's own: a link elsewhere or a forged post signs nobody out", async function () {
      const cookie = await signedInAtWiki('sam@example.com', 'sam-password-1');
      const signedIn = async (): Promise<boolean> =>
        (await forwardAuth('/docs/page', { Cookie: cookie, ...browserHeaders })).status === 200;
      expect(await signedIn()).to.equal(true);

      // A GET (a link, an image on another site) only shows the form.
      const form = await box.request('GET', '/.boxauth/sign-out', { headers: { Cookie: cookie, ...browserHeaders } });
      expect(form.status).to.equal(200);
      const csrf = /name="csrf" value="([^"]+)"/.exec(form.text)?.[1];
      expect(csrf, form.text).to.be.a('string');
      expect(await signedIn()).to.equal(true);
      // A post forged elsewhere: no token, or one made for another cookie.
      for (const forged of [{} as Record<string, string>, { csrf: csrf!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) }]) {
        const refused = await box.form('/.boxauth/sign-out', forged, { Cookie: cookie });
        expect(refused.status).to.equal(403);
        expect(refused.headers.getSetCookie()).to.deep.equal([]);
      }
      expect(await signedIn()).to.equal(true);
      // The app's own form: the session ends, and the cookie with it.
      const out = await box.form('/.boxauth/sign-out', { csrf: csrf! }, { Cookie: cookie });
      expect(out.status, out.text).to.equal(200);
      expect(out.headers.getSetCookie().some((c) => c.startsWith('boxauth-app-wiki=;'))).to.equal(true);
      expect(await signedIn()).to.equal(false);
    });

    it('the way back is refused without the browser that started it (CSRF, login fixation), and never leaves the app', async function () {
      const browser = new FormAgent(box);
      const toBox = await browser.get('/.boxauth/start?rd=//evil.example/x');
      const authorize = new URL(toBox.headers.get('location')!);
      const state = authorize.searchParams.get('state')!;
      // Another browser (no state cookie) cannot finish this flow.
      const other = new FormAgent(box);
      const stolen = await other.get(`/.boxauth/callback?code=whatever&state=${encodeURIComponent(state)}`);
      expect(stolen.status).to.equal(400);
      // And an rd to another origin comes back as /.
      await browser.signIn('sam@example.com', 'sam-password-1', `${authorize.pathname}${authorize.search}`);
      const callback = new URL((await browser.get(`${authorize.pathname}${authorize.search}`)).headers.get('location')!);
      const back = await browser.get(`${callback.pathname}${callback.search}`);
      expect(back.headers.get('location')).to.equal(`${wiki}/`);
    });

    it('a person the policies do not allow gets 403 with a page naming the decision', async function () {
      const cookie = await signedInAtWiki('ola@example.com', 'ola-password-1');
      const res = await forwardAuth('/docs/x', { Cookie: cookie, Accept: 'text/html' });
      expect(res.status).to.equal(403);
      expect(res.text).to.include(res.headers.get('x-boxauth-decision')!);
    });
  });

  describe('dry run and explanations', function () {
    it('a dry-run policy decides nothing, and the audit says what it would have done', async function () {
      await policy('wiki-dry', { app: 'wiki', dryRun: true, engine: 'allow' });
      try {
        const res = await forwardAuth('/secret');
        expect(res.status).to.equal(401);
        await eventually('the decision in the audit log', async () =>
          box.logs.some((l) => l.includes(res.headers.get('x-boxauth-decision')!) && l.includes('would allow')),
        );
      } finally {
        await box.json('DELETE', '/AccessPolicy/wiki-dry', undefined, root);
      }
    });

    it('a refused decision is explained by its id: each policy, what it said, and the failing matcho path', async function () {
      const token = await indexerToken();
      const refused = await forwardAuth('/docs/a', { Authorization: `Bearer ${token}` }, 'DELETE');
      expect(refused.status).to.equal(403);
      const id = refused.headers.get('x-boxauth-decision')!;
      const explained = await eventually('the recorded decision', async () => {
        const res = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
        return res.status === 200 && res;
      });
      expect(explained.body).to.include({ id, app: 'wiki', allowed: false, status: 403 });
      const indexer = explained.body.policies.find((p: { id: string }) => p.id === 'wiki-indexer-reads');
      expect(indexer.verdict).to.equal('does not allow');
      expect(indexer.why).to.equal('request-method: "delete" does not match "get"');
      // An allowed decision is not kept; a stranger may not read decisions.
      const allowed = (await forwardAuth('/docs/a', { Authorization: `Bearer ${token}` })).headers.get('x-boxauth-decision')!;
      expect((await box.json('GET', `/authz/decisions/${allowed}`, undefined, root)).status).to.equal(404);
      expect((await box.json('GET', `/authz/decisions/${id}`, undefined, token)).status).to.equal(401);
    });

    it("an App's audience is its own: not the box's, nor another App's", async function () {
      try {
        const own = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience: box.url }, root);
        expect(own.status, `the box's own audience: ${own.text}`).to.equal(422);
        const shared = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience: 'https://wiki.example' }, root);
        expect(shared.status, `the wiki's audience: ${shared.text}`).to.equal(422);
        const other = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience: 'https://other.example' }, root);
        expect(other.status, `another app's first url: ${other.text}`).to.equal(422);
      } finally {
        await box.json('DELETE', '/App/mirror', undefined, root);
      }
    });

    it("an App's audience is what its sign-in asks for as a resource: an absolute URI without a fragment (RFC 8707 §2)", async function () {
      for (const audience of ['wiki', 'https://mirror.example/#top', '//mirror.example', 'https://mirror.example/a b']) {
        const res = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience }, root);
        expect(res.status, `${audience}: ${res.text}`).to.equal(422);
        expect(res.body.errors, audience).to.have.property('audience');
      }
      const absent = await box.json('GET', '/App/mirror', undefined, root);
      expect(absent.status).to.equal(404);
      try {
        for (const audience of ['urn:example:mirrors', 'https://mirrors.example/s?x=s']) {
          const put = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience }, root);
          expect(put.status, put.text).to.be.oneOf([200, 201]);
        }
      } finally {
        await box.json('DELETE', '/App/mirror', undefined, root);
      }
    });

    it('the clash is named, nothing is written, and of apps racing for one audience exactly one gets it', async function () {
      const byDefault = await box.json('POST', '/App', { id: 'mirror', urls: [box.url] }, root);
      expect(byDefault.status, byDefault.text).to.equal(422);
      expect(byDefault.body.errors.audience[0]).to.match(/box's own audience/);
      const shared = await box.json('PUT', '/App/mirror', { urls: ['https://mirror.example'], audience: 'https://wiki.example' }, root);
      expect(shared.body.errors.audience[0]).to.include('App "wiki"');
      expect((await box.json('GET', '/App/mirror', undefined, root)).status).to.equal(404);
      const ids = Array.from({ length: 10 }, (_, i) => `racer-${i}`);
      try {
        const puts = await Promise.all(
          ids.map((id) => box.json('PUT', `/App/${id}`, { urls: [`https://${id}.example`], audience: 'https://race.example' }, root)),
        );
        expect(puts.map((p) => p.status).sort()).to.deep.equal([201, ...Array(9).fill(422)]);
      } finally {
        await Promise.all(ids.map((id) => box.json('DELETE', `/App/${id}`, undefined, root)));
      }
      // The audience is free again once its app is gone; an app may keep its own when rewritten.
      const again = await box.json('PUT', '/App/racer-0', { urls: ['https://racer-0.example'], audience: 'https://race.example' }, root);
      expect(again.status, again.text).to.equal(201);
      expect(
        (await box.json('PUT', '/App/racer-0', { urls: ['https://racer-0.example'], audience: 'https://race.example' }, root)).status,
      ).to.equal(200);
      await box.json('DELETE', '/App/racer-0', undefined, root);
    });

    it("no credential is kept in a decision's record: policies cannot be shown authorization or cookie", async function () {
      for (const header of ['authorization', 'cookie', 'proxy-authorization']) {
        const put = await box.json('PUT', '/App/vault', { urls: ['https://vault.example'], policyHeaders: ['x-team', header] }, root);
        expect(put.status, put.text).to.equal(422);
        expect(put.body.errors.policyHeaders[0]).to.match(/credentials/);
      }
      expect((await box.json('GET', '/App/vault', undefined, root)).status).to.equal(404);
    });

    it("a stranger's flood of refused requests does not fill the box's database", async function () {
      // Each kept refusal holds its request object for BOXAUTH_DECISION_RETENTION_HOURS (24 h). From
      // one client without any credential: 32 requests at a time, 10 kB of query each, for 5 s.
      const query = Array.from({ length: 100 }, (_, i) => `p${i}=${randomBytes(50).toString('hex')}`).join('&');
      const size = async (): Promise<number> => {
        const db = new pg.Client({ connectionString: box.databaseUrl });
        await db.connect();
        try {
          return Number((await db.query("SELECT pg_total_relation_size('decisions') AS n")).rows[0].n);
        } finally {
          await db.end();
        }
      };
      const before = await size();
      const until = Date.now() + 5000;
      let sent = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (Date.now() < until) {
            await requestLine(box.port, '/authz/forward-auth/wiki', { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': `/secret?${query}` });
            sent++;
          }
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 2000)); // the record's batches
      const grown = (await size()) - before;
      expect(grown, `${sent} refusals kept ${(grown / 1e6).toFixed(1)} MB`).to.be.below(5e6);
      // An anonymous refusal is in the audit log, and explained as not kept.
      const one = await forwardAuth('/secret');
      expect(one.status).to.equal(401);
      const id = one.headers.get('x-boxauth-decision')!;
      await eventually('the audit line', async () => box.logs.some((l) => l.includes(id)));
      const explained = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
      expect(explained.status).to.equal(404);
      expect(explained.body.error_description).to.match(/identified caller/);
      expect(await box.metrics()).to.match(/boxauth_decisions_not_kept_total\{[^}]*why="anonymous"[^}]*\} [1-9]/);
    });

    it('a request is replayed and explained without being recorded', async function () {
      const res = await box.json('POST', '/authz/explain', { app: 'wiki', method: 'GET', path: '/notes/1', client: 'indexer' }, root);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.allowed).to.equal(false);
      const why = res.body.policies.find((p: { id: string }) => p.id === 'wiki-indexer-reads').why;
      expect(why).to.equal('path: "/notes/1" does not match "#^/docs/"');
      expect((await box.json('GET', `/authz/decisions/${res.body.id}`, undefined, root)).status).to.equal(404);
      expect((await box.json('POST', '/authz/explain', { app: 'nope' }, root)).status).to.equal(404);
    });
  });
});
