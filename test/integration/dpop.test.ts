// DPoP (RFC 9449) with a real client library (oauth4webapi's DPoP handle) and with proofs
// made by hand for the attacks: the token endpoint binds tokens to the proof's key; the
// box API, UserInfo, introspection and the decision point accept a bound token only with
// a fresh proof of its key for that very request, once, at any process of the box.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import pg from 'pg';
import { purgeProofs, recordProofs } from '../../api/store/dpop-proofs.js';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { ath, newKey, proof, type DpopKey } from '../support/dpop.js';
import { FormAgent } from '../support/form-agent.js';

const insecure = { [oauth.allowInsecureRequests]: true };
const CALLBACK = 'https://spa.example/callback';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };

describe('DPoP (RFC 9449)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let as: oauth.AuthorizationServer;
  const service: oauth.Client = { client_id: 'orders' };
  const serviceAuth = oauth.ClientSecretBasic('orders-secret');

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    await box.addClient('orders', { auth: { client_credentials: { refresh_token: true } } }, { secret: 'orders-secret' });
    await box.addClient('ledger', { auth: { client_credentials: { token_format: 'jwt' } } }, { secret: 'ledger-secret' });
    await box.addClient('strict', { dpop_bound_access_tokens: true }, { secret: 'strict-secret' });
    const spa = { first_party: true, auth: { authorization_code: { redirect_uris: [CALLBACK], refresh_token: true } } };
    expect((await box.json('PUT', '/Client/spa', { grant_types: ['authorization_code', 'refresh_token'], ...spa }, root)).status).to.equal(
      201,
    );
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const issuer = new URL(box.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  });
  after(async function () {
    await box?.stop();
  });

  /** A DPoP-bound token of `orders` through oauth4webapi, and the handle that made its proof. */
  async function boundToken(client = service, auth = serviceAuth): Promise<{ token: oauth.TokenEndpointResponse; DPoP: oauth.DPoPHandle }> {
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('ES256'));
    const res = await oauth.clientCredentialsGrantRequest(as, client, auth, new URLSearchParams(), { DPoP, ...insecure });
    return { token: await oauth.processClientCredentialsResponse(as, client, res), DPoP };
  }

  /** A bound token and the key it is bound to, proofs by hand. */
  async function tokenWithKey(): Promise<{ token: string; key: DpopKey }> {
    const key = await newKey();
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials' },
      { Authorization: basic('orders', 'orders-secret'), DPoP: await proof(key, { htm: 'POST', htu: `${box.url}/auth/token` }) },
    );
    expect(res.status, res.text).to.equal(200);
    expect(res.body.token_type).to.equal('DPoP');
    return { token: res.body.access_token, key };
  }

  const getClients = (headers: Record<string, string>) => box.request('GET', '/Client/orders', { headers });

  const expectDpopRefusal = (res: { status: number; headers: Headers; text: string }, error: string, about: RegExp): void => {
    expect(res.status, res.text).to.equal(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).to.match(/^DPoP /);
    expect(challenge).to.include(`error="${error}"`);
    expect(challenge).to.include('algs="ES256');
    expect(challenge).to.match(about);
  };

  describe('the token endpoint', function () {
    it('discovery lists the proof algorithms: asymmetric ones, never none or HMAC', async function () {
      const algs = as.dpop_signing_alg_values_supported as string[];
      expect(algs).to.include.members(['ES256', 'RS256', 'PS256', 'EdDSA']);
      expect(algs.filter((a) => a === 'none' || a.startsWith('HS'))).to.deep.equal([]);
    });

    it('binds an access token to the proof key: token_type DPoP, cnf.jkt in a JWT', async function () {
      const ledger: oauth.Client = { client_id: 'ledger' };
      const { token, DPoP } = await boundToken(ledger, oauth.ClientSecretBasic('ledger-secret'));
      expect(token.token_type).to.equal('dpop'); // oauth4webapi lower-cases it
      expect(decodeJwt(token.access_token).cnf).to.deep.equal({ jkt: await DPoP.calculateThumbprint() });
    });

    it('without a proof, tokens stay Bearer', async function () {
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('orders', 'orders-secret') });
      expect(res.body.token_type).to.equal('Bearer');
    });

    it('refuses a proof for another URI or method, a stale one, and a replayed one (invalid_dpop_proof)', async function () {
      const key = await newKey();
      const request = (dpop: string) =>
        box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('orders', 'orders-secret'), DPoP: dpop });
      const htu = `${box.url}/auth/token`;
      for (const dpop of [
        await proof(key, { htm: 'POST', htu: `${box.url}/auth/introspect` }),
        await proof(key, { htm: 'GET', htu }),
        await proof(key, { htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) - 300 }),
      ]) {
        const res = await request(dpop);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_dpop_proof');
      }
      const once = await proof(key, { htm: 'POST', htu });
      expect((await request(once)).status).to.equal(200);
      const again = await request(once);
      expect(again.status).to.equal(400);
      expect(again.body.error_description).to.match(/already used/);
    });

    it('refuses a proof signed with a symmetric key or alg none', async function () {
      const header = (h: object) => Buffer.from(JSON.stringify(h)).toString('base64url');
      const payload = Buffer.from(
        JSON.stringify({ jti: randomUUID(), htm: 'POST', htu: `${box.url}/auth/token`, iat: Math.floor(Date.now() / 1000) }),
      ).toString('base64url');
      for (const dpop of [
        `${header({ alg: 'none', typ: 'dpop+jwt', jwk: (await newKey()).jwk })}.${payload}.`,
        `${header({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } })}.${payload}.c2ln`,
      ]) {
        const res = await box.form(
          '/auth/token',
          { grant_type: 'client_credentials' },
          { Authorization: basic('orders', 'orders-secret'), DPoP: dpop },
        );
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_dpop_proof');
      }
    });

    it('a client with dpop_bound_access_tokens must send a proof', async function () {
      const bare = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('strict', 'strict-secret') });
      expect(bare.status, bare.text).to.equal(400);
      expect(bare.body.error).to.equal('invalid_dpop_proof');
      const { token } = await boundToken({ client_id: 'strict' }, oauth.ClientSecretBasic('strict-secret'));
      expect(token.token_type).to.equal('dpop');
    });

    it('a confidential client refreshes without a proof of the key (its refresh token is not bound); the new token binds to the proof it sends', async function () {
      const { token } = await boundToken();
      const bare = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: token.refresh_token! },
        {
          Authorization: basic('orders', 'orders-secret'),
        },
      );
      expect(bare.status, bare.text).to.equal(200);
      expect(bare.body.token_type).to.equal('Bearer');
      const key = await newKey();
      const bound = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: token.refresh_token! },
        {
          Authorization: basic('orders', 'orders-secret'),
          DPoP: await proof(key, { htm: 'POST', htu: `${box.url}/auth/token` }),
        },
      );
      expect(bound.body.token_type).to.equal('DPoP');
    });

    it("a confidential client's refresh token of a bound grant is no bearer token: a thief without the secret is refused", async function () {
      // Its refresh token is not bound to the key because the client authenticates when it
      // refreshes (§5); named by client_id alone, the client is anyone who holds the token.
      const { token } = await boundToken();
      const htu = `${box.url}/auth/token`;
      const tries: Record<string, string>[] = [{}, { DPoP: await proof(await newKey(), { htm: 'POST', htu }) }];
      for (const headers of tries) {
        const stolen = await box.form(
          '/auth/token',
          { grant_type: 'refresh_token', refresh_token: token.refresh_token!, client_id: 'orders' },
          headers,
        );
        expect(stolen.status, stolen.text).to.equal(401);
        expect(stolen.body.error).to.equal('invalid_client');
      }
      // The thief's tries did not spend it: the client, with its secret, refreshes.
      const own = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: token.refresh_token! },
        { Authorization: basic('orders', 'orders-secret'), DPoP: await proof(await newKey(), { htm: 'POST', htu }) },
      );
      expect(own.status, own.text).to.equal(200);
    });
  });

  const spa: oauth.Client = { client_id: 'spa' };

  interface Authorized {
    answer: JsonResponse;
    verifier: string;
    state: string;
  }

  /**
   * Ann signs in to the single-page app and its authorization request is answered: sent
   * through her browser with `extra` parameters, or pushed first (RFC 9126) with a proof
   * of `pushWith`'s key.
   */
  async function authorizeSpa(extra: Record<string, string> = {}, pushWith?: oauth.DPoPHandle): Promise<Authorized> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const request = {
      response_type: 'code',
      client_id: 'spa',
      redirect_uri: CALLBACK,
      state,
      scope: 'openid',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    };
    let query = new URLSearchParams(request);
    if (pushWith) {
      const pushed = await oauth.pushedAuthorizationRequest(as, spa, oauth.None(), request, { DPoP: pushWith, ...insecure });
      const { request_uri } = await oauth.processPushedAuthorizationResponse(as, spa, pushed);
      query = new URLSearchParams({ client_id: 'spa', request_uri });
    }
    return { answer: await browser.get(`/auth/authorize?${query}`), verifier, state };
  }

  /** The app redeems the code it was sent (oauth4webapi), with a proof of `DPoP`'s key or without a proof. */
  async function redeem({ answer, verifier, state }: Authorized, DPoP?: oauth.DPoPHandle): Promise<oauth.TokenEndpointResponse> {
    expect(answer.status, answer.text.slice(0, 300)).to.equal(302);
    const params = oauth.validateAuthResponse(as, spa, new URL(answer.headers.get('location')!), state);
    const res = await oauth.authorizationCodeGrantRequest(as, spa, oauth.None(), params, CALLBACK, verifier, {
      ...(DPoP ? { DPoP } : {}),
      ...insecure,
    });
    return oauth.processAuthorizationCodeResponse(as, spa, res);
  }

  const newHandle = async (): Promise<oauth.DPoPHandle> => oauth.DPoP(spa, await oauth.generateKeyPair('ES256'));

  describe("a public client's refresh token (RFC 9449 §5)", function () {
    /** Ann signs in to the single-page app, which redeems its code with a DPoP proof, or without one. */
    async function signedInSpa(withProof = true): Promise<{ token: oauth.TokenEndpointResponse; DPoP: oauth.DPoPHandle | undefined }> {
      const DPoP = withProof ? await newHandle() : undefined;
      return { token: await redeem(await authorizeSpa(), DPoP), DPoP };
    }

    /** A refresh as someone holding the token but not its key sends it: no proof, or a proof of their own key. */
    async function thiefRefresh(refreshToken: string, withOwnKey: boolean) {
      const headers: Record<string, string> = withOwnKey
        ? { DPoP: await proof(await newKey(), { htm: 'POST', htu: `${box.url}/auth/token` }) }
        : {};
      return box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'spa' }, headers);
    }

    it('is bound to the key of the proof: without a proof, or with a proof of another key, it is refused and stays usable', async function () {
      const { token, DPoP } = await signedInSpa();
      expect(token.token_type).to.equal('dpop');
      expect(token.refresh_token).to.be.a('string');

      const bare = await thiefRefresh(token.refresh_token!, false);
      expect(bare.status, bare.text).to.equal(400);
      expect(bare.body.error).to.equal('invalid_dpop_proof');
      const otherKey = await thiefRefresh(token.refresh_token!, true);
      expect(otherKey.status, otherKey.text).to.equal(400);
      expect(otherKey.body.error).to.equal('invalid_grant');
      expect(otherKey.body.error_description).to.match(/bound to another DPoP key/);

      // The thief's tries neither spent the token nor set off reuse detection: its holder refreshes.
      const res = await oauth.refreshTokenGrantRequest(as, spa, oauth.None(), token.refresh_token!, { DPoP, ...insecure });
      const refreshed = await oauth.processRefreshTokenResponse(as, spa, res);
      expect(refreshed.token_type).to.equal('dpop');
      // Without rotation (auth.authorization_code.refresh_token_rotation) it is the same token,
      // still bound to the key: RFC 9700 §4.14.2 asks either of a public client's refresh tokens.
      const refreshToken = refreshed.refresh_token ?? token.refresh_token!;
      expect((await thiefRefresh(refreshToken, true)).body.error).to.equal('invalid_grant');
      // The new access token is bound too: with a proof it is taken, as Bearer it is not.
      const userinfo = await oauth.protectedResourceRequest(
        refreshed.access_token,
        'GET',
        new URL(`${box.url}/auth/userinfo`),
        undefined,
        undefined,
        { DPoP, ...insecure },
      );
      expect(userinfo.status).to.equal(200);
      expect(((await userinfo.json()) as { sub: string }).sub).to.be.a('string');

      const asBearer = await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${refreshed.access_token}` } });
      expect(asBearer.status).to.equal(401);
    });

    it('a code redeemed without a proof gives an unbound refresh token, used without one', async function () {
      // Binding is the client's choice for this grant (RFC 9449 §5); a client that
      // never sent a proof is not asked for one later.
      const { token } = await signedInSpa(false);
      expect(token.token_type).to.equal('bearer'); // oauth4webapi lower-cases it
      const refreshed = await thiefRefresh(token.refresh_token!, false);
      expect(refreshed.status, refreshed.text).to.equal(200);
      expect(refreshed.body.token_type).to.equal('Bearer');
    });
  });

  describe('an authorization code bound to a key (dpop_jkt, RFC 9449 §10)', function () {
    const codeOf = ({ answer }: Authorized): string => new URL(answer.headers.get('location')!).searchParams.get('code')!;

    /** The code redeemed as a plain request: with `dpop` as its proof, or none. */
    const redeemRaw = async (authorized: Authorized, dpop?: string) =>
      box.form(
        '/auth/token',
        {
          grant_type: 'authorization_code',
          code: codeOf(authorized),
          redirect_uri: CALLBACK,
          client_id: 'spa',
          code_verifier: authorized.verifier,
        },
        dpop ? { DPoP: dpop } : {},
      );
    const tokenProof = async (key: DpopKey) => proof(key, { htm: 'POST', htu: `${box.url}/auth/token` });

    it('is redeemed with a proof of the key dpop_jkt names, and its tokens are bound to that key', async function () {
      const DPoP = await newHandle();
      const token = await redeem(await authorizeSpa({ dpop_jkt: await DPoP.calculateThumbprint() }), DPoP);
      expect(token.token_type).to.equal('dpop');
      expect(token.refresh_token).to.be.a('string');
    });

    it('is refused without a proof, or with a proof of another key, and is spent by the try', async function () {
      const DPoP = await newHandle();
      const jkt = await DPoP.calculateThumbprint();
      const bare = await authorizeSpa({ dpop_jkt: jkt });
      const noProof = await redeemRaw(bare);
      expect(noProof.status, noProof.text).to.equal(400);
      expect(noProof.body.error).to.equal('invalid_grant');
      expect(noProof.body.error_description).to.match(/send a DPoP proof of that key/);

      const stolen = await authorizeSpa({ dpop_jkt: jkt });
      const otherKey = await redeemRaw(stolen, await tokenProof(await newKey()));
      expect(otherKey.status, otherKey.text).to.equal(400);
      expect(otherKey.body.error).to.equal('invalid_grant');
      expect(otherKey.body.error_description).to.match(/not the one the authorization request bound/);
      // Used once, whatever the outcome (as with a wrong code_verifier): the key's holder cannot redeem it either.
      const late = await redeemRaw(stolen, await tokenProof(await newKey()));
      expect(late.body.error_description).to.match(/already used/);
    });

    it('a dpop_jkt that is no thumbprint goes back to the app as invalid_request', async function () {
      const { answer } = await authorizeSpa({ dpop_jkt: 'not-a-thumbprint' });
      expect(answer.status).to.equal(302);
      const back = new URL(answer.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).to.equal(CALLBACK);
      expect(back.searchParams.get('error')).to.equal('invalid_request');
      expect(back.searchParams.get('error_description')).to.match(/dpop_jkt/);
      expect(back.searchParams.get('code')).to.equal(null);
    });

    it("a pushed request's proof binds the code to its key (§10.1)", async function () {
      const DPoP = await newHandle();
      const other = await redeemRaw(await authorizeSpa({}, DPoP), await tokenProof(await newKey()));
      expect(other.status, other.text).to.equal(400);
      expect(other.body.error_description).to.match(/not the one the authorization request bound/);
      const token = await redeem(await authorizeSpa({}, DPoP), DPoP);
      expect(token.token_type).to.equal('dpop');
    });

    it('a pushed request whose dpop_jkt is not the key of its proof, or whose proof is bad, is refused', async function () {
      const key = await newKey();
      const push = async (dpop: string, extra: Record<string, string> = {}) =>
        box.form(
          '/auth/par',
          {
            client_id: 'spa',
            response_type: 'code',
            redirect_uri: CALLBACK,
            code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
            code_challenge_method: 'S256',
            ...extra,
          },
          { DPoP: dpop },
        );
      const parProof = () => proof(key, { htm: 'POST', htu: `${box.url}/auth/par` });
      const mismatch = await push(await parProof(), { dpop_jkt: await calculateJwkThumbprint((await newKey()).jwk) });
      expect(mismatch.status, mismatch.text).to.equal(400);
      expect(mismatch.body.error).to.equal('invalid_request');
      expect(mismatch.body.error_description).to.match(/dpop_jkt is not the thumbprint/);
      const forTheTokenEndpoint = await push(await tokenProof(key));
      expect(forTheTokenEndpoint.status, forTheTokenEndpoint.text).to.equal(400);
      expect(forTheTokenEndpoint.body.error).to.equal('invalid_dpop_proof');
      const matching = await push(await parProof(), { dpop_jkt: await calculateJwkThumbprint(key.jwk) });
      expect(matching.status, matching.text).to.equal(201);
    });
  });

  describe('the box API, UserInfo and introspection', function () {
    it('accept a bound token with a proof of its key (oauth4webapi protectedResourceRequest)', async function () {
      const { token, DPoP } = await boundToken();
      const res = await oauth.protectedResourceRequest(
        token.access_token,
        'GET',
        new URL(`${box.url}/Client/orders`),
        undefined,
        undefined,
        {
          DPoP,
          ...insecure,
        },
      );
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { id: string }).id).to.equal('orders');
    });

    it('introspection says DPoP and returns cnf', async function () {
      const { token, DPoP } = await boundToken();
      const res = await box.form('/auth/introspect', { token: token.access_token }, { Authorization: basic('orders', 'orders-secret') });
      expect(res.body).to.include({ active: true, token_type: 'DPoP' });
      expect(res.body.cnf).to.deep.equal({ jkt: await DPoP.calculateThumbprint() });
    });

    it('refuse a replayed proof, at this process and at another process of the box', async function () {
      const { token, key } = await tokenWithKey();
      const dpop = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
      expect((await getClients({ Authorization: `DPoP ${token}`, DPoP: dpop })).status).to.equal(200);
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: dpop }), 'invalid_dpop_proof', /already used/);
      const other = await box.startAnother();
      try {
        const fresh = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
        const first = await other.request('GET', '/Client/orders', { headers: { Authorization: `DPoP ${token}`, DPoP: fresh } });
        expect(first.status, first.text).to.equal(200);
        // The other process saw it first: this one refuses it.
        expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: fresh }), 'invalid_dpop_proof', /already used/);
      } finally {
        await other.stop();
      }
    });

    it('one proof sent 30 times at once, among other proofs in flight: exactly one use passes', async function () {
      // The ledger group-commits proofs: while its batches are in flight the next ones queue,
      // and the copies of one proof must never read as new together in one statement.
      const { token, key } = await tokenWithKey();
      const request = { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) };
      const use = (dpop: string) => getClients({ Authorization: `DPoP ${token}`, DPoP: dpop });
      for (let round = 0; round < 3; round++) {
        const others = await Promise.all(Array.from({ length: 40 }, () => proof(key, request)));
        const replayed = await proof(key, request);
        const othersDone = Promise.all(others.map(use));
        const copies = await Promise.all(Array.from({ length: 30 }, () => use(replayed)));
        expect((await othersDone).map((r) => r.status)).to.deep.equal(others.map(() => 200));
        const passed = copies.filter((r) => r.status === 200);
        expect(passed, `round ${round}: ${copies.map((r) => r.status).join(' ')}`).to.have.length(1);
        for (const refused of copies.filter((r) => r.status !== 200)) expectDpopRefusal(refused, 'invalid_dpop_proof', /already used/);
      }
    });

    it("the replay cache forgets a proof a minute after its window, not before (a process's clock may lag the database's)", async function () {
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        const digest = (n: number): Buffer => Buffer.alloc(32, n);
        await recordProofs(db, [
          { digest: digest(1), expiresAt: new Date(Date.now() - 30_000) },
          { digest: digest(2), expiresAt: new Date(Date.now() - 120_000) },
        ]);
        await purgeProofs(db);
        const { rows } = await db.query<{ digest: Buffer }>('SELECT digest FROM dpop_proofs WHERE digest = ANY($1)', [
          [digest(1), digest(2)],
        ]);
        expect(rows.map((r) => r.digest[0])).to.deep.equal([1]);
      } finally {
        await db.end();
      }
    });

    it('refuse a proof for another URI or another method', async function () {
      const { token, key } = await tokenWithKey();
      const forOther = await proof(key, { htm: 'GET', htu: `${box.url}/Client/root`, ath: ath(token) });
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: forOther }), 'invalid_dpop_proof', /another URI/);
      const forPut = await proof(key, { htm: 'PUT', htu: `${box.url}/Client/orders`, ath: ath(token) });
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: forPut }), 'invalid_dpop_proof', /PUT requests/);
    });

    it('refuse a stale proof', async function () {
      const { token, key } = await tokenWithKey();
      const stale = await proof(key, {
        htm: 'GET',
        htu: `${box.url}/Client/orders`,
        ath: ath(token),
        iat: Math.floor(Date.now() / 1000) - 120,
      });
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: stale }), 'invalid_dpop_proof', /stale/);
    });

    it('refuse a proof whose ath is the hash of another token', async function () {
      const { token, key } = await tokenWithKey();
      const { token: other } = await tokenWithKey();
      const wrong = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(other) });
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: wrong }), 'invalid_dpop_proof', /ath/);
    });

    it('refuse a bound token without its proof, and as a Bearer token even with one', async function () {
      const { token, key } = await tokenWithKey();
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}` }), 'invalid_dpop_proof', /proof is required/);
      const valid = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
      expectDpopRefusal(await getClients({ Authorization: `Bearer ${token}`, DPoP: valid }), 'invalid_token', /DPoP-bound/);
      expectDpopRefusal(await box.request('GET', `/Client/orders?access_token=${token}`), 'invalid_token', /DPoP-bound/);
      // UserInfo is a resource like any other (the token is a client's: once accepted, 403 for want of openid).
      expectDpopRefusal(
        await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${token}` } }),
        'invalid_token',
        /DPoP-bound/,
      );
      const userinfo = await box.request('GET', '/auth/userinfo', {
        headers: {
          Authorization: `DPoP ${token}`,
          DPoP: await proof(key, { htm: 'GET', htu: `${box.url}/auth/userinfo`, ath: ath(token) }),
        },
      });
      expect(userinfo.status, userinfo.text).to.equal(403);
    });

    it('refuse a bound token with a proof of another key', async function () {
      const { token } = await tokenWithKey();
      const thief = await newKey();
      const stolen = await proof(thief, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${token}`, DPoP: stolen }), 'invalid_dpop_proof', /another key/);
    });

    it('refuse two DPoP headers, and an unbound token under the DPoP scheme', async function () {
      const { token, key } = await tokenWithKey();
      const one = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
      const two = await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) });
      const res = await fetch(`${box.url}/Client/orders`, {
        headers: [
          ['Authorization', `DPoP ${token}`],
          ['DPoP', one],
          ['DPoP', two],
        ],
      });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.include('error="invalid_dpop_proof"');
      expectDpopRefusal(await getClients({ Authorization: `DPoP ${root}` }), 'invalid_token', /not DPoP-bound/);
    });
  });

  describe('the decision point', function () {
    const app = 'https://reports.example';
    before(async function () {
      await box.addClient('reader', { audience: [app] }, { secret: 'reader-secret', policy: false });
      expect((await box.json('PUT', '/App/reports', { urls: [app] }, root)).status).to.be.oneOf([200, 201]);
      const p = await box.json(
        'PUT',
        '/AccessPolicy/reports-reader',
        { app: 'reports', engine: 'allow', link: [{ id: 'reader', resourceType: 'Client' }] },
        root,
      );
      expect(p.status, p.text).to.be.oneOf([200, 201]);
    });

    async function readerToken(): Promise<{ token: string; key: DpopKey }> {
      const key = await newKey();
      const res = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: app },
        { Authorization: basic('reader', 'reader-secret'), DPoP: await proof(key, { htm: 'POST', htu: `${box.url}/auth/token` }) },
      );
      expect(res.body.token_type, res.text).to.equal('DPoP');
      return { token: res.body.access_token, key };
    }

    /** Traefik's forward-auth check of `method uri` at the app. */
    const forwardAuth = (uri: string, headers: Record<string, string>, method = 'GET') =>
      box.request('GET', '/authz/forward-auth/reports', {
        headers: {
          'X-Forwarded-Method': method,
          'X-Forwarded-Proto': 'https',
          'X-Forwarded-Host': 'reports.example',
          'X-Forwarded-Uri': uri,
          ...headers,
        },
      });

    it('allows a bound token with a proof of the original request (its URL at the app), once', async function () {
      const { token, key } = await readerToken();
      const dpop = await proof(key, { htm: 'GET', htu: `${app}/q3/summary`, ath: ath(token) });
      const res = await forwardAuth('/q3/summary?format=pdf', { Authorization: `DPoP ${token}`, DPoP: dpop });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('x-auth-request-client')).to.equal('reader');
      const replay = await forwardAuth('/q3/summary?format=pdf', { Authorization: `DPoP ${token}`, DPoP: dpop });
      expectDpopRefusal(replay, 'invalid_dpop_proof', /already used/);
      expect(replay.body.error).to.equal('invalid_dpop_proof');
    });

    it('refuses a bound token without a proof, as Bearer, with a proof for another path or method, or of another key', async function () {
      const { token, key } = await readerToken();
      expectDpopRefusal(await forwardAuth('/q3', { Authorization: `DPoP ${token}` }), 'invalid_dpop_proof', /required/);
      const good = await proof(key, { htm: 'GET', htu: `${app}/q3`, ath: ath(token) });
      expectDpopRefusal(await forwardAuth('/q3', { Authorization: `Bearer ${token}`, DPoP: good }), 'invalid_token', /DPoP-bound/);
      const otherPath = await proof(key, { htm: 'GET', htu: `${app}/q4`, ath: ath(token) });
      expectDpopRefusal(await forwardAuth('/q3', { Authorization: `DPoP ${token}`, DPoP: otherPath }), 'invalid_dpop_proof', /another URI/);
      const otherMethod = await proof(key, { htm: 'GET', htu: `${app}/q3`, ath: ath(token) });
      expectDpopRefusal(
        await forwardAuth('/q3', { Authorization: `DPoP ${token}`, DPoP: otherMethod }, 'DELETE'),
        'invalid_dpop_proof',
        /DELETE/,
      );
      const thief = await proof(await newKey(), { htm: 'GET', htu: `${app}/q3`, ath: ath(token) });
      expectDpopRefusal(await forwardAuth('/q3', { Authorization: `DPoP ${token}`, DPoP: thief }), 'invalid_dpop_proof', /another key/);
    });

    it("Envoy's HTTP door: the proof names the original request", async function () {
      const { token, key } = await readerToken();
      const dpop = await proof(key, { htm: 'GET', htu: `${app}/q3`, ath: ath(token) });
      const res = await box.request('GET', '/authz/http/reports/q3', {
        // No scheme nor host of the app's: the app's url says what the client addressed.
        headers: { Authorization: `DPoP ${token}`, DPoP: dpop },
      });
      expect(res.status, res.text).to.equal(200);
    });
  });
});

describe('DPoP nonces (BOXAUTH_DPOP_NONCE=required)', function () {
  this.timeout(60_000);
  let box: Box;
  before(async function () {
    box = await Box.start({ env: { BOXAUTH_DPOP_NONCE: 'required' } });
    await box.addClient('orders', {}, { secret: 'orders-secret' });
  });
  after(async function () {
    await box?.stop();
  });

  it('a proof without the nonce gets use_dpop_nonce and a DPoP-Nonce; oauth4webapi retries with it', async function () {
    const issuer = new URL(box.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    const client: oauth.Client = { client_id: 'orders' };
    const auth = oauth.ClientSecretBasic('orders-secret');
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('ES256'));
    const request = () => oauth.clientCredentialsGrantRequest(as, client, auth, new URLSearchParams(), { DPoP, ...insecure });
    const first = await request();
    expect(first.status).to.equal(400);
    expect(first.headers.get('dpop-nonce')).to.be.a('string');
    let error: unknown;
    try {
      await oauth.processClientCredentialsResponse(as, client, first);
    } catch (err) {
      error = err;
    }
    expect(oauth.isDPoPNonceError(error)).to.equal(true);
    const token = await oauth.processClientCredentialsResponse(as, client, await request());
    expect(token.token_type).to.equal('dpop');
    // The nonce of the token endpoint holds at the box's resources (one server, one nonce).
    const res = await oauth.protectedResourceRequest(token.access_token, 'GET', new URL(`${box.url}/Client/orders`), undefined, undefined, {
      DPoP,
      ...insecure,
    });
    expect(res.status).to.equal(200);
  });

  it('a resource answers a proof without a nonce 401 use_dpop_nonce with DPoP-Nonce', async function () {
    const key = await newKey();
    const res0 = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials' },
      { Authorization: basic('orders', 'orders-secret'), DPoP: await proof(key, { htm: 'POST', htu: `${box.url}/auth/token` }) },
    );
    const nonce = res0.headers.get('dpop-nonce')!;
    expect(res0.body.error).to.equal('use_dpop_nonce');
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials' },
      { Authorization: basic('orders', 'orders-secret'), DPoP: await proof(key, { htm: 'POST', htu: `${box.url}/auth/token`, nonce }) },
    );
    expect(res.status, res.text).to.equal(200);
    const token = res.body.access_token as string;
    const bare = await box.request('GET', '/Client/orders', {
      headers: { Authorization: `DPoP ${token}`, DPoP: await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token) }) },
    });
    expect(bare.status).to.equal(401);
    expect(bare.headers.get('www-authenticate')).to.include('error="use_dpop_nonce"');
    expect(bare.headers.get('dpop-nonce')).to.equal(nonce);
    const forged = await box.request('GET', '/Client/orders', {
      headers: {
        Authorization: `DPoP ${token}`,
        DPoP: await proof(key, { htm: 'GET', htu: `${box.url}/Client/orders`, ath: ath(token), nonce: 'made-up' }),
      },
    });
    expect(forged.headers.get('www-authenticate')).to.include('error="use_dpop_nonce"');
  });
});
