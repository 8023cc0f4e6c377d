// Request objects (RFC 9101, JAR): an authorization request signed by the client with its own keys
// (jwks), by value at /auth/authorize and pushed to /auth/par, through a browser without JavaScript
// (FormAgent) and the code exchanged at the token endpoint. The object's parameters win over those
// beside it. The attacks: an object signed with another client's key, one naming another client
// (inside or outside), alg none and HS256, an expired one, one for another issuer, one replayed —
// 20 browsers at once, exactly one wins — at /auth/authorize and at PAR, the request_uri of an
// object held for one client used by another, and a client that must sign sending a plain request.
import { expect } from 'chai';
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { CompactSign, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/callback';
const OTHER_CALLBACK = 'https://rp.example/other';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';

interface ClientKey {
  kid: string;
  alg: 'ES256' | 'PS256' | 'EdDSA';
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(kid: string, alg: ClientKey['alg'] = 'ES256'): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

const now = (): number => Math.floor(Date.now() / 1000);
const verifierAndChallenge = (): { verifier: string; challenge: string } => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

describe('request objects (RFC 9101)', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let a: ClientKey;
  let b: ClientKey;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' } });
    root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    [a, b] = await Promise.all([newKey('a-1'), newKey('b-1', 'EdDSA')]);
    const code = { authorization_code: { redirect_uris: [CALLBACK, OTHER_CALLBACK] } };
    for (const [id, client] of Object.entries({
      signer: { jwks: { keys: [a.jwk] } },
      other: { jwks: { keys: [b.jwk] } },
      strict: { jwks: { keys: [a.jwk] }, require_signed_request_object: true, request_object_signing_alg: 'ES256' },
      machine: { jwks: { keys: [a.jwk] }, grant_types: ['authorization_code', 'client_credentials'] },
    })) {
      const res = await box.json(
        'PUT',
        `/Client/${id}`,
        { grant_types: ['authorization_code'], first_party: true, secret: SECRET, auth: code, ...client },
        root,
      );
      expect(res.status, res.text).to.equal(201);
    }
    const allow = await box.json(
      'PUT',
      '/AccessPolicy/machine-allow',
      { engine: 'allow', link: [{ id: 'machine', resourceType: 'Client' }] },
      root,
    );
    expect(allow.status, allow.text).to.equal(201);
  });
  after(async function () {
    await box?.stop();
  });

  /** An object of `clientId` signed with `key`: the claims a good one has, a code request's parameters, then `claims` over them. */
  function requestObject(
    key: ClientKey,
    clientId: string,
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ): Promise<string> {
    return new SignJWT({
      iss: clientId,
      aud: box.url,
      client_id: clientId,
      jti: randomUUID(),
      nbf: now(),
      exp: now() + 300,
      response_type: 'code',
      redirect_uri: CALLBACK,
      scope: 'openid email',
      state: 'from-the-object',
      ...claims,
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
      .sign(key.privateKey);
  }

  const authorizePath = (params: Record<string, string>): string => `/auth/authorize?${new URLSearchParams(params)}`;

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  const location = (res: JsonResponse): URL => {
    expect(res.status, `${res.status} ${res.text.slice(0, 300)}`).to.equal(302);
    return new URL(res.headers.get('location')!);
  };
  /** The error sent back to the client, with the state it comes with. */
  const redirected = (res: JsonResponse): [string | null, string | null, string] => {
    const url = location(res);
    return [url.searchParams.get('error'), url.searchParams.get('state'), url.origin + url.pathname];
  };
  /** A page of the box, nothing sent back to the client. */
  function page(res: JsonResponse, says: string): void {
    expect(res.status, res.text.slice(0, 300)).to.equal(400);
    expect(res.headers.get('location')).to.equal(null);
    expect(res.text).to.include(says);
  }

  async function exchange(clientId: string, answer: JsonResponse, verifier: string): Promise<JsonResponse> {
    return box.form(
      '/auth/token',
      {
        grant_type: 'authorization_code',
        code: location(answer).searchParams.get('code')!,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
      },
      { Authorization: basic(clientId, SECRET) },
    );
  }

  describe('discovery and the Client fields', function () {
    it('both metadata documents say request objects by value are taken, signed with PS256, ES256 or EdDSA', async function () {
      for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
        const meta = (await box.json('GET', path)).body;
        expect(meta, path).to.include({ request_parameter_supported: true, request_uri_parameter_supported: false });
        expect(meta.request_object_signing_alg_values_supported, path).to.have.members(['PS256', 'ES256', 'EdDSA']);
      }
    });

    it('require_signed_request_object and request_object_signing_alg need the keys to verify with, and a known alg', async function () {
      const base = { grant_types: ['authorization_code'], secret: SECRET, auth: { authorization_code: { redirect_uri: CALLBACK } } };
      const noKeys = await box.json('PUT', '/Client/nokeys', { ...base, require_signed_request_object: true }, root);
      expect(noKeys.status, noKeys.text).to.equal(422);
      expect(noKeys.text).to.include('require_signed_request_object needs the client');
      const algNoKeys = await box.json('PUT', '/Client/nokeys', { ...base, request_object_signing_alg: 'ES256' }, root);
      expect(algNoKeys.status, algNoKeys.text).to.equal(422);
      const rs256 = await box.json(
        'PUT',
        '/Client/nokeys',
        { ...base, jwks: { keys: [a.jwk] }, request_object_signing_alg: 'RS256' },
        root,
      );
      expect(rs256.status, rs256.text).to.equal(422);
      expect(rs256.text).to.include('request_object_signing_alg');
      const notBool = await box.json(
        'PUT',
        '/Client/nokeys',
        { ...base, jwks: { keys: [a.jwk] }, require_signed_request_object: 'yes' },
        root,
      );
      expect(notBool.status, notBool.text).to.equal(422);
    });
  });

  describe('by value at /auth/authorize', function () {
    it("only the object's parameters count; sign-in comes back to the request held for the browser; the code is exchanged", async function () {
      const { verifier, challenge } = verifierAndChallenge();
      const request = await requestObject(a, 'signer', { code_challenge: challenge, code_challenge_method: 'S256' });
      const browser = new FormAgent(box);
      // What is beside the object is ignored: another redirect URI, state and scope.
      const signInPage = await browser.get(
        authorizePath({ client_id: 'signer', request, redirect_uri: OTHER_CALLBACK, state: 'from-the-query', scope: 'openid' }),
      );
      expect(signInPage.status, signInPage.text.slice(0, 300)).to.equal(200);
      // The way back names a request held for this browser, never the object or its parameters.
      const returnTo = hiddenFields(signInPage.text).return_to!;
      const back = Object.fromEntries(new URLSearchParams(returnTo.split('?')[1]));
      expect(Object.keys(back)).to.have.members(['client_id', 'request_uri']);
      expect(back.request_uri).to.match(/^urn:ietf:params:oauth:request_uri:/);
      const signedIn = await browser.post('/auth/sign-in', { ...hiddenFields(signInPage.text), ...ANN });
      expect(signedIn.status).to.equal(303);
      const answer = await browser.get(signedIn.headers.get('location')!.replace(box.url, ''));
      const url = location(answer);
      expect(url.origin + url.pathname).to.equal(CALLBACK);
      expect(url.searchParams.get('state')).to.equal('from-the-object');
      const tokens = await exchange('signer', answer, verifier);
      expect(tokens.status, tokens.text).to.equal(200);
      expect(tokens.body.scope).to.equal('openid email');
      // The held request is this browser's: another browser bringing its request_uri gets the page of a used link.
      const stranger = await (await signedInBrowser()).get(returnTo);
      page(stranger, 'has expired, was used already');
    });

    it("an object signed with another client's key is refused on a page, whichever kid it names", async function () {
      const browser = await signedInBrowser();
      page(await browser.get(authorizePath({ client_id: 'signer', request: await requestObject(b, 'signer') })), 'unknown kid');
      const forged = await requestObject(b, 'signer', {}, { alg: 'EdDSA', kid: 'a-1' });
      page(await browser.get(authorizePath({ client_id: 'signer', request: forged })), 'request object is refused');
      // Signed by the other client for itself, sent as this client: verified with this client's keys, refused.
      page(
        await browser.get(authorizePath({ client_id: 'signer', request: await requestObject(b, 'other') })),
        'request object is refused',
      );
    });

    it('alg none and HS256 (keyed with the public key) are refused on a page', async function () {
      const browser = await signedInBrowser();
      const claims = { iss: 'signer', aud: box.url, client_id: 'signer', exp: now() + 60, response_type: 'code', redirect_uri: CALLBACK };
      const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
      const none = `${part({ alg: 'none' })}.${part(claims)}.`;
      page(await browser.get(authorizePath({ client_id: 'signer', request: none })), 'unsigned (alg none)');
      const input = `${part({ alg: 'HS256', kid: 'a-1' })}.${part(claims)}`;
      const hs256 = `${input}.${createHmac('sha256', JSON.stringify(a.jwk)).update(input).digest('base64url')}`;
      page(await browser.get(authorizePath({ client_id: 'signer', request: hs256 })), 'HS256');
    });

    it('expired, for another issuer, or naming another client_id inside: invalid_request_object in the redirect', async function () {
      const browser = await signedInBrowser();
      const cases: [Record<string, unknown>, string][] = [
        [{ exp: now() - 600, nbf: now() - 900 }, 'expired'],
        [{ aud: 'https://other-box.example' }, 'aud'],
        [{ client_id: 'other' }, 'client_id'],
        [{ nbf: now() - 7200, exp: now() + 60 }, 'too old'],
      ];
      for (const [claims, says] of cases) {
        const res = await browser.get(authorizePath({ client_id: 'signer', request: await requestObject(a, 'signer', claims) }));
        expect(redirected(res), says).to.deep.equal(['invalid_request_object', 'from-the-object', CALLBACK]);
        expect(location(res).searchParams.get('error_description'), says).to.include(says);
      }
    });

    it('a refused object that asked for form_post has its refusal posted, not redirected', async function () {
      const browser = await signedInBrowser();
      const expired = await requestObject(a, 'signer', { exp: now() - 600, nbf: now() - 900, response_mode: 'form_post' });
      const res = await browser.get(authorizePath({ client_id: 'signer', request: expired }));
      expect(res.status, res.text.slice(0, 300)).to.equal(200);
      expect(res.headers.get('location')).to.equal(null);
      const form = /<form[^>]*action="([^"]*)"/.exec(res.text);
      expect(form?.[1]).to.equal(CALLBACK);
      const fields = hiddenFields(res.text);
      expect(fields).to.deep.include({ error: 'invalid_request_object', state: 'from-the-object', iss: box.url });
    });

    it('one object brought by 20 browsers at once: exactly one request goes on, every other is a replay', async function () {
      const request = await requestObject(a, 'signer');
      const browsers = await Promise.all(Array.from({ length: 20 }, () => signedInBrowser()));
      const answers = await Promise.all(browsers.map((br) => br.get(authorizePath({ client_id: 'signer', request }))));
      const codes = answers.filter((res) => res.status === 302 && location(res).searchParams.get('code'));
      const replays = answers.filter((res) => res.status === 302 && location(res).searchParams.get('error') === 'invalid_request_object');
      expect(codes, answers.map((r) => r.status).join()).to.have.length(1);
      expect(replays).to.have.length(19);
      expect(location(replays[0]!).searchParams.get('error_description')).to.include('used before');
      // And later, by the browser that won.
      const again = await browsers[0]!.get(authorizePath({ client_id: 'signer', request }));
      expect(redirected(again)[0]).to.equal('invalid_request_object');
    });

    it('a client that must sign: a plain request is refused with invalid_request, a signed one goes on', async function () {
      const browser = await signedInBrowser();
      const { challenge } = verifierAndChallenge();
      const plain = await browser.get(
        authorizePath({ client_id: 'strict', response_type: 'code', redirect_uri: CALLBACK, state: 's', code_challenge: challenge }),
      );
      expect(redirected(plain)).to.deep.equal(['invalid_request', 's', CALLBACK]);
      const signed = await browser.get(authorizePath({ client_id: 'strict', request: await requestObject(a, 'strict') }));
      expect(location(signed).searchParams.get('code')).to.be.a('string');
    });
  });

  describe('pushed to /auth/par', function () {
    const push = (clientId: string, fields: Record<string, string>): Promise<JsonResponse> =>
      box.form('/auth/par', { client_id: clientId, ...fields }, { Authorization: basic(clientId, SECRET) });

    it("the object's parameters are the pushed request's; the same object pushed again is a replay", async function () {
      const { verifier, challenge } = verifierAndChallenge();
      const request = await requestObject(a, 'signer', { code_challenge: challenge, code_challenge_method: 'S256' });
      const pushed = await push('signer', { request, redirect_uri: OTHER_CALLBACK, state: 'from-the-body' });
      expect(pushed.status, pushed.text).to.equal(201);
      const answer = await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request_uri: pushed.body.request_uri }));
      expect(redirected(answer).slice(1)).to.deep.equal(['from-the-object', CALLBACK]);
      expect((await exchange('signer', answer, verifier)).status).to.equal(200);
      const replay = await push('signer', { request });
      expect([replay.status, replay.body.error]).to.deep.equal([400, 'invalid_request_object']);
      // Nor by value at /auth/authorize: one ledger.
      const byValue = await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request }));
      expect(redirected(byValue)[0]).to.equal('invalid_request_object');
    });

    it("another client's key, alg none, an expired object: invalid_request_object; a client that must sign pushes an object", async function () {
      for (const request of [
        await requestObject(b, 'signer'),
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'signer', aud: box.url, exp: now() + 60 })).toString('base64url')}.`,
        await requestObject(a, 'signer', { exp: now() - 600, nbf: now() - 900 }),
      ]) {
        const res = await push('signer', { request });
        expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_request_object']);
      }
      const { challenge } = verifierAndChallenge();
      const plain = await push('strict', {
        response_type: 'code',
        redirect_uri: CALLBACK,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      expect([plain.status, plain.body.error]).to.deep.equal([400, 'invalid_request']);
      expect((await push('strict', { request: await requestObject(a, 'strict') })).status).to.equal(201);
    });

    it("the request_uri of another client's pushed object is not this client's", async function () {
      const pushed = await push('signer', { request: await requestObject(a, 'signer') });
      expect(pushed.status).to.equal(201);
      const browser = await signedInBrowser();
      page(await browser.get(authorizePath({ client_id: 'other', request_uri: pushed.body.request_uri })), 'has expired, was used already');
      // Its own client still can.
      const own = await browser.get(authorizePath({ client_id: 'signer', request_uri: pushed.body.request_uri }));
      expect(location(own).searchParams.get('code')).to.be.a('string');
    });
  });
  describe('attacks on the object itself', function () {
    const push = (clientId: string, fields: Record<string, string>): Promise<JsonResponse> =>
      box.form('/auth/par', { client_id: clientId, ...fields }, { Authorization: basic(clientId, SECRET) });

    it('a NUL or a lone surrogate signed into the object: invalid_request_object, never a 500', async function () {
      const browser = await signedInBrowser();
      const cases: [Record<string, unknown>, string][] = [
        [{ state: 'a\u0000b' }, 'NUL'],
        [{ nonce: 'x\ud800y' }, 'surrogate'],
      ];
      for (const [claims, says] of cases) {
        const res = await browser.get(authorizePath({ client_id: 'signer', request: await requestObject(a, 'signer', claims) }));
        expect(res.status, `${says}: ${res.status} ${res.text.slice(0, 300)}`).to.equal(302);
        expect(location(res).searchParams.get('error'), says).to.equal('invalid_request_object');
        expect(location(res).searchParams.get('error_description'), says).to.include(says);
        const pushed = await push('signer', { request: await requestObject(a, 'signer', claims) });
        expect([pushed.status, pushed.body.error], pushed.text).to.deep.equal([400, 'invalid_request_object']);
        expect(pushed.body.error_description, says).to.include(says);
      }
    });

    it('a crit header the box does not understand is refused (RFC 7515 §4.1.11), by value and pushed', async function () {
      const critical = (): Promise<string> =>
        new SignJWT({ iss: 'signer', aud: box.url, jti: randomUUID(), exp: now() + 300, response_type: 'code', redirect_uri: CALLBACK })
          .setProtectedHeader({ alg: a.alg, kid: a.kid, crit: ['urn:example:must-understand'], 'urn:example:must-understand': true })
          .sign(a.privateKey, { crit: { 'urn:example:must-understand': true } });
      page(await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request: await critical() })), 'crit');
      const pushed = await push('signer', { request: await critical() });
      expect([pushed.status, pushed.body.error], pushed.text).to.deep.equal([400, 'invalid_request_object']);
    });

    it('a parameter repeated beside the object does not count either (RFC 9101 §6.3): resource twice outside', async function () {
      const request = await requestObject(a, 'signer');
      const query = new URLSearchParams([
        ['client_id', 'signer'],
        ['request', request],
        ['resource', 'https://a.example/'],
        ['resource', 'https://b.example/'],
      ]);
      const answer = await (await signedInBrowser()).get(`/auth/authorize?${query}`);
      expect(location(answer).searchParams.get('error'), location(answer).search).to.equal(null);
      expect(location(answer).searchParams.get('code')).to.be.a('string');
    });

    it('an object longer than any parameter may be (8,192 characters) is refused at /auth/authorize too, unread', async function () {
      // Signed by the client, claims nested 10,000 deep: 27 kB, within a POSTed form's limit, and past what
      // the box's JSON.stringify of the claims can walk. (Built by hand: jose's own stringify would overflow.)
      const claims = `{"iss":"signer","aud":${JSON.stringify(box.url)},"exp":${now() + 300},"response_type":"code","redirect_uri":${JSON.stringify(CALLBACK)},"claims":{"userinfo":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`;
      const deep = await new CompactSign(new TextEncoder().encode(claims))
        .setProtectedHeader({ alg: a.alg, kid: a.kid })
        .sign(a.privateKey);
      expect(deep.length).to.be.above(8192);
      page(await (await signedInBrowser()).post('/auth/authorize', { client_id: 'signer', request: deep }), '8192');
    });

    it('an object without a jti is taken once, however its signature is spelled (base64url spare bits, padding)', async function () {
      const request = await requestObject(a, 'signer', { jti: undefined });
      const used = await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request }));
      expect(location(used).searchParams.get('code')).to.be.a('string');
      // The same signature bytes: the last character of 86 holds 4 bits no byte needs, and "=" pads.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(request.at(-1)!);
      for (const respelled of [`${request.slice(0, -1)}${alphabet[last ^ 1]}`, `${request}==`]) {
        const replay = await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request: respelled }));
        expect(redirected(replay)[0], respelled.slice(-4)).to.equal('invalid_request_object');
        const pushed = await push('signer', { request: respelled });
        expect([pushed.status, pushed.body.error], pushed.text).to.deep.equal([400, 'invalid_request_object']);
      }
    });

    it('an object typed as another kind of JWT (a client assertion) is not a request object (RFC 9101 §10.8)', async function () {
      const typed = await requestObject(a, 'signer', {}, { typ: 'client-authentication+jwt' });
      page(await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request: typed })), 'typ');
      // Typed as a request object, or untyped: taken.
      const own = await requestObject(a, 'signer', {}, { typ: 'oauth-authz-req+jwt' });
      expect(
        location(await (await signedInBrowser()).get(authorizePath({ client_id: 'signer', request: own }))).searchParams.get('code'),
      ).to.be.a('string');
    });

    it('an object that passed through a browser is no client assertion at the token endpoint, typed or not', async function () {
      const clientCredentials = (assertion: string): Promise<JsonResponse> =>
        box.form('/auth/token', {
          grant_type: 'client_credentials',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion,
        });
      // A control: an assertion of the client's key is taken.
      const assertion = await new SignJWT({ iss: 'machine', sub: 'machine', aud: box.url, jti: randomUUID(), exp: now() + 60 })
        .setProtectedHeader({ alg: a.alg, kid: a.kid })
        .sign(a.privateKey);
      expect((await clientCredentials(assertion)).status).to.equal(200);
      for (const header of [{ typ: 'oauth-authz-req+jwt' }, {}]) {
        // iss, sub and aud as an assertion's (the client's library fills both kinds alike): the browser, or
        // whoever reads its address bar or history, holds it once /auth/authorize has taken it.
        const request = await requestObject(a, 'machine', { sub: 'machine', exp: now() + 120 }, header);
        expect(
          location(await (await signedInBrowser()).get(authorizePath({ client_id: 'machine', request }))).searchParams.get('code'),
        ).to.be.a('string');
        const stolen = await clientCredentials(request);
        expect([stolen.status, stolen.body.error], `${JSON.stringify(header)} ${stolen.text}`).to.deep.equal([401, 'invalid_client']);
      }
    });
  });
});
