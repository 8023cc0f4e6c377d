// DPoP proofs (RFC 9449 §4.3) checked without a server: each rule of the check refuses
// the proof that breaks it, and only that one; the nonces hold for two windows.
import { expect } from 'chai';
import crypto, { randomUUID } from 'node:crypto';
import { Dpop } from '../../../../api/credentials/dpop/check.js';
import { DpopNonces } from '../../../../api/credentials/dpop/nonce.js';
import { accessTokenHash, htuOf, verifyProof, type ProofRequest } from '../../../../api/credentials/dpop/proof.js';
import { thumbprint } from '../../../../api/credentials/jwt.js';
import type { SeenProof } from '../../../../api/store/dpop-proofs.js';

const now = Date.parse('2026-11-23T12:00:00Z');
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

type Alg = 'ES256' | 'ES384' | 'ES512' | 'RS256' | 'PS256' | 'EdDSA';

function keyPair(alg: Alg): crypto.KeyPairKeyObjectResult {
  if (alg === 'EdDSA') return crypto.generateKeyPairSync('ed25519');
  if (alg.startsWith('ES'))
    return crypto.generateKeyPairSync('ec', { namedCurve: { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }[alg as 'ES256'] });
  return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
}

function sign(alg: Alg, key: crypto.KeyObject, data: Buffer): Buffer {
  const hash = { ES256: 'sha256', ES384: 'sha384', ES512: 'sha512', RS256: 'sha256', PS256: 'sha256', EdDSA: null }[alg];
  if (alg.startsWith('ES')) return crypto.sign(hash, data, { key, dsaEncoding: 'ieee-p1363' });
  if (alg === 'PS256') return crypto.sign(hash, data, { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  return crypto.sign(hash, data, key);
}

/** A client's key and a proof maker: `header` and `claims` override what a good proof has. */
function client(alg: Alg = 'ES256') {
  const { privateKey, publicKey } = keyPair(alg);
  const jwk = publicKey.export({ format: 'jwk' });
  return {
    jkt: thumbprint(jwk),
    proof(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): string {
      const input = `${b64({ typ: 'dpop+jwt', alg, jwk, ...header })}.${b64({ jti: randomUUID(), htm: 'GET', htu: 'https://box.example/Client', iat: now / 1000, ...claims })}`;
      return `${input}.${sign(alg, privateKey, Buffer.from(input)).toString('base64url')}`;
    },
  };
}

const request: ProofRequest = { method: 'GET', url: 'https://box.example/Client?_count=5', now };
const problem = (v: ReturnType<typeof verifyProof>): string => ('problem' in v ? v.problem : 'accepted');

describe('DPoP proofs: verifyProof', function () {
  for (const alg of ['ES256', 'ES384', 'ES512', 'RS256', 'PS256', 'EdDSA'] as const) {
    it(`accepts a proof signed with ${alg}, and names its key's thumbprint`, function () {
      const c = client(alg);
      const v = verifyProof(c.proof(), request);
      expect(problem(v)).to.equal('accepted');
      expect(v).to.include({ jkt: c.jkt });
    });
  }

  it('compares htu after normalization, query and fragment aside', function () {
    const c = client();
    expect(problem(verifyProof(c.proof({ htu: 'HTTPS://Box.Example:443/Client#x' }), request))).to.equal('accepted');
    expect(htuOf('https://box.example/a?b=1')).to.equal('https://box.example/a');
    expect(htuOf('ftp://box.example/a')).to.equal(undefined);
  });

  it('refuses a proof for another method, URI, origin or scheme', function () {
    const c = client();
    expect(problem(verifyProof(c.proof({ htm: 'POST' }), request))).to.match(/POST requests, not GET/);
    for (const htu of [
      'https://box.example/Client/x',
      'https://evil.example/Client',
      'http://box.example/Client',
      'https://box.example:8443/Client',
    ]) {
      expect(problem(verifyProof(c.proof({ htu }), request)), htu).to.match(/another URI/);
    }
  });

  it('refuses a stale proof, and one from too far ahead', function () {
    const c = client();
    expect(problem(verifyProof(c.proof({ iat: now / 1000 - 61 }), request))).to.match(/stale/);
    expect(problem(verifyProof(c.proof({ iat: now / 1000 - 59 }), request))).to.equal('accepted');
    expect(problem(verifyProof(c.proof({ iat: now / 1000 + 61 }), request))).to.match(/ahead/);
  });

  it('checks ath against the token presented with the proof', function () {
    const c = client();
    const at = { ...request, accessToken: 'token-1' };
    expect(problem(verifyProof(c.proof({ ath: accessTokenHash('token-1') }), at))).to.equal('accepted');
    expect(problem(verifyProof(c.proof({ ath: accessTokenHash('token-2') }), at))).to.match(/ath/);
    expect(problem(verifyProof(c.proof(), at))).to.match(/ath/);
  });

  it('refuses a wrong typ, alg none, HMAC, a private key in jwk, a key of another alg, and a bad signature', function () {
    const c = client();
    expect(problem(verifyProof(c.proof({}, { typ: 'JWT' }), request))).to.match(/typ/);
    expect(problem(verifyProof(c.proof({}, { alg: 'none' }), request))).to.match(/alg must be one of/);
    expect(problem(verifyProof(c.proof({}, { alg: 'HS256', jwk: { kty: 'oct', k: 'c2VjcmV0' } }), request))).to.match(/alg must be one of/);
    const { privateKey } = keyPair('ES256');
    expect(problem(verifyProof(c.proof({}, { jwk: privateKey.export({ format: 'jwk' }) }), request))).to.match(/public key/);
    expect(problem(verifyProof(c.proof({}, { alg: 'ES384' }), request))).to.match(/not a key for ES384/);
    const other = client().proof();
    const good = c.proof();
    const forged = `${good.slice(0, good.lastIndexOf('.'))}.${other.slice(other.lastIndexOf('.') + 1)}`;
    expect(problem(verifyProof(forged, request))).to.match(/signature/);
  });

  it('refuses what is not a compact JWS, and claims missing or of the wrong type', function () {
    const c = client();
    expect(problem(verifyProof('a.b', request))).to.match(/compact JWS/);
    expect(problem(verifyProof('a.b.c.d', request))).to.match(/compact JWS/);
    expect(problem(verifyProof(c.proof({ jti: '' }), request))).to.match(/jti/);
    expect(problem(verifyProof(c.proof({ iat: '1' }), request))).to.match(/htm, htu and iat/);
    expect(problem(verifyProof(c.proof({ nonce: 5 }), request))).to.match(/nonce/);
  });
});

describe('DPoP: Dpop.check (nonce and replay, with the replay cache in memory)', function () {
  const ledger = (): { firstSeen(p: SeenProof): Promise<boolean>; seen: Set<string> } => {
    const seen = new Set<string>();
    return {
      seen,
      firstSeen: async (p) => {
        const k = p.digest.toString('hex');
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      },
    };
  };

  it('accepts a proof once; the same jti under another key is another proof', async function () {
    const dpop = new Dpop(ledger(), undefined);
    const c = client();
    const p = c.proof({ jti: 'j1' });
    expect(await dpop.check([p], request)).to.include({ jkt: c.jkt });
    expect(await dpop.check([p], request)).to.deep.include({ error: 'invalid_dpop_proof' });
    expect(await dpop.check([client().proof({ jti: 'j1' })], request)).to.have.property('jkt');
  });

  it('refuses no proof, two proofs, and a proof of a key other than the bound one, without writing to the cache', async function () {
    const l = ledger();
    const dpop = new Dpop(l, undefined);
    const c = client();
    expect(await dpop.check(undefined, request)).to.include({ error: 'invalid_dpop_proof' });
    expect(await dpop.check([c.proof(), c.proof()], request)).to.include({ error: 'invalid_dpop_proof' });
    expect(await dpop.check([c.proof()], request, 'another-jkt')).to.include({ error: 'invalid_dpop_proof' });
    expect(l.seen.size).to.equal(0);
  });

  it('with nonces required: no nonce or an unknown one is use_dpop_nonce with the nonce to use', async function () {
    const nonces = new DpopNonces(Buffer.alloc(32, 1), () => now);
    const dpop = new Dpop(ledger(), nonces);
    const c = client();
    expect(await dpop.check([c.proof()], request)).to.deep.include({ error: 'use_dpop_nonce', nonce: nonces.current() });
    expect(await dpop.check([c.proof({ nonce: 'guess' })], request)).to.include({ error: 'use_dpop_nonce' });
    expect(await dpop.check([c.proof({ nonce: nonces.current() })], request)).to.have.property('jkt');
  });
});

describe('DPoP nonces', function () {
  it('hold in their window and the next, and no longer; another key makes other nonces', function () {
    let t = now;
    const nonces = new DpopNonces(Buffer.alloc(32, 1), () => t, 300);
    const first = nonces.current();
    expect(nonces.accepts(first)).to.equal(true);
    t += 300_000;
    expect(nonces.current()).to.not.equal(first);
    expect(nonces.accepts(first)).to.equal(true);
    t += 300_000;
    expect(nonces.accepts(first)).to.equal(false);
    expect(new DpopNonces(Buffer.alloc(32, 2), () => t, 300).current()).to.not.equal(nonces.current());
  });
});
