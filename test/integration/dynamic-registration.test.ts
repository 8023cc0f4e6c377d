// Dynamic client registration (RFC 7591) at POST /auth/register (docs/guides/agents.md): off by
// default; on, each registration is admitted by an AccessPolicy (registration.kind: dynamic), deny
// by default, and again at each authorization request of the client; public clients only; RFC
// 7591's errors; registrations counted per address per hour in the database, so a flood sent at
// once from one address gets no more than the limit; an unused registration removed by the upkeep.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const PASSWORD = 'a-good-password-1';
const CALLBACK = 'http://127.0.0.1/callback';
const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');
const PER_ADDRESS = 5;

const metadata = (more: Record<string, unknown> = {}): Record<string, unknown> => ({
  client_name: 'Registered Agent',
  redirect_uris: [CALLBACK],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  ...more,
});

describe('dynamic client registration (RFC 7591)', function () {
  this.timeout(120_000);
  let box: Box;
  let off: Box;
  let root: string;
  let n = 0;
  /** Each test registers from an address of its own (X-Forwarded-For, the box trusting 127.0.0.1 as its proxy): the count is per address. */
  const from = (): Record<string, string> => ({ 'X-Forwarded-For': `198.51.100.${++n}` });
  const register = (body: unknown, headers = from()): Promise<JsonResponse> => box.json('POST', '/auth/register', body, undefined, headers);

  before(async function () {
    [box, off] = await Promise.all([
      Box.start({
        env: {
          BOXAUTH_DYNAMIC_REGISTRATION: 'true',
          BOXAUTH_DYNAMIC_REGISTRATION_PER_ADDRESS: String(PER_ADDRESS),
          BOXAUTH_DYNAMIC_REGISTRATION_UNUSED_HOURS: '1',
          BOXAUTH_PURGE_INTERVAL_SECONDS: '1',
          BOXAUTH_TRUSTED_PROXIES: '127.0.0.1',
        },
      }),
      Box.start(),
    ]);
    root = await box.rootToken();
  });

  after(async function () {
    await Promise.all([box?.stop(), off?.stop()]);
  });

  /** Admits registrations of agents that come back to a loopback address (docs/examples/policies/, as matcho). */
  async function admitLoopbackAgents(): Promise<void> {
    const policy = { engine: 'matcho', matcho: { registration: { kind: 'dynamic', host: '127.0.0.1' } } };
    const res = await box.json('PUT', '/AccessPolicy/loopback-agents', policy, root);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  it('is off by default: no registration_endpoint, and /auth/register is not found', async function () {
    const meta = await off.json('GET', '/.well-known/oauth-authorization-server');
    expect(meta.body).not.to.have.property('registration_endpoint');
    expect((await off.json('POST', '/auth/register', metadata())).status).to.equal(404);
    const on = await box.json('GET', '/.well-known/oauth-authorization-server');
    expect(on.body.registration_endpoint).to.equal(`${box.url}/auth/register`);
  });

  it('a box with no policy registers nobody', async function () {
    const res = await register(metadata());
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_client_metadata');
    expect(res.body.error_description).to.include('no AccessPolicy');
  });

  it('registers a public agent that a policy admits, which then signs a person in with PKCE and is shown as registered dynamically', async function () {
    await admitLoopbackAgents();
    const res = await register(metadata());
    expect(res.status, res.text).to.equal(201);
    expect(res.body.client_id).to.match(/^dyn-/);
    expect(res.body).to.include({ token_endpoint_auth_method: 'none', client_name: 'Registered Agent' });
    expect(res.body.redirect_uris).to.deep.equal([CALLBACK]);
    expect(res.body).not.to.have.property('client_secret');

    const email = `person-${randomBytes(3).toString('hex')}@example.com`;
    expect((await box.json('POST', '/users', { email, password: PASSWORD }, root)).status).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const clientId = res.body.client_id as string;
    const authorize = `/auth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: 'http://127.0.0.1:50123/callback',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`;
    const page = await browser.get(authorize);
    expect(page.status, page.text).to.equal(200);
    // The name it chose is isolated (<bdi>): whatever its direction, the sentence around it reads as written.
    expect(page.text).to.match(/<p id="agent">[^<]*<strong><bdi>Registered Agent<\/bdi><\/strong>[^<]*registered itself/);
    const allowed = await browser.consent(page, 'allow');
    expect(allowed.status, allowed.text).to.equal(302);
    const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
    const tokens = await box.form('/auth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:50123/callback',
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(tokens.status, tokens.text).to.equal(200);
    const grants = await box.json('GET', `/grants?client=${clientId}`, undefined, root);
    expect(grants.body[0].agent).to.deep.equal({ kind: 'dynamic', client_name: 'Registered Agent' });

    // The policy is asked again at each authorization request: removed, the client is refused at once.
    await box.json('DELETE', '/AccessPolicy/loopback-agents', undefined, root);
    expect((await browser.get(authorize)).status).to.equal(403);
    await admitLoopbackAgents();
  });

  it('a policy admitting loopback agents admits none that could come back to another site as well', async function () {
    await admitLoopbackAgents();
    // Loopback first, then the attacker's site: the page would say "it comes back to 127.0.0.1", the code go elsewhere.
    const both = await register(metadata({ redirect_uris: [CALLBACK, 'https://elsewhere.example/callback'] }));
    expect(both.status, `admitted with a redirect URI on another host: ${both.text}`).to.equal(400);
    expect(both.body.error).to.equal('invalid_client_metadata');
    expect((await register(metadata({ redirect_uris: [CALLBACK, 'http://127.0.0.1/other'] }))).status).to.equal(201);
  });

  it("answers RFC 7591's errors, each saying what is wrong", async function () {
    await admitLoopbackAgents();
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [metadata({ redirect_uris: undefined }), 'invalid_redirect_uri', /redirect_uris must be a list/],
      [metadata({ redirect_uris: ['http://agent.example/cb'] }), 'invalid_redirect_uri', /http is for a loopback address only/],
      [metadata({ redirect_uris: ['https://agent.example/cb#x'] }), 'invalid_redirect_uri', /fragment/],
      [metadata({ redirect_uris: ['javascript:alert(1)'] }), 'invalid_redirect_uri', /scheme javascript: is not one/],
      [metadata({ token_endpoint_auth_method: 'client_secret_basic' }), 'invalid_client_metadata', /must be .none./],
      [
        metadata({ token_endpoint_auth_method: undefined, client_secret: 'mine' }),
        'invalid_client_metadata',
        /client_secret must not be sent/,
      ],
      [metadata({ grant_types: ['client_credentials'] }), 'invalid_client_metadata', /grant_types may hold only/],
      [metadata({ client_name: 'x'.repeat(300) }), 'invalid_client_metadata', /client_name must be a text/],
      // Bidi controls and what is drawn as nothing: a U+202E mirrored the consent page's warning around the name.
      ...['\u202E', '\u2066', '\u200F', '\u061C', '\u200B', '\u3164', '\uFFA0', '\u115F'].map(
        (c): [Record<string, unknown>, string, RegExp] => [
          metadata({ client_name: `Safe Agent${c}tnegA liveE` }),
          'invalid_client_metadata',
          /client_name holds a control or invisible character \(U\+[0-9A-F]{4}\)/,
        ],
      ),
    ];
    for (const [body, error, description] of cases) {
      const res = await register(JSON.parse(JSON.stringify(body)));
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error, JSON.stringify(body)).to.equal(error);
      expect(res.body.error_description).to.match(description);
    }
    const form = await box.request('POST', '/auth/register', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...from() },
      body: 'redirect_uris=x',
    });
    expect(form.status).to.equal(400);
    expect(form.body.error).to.equal('invalid_client_metadata');
    // A registration that leaves token_endpoint_auth_method out is a public client all the same (RFC 7591 §3.2.1).
    const omitted = await register(metadata({ token_endpoint_auth_method: undefined }));
    expect(omitted.status, omitted.text).to.equal(201);
    expect(omitted.body.token_endpoint_auth_method).to.equal('none');
  });

  it(`a flood of 30 registrations at once from one address: ${PER_ADDRESS} made, the rest 429`, async function () {
    await admitLoopbackAgents();
    const address = from();
    const answers = await Promise.all(Array.from({ length: 30 }, () => register(metadata(), address)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).to.have.length(PER_ADDRESS);
    expect(statuses.filter((s) => s === 429)).to.have.length(30 - PER_ADDRESS);
    // Another address is not held back by it.
    expect((await register(metadata())).status).to.equal(201);
  });

  it(`a flood from one IPv6 network, a new address of its /64 each time: ${PER_ADDRESS} made, the rest 429`, async function () {
    await admitLoopbackAgents();
    // A host picks the low 64 bits of its IPv6 address itself (RFC 7421): counted per address it had no limit.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => register(metadata(), { 'X-Forwarded-For': `2001:db8:54:1:${(i + 1).toString(16)}::${i + 1}` })),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 201),
      statuses.join(' '),
    ).to.have.length(PER_ADDRESS);
    expect(statuses.filter((s) => s === 429)).to.have.length(20 - PER_ADDRESS);
    // Another /64 is another network.
    expect((await register(metadata(), { 'X-Forwarded-For': '2001:db8:54:2::1' })).status).to.equal(201);
  });

  it('an unused registration is removed by the upkeep after its lifetime; one a person used stays', async function () {
    await admitLoopbackAgents();
    const unused = (await register(metadata())).body.client_id as string;
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      // An hour and more ago, as if registered then (the box's lifetime here: one hour).
      await db.query("UPDATE clients SET created_at = now() - interval '2 hours' WHERE resource->'registration'->>'kind' = 'dynamic'");
    } finally {
      await db.end();
    }
    await eventually(
      'the unused registration removed',
      async () => (await box.json('GET', `/Client/${unused}`, undefined, root)).status === 404,
    );
    const used = await box.json('GET', '/grants', undefined, root);
    const usedClient = (used.body as { client: string }[]).find((g) => g.client.startsWith('dyn-'))?.client;
    expect(usedClient, 'the client that signed a person in').to.be.a('string');
    expect((await box.json('GET', `/Client/${usedClient}`, undefined, root)).status).to.equal(200);
  });
});
