// private_key_jwt (OpenID Connect Core §9, RFC 7523): a Client registers its public keys (jwks, or a
// jwks_uri the box fetches through its guard for addresses others name) and authenticates with an
// assertion it signs, at the token endpoint and at introspection; a real client library
// (openid-client's PrivateKeyJwt) does it as an app would. The attacks: one assertion sent by 20
// requests at once (to one process, and to two replicas of the box), another client's key, iss and sub of two clients, the token endpoint's URL or a
// second audience as aud, alg none, HS256 keyed with the public key, RS256, an expired assertion, one
// valid for an hour, a jwks_uri at loopback on a box that does not allow it, and a private key
// registered as a client's.
import { expect } from 'chai';
import { createHmac, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import * as oauth from 'openid-client';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa, type TestCa } from '../support/tls.js';

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

interface ClientKey {
  kid: string;
  alg: 'ES256' | 'PS256' | 'EdDSA';
  privateKey: CryptoKey;
  jwk: JWK;
  privateJwk: JWK;
}

async function newKey(kid: string, alg: ClientKey['alg'] = 'ES256'): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'PS256' ? { modulusLength: 2048 } : {}) });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid }, privateJwk: { ...(await exportJWK(privateKey)), kid } };
}

const now = (): number => Math.floor(Date.now() / 1000);

describe('private_key_jwt: a client authenticated by its own keys', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let docs: ClientDocuments;
  /** May fetch from loopback (BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES), as a development box. */
  let box: Box;
  /** As in production: may not. */
  let strict: Box;
  let root: string;
  let a: ClientKey;
  let b: ClientKey;
  let rsa: ClientKey;
  let remote: ClientKey;
  let jwksUri: string;

  /** An assertion of `key`, with the claims a good one has, then `claims` over them. */
  function assertion(
    key: ClientKey,
    clientId: string,
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ): Promise<string> {
    return new SignJWT({ iss: clientId, sub: clientId, aud: box.url, jti: randomUUID(), iat: now(), exp: now() + 60, ...claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
      .sign(key.privateKey);
  }

  function tokenRequest(on: Box, jwt: string, extra: Record<string, string> = {}): Promise<JsonResponse> {
    return on.form('/auth/token', { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: jwt, ...extra });
  }

  async function putClient(on: Box, id: string, keys: Record<string, unknown>): Promise<void> {
    const token = on === box ? root : await on.rootToken();
    const res = await on.json(
      'PUT',
      `/Client/${id}`,
      { grant_types: ['client_credentials'], auth: { client_credentials: { token_format: 'jwt' } }, ...keys },
      token,
    );
    expect(res.status, res.text).to.equal(201);
    const p = await on.json('PUT', `/AccessPolicy/${id}-allow`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, token);
    expect(p.status, p.text).to.equal(201);
  }

  function refused(res: JsonResponse, rule: RegExp): void {
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
    expect(res.body.error_description).to.match(rule);
  }

  before(async function () {
    ca = testCa();
    docs = await clientDocuments(ca);
    const env = { NODE_EXTRA_CA_CERTS: ca.caFile, BOXAUTH_CLIENT_METADATA_TIMEOUT_MS: '2000' };
    [box, strict] = await Promise.all([
      Box.start({ env: { ...env, BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' } }),
      Box.start({ env }),
    ]);
    root = await box.rootToken();
    [a, b, rsa, remote] = await Promise.all([newKey('a-1'), newKey('b-1', 'EdDSA'), newKey('rsa-1', 'PS256'), newKey('remote-1')]);
    // A name, not a literal address: a literal loopback is refused when written; a name is judged at each fetch.
    jwksUri = `${docs.origin.replace('127.0.0.1', 'localhost')}/jwks.json`;
    docs.serve('/jwks.json', { body: { keys: [remote.jwk] } });
    await putClient(box, 'inline-a', { jwks: { keys: [a.jwk] } });
    await putClient(box, 'inline-b', { jwks: { keys: [b.jwk] } });
    await putClient(box, 'rsa-client', { jwks: { keys: [rsa.jwk] } });
    await putClient(box, 'remote', { jwks_uri: jwksUri });
    await putClient(strict, 'remote', { jwks_uri: jwksUri });
  });
  after(async function () {
    await Promise.all([box?.stop(), strict?.stop()]);
    await docs?.close();
  });

  it('an inline jwks: a token at the token endpoint, and introspection with a fresh assertion', async function () {
    const res = await tokenRequest(box, await assertion(a, 'inline-a'));
    expect(res.status, res.text).to.equal(200);
    const introspected = await box.form('/auth/introspect', {
      token: res.body.access_token,
      client_assertion_type: JWT_BEARER,
      client_assertion: await assertion(a, 'inline-a'),
    });
    expect(introspected.status, introspected.text).to.equal(200);
    expect(introspected.body).to.include({ active: true, client_id: 'inline-a' });
  });

  it('PS256 and EdDSA keys, and client_id sent beside the assertion', async function () {
    expect((await tokenRequest(box, await assertion(rsa, 'rsa-client'))).status).to.equal(200);
    const res = await tokenRequest(box, await assertion(b, 'inline-b'), { client_id: 'inline-b' });
    expect(res.status, res.text).to.equal(200);
  });

  it('a jwks_uri: fetched over HTTPS through the guard, where the box allows the address', async function () {
    const res = await tokenRequest(box, await assertion(remote, 'remote'));
    expect(res.status, res.text).to.equal(200);
    expect(docs.hits('/jwks.json')).to.be.greaterThan(0);
  });

  it('a jwks_uri resolving to 127.0.0.1 is refused by the SSRF guard of a box that does not allow it', async function () {
    const before = docs.hits('/jwks.json');
    const res = await tokenRequest(
      strict,
      await new SignJWT({ iss: 'remote', sub: 'remote', aud: strict.url, jti: randomUUID(), exp: now() + 60 })
        .setProtectedHeader({ alg: 'ES256', kid: remote.kid })
        .sign(remote.privateKey),
    );
    // 127.0.0.1: special-use (RFC 6890), and the box's own address. The requester is told the rule,
    // not the address the name resolved to (a map of the box's network); the box's log says it.
    refused(res, /could not be fetched from its jwks_uri \(its address is one this box does not fetch from/);
    expect(res.text).not.to.include('127.0.0.1');
    // The log line may be written just after the answer.
    await eventually('the refusal logged with the address', async () =>
      strict.logs.some((l) => l.includes('client_assertion_refused') && /127\.0\.0\.1 is (a special-use|the box's own) address/.test(l)),
    );
    expect(docs.hits('/jwks.json')).to.equal(before);
  });

  it("attack: a jwks_uri serving the box's own JWKS under another name, and the box's key as a client's jwks: refused", async function () {
    // The box's published keys, served by another host (a proxy, a CDN, a mirror): the guard judges
    // names and addresses and cannot tell; the keys themselves can.
    const own = (await box.json('GET', '/.well-known/jwks.json')).body as { keys: JWK[] };
    docs.serve('/mirror.json', { body: own });
    const mirrorUri = `${docs.origin.replace('127.0.0.1', 'localhost')}/mirror.json`;
    await putClient(box, 'mirror', { jwks_uri: mirrorUri });
    const boxKid = own.keys[0]!.kid!;
    await putClient(box, 'inline-own', { jwks: { keys: [own.keys.find((k) => k.kty === 'EC') ?? own.keys[0]!] } });
    // Signed by any key: the key it names is refused before any signature is checked.
    const named = (id: string): Promise<string> =>
      new SignJWT({ iss: id, sub: id, aud: box.url, jti: randomUUID(), exp: now() + 60 })
        .setProtectedHeader({ alg: 'ES256', kid: boxKid })
        .sign(a.privateKey);
    // Refusals count against the address (the throttle test below): asked of a second process of the box.
    const replica = await box.startAnother({
      NODE_EXTRA_CA_CERTS: ca.caFile,
      BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128',
    });
    try {
      refused(
        await tokenRequest(replica, await named('mirror')),
        /jwks_uri \(the JWK Set is refused: it holds one of this box's own signing keys/,
      );
      refused(await tokenRequest(replica, await named('inline-own')), /jwks is refused: it holds one of this box's own signing keys/);
    } finally {
      await replica.stop();
    }
  });

  it('the client library: openid-client PrivateKeyJwt gets a token and introspects it', async function () {
    const config = await oauth.discovery(new URL(box.url), 'inline-a', undefined, oauth.PrivateKeyJwt({ key: a.privateKey, kid: a.kid }), {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
    expect(config.serverMetadata().token_endpoint_auth_signing_alg_values_supported).to.deep.equal(['ES256', 'PS256', 'EdDSA']);
    const tokens = await oauth.clientCredentialsGrant(config);
    expect(await oauth.tokenIntrospection(config, tokens.access_token)).to.include({ active: true, client_id: 'inline-a' });
  });

  it('attack: one assertion sent by 20 requests at once: exactly one gets a token', async function () {
    const jwt = await assertion(a, 'inline-a');
    const answers = await Promise.all(Array.from({ length: 20 }, () => tokenRequest(box, jwt)));
    expect(answers.filter((r) => r.status === 200)).to.have.length(1);
    for (const r of answers.filter((r) => r.status !== 200)) refused(r, /replayed jti/);
  });

  it('attack: one assertion sent to two replicas of one box at once, 20 requests: exactly one gets a token', async function () {
    // Two more processes of the same box (its database, its issuer identifier), as a Deployment's
    // Pods: the jti is spent in the ledger they share, not in the memory of either. (Not `box`
    // itself: the replays refused count against the address, in each process, and later tests
    // here need `box`'s allowance.)
    const replicas = await Promise.all([box.startAnother(), box.startAnother()]);
    try {
      const jwt = await assertion(a, 'inline-a');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => tokenRequest(replicas[i % 2]!, jwt)));
      expect(answers.filter((r) => r.status === 200)).to.have.length(1);
      for (const r of answers.filter((r) => r.status !== 200)) refused(r, /replayed jti/);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  });

  it('attack: one assertion sent at once to the token endpoint and to introspection, 20 requests: exactly one is accepted', async function () {
    // The token endpoint spends a jti in the statement that writes the token's session, introspection in the
    // replay ledger: one table, one unique digest, whichever path comes first. (Another process of the box:
    // the replays refused count against the address, and later tests here need `box`'s allowance.)
    const other = await box.startAnother();
    try {
      const token = (await tokenRequest(other, await assertion(a, 'inline-a'))).body.access_token as string;
      const introspect = (jwt: string): Promise<JsonResponse> =>
        other.form('/auth/introspect', { token, client_assertion_type: JWT_BEARER, client_assertion: jwt });
      const jwt = await assertion(a, 'inline-a');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? introspect(jwt) : tokenRequest(other, jwt))));
      expect(answers.filter((r) => r.status === 200)).to.have.length(1);
      for (const r of answers.filter((r) => r.status !== 200)) refused(r, /replayed jti/);
      // And one after the other, both ways.
      const spentHere = await assertion(a, 'inline-a');
      expect((await tokenRequest(other, spentHere)).status).to.equal(200);
      refused(await introspect(spentHere), /replayed jti/);
      const spentThere = await assertion(a, 'inline-a');
      expect((await introspect(spentThere)).status).to.equal(200);
      refused(await tokenRequest(other, spentThere), /replayed jti/);
    } finally {
      await other.stop();
    }
  });

  it("attack: an assertion for client A signed with client B's key", async function () {
    // B's key under B's kid: A has no such key.
    refused(await tokenRequest(box, await assertion(b, 'inline-a')), /unknown kid/);
    // B's key under A's kid: the signature does not verify.
    refused(await tokenRequest(box, await assertion({ ...b, kid: a.kid }, 'inline-a')), /alg not allowed with this key|bad signature/);
    refused(await tokenRequest(box, await assertion({ ...a, privateKey: (await newKey('x')).privateKey }, 'inline-a')), /bad signature/);
  });

  it('attack: iss is client A, sub is client B', async function () {
    const jwt = await assertion(a, 'inline-a', { sub: 'inline-b' });
    refused(await tokenRequest(box, jwt, { client_id: 'inline-a' }), /iss\/sub mismatch/);
    // Without client_id, an iss and a sub of two names are no client's own: taken for a workload's token, and refused as one.
    refused(await tokenRequest(box, jwt), /issuer .inline-a. is not trusted/);
  });

  it("attack: aud is the token endpoint's URL, or an array with another audience", async function () {
    refused(await tokenRequest(box, await assertion(a, 'inline-a', { aud: `${box.url}/auth/token` })), /aud must be this box's issuer/);
    refused(await tokenRequest(box, await assertion(a, 'inline-a', { aud: [box.url, 'https://other.example'] })), /aud must be/);
    // The issuer as the only member of an array is the issuer.
    expect((await tokenRequest(box, await assertion(a, 'inline-a', { aud: [box.url] }))).status).to.equal(200);
  });

  it('attack: alg none, and HS256 keyed with the public key', async function () {
    const claims = { iss: 'inline-a', sub: 'inline-a', aud: box.url, jti: randomUUID(), exp: now() + 60 };
    const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    refused(await tokenRequest(box, `${b64({ alg: 'none', kid: a.kid })}.${b64(claims)}.`), /alg not allowed/);
    const input = `${b64({ alg: 'HS256', kid: a.kid })}.${b64(claims)}`;
    const mac = createHmac('sha256', JSON.stringify(a.jwk)).update(input).digest('base64url');
    refused(await tokenRequest(box, `${input}.${mac}`), /alg not allowed/);
  });

  it('attack: RS256 with a registered RSA key', async function () {
    const rs256 = (await importJWK(rsa.privateJwk, 'RS256')) as CryptoKey;
    refused(
      await tokenRequest(box, await assertion({ ...rsa, alg: 'RS256' as ClientKey['alg'], privateKey: rs256 }, 'rsa-client')),
      /alg not allowed/,
    );
  });

  it('attack: a crit header the box does not understand (RFC 7515 §4.1.11), and a typ of another kind of JWT', async function () {
    const critical = await new SignJWT({ iss: 'inline-a', sub: 'inline-a', aud: box.url, jti: randomUUID(), exp: now() + 60 })
      .setProtectedHeader({ alg: a.alg, kid: a.kid, crit: ['urn:example:must-understand'], 'urn:example:must-understand': true })
      .sign(a.privateKey, { crit: { 'urn:example:must-understand': true } });
    // Not read as the client's (a JWS not understood names nobody), so not checked with its keys.
    refused(await tokenRequest(box, critical), /crit header|is not trusted/);
    refused(await tokenRequest(box, await assertion(a, 'inline-a', {}, { typ: 'dpop+jwt' })), /another kind of JWT/);
    // Its own type, and the generic one, are taken.
    for (const typ of ['client-authentication+jwt', 'JWT'])
      expect((await tokenRequest(box, await assertion(a, 'inline-a', {}, { typ }))).status, typ).to.equal(200);
  });

  it('attack: an expired assertion, and one valid for an hour', async function () {
    refused(await tokenRequest(box, await assertion(a, 'inline-a', { iat: now() - 600, exp: now() - 300 })), /expired/);
    refused(await tokenRequest(box, await assertion(a, 'inline-a', { exp: now() + 3600 })), /exp too far/);
  });

  it('a private key as a client key is refused when written (422), and nothing is stored', async function () {
    const res = await box.json('PUT', '/Client/leaky', { grant_types: ['client_credentials'], jwks: { keys: [a.privateJwk] } }, root);
    expect(res.status, res.text).to.equal(422);
    expect(res.body.errors.jwks.join(' ')).to.match(/private key material \(d\)/);
    expect((await box.json('GET', '/Client/leaky', undefined, root)).status).to.equal(404);
  });

  it('other keys refused when written: symmetric, RSA under 2048 or over 8192 bits, RSA exponents other than odd 2^16..2^32, two keys without kid, jwks with jwks_uri, a literal loopback jwks_uri', async function () {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    // A modulus of 8,201 bits (odd, its top bit set): a public key needs no primes to be read.
    const huge = Buffer.concat([Buffer.from([0x01]), randomBytes(1025)]);
    huge[huge.length - 1]! |= 1;
    // An exponent of 2^64 + 1: odd, within NIST's 2^256 and the schema's 16 characters, and costlier than 65537.
    const e64 = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 1]).toString('base64url');
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, 'jwks', /symmetric/],
      [{ jwks: { keys: [small] } }, 'jwks', /shorter than 2048 bits/],
      [{ jwks: { keys: [{ ...rsa.jwk, n: huge.toString('base64url') }] } }, 'jwks', /longer than 8192 bits/],
      [{ jwks: { keys: [{ ...rsa.jwk, e: 'Aw' }] } }, 'jwks', /public exponent \(e\) must be odd, above 2\^16 and below 2\^32/],
      [{ jwks: { keys: [{ ...rsa.jwk, e: e64 }] } }, 'jwks', /public exponent \(e\)/],
      [
        {
          jwks: {
            keys: [
              { ...a.jwk, kid: undefined },
              { ...b.jwk, kid: undefined },
            ],
          },
        },
        'jwks',
        /has no kid/,
      ],
      [{ jwks: { keys: [a.jwk] }, jwks_uri: jwksUri }, 'jwks_uri', /not both/],
      [{ jwks_uri: 'https://127.0.0.1:8443/jwks.json' }, 'jwks_uri', /special-use/],
      [{ jwks_uri: 'https://169.254.169.254/jwks.json' }, 'jwks_uri', /special-use/],
      [{ jwks_uri: 'http://keys.example/jwks.json' }, 'jwks_uri', /https/],
    ];
    for (const [keys, field, problem] of cases) {
      const res = await box.json('PUT', '/Client/refused-keys', { grant_types: ['client_credentials'], ...keys }, root);
      expect(res.status, `${JSON.stringify(keys)}: ${res.text}`).to.equal(422);
      expect(res.body.errors[field]?.join(' '), res.text).to.match(problem);
    }
    expect((await box.json('GET', '/Client/refused-keys', undefined, root)).status).to.equal(404);
  });

  it('a client with keys is confidential: client_id alone is refused, even where a public client may name itself so', async function () {
    const device = 'urn:ietf:params:oauth:grant-type:device_code';
    const put = await box.json('PUT', '/Client/device-keys', { grant_types: [device], jwks: { keys: [a.jwk] } }, root);
    expect(put.status, put.text).to.equal(201);
    const named = await box.form('/auth/device', { client_id: 'device-keys' });
    expect(named.status, named.text).to.equal(401);
    const signed = await box.form('/auth/device', {
      client_assertion_type: JWT_BEARER,
      client_assertion: await assertion(a, 'device-keys'),
    });
    expect(signed.status, signed.text).to.equal(200);
    expect((await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'inline-a' })).status).to.equal(401);
  });
  it('attack: an unsigned assertion does not tell whether a client exists or has keys', async function () {
    const put = await box.json('PUT', '/Client/secret-only', { grant_types: ['client_credentials'], secret: 'a-secret-not-keys' }, root);
    expect(put.status, put.text).to.equal(201);
    // Anyone can make these: no key signs them (alg none would do as well; ES256 with a key of nobody's).
    const stranger = await newKey('stranger');
    const unknown = await tokenRequest(box, await assertion(stranger, 'no-such-client'), { client_id: 'no-such-client' });
    const keyless = await tokenRequest(box, await assertion(stranger, 'secret-only'), { client_id: 'secret-only' });
    refused(unknown, /unknown client/);
    refused(keyless, /unknown client/);
    expect(unknown.body.error_description).to.equal(keyless.body.error_description);
    expect(unknown.text).not.to.contain('no-such-client');
  });

  it('attack: refused assertions are failed attempts of their address: 429 once over the limit, as wrong secrets', async function () {
    // The strict box keeps the default limit (BOXAUTH_CLIENT_AUTH_MAX_FAILURES 10, four times that per address).
    const stranger = await newKey('stranger');
    const statuses: number[] = [];
    for (let i = 0; i < 45; i++)
      statuses.push((await tokenRequest(strict, await assertion(stranger, 'no-such-client'), { client_id: 'no-such-client' })).status);
    // The earlier refusal on this box (its jwks_uri at loopback) counted too: the first 30 are refused as such, the last 5 never tried.
    expect(statuses.slice(0, 30)).to.deep.equal(Array(30).fill(401));
    expect(statuses.slice(40)).to.deep.equal(Array(5).fill(429));
  });
});
