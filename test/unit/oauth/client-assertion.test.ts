import { expect } from 'chai';
import crypto from 'node:crypto';
import {
  assertionAlg,
  assertionParts,
  checkClientAssertion,
  ClientAssertions,
  MAX_LIFETIME_SECONDS,
  SKEW_SECONDS,
  type AssertionJwt,
} from '../../../api/oauth/client-assertion.js';

const ISSUER = 'https://auth.example';
const NOW = 1_800_000_000;
const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });

function signed(claims: Record<string, unknown>): AssertionJwt {
  const input = `${Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  const jwt = assertionParts(`${input}.${signature}`);
  if ('problem' in jwt) throw new Error(jwt.problem);
  return jwt;
}

const good = { iss: 'orders', sub: 'orders', aud: ISSUER, jti: 'j-1', exp: NOW + 60 };
const check = (claims: Record<string, unknown>, now = NOW) =>
  checkClientAssertion(signed({ ...good, ...claims }), 'ES256', publicKey, { clientId: 'orders', issuer: ISSUER, now });

describe('checkClientAssertion: private_key_jwt, the clock given', function () {
  it('accepts a good assertion, and gives its jti and exp to the ledger', function () {
    expect(check({})).to.deep.equal({ jti: 'j-1', exp: NOW + 60 });
  });

  it('exp: at most 5 minutes ahead, 60 s of skew either way', function () {
    expect(check({ exp: NOW + MAX_LIFETIME_SECONDS + SKEW_SECONDS })).to.not.have.property('problem');
    expect(check({ exp: NOW + MAX_LIFETIME_SECONDS + SKEW_SECONDS + 1 }))
      .to.have.property('problem')
      .that.matches(/^exp too far/);
    expect(check({ exp: NOW - SKEW_SECONDS + 1 })).to.not.have.property('problem');
    expect(check({ exp: NOW - SKEW_SECONDS }))
      .to.have.property('problem')
      .that.matches(/^expired/);
    expect(check({ exp: undefined }))
      .to.have.property('problem')
      .that.matches(/^expired: the assertion has no exp/);
  });

  it('nbf and iat ahead of the skew are refused', function () {
    expect(check({ nbf: NOW + SKEW_SECONDS })).to.not.have.property('problem');
    expect(check({ nbf: NOW + SKEW_SECONDS + 1 }))
      .to.have.property('problem')
      .that.matches(/nbf/);
    expect(check({ iat: NOW + SKEW_SECONDS + 1 }))
      .to.have.property('problem')
      .that.matches(/iat/);
  });

  it('aud: the issuer, alone; jti required', function () {
    expect(check({ aud: [ISSUER] })).to.not.have.property('problem');
    expect(check({ aud: `${ISSUER}/auth/token` }))
      .to.have.property('problem')
      .that.matches(/^aud must be/);
    expect(check({ aud: [ISSUER, ISSUER] }))
      .to.have.property('problem')
      .that.matches(/^aud must be/);
    expect(check({ jti: undefined }))
      .to.have.property('problem')
      .that.matches(/^jti required/);
    expect(check({ jti: '' }))
      .to.have.property('problem')
      .that.matches(/^jti required/);
  });

  it('refuses algorithms outside ES256, PS256, EdDSA by name', function () {
    for (const alg of ['RS256', 'HS256', 'none', undefined]) {
      const jwt = { ...signed(good), header: { alg } };
      expect(assertionAlg(jwt))
        .to.have.property('problem')
        .that.matches(/^alg not allowed/);
    }
    expect(assertionAlg(signed(good))).to.equal('ES256');
  });
});

describe('ClientAssertions: the jti a client spends is its own', function () {
  it("attack: client a spends jti b.c; client a.b's jti c is still new (the ledger's digest is not ambiguous)", async function () {
    const seen = new Set<string>();
    const ledger = {
      firstSeen: async ({ digest }: { digest: Buffer }) => !seen.has(digest.toString('hex')) && !!seen.add(digest.toString('hex')),
    };
    const assertions = new ClientAssertions(
      { baseUrl: ISSUER, clientMetadata: { allowedAddresses: [], timeoutMs: 1000 } } as never,
      ledger,
    );
    const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k' }] };
    const token = (client: string, jti: string): string => {
      const claims = { iss: client, sub: client, aud: ISSUER, jti, exp: Math.floor(Date.now() / 1000) + 60 };
      const jwt = signed(claims);
      return `${jwt.signingInput.toString()}.${jwt.signature.toString('base64url')}`;
    };
    await assertions.authenticate({ id: 'a', jwks } as never, token('a', 'b.c'));
    await assertions.authenticate({ id: 'a.b', jwks } as never, token('a.b', 'c'));
  });
});

describe('ClientAssertions.authenticate: each refusal names its rule, never a key nor the assertion', function () {
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k' };
  const jwks = { keys: [jwk] };
  const other = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const seen = new Set<string>();
  const assertions = new ClientAssertions({ baseUrl: ISSUER, clientMetadata: { allowedAddresses: [], timeoutMs: 1000 } } as never, {
    firstSeen: async ({ digest }) => !seen.has(digest.toString('hex')) && !!seen.add(digest.toString('hex')),
  });

  /** An assertion of client orders, `claims` over good ones, signed by `key` under `header`. */
  function token(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}, key = privateKey): string {
    const now = Math.floor(Date.now() / 1000);
    const body = { ...good, aud: ISSUER, jti: crypto.randomUUID(), exp: now + 60, ...claims };
    const input = `${Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k', ...header })).toString('base64url')}.${Buffer.from(JSON.stringify(body)).toString('base64url')}`;
    return `${input}.${crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  }

  /** The refusal of `assertion`: its message, held to name `rule` and to hold no key material nor any part of the assertion. */
  async function refusal(assertion: string, rule: RegExp): Promise<void> {
    let message: string | undefined;
    try {
      await assertions.authenticate({ id: 'orders', jwks } as never, assertion);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message, 'refused').to.be.a('string');
    expect(message).to.match(rule);
    for (const part of [...assertion.split('.'), jwk.x!, jwk.y!, other.privateKey.export({ format: 'jwk' }).d!])
      expect(message, 'no key material, no part of the assertion').not.to.include(part);
  }

  it('unknown kid, bad signature, alg not allowed', async function () {
    await refusal(token({}, { kid: 'nope' }), /^unknown kid: /);
    await refusal(token({}, {}, other.privateKey), /^bad signature: /);
    await refusal(token({}, { alg: 'RS256' }), /^alg not allowed: /);
    await refusal(token({}, { alg: 'none' }), /^alg not allowed: /);
  });

  it('issuer and subject, audience, expired, exp too far, nbf, jti required', async function () {
    const now = Math.floor(Date.now() / 1000);
    await refusal(token({ iss: 'payments' }), /^iss\/sub mismatch: /);
    await refusal(token({ sub: 'payments' }), /^iss\/sub mismatch: /);
    await refusal(token({ aud: `${ISSUER}/auth/token` }), /^aud must be this box's issuer identifier/);
    await refusal(token({ exp: now - SKEW_SECONDS - 1 }), /^expired: /);
    await refusal(token({ exp: undefined }), /^expired: the assertion has no exp/);
    await refusal(token({ exp: now + 3600 }), /^exp too far: /);
    await refusal(token({ nbf: now + 3600 }), /^not yet valid: /);
    await refusal(token({ jti: undefined }), /^jti required: /);
  });

  it('replayed jti: the second use of one assertion', async function () {
    const once = token();
    await assertions.authenticate({ id: 'orders', jwks } as never, once);
    await refusal(once, /^replayed jti: /);
  });
});
