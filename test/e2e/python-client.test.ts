// A client library no one here wrote, in another language: requests-oauth2client
// (Python, pinned in test/py-client/requirements.txt) against the box, through
// test/py-client/client.py. It reads the discovery document, authenticates as it
// does by default (client_secret_post), makes RFC 8693 exchanges with its own
// token_exchange(), parses the answers into its BearerToken, and turns the box's
// refusals into its own exception classes: what a Python service would see.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic } from '../support/box.js';
import { ACCESS_TOKEN, allowChain, exchangingClient, JWT, ORDERS, PAYMENTS } from '../support/exchange-chain.js';
import { pyClient, requirePyClient, type PyClientError, type PyClientResult } from '../support/py-client.js';
import { FormAgent } from '../support/form-agent.js';
import { userToken } from '../support/user-token.js';

describe('requests-oauth2client (Python) against the box', function () {
  this.timeout(120_000);
  let box: Box;
  let aliceId: number;
  const secrets: Record<string, string> = {};

  /** One command to the Python client, as `client` (its secret), discovering the box. */
  const py = (client: string, command: Record<string, unknown>): Promise<PyClientResult> =>
    pyClient({ issuer: box.url, client_id: client, client_secret: secrets[client], ...command });

  /** A token the library obtained: it parsed the answer as a BearerToken. */
  const issued = (result: PyClientResult): NonNullable<PyClientResult['token']> => {
    expect(result.ok, JSON.stringify(result.error)).to.equal(true);
    expect(result.token_class).to.equal('BearerToken');
    return result.token!;
  };

  /** What the library raised: a 400 from the token endpoint. */
  const refused = (result: PyClientResult): PyClientError => {
    expect(result.ok, JSON.stringify(result.token)).to.equal(false);
    expect(result.error!.status).to.equal(400);
    return result.error!;
  };

  const ownToken = async (client: string): Promise<string> => issued(await py(client, { action: 'client_credentials' })).access_token;

  /** `client` exchanges `subject`, an access token, through the library's token_exchange(). */
  const exchange = (client: string, subject: string, params: Record<string, unknown>): Promise<PyClientResult> =>
    py(client, { action: 'token_exchange', subject_token: subject, subject_token_type: ACCESS_TOKEN, ...params });

  /** The same, acting itself: its own token is the actor token (delegation). */
  const delegate = async (client: string, subject: string, params: Record<string, unknown>): Promise<PyClientResult> =>
    exchange(client, subject, { actor_token: await ownToken(client), actor_token_type: ACCESS_TOKEN, ...params });

  before(async function () {
    // Not skipped when missing: CI builds the venv before make test, so its absence is a failure.
    requirePyClient();
    // alice's sub is her row id here, as a box that had people before release 036 says it (test/integration/subjects.test.ts: the others).
    box = await Box.start({ env: { BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    const root = await box.rootToken();
    for (const id of ['web', 'orders', 'payments', 'stranger']) {
      secrets[id] = (await box.addClient(id, exchangingClient, { policy: false })).secret;
    }
    const alice = await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password' }, root);
    expect(alice.status, alice.text).to.equal(201);
    aliceId = alice.body.id;
    // docs/guides/tokens-between-services.md's worked example: web passes its users on to orders,
    // acting itself; orders passes tokens meant for it on to payments. stranger has no policy.
    await allowChain(box, root);
  });

  after(async function () {
    await box?.stop();
  });

  it('client credentials through discovery; the token introspects active, a made-up one inactive', async function () {
    const token = issued(await py('orders', { action: 'client_credentials', scope: 'orders:read', audience: PAYMENTS }));
    expect(token.token_type.toLowerCase()).to.equal('bearer');
    // The library keeps expires_at and counts expires_in down from it.
    expect(token.expires_in).to.be.a('number').within(290, 300);
    // The response leaves scope out, being what was asked (RFC 6749 §5.1); the token carries it.
    expect(decodeJwt(token.access_token)).to.include({ iss: box.url, sub: 'orders', aud: PAYMENTS, scope: 'orders:read' });

    const seen = await py('orders', { action: 'introspect', token: token.access_token });
    expect(seen.ok, JSON.stringify(seen.error)).to.equal(true);
    expect(seen.introspection).to.include({ active: true, client_id: 'orders', sub: 'orders', scope: 'orders:read' });
    const madeUp = await py('orders', { action: 'introspect', token: 'not-a-token-of-this-box' });
    expect(madeUp.introspection).to.deep.equal({ active: false });
  });

  describe('a three-hop delegation chain: web → orders → payments', function () {
    let fromWeb: string;

    it("web exchanges alice's token for one at orders that says web acts for her", async function () {
      const alice = await userToken(box, aliceId, 'web', undefined, 'orders:read orders:write openid');
      const token = issued(await delegate('web', alice, { audience: ORDERS, scope: 'orders:read orders:write' }));
      expect(token).to.include({ issued_token_type: ACCESS_TOKEN, scope: 'orders:read orders:write' });
      const claims = decodeJwt(token.access_token);
      expect(claims).to.include({ sub: String(aliceId), client_id: 'web', aud: ORDERS });
      expect(claims.act).to.deep.equal({ sub: 'web', client_id: 'web' });
      fromWeb = token.access_token;
    });

    it('orders exchanges it for one at payments: act nested, the most recent actor outermost', async function () {
      const token = issued(await delegate('orders', fromWeb, { audience: PAYMENTS, scope: 'orders:read', requested_token_type: JWT }));
      expect(token).to.include({ issued_token_type: JWT, scope: 'orders:read' });
      expect(token.expires_in).to.be.a('number').within(1, 600);
      const claims = decodeJwt(token.access_token);
      expect(claims).to.include({ sub: String(aliceId), client_id: 'orders', aud: PAYMENTS, scope: 'orders:read' });
      expect(claims.act).to.deep.equal({ sub: 'orders', client_id: 'orders', act: { sub: 'web', client_id: 'web' } });

      const seen = await py('orders', { action: 'introspect', token: token.access_token });
      expect(seen.introspection).to.include({ active: true, sub: String(aliceId), client_id: 'orders' });
      expect(seen.introspection!.act).to.deep.equal(claims.act);
    });
  });

  describe("refusals are the library's own exceptions, with the RFC's error codes", function () {
    let alice: string;
    before(async function () {
      alice = await userToken(box, aliceId, 'web', undefined, 'orders:read');
    });

    it("a scope wider than the subject token's: InvalidScope, invalid_scope", async function () {
      const error = refused(await delegate('web', alice, { audience: ORDERS, scope: 'orders:read orders:write' }));
      expect(error).to.include({ class: 'InvalidScope', error: 'invalid_scope' });
      expect(error.description).to.match(/orders:write. is not in the subject token's scope/);
    });

    it("an audience outside the client's list: InvalidTarget, invalid_target", async function () {
      const error = refused(await delegate('web', alice, { audience: 'https://admin.example' }));
      expect(error).to.include({ class: 'InvalidTarget', error: 'invalid_target' });
    });

    it('a client no policy lets exchange: InvalidRequest, invalid_request', async function () {
      const error = refused(await exchange('stranger', alice, { audience: ORDERS }));
      expect(error).to.include({ class: 'InvalidRequest', error: 'invalid_request' });
      expect(error.description).to.match(/no AccessPolicy linked to client .stranger. allows this exchange/);
    });
  });

  describe('DPoP and pushed authorization requests, as the library makes them', function () {
    const CALLBACK = 'https://portal.example/callback';
    before(async function () {
      secrets.reader = (await box.addClient('reader', { auth: { client_credentials: { token_format: 'jwt' } } })).secret; // allow policy
      secrets.portal = (
        await box.addClient(
          'portal',
          { grant_types: ['authorization_code'], first_party: true, auth: { authorization_code: { redirect_uris: [CALLBACK] } } },
          { policy: false },
        )
      ).secret;
    });

    it("DPoP: the library's token is bound to its key and proven at the box's API; the token alone is refused", async function () {
      const result = await py('reader', { action: 'client_credentials', dpop: true, resource_url: `${box.url}/Client/reader` });
      expect(result.ok, JSON.stringify(result.error)).to.equal(true);
      expect(result.token_class).to.equal('DPoPToken');
      expect(result.token!.token_type).to.match(/^dpop$/i);
      expect((decodeJwt(result.token!.access_token).cnf as { jkt: string }).jkt).to.equal(result.dpop_jkt);
      expect(result.resource!.status).to.equal(200);
      const stolen = await box.json('GET', '/Client/reader', undefined, result.token!.access_token);
      expect(stolen.status).to.equal(401);
    });

    it('PAR: the library pushes the request; the browser carries only its reference, once; the code is exchanged', async function () {
      const pushed = await py('portal', { action: 'par', redirect_uri: CALLBACK, scope: 'openid' });
      expect(pushed.ok, JSON.stringify(pushed.error)).to.equal(true);
      expect(pushed.request_uri).to.match(/^urn:ietf:params:oauth:request_uri:/);
      const authorization = new URL(pushed.authorization_url!);
      expect([...authorization.searchParams.keys()].sort()).to.deep.equal(['client_id', 'request_uri']);
      const agent = new FormAgent(box);
      expect((await agent.signIn('alice@example.com', 'alice-password')).status).to.equal(303);
      const back = await agent.get(`${authorization.pathname}${authorization.search}`);
      const location = new URL(back.headers.get('location') ?? 'about:blank');
      expect(`${location.origin}${location.pathname}`, back.text).to.equal(CALLBACK);
      expect(location.searchParams.get('state')).to.equal(pushed.state);
      const tokens = await box.form(
        '/auth/token',
        {
          grant_type: 'authorization_code',
          code: location.searchParams.get('code')!,
          redirect_uri: CALLBACK,
          code_verifier: pushed.code_verifier!,
        },
        { Authorization: basic('portal', secrets.portal!) },
      );
      expect(tokens.status, tokens.text).to.equal(200);
      expect(decodeJwt(tokens.body.id_token)).to.include({ sub: String(aliceId), aud: 'portal' });
      // The reference is used up: the same link gives no second code.
      expect((await agent.get(`${authorization.pathname}${authorization.search}`)).status).to.equal(400);
    });
  });
});
