// Compact JWS signing and verification with node:crypto. The algorithm comes
// from the key, never from the token: a token's `alg` must equal its key's, so
// `none` and algorithm-confusion tokens fail before any signature check.
import crypto, { type KeyObject, type JsonWebKey } from 'node:crypto';
import { promisify } from 'node:util';
import type { JwtAlg } from '../config.js';

export interface SigningKey {
  kid: string;
  alg: JwtAlg;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** base64url of the protected headers, computed once per key: access tokens (RFC 9068 `at+jwt`), ID tokens (`JWT`), SETs (`secevent+jwt`), Txn-Tokens (`txntoken+jwt`). */
  headers: Record<JwtType, string>;
}

/**
 * The `typ` of the box's JWTs. An access token and an ID token are told apart by
 * it, so that an ID token is never taken for an access token (RFC 9068 §4); a
 * logout token is `logout+jwt` (OpenID Connect Back-Channel Logout 1.0 §2.4: "the
 * explicit type logout+jwt"), and a Security Event Token `secevent+jwt` (RFC 8417 §2.3), so that
 * each is taken for none of the others. A Transaction Token is `txntoken+jwt`
 * (draft-ietf-oauth-transaction-tokens-10 §9.1: "The `typ` Header Parameter MUST be present and
 * MUST have the value `txntoken+jwt`"), so that it too is taken for no access token.
 */
export type JwtType = 'at+jwt' | 'JWT' | 'logout+jwt' | 'secevent+jwt' | 'txntoken+jwt';

export const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

function signBytes(alg: JwtAlg, key: KeyObject, data: Buffer): Buffer {
  switch (alg) {
    case 'ES256':
      return crypto.sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
    case 'RS256':
      return crypto.sign('sha256', data, key);
    case 'EdDSA':
      return crypto.sign(null, data, key);
  }
}

function verifyBytes(alg: JwtAlg, key: KeyObject, data: Buffer, signature: Buffer): boolean {
  switch (alg) {
    case 'ES256':
      return crypto.verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
    case 'RS256':
      return crypto.verify('sha256', data, key, signature);
    case 'EdDSA':
      return crypto.verify(null, data, key, signature);
  }
}

const generate = promisify(crypto.generateKeyPair);

/**
 * A new key pair of `alg`, made on libuv's thread pool: an RSA key takes 100 ms and more of CPU
 * (a host prepares boxes while it serves others), and the event loop answers requests meanwhile.
 */
export async function generateKeyPair(alg: JwtAlg): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  switch (alg) {
    case 'ES256':
      return generate('ec', { namedCurve: 'P-256' });
    case 'RS256':
      return generate('rsa', { modulusLength: 2048 });
    case 'EdDSA':
      return generate('ed25519');
  }
}

/** The JWS algorithm a key can sign with. */
export function algOf(key: KeyObject): JwtAlg {
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048) return 'RS256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  throw new Error('unsupported signing key: use an EC P-256, RSA (2048 bits or more) or Ed25519 key');
}

/** RFC 7638 JWK thumbprint: the key id. */
export function thumbprint(jwk: JsonWebKey): string {
  const members =
    jwk.kty === 'EC'
      ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
      : jwk.kty === 'RSA'
        ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return crypto.createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

export function signingKey(kid: string, alg: JwtAlg, privateKey: KeyObject, publicKey: KeyObject): SigningKey {
  const header = (typ: JwtType): string => b64url(JSON.stringify({ alg, typ, kid }));
  return {
    kid,
    alg,
    privateKey,
    publicKey,
    headers: {
      'at+jwt': header('at+jwt'),
      JWT: header('JWT'),
      'logout+jwt': header('logout+jwt'),
      'secevent+jwt': header('secevent+jwt'),
      'txntoken+jwt': header('txntoken+jwt'),
    },
  };
}

export function signJwt(key: SigningKey, claims: Record<string, unknown>, typ: JwtType = 'at+jwt'): string {
  const input = `${key.headers[typ]}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${b64url(signBytes(key.alg, key.privateKey, Buffer.from(input)))}`;
}

export class JwtError extends Error {}

export function looksLikeJwt(token: string): boolean {
  return token.split('.').length === 3;
}

/** Verifies the signature and returns the header and claims; time claims are the caller's business. */
export function verifyJwt(
  token: string,
  findKey: (kid: string) => SigningKey | undefined,
): { header: { typ?: unknown }; claims: Record<string, unknown>; key: SigningKey } {
  const [h, p, s] = token.split('.');
  if (!h || !p || s === undefined) throw new JwtError('malformed JWT');
  let header: { alg?: unknown; kid?: unknown; typ?: unknown };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as typeof header;
    claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new JwtError('malformed JWT');
  }
  if (typeof header.kid !== 'string') throw new JwtError('JWT has no key id');
  const key = findKey(header.kid);
  if (!key) throw new JwtError('JWT signed by an unknown key');
  if (header.alg !== key.alg) throw new JwtError(`JWT algorithm ${String(header.alg)} is not the key's ${key.alg}`);
  if (!s) throw new JwtError('JWT is not signed');
  if (!verifyBytes(key.alg, key.publicKey, Buffer.from(`${h}.${p}`), Buffer.from(s, 'base64url'))) {
    throw new JwtError('JWT signature is invalid');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new JwtError('malformed JWT claims');
  return { header, claims, key };
}

const VERIFIED_MAX = 10_000;
const verified = new Map<string, ReturnType<typeof verifyJwt>>();

/**
 * verifyJwt, remembering the tokens it verified: a token is presented again and again (every
 * API call, every request at an app's gate), and its signature is the same each time, so it is
 * checked once. An entry holds only while its key is still the keyring's (a removed key's tokens
 * are verified again, and fail); expiry and the session are the caller's to check every time.
 * Bounded: the oldest entries go first.
 */
export function verifyJwtOnce(token: string, findKey: (kid: string) => SigningKey | undefined): ReturnType<typeof verifyJwt> {
  const known = verified.get(token);
  if (known && findKey(known.key.kid) === known.key) return known;
  const result = verifyJwt(token, findKey);
  // Shared by every caller that presents this token: nobody may change it.
  Object.freeze(result.claims);
  Object.freeze(result.header);
  if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
  verified.set(token, result);
  return result;
}
