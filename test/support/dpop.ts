// DPoP proofs (RFC 9449) made by hand, as a client or an attacker sends them:
// for the tests that need proofs a client library would not make (stale,
// replayed, for another URI) or in front of a real gateway.
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';

export interface DpopKey {
  privateKey: CryptoKey;
  jwk: JWK;
}

export const newKey = async (alg = 'ES256'): Promise<DpopKey> => {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, jwk: await exportJWK(publicKey) };
};

/** A proof's `ath` for `token` (§4.2): its base64url SHA-256. */
export const ath = (token: string): string => createHash('sha256').update(token).digest('base64url');

/** A proof of `key` for the request `claims` names; signed now unless `iat` says otherwise. */
export function proof(
  key: DpopKey,
  claims: { htm: string; htu: string; iat?: number; jti?: string; ath?: string; nonce?: string },
  alg = 'ES256',
): Promise<string> {
  const { iat, ...rest } = claims;
  return new SignJWT({ jti: randomUUID(), ...rest })
    .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk: key.jwk })
    .setIssuedAt(iat ?? Math.floor(Date.now() / 1000))
    .sign(key.privateKey);
}
