// Resource indicators (RFC 8707) and the issuer of authorization responses (RFC 9207), as an MCP
// client meets them: `resource` at the authorization endpoint, PAR and the token endpoint must name
// a registered resource (an App's audience, or an entry of the client's audience list), once per
// request; the grant remembers it, and a token request, a refresh or a code may name only it. Each
// test is an attack that got a token (or a code) before.
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CB = 'https://agent.example/cb';
const WIKI = 'https://wiki.example';
const PAYROLL = 'https://payroll.example';
const REPORTS = 'urn:example:reports';
const EMAIL = 'ada@example.com';
const PASSWORD = 'a long and unguessable passphrase 7';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

describe('resource indicators (RFC 8707) and iss (RFC 9207)', function () {
  let box: Box;
  let browser: FormAgent;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  before(async function () {
    box = await Box.start();
    const root = await box.rootToken();
    const put = async (path: string, body: unknown): Promise<void> => {
      const res = await box.json('PUT', path, body, root);
      expect(res.status, `${path}: ${res.text}`).to.be.oneOf([200, 201]);
    };
    await put('/App/wiki', { urls: [WIKI], description: 'The team wiki' });
    await put('/App/payroll', { urls: [PAYROLL] });
    // JWT access tokens: the aud a resource server reads is in the token itself.
    const code = {
      grant_types: ['authorization_code'],
      auth: {
        authorization_code: { redirect_uri: CB, refresh_token: true, token_format: 'jwt' },
        client_credentials: { token_format: 'jwt' },
      },
    };
    // An agent without an audience list: any registered resource, nothing else.
    await put('/Client/agent', { ...code, first_party: true, secret: 'agent-secret-123' });
    // One held to its list: the wiki and an abstract resource, not payroll.
    await put('/Client/listed', {
      ...code,
      grant_types: ['authorization_code', 'client_credentials'],
      first_party: true,
      secret: 'listed-secret-123',
      audience: [WIKI, REPORTS],
    });
    await put('/Client/third-party', { ...code, secret: 'third-secret-123', audience: [WIKI, REPORTS] });
    await put('/Client/worker', { grant_types: ['client_credentials'], secret: 'worker-secret-123', auth: code.auth });
    await put('/Client/tv', { grant_types: [DEVICE], auth: { device_code: {} } });
    expect((await box.json('POST', '/users', { email: EMAIL, password: PASSWORD }, root)).status).to.equal(201);
    browser = new FormAgent(box);
    expect((await browser.signIn(EMAIL, PASSWORD)).status).to.equal(303);
  });
  after(async function () {
    await box?.stop();
  });

  const authorizeQuery = (client: string, extra: Record<string, string | string[]> = {}): string => {
    const q = new URLSearchParams();
    const params = {
      response_type: 'code',
      client_id: client,
      redirect_uri: CB,
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    };
    for (const [k, v] of Object.entries(params)) for (const one of [v].flat()) q.append(k, one);
    return `/auth/authorize?${q}`;
  };
  /** Where the signed-in browser is sent back to, for an authorization request of `client`. */
  const authorized = async (client: string, extra: Record<string, string | string[]> = {}): Promise<URL> => {
    const res = await browser.get(authorizeQuery(client, extra));
    expect(res.status, res.text.slice(0, 300)).to.equal(302);
    return new URL(res.headers.get('location')!);
  };
  const codeOf = async (client: string, extra: Record<string, string> = {}): Promise<string> => {
    const loc = await authorized(client, extra);
    expect(loc.searchParams.get('error'), loc.searchParams.get('error_description') ?? '').to.equal(null);
    return loc.searchParams.get('code')!;
  };
  const redeem = (client: string, code: string, extra: Record<string, string> = {}) =>
    box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier, ...extra },
      { Authorization: basic(client, `${client === 'third-party' ? 'third' : client}-secret-123`) },
    );
  const refresh = (client: string, refreshToken: string, extra: Record<string, string> = {}) =>
    box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra },
      { Authorization: basic(client, `${client}-secret-123`) },
    );
  const audOf = (token: string): unknown => decodeJwt(token).aud;
  const expectTarget = (loc: URL, description: RegExp): void => {
    expect([loc.searchParams.get('error'), loc.searchParams.get('state')]).to.deep.equal(['invalid_target', 'st']);
    expect(loc.searchParams.get('error_description')).to.match(description);
    expect(loc.searchParams.get('code')).to.equal(null);
  };

  describe('at the authorization endpoint', function () {
    it('a resource no App has and no list names: invalid_target back to the client, no code', async function () {
      expectTarget(await authorized('agent', { resource: 'https://attacker.example/mcp' }), /not a registered resource/);
    });

    it("another App's audience, outside the client's audience list: invalid_target", async function () {
      expectTarget(await authorized('listed', { resource: PAYROLL }), /may not ask for resource 'https:\/\/payroll.example'/);
    });

    it('an App audience, or an entry of the list: a code', async function () {
      expect(await codeOf('agent', { resource: PAYROLL })).to.be.a('string');
      expect(await codeOf('listed', { resource: REPORTS })).to.be.a('string');
    });

    it('several resources: invalid_target, one resource per request (RFC 8707 §3)', async function () {
      expectTarget(await authorized('agent', { resource: [WIKI, PAYROLL] }), /one resource per request/);
    });
  });

  describe('at the token endpoint, after a code', function () {
    it('a code redeemed with a resource it was not granted for: invalid_target, and the code is spent', async function () {
      const code = await codeOf('agent', { resource: WIKI });
      const other = await redeem('agent', code, { resource: PAYROLL });
      expect([other.status, other.body.error], other.text).to.deep.equal([400, 'invalid_target']);
      expect(other.body.error_description).to.match(/was granted for 'https:\/\/wiki.example' only/);
      expect(other.body.access_token).to.equal(undefined);
      const again = await redeem('agent', code, { resource: WIKI });
      expect([again.status, again.body.error]).to.deep.equal([400, 'invalid_grant']);
    });

    it('a code granted for no resource, redeemed with one: invalid_target', async function () {
      const code = await codeOf('agent');
      const res = await redeem('agent', code, { resource: WIKI });
      expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_target']);
      expect(res.body.error_description).to.match(/granted for no resource/);
    });

    it("the granted resource, at both requests (as MCP clients send it): the token's aud is exactly it", async function () {
      const res = await redeem('agent', await codeOf('agent', { resource: WIKI }), { resource: WIKI });
      expect(res.status, res.text).to.equal(200);
      expect(audOf(res.body.access_token)).to.equal(WIKI);
    });

    it('a refresh naming a wider or another resource: invalid_target; the same one or none: the same aud', async function () {
      const granted = await redeem('agent', await codeOf('agent', { resource: WIKI }));
      expect(granted.status, granted.text).to.equal(200);
      const token = granted.body.refresh_token as string;
      for (const resource of [PAYROLL, 'https://attacker.example']) {
        const wider = await refresh('agent', token, { resource });
        expect([wider.status, wider.body.error], `${resource}: ${wider.text}`).to.deep.equal([400, 'invalid_target']);
      }
      for (const extra of [{ resource: WIKI }, {}] as Record<string, string>[]) {
        const same = await refresh('agent', token, extra);
        expect(same.status, same.text).to.equal(200);
        expect(audOf(same.body.access_token)).to.equal(WIKI);
      }
    });

    it('a refresh of a grant for no resource, naming one: invalid_target', async function () {
      const granted = await redeem('agent', await codeOf('agent'));
      const res = await refresh('agent', granted.body.refresh_token as string, { resource: WIKI });
      expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_target']);
    });

    it('several resources in a token request: invalid_target', async function () {
      const res = await box.request('POST', '/auth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basic('worker', 'worker-secret-123') },
        body: `grant_type=client_credentials&resource=${encodeURIComponent(WIKI)}&resource=${encodeURIComponent(PAYROLL)}`,
      });
      expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_target']);
    });
  });

  describe('client credentials: resource held to the registered ones, audience as loose as before', function () {
    const token = (client: string, params: Record<string, string>) =>
      box.form('/auth/token', { grant_type: 'client_credentials', ...params }, { Authorization: basic(client, `${client}-secret-123`) });

    it('an unregistered resource: invalid_target; an App audience: the aud', async function () {
      const unknown = await token('worker', { resource: 'https://attacker.example' });
      expect([unknown.status, unknown.body.error], unknown.text).to.deep.equal([400, 'invalid_target']);
      const wiki = await token('worker', { resource: WIKI });
      expect(wiki.status, wiki.text).to.equal(200);
      expect(audOf(wiki.body.access_token)).to.equal(WIKI);
    });

    it('audience, without a list: any name, as before (RFC 8693); mixed with a different resource: invalid_target', async function () {
      const loose = await token('worker', { audience: 'reports' });
      expect(loose.status, loose.text).to.equal(200);
      expect(audOf(loose.body.access_token)).to.equal('reports');
      const mixed = await token('worker', { audience: 'reports', resource: WIKI });
      expect([mixed.status, mixed.body.error], mixed.text).to.deep.equal([400, 'invalid_target']);
      const both = await token('worker', { audience: 'https://attacker.example', resource: 'https://attacker.example' });
      expect([both.status, both.body.error], both.text).to.deep.equal([400, 'invalid_target']);
    });

    it("a listed client: its list's resources, not another App's", async function () {
      const payroll = await token('listed', { resource: PAYROLL });
      expect([payroll.status, payroll.body.error], payroll.text).to.deep.equal([400, 'invalid_target']);
      const reports = await token('listed', { resource: REPORTS });
      expect(reports.status, reports.text).to.equal(200);
    });
  });

  it('the device grant takes no resource: invalid_target at the token endpoint', async function () {
    const asked = await box.form('/auth/device', { client_id: 'tv' });
    expect(asked.status, asked.text).to.equal(200);
    const res = await box.form('/auth/token', { grant_type: DEVICE, client_id: 'tv', device_code: asked.body.device_code, resource: WIKI });
    expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_target']);
  });

  describe('pushed authorization requests', function () {
    const push = (params: Record<string, string>, body?: string) =>
      box.request('POST', '/auth/par', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basic('agent', 'agent-secret-123') },
        body:
          body ??
          new URLSearchParams({
            response_type: 'code',
            redirect_uri: CB,
            code_challenge: challenge,
            code_challenge_method: 'S256',
            ...params,
          }).toString(),
      });

    it('an unregistered resource, or several: 400 invalid_target, nothing pushed; an App audience: 201', async function () {
      const unknown = await push({ resource: 'https://attacker.example' });
      expect([unknown.status, unknown.body.error], unknown.text).to.deep.equal([400, 'invalid_target']);
      expect(unknown.body.request_uri).to.equal(undefined);
      const several = await push(
        {},
        `response_type=code&redirect_uri=${encodeURIComponent(CB)}&code_challenge=${challenge}&code_challenge_method=S256` +
          `&resource=${encodeURIComponent(WIKI)}&resource=${encodeURIComponent(PAYROLL)}`,
      );
      expect([several.status, several.body.error], several.text).to.deep.equal([400, 'invalid_target']);
      const wiki = await push({ resource: WIKI });
      expect(wiki.status, wiki.text).to.equal(201);
    });
  });

  describe('the consent page', function () {
    it('names the App by its name and description, and any other resource by its URI', async function () {
      const wiki = await browser.get(authorizeQuery('third-party', { resource: WIKI }));
      expect(wiki.status, wiki.text.slice(0, 300)).to.equal(200);
      expect(wiki.text).to.include('For use at:');
      expect(wiki.text).to.match(/<strong><bdi>wiki<\/bdi><\/strong> — <bdi>The team wiki<\/bdi> <code>https:\/\/wiki.example<\/code>/);
      const reports = await browser.get(authorizeQuery('third-party', { resource: REPORTS }));
      expect(reports.text).to.include(`<li><code>${REPORTS}</code></li>`);
      const none = await browser.get(authorizeQuery('third-party'));
      expect(none.text).to.not.include('For use at:');
      // Allowing it grants the resource the page named.
      const allowed = await browser.post('/auth/consent', { ...hiddenFields(wiki.text), decision: 'allow' });
      expect(allowed.status, allowed.text.slice(0, 300)).to.equal(302);
      const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
      const res = await redeem('third-party', code);
      expect(res.status, res.text).to.equal(200);
      expect(audOf(res.body.access_token)).to.equal(WIKI);
    });

    it('a consent for one resource is not one for another: the person is asked again, then each is remembered', async function () {
      // The consent above was for the wiki: the same request again needs no page.
      expect((await authorized('third-party', { resource: WIKI })).searchParams.get('code')).to.be.a('string');
      // Another resource of the client's list, same scopes: the person was never asked about it.
      const reports = await browser.get(authorizeQuery('third-party', { resource: REPORTS }));
      expect(reports.status, `a code for a resource never consented to: ${reports.headers.get('location')}`).to.equal(200);
      expect(reports.text).to.include(`<li><code>${REPORTS}</code></li>`);
      const silent = await authorized('third-party', { resource: REPORTS, prompt: 'none' });
      expect(silent.searchParams.get('error')).to.equal('consent_required');
      // Nor does it cover the box's own API (no resource).
      expect((await browser.get(authorizeQuery('third-party'))).status).to.equal(200);
      // Allowed, it is remembered beside the first.
      const allowed = await browser.post('/auth/consent', { ...hiddenFields(reports.text), decision: 'allow' });
      expect(allowed.status, allowed.text.slice(0, 300)).to.equal(302);
      expect((await authorized('third-party', { resource: REPORTS })).searchParams.get('code')).to.be.a('string');
      expect((await authorized('third-party', { resource: WIKI })).searchParams.get('code')).to.be.a('string');
    });
  });

  describe('iss in every authorization response (RFC 9207)', function () {
    it('the metadata documents say so', async function () {
      for (const doc of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
        const res = await box.request('GET', doc);
        expect(res.body.authorization_response_iss_parameter_supported, doc).to.equal(true);
      }
    });

    it('a code, an error in the query, and the implicit kinds in the fragment carry the issuer; a page does not', async function () {
      const issuer = (await box.request('GET', '/.well-known/openid-configuration')).body.issuer as string;
      const code = await authorized('agent');
      expect(code.searchParams.get('iss')).to.equal(issuer);
      expect(code.searchParams.get('code')).to.be.a('string');
      const error = await authorized('agent', { resource: 'https://attacker.example' });
      expect([error.searchParams.get('error'), error.searchParams.get('iss')]).to.deep.equal(['invalid_target', issuer]);
      const implicit = await authorized('agent', { response_type: 'token' });
      const fragment = new URLSearchParams(implicit.hash.slice(1));
      expect([fragment.get('error'), fragment.get('iss')]).to.deep.equal(['unauthorized_client', issuer]);
      expect(implicit.search).to.equal('');
      const page = await browser.get(authorizeQuery('agent', { redirect_uri: 'https://elsewhere.example/cb' }));
      expect([page.status, page.headers.get('location')]).to.deep.equal([400, null]);
    });
  });
});
