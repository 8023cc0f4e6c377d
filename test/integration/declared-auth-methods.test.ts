// A Client's token_endpoint_auth_method (RFC 7591 §2) held at every endpoint that authenticates
// clients (token, introspection, revocation, PAR, device authorization): client_secret_basic takes
// the secret in HTTP Basic only, client_secret_post in the body only, none is a public client that
// names itself with client_id alone and proves its codes with PKCE. The wrong way is refused with
// RFC 6749 §5.2's invalid_client (401, WWW-Authenticate Basic); a client that declares nothing takes
// both ways, as before. What a Client may not be written with: none with a secret, or with
// client_credentials; a secret method without a secret.
import { expect } from 'chai';
import crypto from 'node:crypto';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { clientKey } from '../support/assertion.js';
import { newKey, proof } from '../support/dpop.js';

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const CALLBACK = 'https://app.example/cb';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'declared-secret-123';

describe('token_endpoint_auth_method: client_secret_basic, client_secret_post and none', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  const key = clientKey();
  const { jwks } = key;

  /** A fresh private_key_jwt assertion of `id`. */
  const assertion = (id: string): string => key.assertion(id, box.url);

  /** A client that may use every endpoint that authenticates clients. */
  const confidentialClient = (extra: Record<string, unknown>) => ({
    grant_types: ['client_credentials', 'authorization_code', DEVICE],
    first_party: true,
    auth: { authorization_code: { redirect_uri: CALLBACK } },
    secret: SECRET,
    ...extra,
  });

  const put = (id: string, body: Record<string, unknown>): Promise<JsonResponse> => box.json('PUT', `/Client/${id}`, body, root);

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    for (const [id, method] of [
      ['basic-only', 'client_secret_basic'],
      ['post-only', 'client_secret_post'],
      ['either', undefined],
    ] as const) {
      const res = await put(id, confidentialClient(method ? { token_endpoint_auth_method: method } : {}));
      expect(res.status, res.text).to.equal(201);
    }
    // Keys to sign its request objects: they authenticate it no more than its secret in the body does.
    expect((await put('basic-keys', confidentialClient({ token_endpoint_auth_method: 'client_secret_basic', jwks }))).status).to.equal(201);
    const pub = await put('public', {
      grant_types: ['authorization_code', 'refresh_token'],
      first_party: true,
      auth: { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } },
      token_endpoint_auth_method: 'none',
      jwks,
    });
    expect(pub.status, pub.text).to.equal(201);
  });

  after(async function () {
    await box?.stop();
  });

  /** The client's credentials, sent `way`: in HTTP Basic, or in the body. */
  function credentials(id: string, way: 'basic' | 'body'): { params: Record<string, string>; headers: Record<string, string> } {
    return way === 'basic'
      ? { params: {}, headers: { Authorization: basic(id, SECRET) } }
      : { params: { client_id: id, client_secret: SECRET }, headers: {} };
  }

  /** One request to each endpoint that authenticates clients, with the credentials sent `way`: endpoint and answer. */
  async function everyEndpoint(id: string, way: 'basic' | 'body'): Promise<[string, JsonResponse][]> {
    const { params, headers } = credentials(id, way);
    const ask = (path: string, extra: Record<string, string>) => box.form(path, { ...params, ...extra }, headers);
    // A token of the client's own to introspect and revoke (the root client's: its answer is the client's either way).
    const token = await box.rootToken();
    return [
      ['/auth/token', await ask('/auth/token', { grant_type: 'client_credentials' })],
      ['/auth/introspect', await ask('/auth/introspect', { token })],
      ['/auth/revoke', await ask('/auth/revoke', { token: 'not-a-token' })],
      [
        '/auth/par',
        await ask('/auth/par', {
          response_type: 'code',
          redirect_uri: CALLBACK,
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        }),
      ],
      ['/auth/device', await ask('/auth/device', { scope: 'openid' })],
    ];
  }

  /** RFC 6749 §5.2: invalid_client, 401, and the scheme the client must use. */
  function expectRefused(res: JsonResponse, what: string, says: string): void {
    expect(res.status, `${what}: ${res.text}`).to.equal(401);
    expect(res.body.error, what).to.equal('invalid_client');
    expect(res.headers.get('www-authenticate'), what).to.match(/^Basic /);
    expect(res.body.error_description, what).to.include(says);
  }

  const expectServed = (answers: [string, JsonResponse][], who: string): void => {
    for (const [endpoint, res] of answers) expect(res.status, `${who} at ${endpoint}: ${res.text}`).to.be.oneOf([200, 201]);
  };

  const WAYS = { basic: 'in HTTP Basic', body: 'in the body' };
  for (const [id, method, right, wrong] of [
    ['basic-only', 'client_secret_basic', 'basic', 'body'],
    ['post-only', 'client_secret_post', 'body', 'basic'],
  ] as const) {
    describe(method, function () {
      it(`its secret ${WAYS[right]}: served at the token, introspection, revocation, PAR and device endpoints`, async function () {
        expectServed(await everyEndpoint(id, right), id);
      });

      it(`its secret ${WAYS[wrong]}: refused at each of them (invalid_client, 401, WWW-Authenticate Basic)`, async function () {
        for (const [endpoint, res] of await everyEndpoint(id, wrong)) expectRefused(res, endpoint, `authenticates with ${method} only`);
      });
    });
  }

  describe('client_secret_basic, other ways', function () {
    it('an assertion signed with its own keys (private_key_jwt): refused', async function () {
      const res = await box.form('/auth/token', {
        grant_type: 'client_credentials',
        client_assertion_type: JWT_BEARER,
        client_assertion: assertion('basic-keys'),
      });
      expectRefused(res, 'private_key_jwt', 'authenticates with client_secret_basic only');
      const right = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('basic-keys', SECRET) });
      expect(right.status, right.text).to.equal(200);
    });

    it('a wrong secret in the body is refused as any wrong secret is: the declared method is not told to a stranger', async function () {
      const res = await box.form('/auth/token', {
        grant_type: 'client_credentials',
        client_id: 'basic-only',
        client_secret: 'wrong-secret-1',
      });
      expect(res.status).to.equal(401);
      expect(res.body.error_description).to.not.include('client_secret_basic');
    });
  });

  describe('none declared: both ways, as before', function () {
    it('HTTP Basic and the body are both served', async function () {
      expectServed(await everyEndpoint('either', 'basic'), 'either (Basic)');
      expectServed(await everyEndpoint('either', 'body'), 'either (body)');
    });
  });

  describe('none: a public client', function () {
    const verifier = crypto.randomBytes(32).toString('base64url');
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');

    /** The code `client` gets through Ann's browser for an authorization request with `extra`, or the redirect's error. */
    async function authorize(client: string, extra: Record<string, string>): Promise<URLSearchParams> {
      const browser = new FormAgent(box);
      expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
      const query = new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: CALLBACK, scope: 'openid', ...extra });
      const res = await browser.get(`/auth/authorize?${query}`);
      expect(res.status, res.text).to.equal(302);
      return new URL(res.headers.get('location')!).searchParams;
    }

    const exchange = (code: string, extra: Record<string, string>, headers: Record<string, string> = {}) =>
      box.form('/auth/token', { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, ...extra }, headers);

    it('client_id alone with PKCE: a code, its tokens and a refresh', async function () {
      const code = (await authorize('public', { code_challenge: challenge, code_challenge_method: 'S256' })).get('code')!;
      const tokens = await exchange(code, { client_id: 'public', code_verifier: verifier });
      expect(tokens.status, tokens.text).to.equal(200);
      const refreshed = await box.form('/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'public',
        refresh_token: tokens.body.refresh_token as string,
      });
      expect(refreshed.status, refreshed.text).to.equal(200);
    });

    it('without PKCE: refused at the authorization request', async function () {
      expect((await authorize('public', {})).get('error')).to.equal('invalid_request');
    });

    it('an assertion signed with its keys, or a secret: refused (invalid_client)', async function () {
      const code = (await authorize('public', { code_challenge: challenge, code_challenge_method: 'S256' })).get('code')!;
      const asserted = await exchange(code, {
        code_verifier: verifier,
        client_assertion_type: JWT_BEARER,
        client_assertion: assertion('public'),
      });
      expect(asserted.status, asserted.text).to.equal(401);
      expect(asserted.body.error).to.equal('invalid_client');
      expect(asserted.body.error_description).to.include('public client');
      const secret = await exchange(code, { client_id: 'public', client_secret: SECRET, code_verifier: verifier });
      expect(secret.status, secret.text).to.equal(401);
      expect(secret.body.error).to.equal('invalid_client');
    });

    it('written with a secret, or with client_credentials: refused (422, naming the field)', async function () {
      const withSecret = await put('public-secret', {
        grant_types: ['implicit'],
        auth: { implicit: { redirect_uri: CALLBACK } },
        token_endpoint_auth_method: 'none',
        secret: SECRET,
      });
      expect(withSecret.status, withSecret.text).to.equal(422);
      expect(withSecret.body.errors).to.have.key('secret');
      expect(withSecret.body.errors.secret.join(' ')).to.include('token_endpoint_auth_method none');
      const cc = await put('public-cc', { grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' });
      expect(cc.status, cc.text).to.equal(422);
      expect(cc.body.errors).to.have.key('grant_types');
    });

    it('a client with a secret rewritten as none loses it: its old secret is refused, and it must use PKCE', async function () {
      const before = confidentialClient({ grant_types: ['authorization_code'] });
      expect((await put('turned-public', before)).status).to.equal(201);
      // With its secret, a code without PKCE is served (a confidential client need not).
      expect((await authorize('turned-public', {})).get('code')).to.be.a('string');
      const { secret: _, ...rest } = before;
      const rewritten = await put('turned-public', { ...rest, token_endpoint_auth_method: 'none' });
      expect(rewritten.status, rewritten.text).to.equal(200);
      expect((await authorize('turned-public', {})).get('error')).to.equal('invalid_request');
      const code = (await authorize('turned-public', { code_challenge: challenge, code_challenge_method: 'S256' })).get('code')!;
      const old = await exchange(code, { code_verifier: verifier }, { Authorization: basic('turned-public', SECRET) });
      expect(old.status, old.text).to.equal(401);
      expect(old.body.error).to.equal('invalid_client');
    });
    it("a confidential client rewritten as none: its DPoP-bound grant's refresh token refreshes nothing without the key", async function () {
      const before = confidentialClient({
        grant_types: ['authorization_code', 'refresh_token'],
        auth: { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } },
      });
      expect((await put('turned-dpop', before)).status).to.equal(201);
      const key = await newKey();
      const htu = `${box.url}/auth/token`;
      const code = (await authorize('turned-dpop', {})).get('code')!;
      const bound = await exchange(code, {}, { Authorization: basic('turned-dpop', SECRET), DPoP: await proof(key, { htm: 'POST', htu }) });
      expect(bound.status, bound.text).to.equal(200);
      expect(bound.body.token_type).to.equal('DPoP');
      // Its refresh token is not bound to the key: the client's secret constrained it (RFC 9449 §5). The client then turns public.
      const { secret: _, ...rest } = before;
      expect((await put('turned-dpop', { ...rest, token_endpoint_auth_method: 'none' })).status).to.equal(200);
      // A thief with the refresh token, without the key: client_id alone, and no proof.
      const stolen = await box.form('/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'turned-dpop',
        refresh_token: bound.body.refresh_token as string,
      });
      expect(stolen.status, stolen.text).to.be.oneOf([400, 401]);
      expect(stolen.body.access_token).to.equal(undefined);
    });
  });

  describe('a secret method without a secret', function () {
    it('is refused at write (422, secret)', async function () {
      for (const method of ['client_secret_basic', 'client_secret_post']) {
        const { secret: _, ...body } = confidentialClient({ grant_types: ['authorization_code'], token_endpoint_auth_method: method });
        const res = await put(`no-secret-${method.slice(-5)}`, body);
        expect(res.status, res.text).to.equal(422);
        expect(res.body.errors).to.have.key('secret');
        expect(res.body.errors.secret.join(' ')).to.include(method);
      }
    });
  });
});
