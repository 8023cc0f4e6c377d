// The FAPI 2.0 Security Profile (a Client with profile: fapi2, api/oauth/fapi2.ts) with a real
// client library (oauth4webapi: PAR, private_key_jwt, DPoP, PKCE, the iss of the response) and a
// browser without JavaScript between the push and the code. The attacks: a fapi2 client falling
// back to a secret, to an unbound token (no DPoP proof, at the code and at the refresh), to an
// authorization request not pushed, to one without PKCE or with response_type token, and a code
// older than 60 s on a box whose codes live longer; and what the Client may not be written with.
import { expect } from 'chai';
import { exportJWK, decodeProtectedHeader } from 'jose';
import * as oauth from 'oauth4webapi';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const CALLBACK = 'https://bank.example/callback';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'old-bank-secret-123';
const insecure = { [oauth.allowInsecureRequests]: true };

describe('FAPI 2.0 Security Profile (profile: fapi2)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let as: oauth.AuthorizationServer;
  let auth: oauth.ClientAuth;
  let dpopKeys: oauth.CryptoKeyPair;
  let fapiClient: Record<string, unknown>;

  before(async function () {
    // Codes of the box live 10 minutes: a fapi2 client's must not (§5.3.2.1: 60 s at most).
    box = await Box.start({ movableClock: true, env: { BOXAUTH_AUTH_CODE_TTL_SECONDS: '600', BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' } });
    root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const keys = await oauth.generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'bank-1' };
    auth = oauth.PrivateKeyJwt({ key: keys.privateKey, kid: 'bank-1' });
    dpopKeys = await oauth.generateKeyPair('ES256');
    fapiClient = {
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      first_party: true,
      auth: { authorization_code: { redirect_uris: [CALLBACK], refresh_token: true } },
      scope: ['openid', 'email'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [jwk] },
      profile: 'fapi2',
    };
    const res = await box.json('PUT', '/Client/bank', fapiClient, root);
    expect(res.status, res.text).to.equal(201);
    const issuer = new URL(box.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }));
  });
  after(async function () {
    await box?.stop();
  });

  const client: oauth.Client = { client_id: 'bank' };
  const dpop = (at: oauth.Client = client) => oauth.DPoP(at, dpopKeys);

  interface Pushed {
    requestUri: string;
    verifier: string;
    state: string;
  }

  /** The push of oauth4webapi, with PKCE S256 and private_key_jwt. */
  async function push(extra: Record<string, string> = {}): Promise<Pushed> {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const response = await oauth.pushedAuthorizationRequest(
      as,
      client,
      auth,
      {
        response_type: 'code',
        redirect_uri: CALLBACK,
        scope: 'openid email',
        state,
        nonce: 'n-1',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        ...extra,
      },
      insecure,
    );
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, client, response);
    return { requestUri: request_uri, verifier, state };
  }

  /** A push as a plain request (its client assertion made by oauth4webapi's push to a throwaway URL would not do): the PAR endpoint's JSON answer. */
  async function pushRaw(params: Record<string, string>): Promise<JsonResponse> {
    let assertion: Record<string, string> = {};
    // oauth4webapi writes the client assertion into the body it sends; take it from a request to ourselves.
    const body = new URLSearchParams();
    await auth(as, client, body, new Headers());
    assertion = Object.fromEntries(body);
    return box.form('/auth/par', { client_id: 'bank', ...assertion, ...params });
  }

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  const authorizePath = (params: Record<string, string>): string => `/auth/authorize?${new URLSearchParams(params)}`;

  const location = (res: JsonResponse): URL => {
    expect(res.status, `${res.status} ${res.text.slice(0, 300)}`).to.equal(302);
    return new URL(res.headers.get('location')!);
  };

  /** The browser's answer for a pushed request: the redirect back to the client. */
  async function answerFor(pushed: Pushed): Promise<JsonResponse> {
    return (await signedInBrowser()).get(authorizePath({ client_id: 'bank', request_uri: pushed.requestUri }));
  }

  /** The code grant's token request of oauth4webapi (DPoP unless told not to). */
  async function exchange(answer: JsonResponse, pushed: Pushed, options: { dpop?: boolean; at?: oauth.Client } = {}): Promise<Response> {
    const at = options.at ?? client;
    const params = oauth.validateAuthResponse(as, at, location(answer), pushed.state);
    return oauth.authorizationCodeGrantRequest(as, at, auth, params, CALLBACK, pushed.verifier, {
      ...insecure,
      ...(options.dpop === false ? {} : { DPoP: dpop(at) }),
    });
  }

  describe('what a fapi2 Client may not be written with', function () {
    const refused = async (changes: Record<string, unknown>, field: string) => {
      const res = await box.json('PUT', '/Client/bank-bad', { ...fapiClient, ...changes }, root);
      expect(res.status, res.text).to.equal(422);
      expect(Object.keys(res.body.errors as object)).to.include(field);
      return res;
    };

    it('the implicit grant (response_type token), a secret, or no token_endpoint_auth_method', async function () {
      const implicit = await refused(
        {
          grant_types: ['authorization_code', 'implicit'],
          auth: { authorization_code: { redirect_uri: CALLBACK }, implicit: { redirect_uri: CALLBACK } },
        },
        'grant_types',
      );
      expect(implicit.text).to.include('FAPI 2.0');
      await refused({ secret: SECRET }, 'secret');
      await refused({ token_endpoint_auth_method: undefined }, 'token_endpoint_auth_method');
    });

    it('token_endpoint_auth_method client_secret_basic, client_secret_post or none, each named in the refusal', async function () {
      for (const method of ['client_secret_basic', 'client_secret_post', 'none']) {
        const res = await refused({ token_endpoint_auth_method: method, jwks: undefined }, 'token_endpoint_auth_method');
        expect(res.body.errors.token_endpoint_auth_method.join(' '), method).to.include(
          'never client_secret_basic, client_secret_post or none',
        );
      }
    });

    it('RS256 ID tokens; its ID tokens are ES256 when it does not choose', async function () {
      await refused({ id_token_signed_response_alg: 'RS256' }, 'id_token_signed_response_alg');
      expect((await box.json('PUT', '/Client/bank-es', { ...fapiClient, id_token_signed_response_alg: 'ES256' }, root)).status).to.equal(
        201,
      );
    });

    it('a ServiceAccount binding (a workload token is no private_key_jwt)', async function () {
      await refused(
        { auth: { workload: { serviceAccounts: [{ namespace: 'bank', name: 'app' }] }, authorization_code: { redirect_uri: CALLBACK } } },
        'auth',
      );
    });

    it('private_key_jwt needs keys', async function () {
      const res = await box.json(
        'PUT',
        '/Client/keyless',
        { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt' },
        root,
      );
      expect(res.status, res.text).to.equal(422);
      expect(res.text).to.include('private_key_jwt needs');
    });
  });

  describe('the flow as the profile has it', function () {
    it('push with private_key_jwt and PKCE, iss in the response, a DPoP-bound token and an ES256 ID token', async function () {
      const pushed = await push();
      const answer = await answerFor(pushed);
      // RFC 9207: the iss of the authorization response (oauth4webapi checks it against the metadata).
      expect(location(answer).searchParams.get('iss')).to.equal(box.url);
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, await exchange(answer, pushed), {
        expectedNonce: 'n-1',
        requireIdToken: true,
      });
      expect(tokens.token_type).to.equal('dpop');
      expect(decodeProtectedHeader(tokens.id_token!).alg).to.equal('ES256');
      // The refresh token, refreshed with a proof of the same key, gives a bound token again.
      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, { ...insecure, DPoP: dpop() }),
      );
      expect(refreshed.token_type).to.equal('dpop');
    });
  });

  describe('attacks: a fapi2 client falling back', function () {
    it('to its old secret: refused (invalid_client), though the record still holds it', async function () {
      // A client that had a secret, then declared FAPI 2.0 without sending one: the secret stays stored.
      const old = { grant_types: ['client_credentials'], secret: SECRET };
      expect((await box.json('PUT', '/Client/converted', old, root)).status).to.equal(201);
      const { secret: _, ...rest } = { ...fapiClient, id: 'converted', secret: undefined };
      const rewritten = await box.json('PUT', '/Client/converted', rest, root);
      expect(rewritten.status, rewritten.text).to.equal(200);
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('converted', SECRET) });
      expect(res.status, res.text).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
      expect(res.body.error_description).to.include('private_key_jwt only');
    });

    it('to its old secret when it authenticates with a certificate: refused (invalid_client)', async function () {
      // token_endpoint_auth_method tls_client_auth alone does not refuse a secret (the certificate is one more way in): the profile does.
      const old = { grant_types: ['client_credentials'], secret: SECRET };
      expect((await box.json('PUT', '/Client/converted-mtls', old, root)).status).to.equal(201);
      // (jwks undefined: left out of the body)
      const rest = {
        ...fapiClient,
        jwks: undefined,
        token_endpoint_auth_method: 'tls_client_auth',
        tls_client_auth_san_dns: 'bank.example',
      };
      const rewritten = await box.json('PUT', '/Client/converted-mtls', rest, root);
      expect(rewritten.status, rewritten.text).to.equal(200);
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('converted-mtls', SECRET) });
      expect(res.status, res.text).to.equal(401);
      expect(res.body.error_description).to.include('FAPI 2.0');
    });

    it('to client_id alone at the refresh: refused (invalid_client)', async function () {
      const pushed = await push();
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, await exchange(await answerFor(pushed), pushed), {
        expectedNonce: 'n-1',
      });
      const res = await box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: 'bank' });
      expect(res.body.error, res.text).to.equal('invalid_client');
    });

    it('to an unbound token: a code exchanged without a DPoP proof is refused (invalid_dpop_proof)', async function () {
      const pushed = await push();
      const res = await exchange(await answerFor(pushed), pushed, { dpop: false });
      expect(res.status).to.equal(400);
      expect(((await res.json()) as { error: string }).error).to.equal('invalid_dpop_proof');
    });

    it("to a DPoP proof of another algorithm than the profile's (ES384): refused at the push and at the token endpoint", async function () {
      const es384 = oauth.DPoP(client, await oauth.generateKeyPair('ES384'));
      const verifier = oauth.generateRandomCodeVerifier();
      const params = {
        response_type: 'code',
        redirect_uri: CALLBACK,
        scope: 'openid',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      };
      const pushedWith384 = await oauth.pushedAuthorizationRequest(as, client, auth, params, { ...insecure, DPoP: es384 });
      expect(pushedWith384.status).to.equal(400);
      expect(((await pushedWith384.json()) as { error: string }).error).to.equal('invalid_dpop_proof');
      const pushed = await push();
      const params2 = oauth.validateAuthResponse(as, client, location(await answerFor(pushed)), pushed.state);
      const res = await oauth.authorizationCodeGrantRequest(as, client, auth, params2, CALLBACK, pushed.verifier, {
        ...insecure,
        DPoP: es384,
      });
      expect(res.status).to.equal(400);
      expect(((await res.json()) as { error: string }).error).to.equal('invalid_dpop_proof');
    });

    it('to an unbound token at the refresh and at client_credentials: refused (invalid_dpop_proof)', async function () {
      const pushed = await push();
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, await exchange(await answerFor(pushed), pushed), {
        expectedNonce: 'n-1',
      });
      const refresh = await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure);
      expect(((await refresh.json()) as { error: string }).error).to.equal('invalid_dpop_proof');
      const credentials = await oauth.clientCredentialsGrantRequest(as, client, auth, {}, insecure);
      expect(((await credentials.json()) as { error: string }).error).to.equal('invalid_dpop_proof');
    });

    it('to an authorization request not pushed: refused in the redirect (invalid_request)', async function () {
      const answer = await (
        await signedInBrowser()
      ).get(
        authorizePath({
          client_id: 'bank',
          response_type: 'code',
          redirect_uri: CALLBACK,
          scope: 'openid',
          state: 's-1',
          code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
          code_challenge_method: 'S256',
        }),
      );
      const back = location(answer);
      expect(back.searchParams.get('code')).to.equal(null);
      expect(back.searchParams.get('error')).to.equal('invalid_request');
      expect(back.searchParams.get('error_description')).to.include('/auth/par');
      // RFC 9207 §2: the iss of an error response too.
      expect(back.searchParams.get('iss')).to.equal(box.url);
    });

    it('to a push without PKCE, or PKCE without code_challenge_method=S256: refused (invalid_request)', async function () {
      const none = await pushRaw({ response_type: 'code', redirect_uri: CALLBACK, scope: 'openid' });
      expect(none.status, none.text).to.equal(400);
      expect(none.body.error).to.equal('invalid_request');
      expect(none.body.error_description).to.include('PKCE');
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
      const noMethod = await pushRaw({ response_type: 'code', redirect_uri: CALLBACK, scope: 'openid', code_challenge: challenge });
      expect(noMethod.body.error, noMethod.text).to.equal('invalid_request');
    });

    it('to a push without redirect_uri: refused (invalid_request)', async function () {
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
      const res = await pushRaw({ response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' });
      expect(res.body.error, res.text).to.equal('invalid_request');
      expect(res.body.error_description).to.include('redirect_uri');
    });

    it('to response_type token: refused at the push', async function () {
      const res = await pushRaw({ response_type: 'token', redirect_uri: CALLBACK, scope: 'openid' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal('unauthorized_client');
      expect(res.body.error_description).to.include('FAPI 2.0');
    });

    it('to a code older than 60 s, on a box whose codes live 10 minutes: refused (invalid_grant)', async function () {
      const pushed = await push();
      const answer = await answerFor(pushed);
      box.advanceClock(61);
      // The client's clock moves with the box's, so that its assertion and proof are fresh.
      const late: oauth.Client = { client_id: 'bank', [oauth.clockSkew]: 61 };
      const res = await exchange(answer, pushed, { at: late });
      const body = (await res.json()) as { error: string; error_description: string };
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(body.error).to.equal('invalid_grant');
    });
  });
});
