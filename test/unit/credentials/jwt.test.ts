import { expect } from 'chai';
import crypto from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, importJWK, jwtVerify } from 'jose';
import {
  algOf,
  generateKeyPair,
  signJwt,
  signingKey,
  thumbprint,
  verifyJwt,
  verifyJwtOnce,
  JwtError,
} from '../../../api/credentials/jwt.js';
import type { JwtAlg } from '../../../api/config.js';

describe('JWT signing', function () {
  for (const alg of ['ES256', 'RS256', 'EdDSA'] as JwtAlg[]) {
    it(`${alg}: jose verifies what we sign, and we verify it back`, async function () {
      const { privateKey, publicKey } = await generateKeyPair(alg);
      const jwk = publicKey.export({ format: 'jwk' });
      const key = signingKey(thumbprint(jwk), alg, privateKey, publicKey);
      const token = signJwt(key, { iss: 'https://box', sub: 'c', exp: Math.floor(Date.now() / 1000) + 60 });
      const { payload, protectedHeader } = await jwtVerify(token, await importJWK({ ...jwk, alg } as any, alg));
      expect(payload.sub).to.equal('c');
      expect(protectedHeader.kid).to.equal(key.kid);
      expect(verifyJwt(token, (kid) => (kid === key.kid ? key : undefined)).claims.sub).to.equal('c');
    });
  }

  it('makes an RSA key while the event loop keeps turning: a host answers other boxes meanwhile', async function () {
    // An RSA 2048 key takes 100 ms and more of CPU: made on the event loop, no timer would run until it is done.
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 1);
    try {
      const { privateKey } = await generateKeyPair('RS256');
      expect(algOf(privateKey)).to.equal('RS256');
    } finally {
      clearInterval(timer);
    }
    expect(turns, 'timer turns while the key was made').to.be.above(0);
  });

  it('uses RFC 7638 thumbprints as key ids', async function () {
    const { publicKey } = await generateKeyPair('ES256');
    const jwk = publicKey.export({ format: 'jwk' });
    expect(thumbprint(jwk)).to.equal(await calculateJwkThumbprint(await exportJWK(publicKey)));
  });

  it('refuses alg none, another alg, a tampered payload and an unknown kid', async function () {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const key = signingKey('k1', 'ES256', privateKey, publicKey);
    const find = (kid: string) => (kid === 'k1' ? key : undefined);
    const token = signJwt(key, { sub: 'a' });
    const [, payload, sig] = token.split('.');
    const header = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    expect(() => verifyJwt(`${header({ alg: 'none', kid: 'k1' })}.${payload}.`, find)).to.throw(JwtError, /algorithm/);
    expect(() => verifyJwt(`${header({ alg: 'HS256', kid: 'k1' })}.${payload}.${sig}`, find)).to.throw(JwtError, /algorithm/);
    const forged = Buffer.from(JSON.stringify({ sub: 'b' })).toString('base64url');
    expect(() => verifyJwt(`${token.split('.')[0]}.${forged}.${sig}`, find)).to.throw(JwtError, /signature/);
    expect(() => verifyJwt(`${header({ alg: 'ES256', kid: 'k2' })}.${payload}.${sig}`, find)).to.throw(JwtError, /unknown key/);
    expect(() => verifyJwt('not.a-jwt', find)).to.throw(JwtError);
    expect(() => verifyJwt(`${crypto.randomBytes(4).toString('hex')}.x.y`, find)).to.throw(JwtError, /malformed/);
  });

  it('a token verified once is not verified again while its key stays, and fails once the key is gone', async function () {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const key = signingKey('k-once', 'ES256', privateKey, publicKey);
    const keys = new Map([[key.kid, key]]);
    let lookups = 0;
    const find = (kid: string) => (lookups++, keys.get(kid));
    const token = signJwt(key, { sub: 'a' });
    expect(verifyJwtOnce(token, find).claims.sub).to.equal('a');
    // Remembered: the second check only asks whether the key is still there.
    lookups = 0;
    expect(verifyJwtOnce(token, find).claims.sub).to.equal('a');
    expect(lookups).to.equal(1);
    // A key removed from the keyring: its tokens are verified again, and refused.
    keys.delete(key.kid);
    expect(() => verifyJwtOnce(token, find)).to.throw(JwtError, /unknown key/);
    // Another key under the same kid does not inherit what the first one verified.
    const other = await generateKeyPair('ES256');
    keys.set(key.kid, signingKey('k-once', 'ES256', other.privateKey, other.publicKey));
    expect(() => verifyJwtOnce(token, find)).to.throw(JwtError, /signature/);
    // Nothing forged rides on a remembered token.
    const [h, , sig] = token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'b' })).toString('base64url')}.${sig}`;
    keys.set(key.kid, key);
    expect(() => verifyJwtOnce(forged, find)).to.throw(JwtError, /signature/);
  });
});
