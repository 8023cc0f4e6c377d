// Hooks (docs/guides/hooks.md) at the tokens of a person that do not come from a code or a refresh
// token: the device grant's (RFC 8628), token exchange's (RFC 8693) and the implicit kinds of the
// authorization endpoint. Each is asked tokenIssuing (and idTokenIssuing) about its person, carries
// what the hook adds (never a claim the box alone states), and is refused in the words of a hook that
// refuses, with the error its RFC names. Hooks in other processes (Python, Go), as hooks.test.ts.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { basic, Box, boxForSuite } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { HookServer } from '../support/hook-servers.js';
import { allowExchange, ACCESS_TOKEN, EXCHANGE, exchangingClient, ORDERS } from '../support/exchange-chain.js';
import { testCa, type TestCa } from '../support/tls.js';
import { userToken } from '../support/user-token.js';
import { startAll } from '../support/start-all.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const CALLBACK = 'https://rp.example/callback';

describe('hooks at the device grant, token exchange and the implicit flow', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let ca: TestCa;
  let python: HookServer;
  let go: HookServer;
  let adaId: number;
  let webSecret: string;
  const secret = newSecret();
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } });

  before(async function () {
    ca = testCa();
    [python, go] = await startAll([HookServer.start('python', secret, ca), HookServer.start('go', secret, ca)]);
    const ada = await box.json('POST', '/users', { email: 'ada@example.com', password: 'a-good-password' }, root);
    expect(ada.status, ada.text).to.equal(201);
    adaId = ada.body.id;
    const tv = await box.json(
      'PUT',
      '/Client/tv',
      {
        grant_types: [DEVICE, 'implicit'],
        scope: ['openid', 'email'],
        first_party: true,
        auth: { device_code: { token_format: 'jwt' }, implicit: { redirect_uri: CALLBACK, token_format: 'jwt' } },
      },
      root,
    );
    expect(tv.status, tv.text).to.equal(201);
    ({ secret: webSecret } = await box.addClient('web', exchangingClient, { policy: false }));
    await allowExchange(box, root, 'web-impersonates', 'web', { exchange: { delegation: false, audience: ORDERS } });
  });
  after(async function () {
    await Promise.all([python?.kill(), go?.kill()]);
  });
  afterEach(async function () {
    await box.json('DELETE', '/Hook/h', undefined, root);
  });

  async function putHook(url: string, moments = ['tokenIssuing', 'idTokenIssuing']): Promise<void> {
    const res = await box.json('PUT', '/Hook/h', { moments, url, caBundle: Buffer.from(ca.pem).toString('base64'), secret }, root);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  /** The answer to a device's poll once ada has allowed it in her browser; `beforeAllowed` is told of a poll before. */
  async function deviceTokens(
    beforeAllowed?: (poll: { status: number; body: Record<string, string> }) => Promise<void>,
  ): Promise<{ status: number; body: Record<string, string> }> {
    const asked = (await box.form('/auth/device', { client_id: 'tv', scope: 'openid email' })).body;
    const poll = () => box.form('/auth/token', { grant_type: DEVICE, client_id: 'tv', device_code: asked.device_code });
    if (beforeAllowed) await beforeAllowed(await poll());
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'a-good-password')).status).to.equal(303);
    const page = await browser.get(`/auth/device/verify?user_code=${asked.user_code}`);
    expect((await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' })).text).to.include(
      'Device connected',
    );
    return poll();
  }

  /** web exchanges a token ada's sign-in gave it (of `scope`) for one at orders (impersonation). */
  async function exchanged(scope = 'orders:read'): Promise<{ status: number; body: Record<string, string> }> {
    const subject = await userToken(box, adaId, 'web', undefined, scope);
    return box.form(
      '/auth/token',
      { grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS_TOKEN, audience: ORDERS },
      { Authorization: basic('web', webSecret) },
    );
  }

  /** The fragment of the implicit answer of `responseType` for ada, signed in. */
  async function implicit(responseType: string): Promise<URLSearchParams> {
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'a-good-password')).status).to.equal(303);
    const query = { response_type: responseType, client_id: 'tv', redirect_uri: CALLBACK, scope: 'openid email', state: 's', nonce: 'n' };
    const res = await browser.get(`/auth/authorize?${new URLSearchParams(query)}`);
    expect(res.status, res.text).to.equal(302);
    return new URLSearchParams(new URL(res.headers.get('location')!).hash.slice(1));
  }

  /** The claims a hook's /claims answer adds, and none of those the box alone states. */
  function carriesTheHooksClaims(claims: Record<string, unknown>, language: string): void {
    expect(claims).to.include({ licence: 'gold', hook_lang: language, iss: box.url });
    expect(claims.sub).to.not.equal('admin');
    expect(claims.acr).to.not.equal('phr');
    expect(claims.groups ?? []).to.not.include('admins');
    expect(claims.email ?? 'ada@example.com').to.equal('ada@example.com');
  }

  /** The request of the last call `server` got at `moment`. */
  const lastCall = async (server: HookServer, moment: string): Promise<{ user?: { email: string }; grant: { type: string } }> =>
    JSON.parse((await server.seen()).filter((s) => s.moment === moment).slice(-1)[0]!.body).request;

  it('device grant: the hook is asked about the person who allowed it; its claims are in both tokens', async function () {
    await putHook(`${python.url}/claims`);
    const res = await deviceTokens();
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    carriesTheHooksClaims(decodeJwt(res.body.access_token!), 'python');
    carriesTheHooksClaims(decodeJwt(res.body.id_token!), 'python');
    const asked = await lastCall(python, 'tokenIssuing');
    expect(asked.user?.email).to.equal('ada@example.com');
    expect(asked.grant.type).to.equal(DEVICE);
  });

  it('device grant: a pending poll asks no hook; once allowed, a hook that refuses refuses, access_denied (RFC 8628 §3.5)', async function () {
    await putHook(`${go.url}/refuse`);
    const calls = (await go.seen()).length;
    const res = await deviceTokens(async (pending) => {
      // Nobody decided yet: the device is told to wait (it polls at its pace), not refused for nobody.
      expect(pending.body.error).to.equal('authorization_pending');
      expect((await go.seen()).length).to.equal(calls);
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('access_denied');
    expect(res.body.error_description).to.include('the licence of this team has expired');
  });

  it('token exchange: the hook is asked about the subject token’s person; its claims are in the new token', async function () {
    await putHook(`${go.url}/claims`);
    const res = await exchanged();
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const claims = decodeJwt(res.body.access_token!);
    carriesTheHooksClaims(claims, 'go');
    expect(claims).to.include({ aud: ORDERS, client_id: 'web' });
    const asked = await lastCall(go, 'tokenIssuing');
    expect(asked.user?.email).to.equal('ada@example.com');
    expect(asked.grant.type).to.equal(EXCHANGE);
  });

  it('token exchange: a hook that refuses refuses it, invalid_request (RFC 8693 §2.2.2: unacceptable by policy)', async function () {
    await putHook(`${python.url}/refuse`);
    const res = await exchanged();
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
    expect(res.body.error_description).to.include('the licence of this team has expired');
  });

  it('token exchange issues no ID token: a hook of idTokenIssuing is not asked, even with openid', async function () {
    await putHook(`${go.url}/refuse`, ['idTokenIssuing']);
    const calls = (await go.seen()).length;
    const res = await exchanged('orders:read openid');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.not.have.property('id_token');
    expect((await go.seen()).length).to.equal(calls);
  });

  it('implicit flow: the access token and the ID token of /auth/authorize carry the hook’s claims', async function () {
    await putHook(`${python.url}/claims`);
    const fragment = await implicit('id_token token');
    carriesTheHooksClaims(decodeJwt(fragment.get('access_token')!), 'python');
    carriesTheHooksClaims(decodeJwt(fragment.get('id_token')!), 'python');
    expect((await lastCall(python, 'idTokenIssuing')).grant.type).to.equal('authorization');
  });

  it('implicit flow: a refusal goes back to the client, its words only as an error_description may carry them', async function () {
    await putHook(`${python.url}/refuse-markup`, ['idTokenIssuing']);
    const fragment = await implicit('id_token');
    expect(fragment.get('error')).to.equal('access_denied');
    expect(fragment.get('id_token')).to.equal(null);
    const description = fragment.get('error_description')!;
    expect(description).to.include('refused by hook').and.include('no licence');
    // RFC 6749 §4.2.2.1: %x20-21 / %x23-5B / %x5D-7E, no quote, no backslash, nothing outside ASCII.
    expect(description).to.match(/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/);
    // And no markup, for a client that puts the description on a page of its own.
    expect(description).to.not.match(/[<>]/);
  });
});
