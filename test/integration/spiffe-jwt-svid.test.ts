// SPIFFE client authentication with JWT-SVIDs (draft-ietf-oauth-spiffe-client-auth-02): a Client bound
// to SPIFFE IDs (auth.spiffe.ids) authenticates with a JWT-SVID its trust domain signed, the keys read
// from the trust domain's SPIFFE bundle endpoint — here a fake one (HTTPS with a test CA the box trusts
// through caBundle) serving a bundle of keys the test makes. The real SPIRE journey is
// test/e2e/spire.test.ts. The attacks: a SPIFFE ID of another trust domain (untrusted, or trusted
// but signed with the first domain's key), a JWT-SVID replayed after its exp, one for another
// client's SPIFFE ID, one with a jti sent twice and by 10 requests at once, a wrong audience, alg
// none, an x509-svid key, and a bundle endpoint at loopback on a box that does not allow it.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa, type TestCa } from '../support/tls.js';

const JWT_SPIFFE = 'urn:ietf:params:oauth:client-assertion-type:jwt-spiffe';

interface DomainKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(kid: string): Promise<DomainKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

/** A SPIFFE bundle (SPIFFE Trust Domain and Bundle §4) of `jwtKeys`, with an X.509 root's key beside them. */
function bundle(jwtKeys: DomainKey[], x509: DomainKey, refreshHint: number): Record<string, unknown> {
  return {
    keys: [...jwtKeys.map((k) => ({ ...k.jwk, use: 'jwt-svid' })), { ...x509.jwk, use: 'x509-svid' }],
    spiffe_sequence: 1,
    spiffe_refresh_hint: refreshHint,
  };
}

describe('SPIFFE: clients authenticated by JWT-SVIDs', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let docs: ClientDocuments;
  /** Trusts prod.test and other.test, whose bundle endpoints (at loopback) it is allowed to fetch; its clock moves. */
  let box: Box;
  /** Trusts prod.test at the same endpoint, without allowing loopback: as in production. */
  let strict: Box;
  let root: string;
  let prod: DomainKey;
  let rotated: DomainKey;
  let other: DomainKey;
  let x509: DomainKey;
  /** How far the test moved the box's clock, in seconds. */
  let moved = 0;
  const now = (): number => Math.floor(Date.now() / 1000) + moved;

  /** A JWT-SVID of `sub` signed with `key` as SPIRE makes one (no jti, no iss), then `claims` over it. */
  function svid(key: DomainKey, sub: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
    return new SignJWT({ sub, aud: [box.url], iat: now(), exp: now() + 300, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT', ...header })
      .sign(key.privateKey);
  }

  function tokenRequest(on: Box, jwt: string, extra: Record<string, string> = {}): Promise<JsonResponse> {
    return on.form('/auth/token', { grant_type: 'client_credentials', client_assertion_type: JWT_SPIFFE, client_assertion: jwt, ...extra });
  }

  async function putClient(on: Box, id: string, ids: string[]): Promise<void> {
    const token = on === box ? root : await on.rootToken();
    const res = await on.json(
      'PUT',
      `/Client/${id}`,
      { grant_types: ['client_credentials'], auth: { client_credentials: { token_format: 'jwt' }, spiffe: { ids } } },
      token,
    );
    expect(res.status, res.text).to.equal(201);
    const p = await on.json('PUT', `/AccessPolicy/${id}-allow`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, token);
    expect(p.status, p.text).to.equal(201);
  }

  function refused(res: JsonResponse, rule: RegExp): void {
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
    expect(res.body.error_description, res.text).to.match(rule);
    expect(res.text).not.to.match(/"(x|y|d)":/); // never key material
  }

  function advance(seconds: number): void {
    moved += seconds;
    box.advanceClock(seconds);
  }

  before(async function () {
    ca = testCa();
    docs = await clientDocuments(ca);
    [prod, rotated, other, x509] = await Promise.all([newKey('prod-1'), newKey('prod-2'), newKey('other-1'), newKey('x509-root')]);
    docs.serve('/prod/bundle', { body: bundle([prod], x509, 60) });
    docs.serve('/other/bundle', { body: bundle([other], x509, 60) });
    // A name, not a literal address: judged by the guard at each fetch (the certificate names localhost too).
    const origin = docs.origin.replace('127.0.0.1', 'localhost');
    const domain = (name: string, allowed: string[]): Record<string, unknown> => ({
      trustDomain: `${name}.test`,
      bundleEndpointUrl: `${origin}/${name}/bundle`,
      caBundle: ca.pem,
      ...(allowed.length ? { allowedAddresses: allowed } : {}),
    });
    const loopback = ['127.0.0.1/32', '::1/128'];
    [box, strict] = await Promise.all([
      Box.start({
        movableClock: true,
        env: { BOXAUTH_SPIFFE_TRUST_DOMAINS: JSON.stringify([domain('prod', loopback), domain('other', loopback)]) },
      }),
      Box.start({ env: { BOXAUTH_SPIFFE_TRUST_DOMAINS: JSON.stringify([domain('prod', [])]) } }),
    ]);
    root = await box.rootToken();
    await putClient(box, 'shop', ['spiffe://prod.test/ns/shop/sa/api']);
    await putClient(box, 'billing', ['spiffe://prod.test/ns/billing/sa/api']);
    await putClient(box, 'batch', ['spiffe://prod.test/ns/batch/*']);
    await putClient(box, 'other-shop', ['spiffe://other.test/ns/shop/sa/api']);
    await putClient(box, 'evil', ['spiffe://evil.test/ns/shop/sa/api']);
    await putClient(strict, 'shop', ['spiffe://prod.test/ns/shop/sa/api']);
  });
  after(async function () {
    await Promise.all([box?.stop(), strict?.stop()]);
    await docs?.close();
  });

  it('discovery names spiffe_jwt among the token endpoint auth methods', async function () {
    const res = await box.json('GET', '/.well-known/oauth-authorization-server');
    expect(res.body.token_endpoint_auth_methods_supported).to.include('spiffe_jwt');
    expect(res.body.introspection_endpoint_auth_methods_supported).to.include('spiffe_jwt');
  });

  it('a JWT-SVID as SPIRE makes it: a token, routed by its SPIFFE ID or named by client_id, and the same SVID again', async function () {
    const jwt = await svid(prod, 'spiffe://prod.test/ns/shop/sa/api');
    const res = await tokenRequest(box, jwt);
    expect(res.status, res.text).to.equal(200);
    expect(docs.hits('/prod/bundle')).to.equal(1);
    // No jti: an agent hands the same SVID out until it nears its exp, and it is taken again (its signature checked once).
    const again = await tokenRequest(box, jwt, { client_id: 'shop' });
    expect(again.status, again.text).to.equal(200);
    const introspected = await box.form('/auth/introspect', {
      token: res.body.access_token,
      client_assertion_type: JWT_SPIFFE,
      client_assertion: jwt,
    });
    expect(introspected.status, introspected.text).to.equal(200);
    expect(introspected.body).to.include({ active: true, client_id: 'shop' });
    expect(docs.hits('/prod/bundle')).to.equal(1);
  });

  it('a prefix binds the IDs under it, in its trust domain only; the session names the SPIFFE ID', async function () {
    const nightly = await tokenRequest(box, await svid(prod, 'spiffe://prod.test/ns/batch/job/nightly'));
    expect(nightly.status, nightly.text).to.equal(200);
    const jti = JSON.parse(Buffer.from(nightly.body.access_token.split('.')[1], 'base64url').toString()).jti;
    const session = (await box.json('GET', `/Session/${jti}`, undefined, root)).body;
    expect(session.details.spiffe).to.deep.equal({ spiffeId: 'spiffe://prod.test/ns/batch/job/nightly', trustDomain: 'prod.test' });
    refused(await tokenRequest(box, await svid(prod, 'spiffe://prod.test/ns/batch')), /SPIFFE ID not bound/);
    refused(await tokenRequest(box, await svid(prod, 'spiffe://prod.test/ns/batchx/job')), /SPIFFE ID not bound/);
  });

  it('attack: a SPIFFE ID of a trust domain the box does not trust, even one a client names', async function () {
    const untrusted = await tokenRequest(box, await svid(prod, 'spiffe://evil.test/ns/shop/sa/api'));
    refused(untrusted, /trust domain not trusted: evil\.test/);
    // Which trust domains the box trusts is not told to whoever sends a JWT.
    expect(untrusted.body.error_description).to.not.match(/prod\.test|other\.test/);
    refused(
      await tokenRequest(box, await svid(prod, 'spiffe://evil.test/ns/shop/sa/api'), { client_id: 'evil' }),
      /trust domain not trusted/,
    );
  });

  it("attack: an ID of another trusted trust domain, signed with this domain's key", async function () {
    // prod.test's key is no key of other.test: its kid is unknown to other.test's bundle.
    refused(
      await tokenRequest(box, await svid(prod, 'spiffe://other.test/ns/shop/sa/api')),
      /unknown kid: the bundle of trust domain other\.test/,
    );
    // And the same kid with the wrong key does not verify.
    refused(await tokenRequest(box, await svid({ ...prod, kid: other.kid }, 'spiffe://other.test/ns/shop/sa/api')), /bad signature/);
    expect((await tokenRequest(box, await svid(other, 'spiffe://other.test/ns/shop/sa/api'))).status).to.equal(200);
  });

  it("attack: a JWT-SVID for another client's SPIFFE ID", async function () {
    const billing = await svid(prod, 'spiffe://prod.test/ns/billing/sa/api');
    refused(
      await tokenRequest(box, billing, { client_id: 'shop' }),
      /SPIFFE ID not bound: spiffe:\/\/prod\.test\/ns\/billing\/sa\/api authenticates no client .shop./,
    );
    refused(await tokenRequest(box, billing, { client_id: 'nobody' }), /SPIFFE ID not bound/);
  });

  it('attack: a JWT-SVID with a jti is single use, also when 10 requests send it at once', async function () {
    const jwt = await svid(prod, 'spiffe://prod.test/ns/shop/sa/api', { jti: randomUUID() });
    const answers = await Promise.all(Array.from({ length: 10 }, () => tokenRequest(box, jwt)));
    expect(answers.filter((r) => r.status === 200)).to.have.length(1);
    for (const r of answers.filter((r) => r.status !== 200)) refused(r, /replayed jti/);
  });

  it("attack: aud is the token endpoint's URL, another server, or several", async function () {
    const sub = 'spiffe://prod.test/ns/shop/sa/api';
    refused(await tokenRequest(box, await svid(prod, sub, { aud: `${box.url}/auth/token` })), /audience: aud must be this box's issuer/);
    refused(await tokenRequest(box, await svid(prod, sub, { aud: 'https://other.example' })), /audience/);
    refused(await tokenRequest(box, await svid(prod, sub, { aud: [box.url, 'https://other.example'] })), /audience/);
  });

  it('attack: alg none, no kid, and a key the bundle holds for X.509-SVIDs only', async function () {
    const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const claims = { sub: 'spiffe://prod.test/ns/shop/sa/api', aud: box.url, exp: now() + 60 };
    refused(await tokenRequest(box, `${b64({ alg: 'none', kid: prod.kid })}.${b64(claims)}.`), /alg not allowed/);
    refused(await tokenRequest(box, await svid(prod, claims.sub, {}, { kid: undefined })), /unknown kid: a JWT-SVID must name its key/);
    refused(await tokenRequest(box, await svid(x509, claims.sub)), /unknown kid/);
  });

  it('attack: a bundle endpoint resolving to loopback, on a box that does not allow it, is never fetched', async function () {
    const before = docs.hits('/prod/bundle');
    const jwt = await new SignJWT({ sub: 'spiffe://prod.test/ns/shop/sa/api', aud: strict.url, exp: Math.floor(Date.now() / 1000) + 60 })
      .setProtectedHeader({ alg: 'ES256', kid: prod.kid })
      .sign(prod.privateKey);
    // Why (the address the name resolved to) is the box's log's, not the requester's.
    const res = await tokenRequest(strict, jwt);
    refused(res, /bundle of trust domain prod\.test could not be fetched \(the box's log says why\)/);
    expect(res.text).to.not.include('127.0.0.1');
    await eventually('the refusal logged with its cause', async () =>
      strict.logs.some((l) => l.includes('spiffe_auth_refused') && /127\.0\.0\.1 is (a special-use|the box's own) address/.test(l)),
    );
    expect(docs.hits('/prod/bundle')).to.equal(before);
  });

  it('a rotated key is fetched on its unknown kid; the refresh hint is honoured', async function () {
    docs.serve('/prod/bundle', { body: bundle([prod, rotated], x509, 60) });
    advance(15); // past the 10 s between two fetches
    const before = docs.hits('/prod/bundle');
    expect((await tokenRequest(box, await svid(rotated, 'spiffe://prod.test/ns/shop/sa/api'))).status).to.equal(200);
    expect(docs.hits('/prod/bundle')).to.equal(before + 1);
    // Within the hint (60 s), a known key costs no fetch; past it, the bundle is read again.
    expect((await tokenRequest(box, await svid(prod, 'spiffe://prod.test/ns/shop/sa/api'))).status).to.equal(200);
    expect(docs.hits('/prod/bundle')).to.equal(before + 1);
    advance(61);
    expect((await tokenRequest(box, await svid(prod, 'spiffe://prod.test/ns/shop/sa/api'))).status).to.equal(200);
    expect(docs.hits('/prod/bundle')).to.equal(before + 2);
  });

  it('attack: a JWT-SVID replayed after its exp is refused, though it was taken before', async function () {
    const jwt = await svid(prod, 'spiffe://prod.test/ns/shop/sa/api', { exp: now() + 30 });
    expect((await tokenRequest(box, jwt)).status).to.equal(200);
    advance(30 + 61); // past exp and the minute of skew allowed
    refused(await tokenRequest(box, jwt), /expired: the JWT-SVID's exp was/);
  });

  it('attack: an SVID taken before is refused once its key has left the bundle', async function () {
    const sub = 'spiffe://prod.test/ns/shop/sa/api';
    const before = await svid(prod, sub);
    expect((await tokenRequest(box, before)).status).to.equal(200);
    // The trust domain drops prod-1; an SVID of its new key makes the box read the bundle again.
    const next = await newKey('prod-3');
    docs.serve('/prod/bundle', { body: bundle([next], x509, 60) });
    advance(15); // past the 10 s between two fetches
    expect((await tokenRequest(box, await svid(next, sub))).status).to.equal(200);
    // Its signature was checked within the minute, but with a key no longer published.
    refused(await tokenRequest(box, before), /unknown kid: the bundle of trust domain prod\.test holds no JWT-SVID key 'prod-1'/);
  });
});
