// What the OpenID Foundation's conformance suite found, each as a test of its own
// (`make conformance` runs the suite itself): the authorization endpoint takes POST,
// ID tokens are RS256 unless the client chose, descriptions keep RFC 6749's
// characters, request objects are refused as Core §6 says, the scopes' claims go
// where Core §5.4 puts them, the claims parameter, acr, and the address and phone scopes.
import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/cb';
const RFC6749_TEXT = /^[\x20-\x21\x23-\x5B\x5D-\x7E]*$/;

describe('the OpenID Provider, as the conformance suite tries it', function () {
  let box: Box;
  let root: string;
  let browser: FormAgent;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_JWT_ALG: 'EdDSA' } });
    root = await box.rootToken();
    const data = {
      name: 'Ada Tester',
      phone_number: '+44 20 7946 0000',
      phone_number_verified: true,
      address: { street_address: '1 Main St', locality: 'London', country: 'GB', floor: 3 },
    };
    await box.json('POST', '/users', { email: 'ada@example.com', password: 'ada-password-1', data: JSON.stringify(data) }, root);
    await box.addClient(
      'rp',
      {
        grant_types: ['authorization_code', 'implicit'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: CALLBACK, token_format: 'jwt' }, implicit: { redirect_uri: CALLBACK } },
      },
      { secret: 'rp-secret-123', policy: false },
    );
    browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
  });
  after(async function () {
    await box?.stop();
  });

  const authorize = (params: Record<string, string>) =>
    browser.get(`/auth/authorize?${new URLSearchParams({ client_id: 'rp', redirect_uri: CALLBACK, ...params })}`);
  const answer = (res: { headers: Headers }): URLSearchParams => {
    const url = new URL(res.headers.get('location')!);
    return url.hash ? new URLSearchParams(url.hash.slice(1)) : url.searchParams;
  };

  /** The code flow for `params`; the token endpoint's answer. */
  async function codeTokens(params: Record<string, string>): Promise<Record<string, string>> {
    const code = answer(await authorize({ response_type: 'code', ...params })).get('code');
    expect(code).to.be.a('string');
    const res = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK },
      {
        Authorization: basic('rp', 'rp-secret-123'),
      },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }

  it('the authorization endpoint takes POST with a form body (Core §3.1.2.1)', async function () {
    const fields = { response_type: 'code', client_id: 'rp', redirect_uri: CALLBACK, scope: 'openid', state: 'posted' };
    const stranger = await box.request('POST', '/auth/authorize', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    expect(stranger.status).to.equal(200); // the sign-in page, not 401
    expect(stranger.text).to.include('action="/auth/sign-in"');
    const signedIn = await browser.post('/auth/authorize', fields);
    expect(signedIn.status, signedIn.text).to.equal(302);
    expect(answer(signedIn).get('state')).to.equal('posted');
    expect(answer(signedIn).get('code')).to.be.a('string');
  });

  it('ID tokens are RS256 whatever signs access tokens (here EdDSA); the JWKS has a key of each', async function () {
    const tokens = await codeTokens({ scope: 'openid' });
    expect(decodeProtectedHeader(tokens.id_token!)).to.include({ alg: 'RS256', typ: 'JWT' });
    expect(decodeProtectedHeader(tokens.access_token!)).to.include({ alg: 'EdDSA', typ: 'at+jwt' });
    const jwks = (await box.json('GET', '/.well-known/jwks.json')).body;
    expect(jwks.keys.map((k: { alg: string }) => k.alg).sort()).to.deep.equal(['ES256', 'EdDSA', 'RS256']);
    const meta = (await box.json('GET', '/.well-known/openid-configuration')).body;
    expect(meta.id_token_signing_alg_values_supported).to.deep.equal(['RS256', 'ES256', 'EdDSA']);
  });

  it('refusals keep RFC 6749 characters in error_description: no "§", no quotes', async function () {
    const refused = answer(await authorize({ response_type: 'id_token', scope: 'openid', state: 's' }));
    expect(refused.get('error')).to.equal('invalid_request');
    expect(refused.get('error_description')).to.match(RFC6749_TEXT).and.to.include('nonce');
    const token = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: 'nope', redirect_uri: CALLBACK },
      {
        Authorization: basic('rp', 'rp-secret-123'),
      },
    );
    expect(token.body.error_description).to.match(RFC6749_TEXT);
  });

  it('an unsigned request object (alg none) is refused on a page; a request_uri not pushed: request_uri_not_supported', async function () {
    const unsigned = 'eyJhbGciOiJub25lIn0.eyJzdGF0ZSI6InJvIn0.';
    const byValue = await authorize({ response_type: 'code', scope: 'openid', state: 'r1', request: unsigned });
    expect(byValue.status).to.equal(400);
    expect(byValue.headers.get('location')).to.equal(null);
    expect(byValue.text).to.include('unsigned (alg none)');
    const byReference = answer(await authorize({ response_type: 'code', scope: 'openid', request_uri: 'https://rp.example/r' }));
    expect(byReference.get('error')).to.equal('request_uri_not_supported');
    expect((await box.json('GET', '/.well-known/openid-configuration')).body).to.include({
      request_parameter_supported: true,
      request_uri_parameter_supported: false,
    });
  });

  it("with an access token the scopes' claims are at userinfo, not in the ID token (Core §5.4); without one, in it", async function () {
    const tokens = await codeTokens({ scope: 'openid email profile' });
    expect(decodeJwt(tokens.id_token!)).not.to.have.any.keys('email', 'name');
    const info = await box.json('GET', '/auth/userinfo', undefined, tokens.access_token);
    expect(info.body).to.include({ email: 'ada@example.com', name: 'Ada Tester' });
    const idOnly = answer(await authorize({ response_type: 'id_token', scope: 'openid email profile', nonce: 'n-1' }));
    expect(decodeJwt(idOnly.get('id_token')!)).to.include({ email: 'ada@example.com', name: 'Ada Tester', nonce: 'n-1' });
  });

  it('the claims parameter asks for claims by name, for userinfo and for the ID token (Core §5.5)', async function () {
    const claims = JSON.stringify({ userinfo: { name: { essential: true }, shoe_size: null }, id_token: { email: null } });
    const tokens = await codeTokens({ scope: 'openid', claims });
    expect(decodeJwt(tokens.id_token!)).to.include({ email: 'ada@example.com' }).and.not.to.have.property('name');
    const info = (await box.json('GET', '/auth/userinfo', undefined, tokens.access_token)).body;
    expect(info).to.deep.equal({ sub: info.sub, name: 'Ada Tester' });
    const malformed = answer(await authorize({ response_type: 'code', scope: 'openid', claims: '{"userinfo": [1]}' }));
    expect(malformed.get('error')).to.equal('invalid_request');
  });

  it('acr and amr say how the person signed in; discovery lists the classes, weakest first', async function () {
    const claims = decodeJwt((await codeTokens({ scope: 'openid', acr_values: 'urn:boxauth:acr:password' })).id_token!);
    expect(claims).to.include({ acr: 'urn:boxauth:acr:password' });
    expect(claims.amr).to.deep.equal(['pwd']);
    expect((await box.json('GET', '/.well-known/openid-configuration')).body.acr_values_supported).to.deep.equal([
      'urn:boxauth:acr:password',
      'urn:boxauth:acr:mfa',
      'phr',
    ]);
  });

  it("address and phone come from the user's data: the standard members only", async function () {
    const tokens = await codeTokens({ scope: 'openid address phone' });
    const info = (await box.json('GET', '/auth/userinfo', undefined, tokens.access_token)).body;
    expect(info.address).to.deep.equal({ street_address: '1 Main St', locality: 'London', country: 'GB' });
    expect(info).to.include({ phone_number: '+44 20 7946 0000', phone_number_verified: true });
    expect((await box.json('GET', '/.well-known/openid-configuration')).body.scopes_supported).to.include.members(['address', 'phone']);
  });

  it('the consent page of a client that is not first party still works through POST', async function () {
    await box.addClient(
      'third',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: CALLBACK } } },
      { secret: 'third-secret-1', policy: false },
    );
    const page = await browser.post('/auth/authorize', {
      response_type: 'code',
      client_id: 'third',
      redirect_uri: CALLBACK,
      scope: 'openid',
    });
    expect(page.status).to.equal(200);
    expect(hiddenFields(page.text)).to.include({ client_id: 'third' });
    const allowed = await browser.consent(page, 'allow');
    expect(answer(allowed).get('code')).to.be.a('string');
  });
});
