import { expect } from 'chai';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { signingAlgorithms, verifyIdToken, type IdTokenExpected } from '../../../../api/people/upstream/id-token.js';
import { UpstreamError } from '../../../../api/people/upstream/profile.js';

const ISSUER = 'https://idp.example';
const NOW = 1_800_000_000_000;
const at = (seconds: number): number => Math.floor(NOW / 1000) + seconds;

describe('upstream ID tokens', function () {
  let keys: JWTVerifyGetKey;
  let sign: (claims: JWTPayload, header?: { alg?: string; kid?: string }) => Promise<string>;
  let signWithStranger: (claims: JWTPayload) => Promise<string>;
  const expected: IdTokenExpected = { issuer: ISSUER, clientId: 'box-a', nonce: 'n-1', algorithms: ['RS256', 'ES256'], now: () => NOW };
  const good: JWTPayload = { iss: ISSUER, sub: 'ann', aud: 'box-a', iat: at(-5), exp: at(300), nonce: 'n-1', amr: ['pwd', 'otp'] };

  before(async function () {
    const provider = await generateKeyPair('RS256');
    const es = await generateKeyPair('ES256');
    const stranger = await generateKeyPair('RS256');
    keys = createLocalJWKSet({
      keys: [
        { ...(await exportJWK(provider.publicKey)), kid: 'rsa', alg: 'RS256' },
        { ...(await exportJWK(es.publicKey)), kid: 'ec', alg: 'ES256' },
      ],
    });
    sign = (claims, header = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: header.alg ?? 'RS256', kid: header.kid ?? 'rsa' })
        .sign(header.alg === 'ES256' ? es.privateKey : provider.privateKey);
    // Another key under the provider's kid: what a forger who knows the kid but not the key signs with.
    signWithStranger = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'rsa' }).sign(stranger.privateKey);
  });

  async function refused(token: string, expect_ = expected): Promise<string> {
    try {
      await verifyIdToken(token, keys, expect_);
    } catch (err) {
      expect(err).to.be.instanceOf(UpstreamError);
      expect((err as UpstreamError).failure).to.equal('invalid');
      return (err as UpstreamError).message;
    }
    throw new Error('the token was accepted');
  }

  it('accepts a token of the provider, for this client and sign-in, signed with a key it publishes', async function () {
    expect(await verifyIdToken(await sign(good), keys, expected)).to.include({ sub: 'ann', nonce: 'n-1' });
    expect(await verifyIdToken(await sign(good, { alg: 'ES256', kid: 'ec' }), keys, expected)).to.include({ sub: 'ann' });
    const several = { ...good, aud: ['box-a', 'api'], azp: 'box-a' };
    expect(await verifyIdToken(await sign(several), keys, expected)).to.include({ azp: 'box-a' });
  });

  it('refuses a token signed with another key', async function () {
    expect(await refused(await signWithStranger(good))).to.match(/signature/);
  });

  it('refuses alg none, and an HMAC even where the provider says it uses one (its key is the client secret)', async function () {
    const unsigned = new UnsecuredJWT(good).encode();
    await refused(unsigned);
    await refused(unsigned, { ...expected, algorithms: ['none', 'RS256'] });
    const secret = new TextEncoder().encode('the-client-secret-the-box-also-knows');
    const hmac = await new SignJWT(good).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    await refused(hmac, { ...expected, algorithms: ['HS256', 'RS256'] });
    expect(signingAlgorithms(['HS256', 'none', 'RS256', 'hs512'])).to.deep.equal(['RS256']);
    expect(signingAlgorithms(undefined)).to.deep.equal(['RS256']);
  });

  it('refuses an algorithm the provider does not say it signs with', async function () {
    await refused(await sign(good, { alg: 'ES256', kid: 'ec' }), { ...expected, algorithms: ['RS256'] });
  });

  it('refuses another issuer, another audience, several audiences without us as azp', async function () {
    await refused(await sign({ ...good, iss: `${ISSUER}/` }));
    await refused(await sign({ ...good, aud: 'another-client' }));
    await refused(await sign({ ...good, aud: ['box-a', 'api'] }));
    expect(await refused(await sign({ ...good, aud: ['box-a', 'api'], azp: 'api' }))).to.match(/azp/);
    await refused(await sign({ ...good, azp: 'api' }));
  });

  it('refuses an expired token, one issued in the future, and one without exp or iat', async function () {
    expect(await refused(await sign({ ...good, iat: at(-600), exp: at(-120) }))).to.match(/exp/);
    expect(await refused(await sign({ ...good, iat: at(600) }))).to.match(/future/);
    const { exp: _exp, ...noExp } = good;
    await refused(await sign(noExp));
    const { iat: _iat, ...noIat } = good;
    await refused(await sign(noIat));
    // A small skew either way is the provider's clock, not an attack.
    expect(await verifyIdToken(await sign({ ...good, iat: at(30), exp: at(-30) }), keys, expected)).to.include({ sub: 'ann' });
  });

  it('refuses a token of another sign-in (nonce), and one without a subject', async function () {
    expect(await refused(await sign({ ...good, nonce: 'n-2' }))).to.match(/nonce/);
    const { nonce: _nonce, ...noNonce } = good;
    await refused(await sign(noNonce));
    await refused(await sign({ ...good, sub: '' }));
  });
});
