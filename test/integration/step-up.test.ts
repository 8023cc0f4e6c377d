// Step-up at the decision point (docs/guides/guard-your-apps.md): an App policy's `acr` lets in
// only a caller whose sign-in meets that class. A person in a browser whose sign-in is weaker is
// sent to sign in again with the missing factor (the attack: a step-up an App policy demands,
// satisfied by an old sign-in); any other caller is told what is wanted (RFC 9470 §3); a
// person whose sign-in proved a passkey is let in, and what they proved travels with the token
// (introspection, the JWT access token, the upstream JWT).
import { expect } from 'chai';
import pg from 'pg';
import { decodeJwt } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { grpcCheck } from '../support/grpc-check.js';
import { setBrowserSessionsAmr } from '../../api/store/browser-sessions.js';
import { pepReadsPeople } from '../support/pep.js';

const PASSKEY_AMR = ['pwd', 'hwk', 'user', 'mfa'];

describe('step-up at the decision point', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let console_: string; // the app's url: the box's own origin, so that /.boxauth/* reaches the box with the app's Host
  let adaId: number;
  let beaId: number;
  const browserHeaders = { Accept: 'text/html' };

  const put = (path: string, body: Record<string, unknown>) => box.json('PUT', path, body, root);

  before(async function () {
    // People's sub is their row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
    box = await Box.start({ env: { BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    root = await box.rootToken();
    console_ = box.url;
    adaId = (await box.json('POST', '/users', { email: 'ada@example.com', password: 'ada-password-1' }, root)).body.id;
    beaId = (await box.json('POST', '/users', { email: 'bea@example.com', password: 'bea-password-1' }, root)).body.id;
    await box.addClient(
      'console-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${console_}/.boxauth/callback`, token_format: 'jwt' } },
      },
      { secret: 'console-sso-secret', policy: false },
    );
    await box.addClient('indexer', { audience: ['https://console.example'] }, { secret: 'indexer-secret', policy: false });
    const app = await put('/App/console', {
      urls: [console_],
      audience: 'https://console.example',
      signIn: { client: 'console-sso' },
      upstream: { token: { header: 'X-Boxauth-Token' } },
    });
    expect(app.status, app.text).to.equal(201);
    // /admin wants a passkey; /docs any caller, as before.
    const admin = await put('/AccessPolicy/console-admin', { app: 'console', engine: 'matcho', matcho: { path: '#^/admin' }, acr: 'phr' });
    expect(admin.status, admin.text).to.equal(201);
    await put('/AccessPolicy/console-docs', { app: 'console', engine: 'matcho', matcho: { path: '#^/docs' } });
  });
  after(async function () {
    await box?.stop();
  });

  /** A forward-auth check, as Traefik sends it. */
  const forwardAuth = (uri: string, headers: Record<string, string> = {}) =>
    box.request('GET', '/authz/forward-auth/console', {
      headers: {
        'X-Forwarded-Method': 'GET',
        'X-Forwarded-Proto': 'http',
        'X-Forwarded-Host': new URL(console_).host,
        'X-Forwarded-Uri': uri,
        ...headers,
      },
    });

  /** Through the app's sign-in from `start` (a path of the app) to its callback: the app's new cookie. */
  async function throughAppSignIn(browser: FormAgent, start: string): Promise<string> {
    const toBox = await browser.get(start);
    const authorize = new URL(toBox.headers.get('location')!);
    const callback = new URL((await browser.get(`${authorize.pathname}${authorize.search}`)).headers.get('location')!);
    expect(callback.pathname, callback.href).to.equal('/.boxauth/callback');
    const back = await browser.get(`${callback.pathname}${callback.search}`);
    return back.headers
      .getSetCookie()
      .find((c) => c.startsWith('boxauth-app-console='))!
      .split(';')[0]!;
  }

  const tokenOf = (cookie: string): string => cookie.slice(cookie.indexOf('=') + 1);

  const introspect = async (token: string) =>
    (await box.form('/auth/introspect', { token }, { Authorization: basic('console-sso', 'console-sso-secret') })).body;

  it("a password-only sign-in at a passkey policy's /admin is sent through step-up, and no code is issued for it", async function () {
    const browser = new FormAgent(box);
    await browser.signIn('ada@example.com', 'ada-password-1');
    const cookie = await throughAppSignIn(browser, '/.boxauth/start?rd=/docs/a');
    // A policy without acr lets the password sign-in in, as before.
    expect((await forwardAuth('/docs/a', { Cookie: cookie, ...browserHeaders })).status).to.equal(200);

    const refused = await forwardAuth('/admin/users?x=1', { Cookie: cookie, ...browserHeaders });
    expect(refused.status, refused.text).to.equal(302);
    const start = new URL(refused.headers.get('location')!);
    expect(`${start.origin}${start.pathname}`).to.equal(`${console_}/.boxauth/start`);
    expect(start.searchParams.get('acr')).to.equal('phr');
    expect(start.searchParams.get('rd')).to.equal('/admin/users?x=1');

    const toBox = await browser.get(`${start.pathname}${start.search}`);
    expect(toBox.status).to.equal(302);
    const authorize = new URL(toBox.headers.get('location')!);
    expect(authorize.pathname).to.equal('/auth/authorize');
    expect(authorize.searchParams.get('acr_values')).to.equal('phr');
    expect(authorize.searchParams.has('prompt')).to.equal(false);
    // The box does not take the old password sign-in for a passkey: the person is sent for the missing factor.
    const answer = await browser.get(`${authorize.pathname}${authorize.search}`);
    expect([302, 303]).to.include(answer.status);
    const next = new URL(answer.headers.get('location')!, box.url);
    expect(next.origin).to.equal(box.url);
    expect(next.pathname).to.match(/^\/auth\/sign-in\//);
    expect(next.searchParams.has('code')).to.equal(false);
    expect(answer.headers.get('location')).to.not.include('/.boxauth/callback');
    // The old cookie still does not open /admin.
    expect((await forwardAuth('/admin/users', { Cookie: cookie, ...browserHeaders })).status).to.equal(302);
  });

  it('a start asking for a class off the ladder asks for nothing more', async function () {
    const browser = new FormAgent(box);
    const toBox = await browser.get('/.boxauth/start?rd=/docs/a&acr=urn:other:gold');
    const authorize = new URL(toBox.headers.get('location')!);
    expect(authorize.searchParams.has('acr_values')).to.equal(false);
  });

  it('a bearer caller whose sign-in is short gets 401 with the RFC 9470 challenge; a client token the same', async function () {
    const browser = new FormAgent(box);
    await browser.signIn('ada@example.com', 'ada-password-1');
    const token = tokenOf(await throughAppSignIn(browser, '/.boxauth/start?rd=/docs/a'));
    for (const bearer of [
      token,
      (
        await box.form(
          '/auth/token',
          { grant_type: 'client_credentials', audience: 'https://console.example' },
          { Authorization: basic('indexer', 'indexer-secret') },
        )
      ).body.access_token as string,
    ]) {
      const res = await forwardAuth('/admin', { Authorization: `Bearer ${bearer}`, ...browserHeaders });
      expect(res.status, res.text).to.equal(401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge).to.match(
        /^Bearer realm="console", error="insufficient_user_authentication", error_description="[^"]+", acr_values="phr", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/,
      );
      // With no policy that asks for more, the same caller is let in as before.
      expect((await forwardAuth('/docs/a', { Authorization: `Bearer ${bearer}` })).status).to.equal(200);
    }
    // Envoy's HTTP door says the same.
    const envoy = await box.request('GET', '/authz/http/console/admin', {
      headers: { Authorization: `Bearer ${token}`, Host: new URL(console_).host },
    });
    expect(envoy.status).to.equal(401);
    expect(envoy.headers.get('www-authenticate')).to.include('acr_values="phr"');
    // And its gRPC door: the denied response carries the same challenge.
    const grpc = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
      attributes: {
        request: {
          http: {
            method: 'GET',
            path: '/admin',
            host: new URL(console_).host,
            scheme: 'http',
            headers: { authorization: `Bearer ${token}` },
          },
        },
        context_extensions: { app: 'console' },
      },
    });
    expect(grpc.denied_response?.status.code, JSON.stringify(grpc)).to.equal(401);
    const challenge = grpc.denied_response!.headers.find((h) => h.header.key.toLowerCase() === 'www-authenticate')?.header.value;
    expect(challenge).to.match(/error="insufficient_user_authentication".*acr_values="phr", resource_metadata="[^"]+"$/);
  });

  it("introspection says a password sign-in's class; a client's own token says none, whatever it asked", async function () {
    const browser = new FormAgent(box);
    await browser.signIn('ada@example.com', 'ada-password-1');
    const token = tokenOf(await throughAppSignIn(browser, '/.boxauth/start?rd=/docs/a'));
    const about = await introspect(token);
    expect(about).to.include({ active: true, acr: 'urn:boxauth:acr:password' });
    expect(about.amr).to.deep.equal(['pwd']);
    expect(about.auth_time).to.be.a('number');
    // The client cannot make a token say a sign-in it never made: parameters of its own are not details.
    const { secret } = await box.addClient('forger', { audience: ['https://console.example'] }, { policy: false });
    const forged = (
      await box.form(
        '/auth/token',
        {
          grant_type: 'client_credentials',
          audience: 'https://console.example',
          amr: 'hwk',
          acr: 'phr',
          sid: 'x',
          details: '{"amr":["hwk"],"sid":"x"}',
        },
        { Authorization: basic('forger', secret) },
      )
    ).body.access_token as string;
    const own = (await box.form('/auth/introspect', { token: forged }, { Authorization: basic('forger', secret) })).body;
    expect(own.active).to.equal(true);
    expect(own).to.not.have.any.keys('acr', 'amr', 'auth_time');
    expect((await forwardAuth('/admin', { Authorization: `Bearer ${forged}` })).status).to.equal(401);
  });

  it('a sign-in that proved a passkey opens /admin, and the upstream JWT, the access token and introspection say phr', async function () {
    const browser = new FormAgent(box);
    await browser.signIn('bea@example.com', 'bea-password-1');
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      expect(await setBrowserSessionsAmr(db, beaId, PASSKEY_AMR)).to.equal(1);
    } finally {
      await db.end();
    }
    const cookie = await throughAppSignIn(browser, '/.boxauth/start?rd=/admin&acr=phr');
    const res = await forwardAuth('/admin', { Cookie: cookie, ...browserHeaders });
    expect(res.status, res.text).to.equal(200);
    const upstream = decodeJwt(res.headers.get('x-boxauth-token')!);
    expect(upstream).to.include({ acr: 'phr', sub: String(beaId) });
    expect(upstream.amr).to.deep.equal(PASSKEY_AMR);
    expect(upstream.auth_time).to.be.a('number');

    const token = tokenOf(cookie);
    const claims = decodeJwt(token); // RFC 9068 §2.2.1
    expect(claims).to.include({ acr: 'phr' });
    expect(claims.auth_time).to.be.a('number');
    const about = await introspect(token);
    expect(about).to.include({ active: true, acr: 'phr', auth_time: claims.auth_time });
    expect(about.amr).to.deep.equal(PASSKEY_AMR);
  });

  it('AuthZEN answers false with the class wanted; boxauth explain and a dry-run policy show the new verdict', async function () {
    await put('/AccessPolicy/console-admin-mfa-trial', {
      app: 'console',
      engine: 'matcho',
      matcho: { path: '#^/admin' },
      acr: 'urn:boxauth:acr:mfa',
      dryRun: true,
    });
    const { secret } = await box.addClient('console-pep', {}, { policy: false });
    await put('/AccessPolicy/console-pep-asks', {
      engine: 'matcho',
      link: [{ id: 'console-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'post', uri: '#^/apps/console/access/v1/evaluation$' },
    });
    await pepReadsPeople(box, root, 'console-pep');
    const pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('console-pep', secret) })).body
      .access_token as string;
    const answer = await box.json(
      'POST',
      '/apps/console/access/v1/evaluation',
      {
        subject: { type: 'user', id: String(adaId) },
        resource: { type: 'page', id: 'admin', properties: { path: '/admin' } },
        action: { name: 'GET' },
      },
      pep,
    );
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.decision).to.equal(false);
    expect(answer.body.context.acr_values).to.equal('phr');

    const explained = await box.json(
      'POST',
      '/authz/explain',
      { app: 'console', method: 'GET', path: '/admin', user: String(adaId) },
      root,
    );
    expect(explained.status, explained.text).to.equal(200);
    expect(explained.body).to.include({ allowed: false, status: 401 });
    const verdicts = Object.fromEntries(explained.body.policies.map((p: { id: string; verdict: string }) => [p.id, p.verdict]));
    expect(verdicts).to.include({
      'console-admin': 'needs a stronger sign-in',
      'console-admin-mfa-trial': 'would need a stronger sign-in',
    });
  });

  it("acr is for an App's policies: one of the box's own API is refused, and a class off the ladder too", async function () {
    const box_ = await put('/AccessPolicy/box-acr', { engine: 'allow', acr: 'phr' });
    expect(box_.status).to.equal(422);
    expect(box_.text).to.include("acr is for an App's policies");
    const off = await put('/AccessPolicy/console-gold', { app: 'console', engine: 'allow', acr: 'gold' });
    expect(off.status).to.equal(422);
    expect((await box.json('GET', '/AccessPolicy/console-gold', undefined, root)).status).to.equal(404);
    expect((await box.json('GET', '/AccessPolicy/box-acr', undefined, root)).status).to.equal(404);
  });
});
