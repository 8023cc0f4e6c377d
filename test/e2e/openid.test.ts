// OpenID Connect with a real relying party library (openid-client) against the
// box as `make run` starts it: discovery, the code flow with PKCE and nonce, ID
// token validation (and jose against the JWKS), userinfo, refresh, prompt=none,
// max_age, the implicit id_token flows, and RP-initiated logout. The person's
// browser is a FormAgent: the box's pages are server-rendered forms.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oauth from 'openid-client';
import { Box, basic } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/callback';
const BYE = 'https://rp.example/signed-out';

describe('OpenID Connect with openid-client', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let config: oauth.Configuration;
  let annId: number;
  /** Ann's sub as the public clients of a new box see her: an opaque id (the first code flow reads it), never her row id. */
  let annSub: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    const group = await box.json('POST', '/groups', { name: 'devs', description: 'Developers' }, root);
    const user = await box.json(
      'POST',
      '/users',
      {
        email: 'ann@example.com',
        password: 'ann-password-1',
        'group-ids': [group.body.id],
        data: JSON.stringify({ name: 'Ann Example', preferred_username: 'ann', shoe_size: 38 }),
      },
      root,
    );
    annId = user.body.id;
    const client = await box.json(
      'PUT',
      '/Client/rp',
      {
        grant_types: ['authorization_code', 'implicit'],
        secret: 'rp-secret-123',
        description: 'A relying party',
        post_logout_redirect_uris: [BYE],
        auth: {
          authorization_code: { redirect_uri: CALLBACK, refresh_token: true, access_token_expiration: 600, id_token_expiration: 300 },
          implicit: { redirect_uri: CALLBACK },
        },
      },
      root,
    );
    expect(client.status, client.text).to.equal(201);
    config = await oauth.discovery(new URL(box.url), 'rp', undefined, oauth.ClientSecretBasic('rp-secret-123'), {
      execute: [oauth.allowInsecureRequests],
    });
  });
  after(async function () {
    await box?.stop();
  });

  /** The authorize request as a browser goes through it: sign-in when asked, consent when asked; the redirect back. */
  async function throughTheBrowser(browser: FormAgent, url: URL, password = 'ann-password-1'): Promise<URL> {
    let page = await browser.get(`${url.pathname}${url.search}`);
    if (page.status === 200 && page.text.includes('action="/auth/sign-in"')) {
      const signedIn = await browser.post('/auth/sign-in', { ...hiddenFields(page.text), email: 'ann@example.com', password });
      expect(signedIn.status, signedIn.text).to.equal(303);
      page = await browser.get(signedIn.headers.get('location')!);
    }
    if (page.status === 200 && page.text.includes('value="allow"')) page = await browser.consent(page, 'allow');
    expect(page.status, page.text.slice(0, 300)).to.equal(302);
    return new URL(page.headers.get('location')!);
  }

  /** The path of an authorize request for an openid code (a fixed PKCE challenge: no code is exchanged), with `params`. */
  const authorizePath = (params: Record<string, string> = {}): string => {
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      ...params,
    });
    return `${url.pathname}${url.search}`;
  };

  async function codeFlow(browser: FormAgent, extra: Record<string, string> = {}, rp: oauth.Configuration = config) {
    const verifier = oauth.randomPKCECodeVerifier();
    const nonce = oauth.randomNonce();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(rp, {
      redirect_uri: CALLBACK,
      scope: 'openid email groups profile',
      nonce,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    });
    const back = await throughTheBrowser(browser, url);
    return oauth.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: state });
  }

  it('publishes its configuration at /.well-known/openid-configuration', function () {
    const meta = config.serverMetadata();
    expect(meta).to.include({
      issuer: box.url,
      authorization_endpoint: `${box.url}/auth/authorize`,
      token_endpoint: `${box.url}/auth/token`,
      userinfo_endpoint: `${box.url}/auth/userinfo`,
      jwks_uri: `${box.url}/.well-known/jwks.json`,
      end_session_endpoint: `${box.url}/auth/logout`,
    });
    expect(meta.scopes_supported).to.include.members(['openid', 'email', 'profile', 'groups']);
    expect(meta.response_types_supported).to.include.members(['code', 'id_token', 'id_token token']);
    // RS256 first: Core §15.1 makes it the algorithm every relying party accepts, whatever BOXAUTH_JWT_ALG is.
    expect(meta.id_token_signing_alg_values_supported).to.deep.equal(['RS256', 'ES256', 'EdDSA']);
    expect(meta).to.include({ claims_parameter_supported: true, request_parameter_supported: true });
    expect(meta.code_challenge_methods_supported).to.deep.equal(['S256']);
  });

  it("the code flow with PKCE and nonce returns an RS256 ID token the library and jose accept; the scopes' claims are at userinfo", async function () {
    const tokens = await codeFlow(new FormAgent(box));
    const claims = tokens.claims()!;
    expect(claims.sub)
      .to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      .and.not.equal(String(annId));
    annSub = claims.sub;
    expect(claims).to.include({ iss: box.url, sub: annSub, aud: 'rp', acr: 'urn:boxauth:acr:password' });
    expect(claims.amr).to.deep.equal(['pwd']);
    // groups is the box's own scope (kube-apiserver reads it from the ID token); email and profile are
    // the UserInfo endpoint's when an access token comes with the ID token (Core §5.4).
    expect(claims.groups).to.deep.equal(['devs']);
    expect(claims).not.to.have.any.keys('email', 'name', 'preferred_username', 'shoe_size');
    expect(claims.exp - claims.iat).to.equal(300);
    expect(claims.auth_time).to.be.a('number');
    expect(claims.sid).to.be.a('string');
    const { payload, protectedHeader } = await jwtVerify(
      tokens.id_token!,
      createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`)),
      { issuer: box.url, audience: 'rp' },
    );
    expect(protectedHeader).to.include({ alg: 'RS256', typ: 'JWT' });
    const atHash = createHash('sha256').update(tokens.access_token).digest().subarray(0, 16).toString('base64url');
    expect(payload.at_hash).to.equal(atHash);
    // The access token keeps the box's algorithm (ES256 by default) when it is a JWT; this one is opaque.
    expect(tokens.access_token.split('.')).to.have.length(1);
    const info = await oauth.fetchUserInfo(config, tokens.access_token, annSub);
    expect(info).to.deep.include({ email: 'ann@example.com', email_verified: true, name: 'Ann Example', preferred_username: 'ann' });
  });

  it('a client that registered claims_in_id_token and an ES256 id_token_signed_response_alg gets both', async function () {
    await box.json(
      'PUT',
      '/Client/rp-es',
      {
        grant_types: ['authorization_code'],
        secret: 'rp-secret-123',
        claims_in_id_token: true,
        id_token_signed_response_alg: 'ES256',
        auth: { authorization_code: { redirect_uri: CALLBACK } },
      },
      root,
    );
    const es = await oauth.discovery(
      new URL(box.url),
      'rp-es',
      { id_token_signed_response_alg: 'ES256' },
      oauth.ClientSecretBasic('rp-secret-123'),
      {
        execute: [oauth.allowInsecureRequests],
      },
    );
    const tokens = await codeFlow(new FormAgent(box), {}, es);
    expect(decodeProtectedHeader(tokens.id_token!).alg).to.equal('ES256');
    expect(tokens.claims()).to.include({ email: 'ann@example.com', name: 'Ann Example', preferred_username: 'ann' });
    expect(tokens.claims()).not.to.have.property('shoe_size');
  });

  it('userinfo answers the same claims for the access token; 401 and 403 as RFC 6750 says', async function () {
    const tokens = await codeFlow(new FormAgent(box));
    const info = await oauth.fetchUserInfo(config, tokens.access_token, annSub);
    expect(info).to.deep.include({ sub: annSub, email: 'ann@example.com', groups: ['devs'], name: 'Ann Example' });
    const none = await box.request('GET', '/auth/userinfo');
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.match(/^Bearer/);
    const bad = await box.request('GET', '/auth/userinfo', { headers: { Authorization: 'Bearer nonsense' } });
    expect(bad.headers.get('www-authenticate')).to.include('error="invalid_token"');
    const clientToken = await box.rootToken();
    const forbidden = await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${clientToken}` } });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.headers.get('www-authenticate')).to.include('error="insufficient_scope"');
    const posted = await box.request('POST', '/auth/userinfo', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `access_token=${tokens.access_token}`,
    });
    expect(posted.status).to.equal(200);
  });

  it('an ID token is not an access token', async function () {
    const tokens = await codeFlow(new FormAgent(box));
    const res = await box.json('GET', '/Client/rp', undefined, tokens.id_token);
    expect(res.status).to.equal(401);
  });

  it('a refresh returns a new ID token with the user as they are now', async function () {
    const tokens = await codeFlow(new FormAgent(box));
    const first = tokens.claims()!;
    await box.json('PUT', `/users/${annId}`, { 'group-ids': [] }, root);
    const refreshed = await oauth.refreshTokenGrant(config, tokens.refresh_token!);
    const claims = refreshed.claims()!;
    expect(claims.sub).to.equal(first.sub);
    expect(claims.groups).to.deep.equal([]);
    expect(claims.auth_time).to.equal(first.auth_time);
    expect(claims).not.to.have.property('nonce');
    const devs = (await box.json('GET', '/groups?name=devs', undefined, root)).body[0].id;
    await box.json('PUT', `/users/${annId}`, { 'group-ids': [devs] }, root);
  });

  it('prompt=none answers at once for a signed-in browser, and login_required otherwise', async function () {
    const browser = new FormAgent(box);
    await codeFlow(browser);
    const silent = await codeFlow(browser, { prompt: 'none' });
    expect(silent.claims()!.sub).to.equal(annSub);
    const stranger = new FormAgent(box);
    const answer = await stranger.get(authorizePath({ prompt: 'none', state: 's1' }));
    expect(answer.status).to.equal(302);
    const back = new URL(answer.headers.get('location')!);
    expect(back.searchParams.get('error')).to.equal('login_required');
    expect(back.searchParams.get('state')).to.equal('s1');
  });

  it('an id_token_hint naming someone else than the signed-in person needs a sign-in; one the box did not sign is refused', async function () {
    const annTokens = await codeFlow(new FormAgent(box));
    expect((await box.json('POST', '/users', { email: 'bob@example.com', password: 'bob-password-1' }, root)).status).to.equal(201);
    const bob = new FormAgent(box);
    expect((await bob.signIn('bob@example.com', 'bob-password-1')).status).to.equal(303);
    const [header, payload, signature] = annTokens.id_token!.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone' })).toString('base64url')}.${signature}`;
    for (const [hint, error] of [
      [annTokens.id_token!, 'login_required'],
      [forged, 'invalid_request'],
    ] as const) {
      const url = oauth.buildAuthorizationUrl(config, {
        redirect_uri: CALLBACK,
        scope: 'openid',
        prompt: 'none',
        id_token_hint: hint,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
      const answer = await bob.get(`${url.pathname}${url.search}`);
      expect(answer.status).to.equal(302);
      const back = new URL(answer.headers.get('location')!);
      expect(back.searchParams.get('error'), error).to.equal(error);
      expect(back.searchParams.get('code')).to.equal(null);
    }
  });

  it('prompt=login and max_age make a signed-in person sign in again; login_hint fills in the email', async function () {
    const browser = new FormAgent(box);
    const first = (await codeFlow(browser)).claims()!;
    const page = await browser.get(authorizePath({ prompt: 'login', login_hint: 'ann@example.com', nonce: 'n' }));
    expect(page.status).to.equal(200);
    expect(page.text).to.include('action="/auth/sign-in"');
    expect(page.text).to.include('value="ann@example.com"');
    await new Promise((r) => setTimeout(r, 1100)); // auth_time has a resolution of a second
    const again = (await codeFlow(browser, { max_age: '0' })).claims()!;
    expect(again.auth_time).to.be.above(first.auth_time!);
  });

  it('the implicit flows return ID tokens in the fragment: id_token, and id_token token with at_hash', async function () {
    const browser = new FormAgent(box);
    const nonce = oauth.randomNonce();
    const idOnly = await throughTheBrowser(
      browser,
      oauth.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: 'openid email', response_type: 'id_token', nonce, state: 'i1' }),
    );
    const implicit = await oauth.discovery(new URL(box.url), 'rp', undefined, oauth.None(), { execute: [oauth.allowInsecureRequests] });
    oauth.useIdTokenResponseType(implicit);
    const claims = await oauth.implicitAuthentication(implicit, idOnly, nonce, { expectedState: 'i1' });
    expect(claims).to.include({ sub: annSub, email: 'ann@example.com', nonce });
    expect(new URLSearchParams(idOnly.hash.slice(1)).has('access_token')).to.equal(false);
    const both = await throughTheBrowser(
      browser,
      oauth.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: 'openid', response_type: 'id_token token', nonce, state: 'i2' }),
    );
    const fragment = new URLSearchParams(both.hash.slice(1));
    const idToken = decodeJwt(fragment.get('id_token')!);
    expect(idToken.at_hash).to.equal(
      createHash('sha256').update(fragment.get('access_token')!).digest().subarray(0, 16).toString('base64url'),
    );
    expect(decodeProtectedHeader(fragment.get('id_token')!).typ).to.equal('JWT');
    // nonce is required, and openid too
    const noNonce = await browser.get(
      `/auth/authorize?${new URLSearchParams({ client_id: 'rp', redirect_uri: CALLBACK, scope: 'openid', response_type: 'id_token' })}`,
    );
    expect(new URLSearchParams(new URL(noNonce.headers.get('location')!).hash.slice(1)).get('error')).to.equal('invalid_request');
  });

  it('RP-initiated logout ends the browser session and the tokens it started, then returns to a registered address', async function () {
    const browser = new FormAgent(box);
    const tokens = await codeFlow(browser);
    const url = oauth.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: BYE, state: 'bye-1' });
    const res = await browser.get(`${url.pathname}${url.search}`);
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal(`${BYE}?state=bye-1`);
    expect((await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${tokens.access_token}` } })).status).to.equal(
      401,
    );
    const refresh = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
      { Authorization: basic('rp', 'rp-secret-123') },
    );
    expect(refresh.body.error).to.equal('invalid_grant');
    // The browser is signed out: the next authorize asks for a sign-in.
    expect((await browser.get(authorizePath())).text).to.include('action="/auth/sign-in"');
  });

  it('logout refuses a hint the box did not sign, or one for another client than client_id, and ends nothing', async function () {
    const other = await box.json(
      'PUT',
      '/Client/other-rp',
      { grant_types: ['client_credentials'], secret: 'other-secret-123', post_logout_redirect_uris: ['https://other.example/bye'] },
      root,
    );
    expect(other.status, other.text).to.equal(201);
    const browser = new FormAgent(box);
    const tokens = await codeFlow(browser);
    const [header, payload, signature] = tokens.id_token!.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 3600 })).toString('base64url')}.${signature}`;
    const queries: Record<string, string>[] = [
      { id_token_hint: forged },
      { id_token_hint: tokens.id_token!, client_id: 'other-rp', post_logout_redirect_uri: 'https://other.example/bye' },
    ];
    for (const query of queries) {
      const res = await browser.get(`/auth/logout?${new URLSearchParams(query)}`);
      expect(res.status, JSON.stringify(query)).to.equal(400);
      expect(res.headers.get('location')).to.equal(null);
    }
    expect((await oauth.fetchUserInfo(config, tokens.access_token, annSub)).sub).to.equal(annSub);
    expect((await browser.get('/auth/signed-in')).text).to.include('ann@example.com');
  });

  it('logout refuses unregistered addresses, and asks the person when the request proves nothing', async function () {
    const browser = new FormAgent(box);
    const tokens = await codeFlow(browser);
    const evil = await browser.get(
      `/auth/logout?${new URLSearchParams({ id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://evil.example/' })}`,
    );
    expect(evil.status).to.equal(400);
    expect(evil.headers.get('location')).to.equal(null);
    // A link on another site, without a hint: a page that asks; nothing ends until the person says so.
    const asked = await browser.get('/auth/logout');
    expect(asked.status).to.equal(200);
    expect(asked.text).to.include('Sign out?');
    expect((await oauth.fetchUserInfo(config, tokens.access_token, annSub)).sub).to.equal(annSub);
    const confirmed = await browser.post('/auth/logout', hiddenFields(asked.text));
    expect(confirmed.status).to.equal(200);
    expect((await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${tokens.access_token}` } })).status).to.equal(
      401,
    );
  });
});
