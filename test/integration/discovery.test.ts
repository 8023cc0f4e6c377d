// Discovery (RFC 8414, JWKS), introspection (RFC 7662), revocation (RFC 7009)
// and signing key rotation.
import { expect } from 'chai';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('discovery, introspection, revocation, keys', function () {
  let box: Box;
  let secret: string;

  before(async function () {
    box = await Box.start();
    ({ secret } = await box.addClient('rs', {
      auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 600, refresh_token: true } },
    }));
    await box.addClient('other', {}, { secret });
  });
  after(async function () {
    await box?.stop();
  });

  const issue = async (client = 'rs'): Promise<any> =>
    (await box.form('/auth/token', { grant_type: 'client_credentials', scope: 'orders:read' }, { Authorization: basic(client, secret) }))
      .body;

  it('publishes RFC 8414 metadata naming its endpoints', async function () {
    const res = await box.json('GET', '/.well-known/oauth-authorization-server');
    expect(res.status).to.equal(200);
    expect(res.body).to.include({
      issuer: box.url,
      token_endpoint: `${box.url}/auth/token`,
      jwks_uri: `${box.url}/.well-known/jwks.json`,
      introspection_endpoint: `${box.url}/auth/introspect`,
      revocation_endpoint: `${box.url}/auth/revoke`,
    });
    expect(res.body.grant_types_supported).to.include.members(['client_credentials', 'refresh_token']);
  });

  it('tells the same of every endpoint in its RFC 8414 and its OpenID Connect discovery documents', async function () {
    const oauth = (await box.json('GET', '/.well-known/oauth-authorization-server')).body;
    const openid = (await box.json('GET', '/.well-known/openid-configuration')).body;
    for (const [name, value] of Object.entries(oauth)) expect(openid[name], name).to.deep.equal(value);
    expect(oauth.grant_types_supported).to.include('implicit');
    expect(oauth.response_types_supported).to.include.members(['code', 'token', 'id_token']);
    expect(oauth.token_endpoint_auth_methods_supported).to.include.members(['private_key_jwt', 'none']);
  });

  it('serves its OpenAPI 3.1 document at /openapi.json, for its own base URL, without authentication', async function () {
    const res = await box.json('GET', '/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body.openapi).to.equal('3.1.0');
    expect(res.body.servers).to.deep.equal([{ url: box.url }]);
    expect(res.body.paths).to.include.keys('/auth/token', '/Client/{id}', '/users', '/Session/{id}');
  });

  it('publishes the public key that verifies its JWTs, with kid, and no private parts', async function () {
    const jwks = (await box.json('GET', '/.well-known/jwks.json')).body;
    for (const key of jwks.keys) expect(key).not.to.have.property('d');
    const { access_token } = await issue();
    const { payload, protectedHeader } = await jwtVerify(access_token, createLocalJWKSet(jwks), { issuer: box.url });
    expect(payload.sub).to.equal('rs');
    expect(jwks.keys.map((k: any) => k.kid)).to.include(protectedHeader.kid);
  });

  it('introspects a live token, and reports closed or unknown tokens inactive', async function () {
    const { access_token, refresh_token } = await issue();
    const auth = { Authorization: basic('other', secret) };
    const live = await box.form('/auth/introspect', { token: access_token }, auth);
    expect(live.status).to.equal(200);
    expect(live.body).to.include({ active: true, client_id: 'rs', sub: 'rs', scope: 'orders:read', iss: box.url });
    expect(live.body.exp).to.be.a('number');
    const refresh = await box.form('/auth/introspect', { token: refresh_token, token_type_hint: 'refresh_token' }, auth);
    expect(refresh.body).to.include({ active: true, token_type: 'refresh_token', client_id: 'rs' });
    await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${access_token}` } });
    expect((await box.form('/auth/introspect', { token: access_token }, auth)).body).to.deep.equal({ active: false });
    expect((await box.form('/auth/introspect', { token: 'garbage' }, auth)).body).to.deep.equal({ active: false });
  });

  it('introspection needs client authentication', async function () {
    const res = await box.form('/auth/introspect', { token: 'x' });
    expect(res.status).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
  });

  it("revokes a token of the calling client, and ignores another client's", async function () {
    const { access_token, refresh_token } = await issue();
    const byOther = await box.form('/auth/revoke', { token: access_token }, { Authorization: basic('other', secret) });
    expect(byOther.status).to.equal(200);
    expect((await box.json('GET', '/Client/rs', undefined, access_token)).status).to.equal(200);
    const byOwner = await box.form(
      '/auth/revoke',
      { token: refresh_token, token_type_hint: 'refresh_token' },
      { Authorization: basic('rs', secret) },
    );
    expect(byOwner.status).to.equal(200);
    expect((await box.json('GET', '/Client/rs', undefined, access_token)).status).to.equal(401);
    const refreshed = await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'rs', refresh_token });
    expect(refreshed.body.error).to.equal('invalid_grant');
  });
});

describe('signing key rotation', function () {
  // Each test starts a box and starts it again: on two cores shared with a whole suite, that can pass 30 s.
  this.timeout(90_000);
  it('a new algorithm brings a new key; the old public key stays published while its tokens live', async function () {
    const box = await Box.start();
    try {
      const { secret } = await box.addClient('jwt', {
        auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 600 } },
      });
      const before = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('jwt', secret) })).body
        .access_token;
      const oldKid = decodeProtectedHeader(before).kid;
      await box.stop();
      await box.launch({ BOXAUTH_JWT_ALG: 'EdDSA' });
      const after = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('jwt', secret) })).body
        .access_token;
      const header = decodeProtectedHeader(after);
      expect(header.alg).to.equal('EdDSA');
      expect(header.kid).not.to.equal(oldKid);
      const jwks = createLocalJWKSet((await box.json('GET', '/.well-known/jwks.json')).body);
      await jwtVerify(before, jwks, { issuer: box.url });
      await jwtVerify(after, jwks, { issuer: box.url });
      expect((await box.json('GET', '/Client/jwt', undefined, before)).status).to.equal(200);
    } finally {
      await box.stop();
    }
  });

  it('each algorithm rotates on its own schedule; an ID token signed before stays verifiable', async function () {
    const box = await Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'keys@example.com', BOXAUTH_ADMIN_PASSWORD: 'keys-password-1' } });
    try {
      await box.addClient(
        'oidc',
        { grant_types: ['implicit'], first_party: true, auth: { implicit: { redirect_uri: 'https://rp.example/cb' } } },
        { policy: false },
      );
      const browser = new FormAgent(box);
      await browser.signIn('keys@example.com', 'keys-password-1');
      const idToken = async (): Promise<string> => {
        const res = await browser.get(
          `/auth/authorize?${new URLSearchParams({ response_type: 'id_token', client_id: 'oidc', scope: 'openid', nonce: 'n' })}`,
        );
        return new URLSearchParams(new URL(res.headers.get('location')!).hash.slice(1)).get('id_token')!;
      };
      const before = await idToken();
      const jwksBefore = (await box.json('GET', '/.well-known/jwks.json')).body.keys as { kid: string; alg: string }[];
      expect(jwksBefore.map((k) => k.alg).sort()).to.deep.equal(['ES256', 'EdDSA', 'RS256']);
      // The RS256 key grows old: the next start replaces it, and only it.
      await box.rotateSigningKey('RS256');
      const after = await idToken();
      expect(decodeProtectedHeader(after).kid).not.to.equal(decodeProtectedHeader(before).kid);
      const published = (await box.json('GET', '/.well-known/jwks.json')).body;
      const jwksAfter = published.keys as { kid: string; alg: string }[];
      expect(jwksAfter).to.have.length(4);
      expect(jwksAfter.map((k) => k.kid)).to.include.members(jwksBefore.map((k) => k.kid));
      const jwks = createLocalJWKSet(published);
      await jwtVerify(before, jwks, { issuer: box.url, audience: 'oidc' });
      await jwtVerify(after, jwks, { issuer: box.url, audience: 'oidc' });
    } finally {
      await box.stop();
    }
  });
});
