// A DPoP proof (RFC 9449 §4) checked against the request it came with: a pure function
// of the proof, the request and the time. What needs the box (the replay cache, the
// nonces) is ./check.ts's. Signatures are checked with node:crypto; the public key a
// proof header carries is parsed once and kept (a client sends the same header with
// every proof), so a proof costs about one signature check.
import crypto, { type KeyObject, type JsonWebKey } from 'node:crypto';
import { thumbprint } from '../jwt.js';

/**
 * The algorithms proofs may be signed with: asymmetric only. "The alg JOSE Header
 * Parameter indicates a registered asymmetric digital signature algorithm, is not none,
 * is supported by the application, and is acceptable per local policy" (§4.3).
 */
export const DPOP_ALGS = ['ES256', 'ES384', 'ES512', 'PS256', 'RS256', 'EdDSA'] as const;
export type DpopAlg = (typeof DPOP_ALGS)[number];

/**
 * How far a proof's iat may be from the box's clock: "within an acceptable window" (§4.3
 * step 11; §11.1 leaves the width to the server). Past it a proof is stale; and a proof
 * stops mattering to the replay cache once it would be stale anyway.
 */
export const PROOF_MAX_AGE_SECONDS = 60;
export const PROOF_MAX_AHEAD_SECONDS = 60;

/** Larger than any proof with an RSA key of 8192 bits; a longer header is not read. */
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

/** What the proof must match: the request as the server received it. */
export interface ProofRequest {
  /** The HTTP method, upper case. */
  method: string;
  /** The request's URI as its client addressed it; query and fragment are ignored. */
  url: string;
  /** At a resource: the access token presented with the proof (its hash is `ath`). */
  accessToken?: string;
  /** Milliseconds since the epoch. */
  now: number;
}

export interface VerifiedProof {
  /** RFC 7638 thumbprint of the proof's key: what a token is bound to (cnf.jkt). */
  jkt: string;
  jti: string;
  iat: number;
  nonce: string | undefined;
}

export type ProofVerdict = VerifiedProof | { problem: string };

interface ProofKey {
  alg: DpopAlg;
  key: KeyObject;
  jkt: string;
}

/** Proof headers seen, with their parsed key (bounded; the oldest goes first). */
const keys = new Map<string, ProofKey | { problem: string }>();
const MAX_KEYS = 10_000;

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** The key a proof header names, and the algorithm it signs with; or why not. */
function keyOf(encodedHeader: string): ProofKey | { problem: string } {
  const known = keys.get(encodedHeader);
  if (known) return known;
  const found = readHeader(encodedHeader);
  if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
  keys.set(encodedHeader, found);
  return found;
}

function readHeader(encodedHeader: string): ProofKey | { problem: string } {
  let header: { typ?: unknown; alg?: unknown; jwk?: unknown };
  try {
    header = JSON.parse(Buffer.from(encodedHeader, 'base64url').toString('utf8')) as typeof header;
  } catch {
    return { problem: 'the DPoP proof is not a JWT (its header is not JSON)' };
  }
  if (typeof header !== 'object' || header === null) return { problem: 'the DPoP proof header is not a JSON object' };
  // "The typ JOSE Header Parameter has the value dpop+jwt" (§4.3 step 4).
  if (header.typ !== 'dpop+jwt') return { problem: 'the DPoP proof must have typ "dpop+jwt"' };
  const alg = header.alg;
  if (typeof alg !== 'string' || !(DPOP_ALGS as readonly string[]).includes(alg)) {
    return { problem: `the DPoP proof's alg must be one of ${DPOP_ALGS.join(', ')}` };
  }
  const jwk = header.jwk as Record<string, unknown> | undefined;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return { problem: 'the DPoP proof header has no jwk' };
  // "The jwk JOSE Header Parameter does not contain a private key" (§4.3 step 7).
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) return { problem: "the DPoP proof's jwk must be a public key" };
  let key: KeyObject;
  try {
    key = crypto.createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return { problem: "the DPoP proof's jwk is not a usable public key" };
  }
  if (!keyFits(alg as DpopAlg, key)) return { problem: `the DPoP proof's jwk is not a key for ${alg}` };
  return { alg: alg as DpopAlg, key, jkt: thumbprint(jwk) };
}

const CURVES: Partial<Record<DpopAlg, string>> = { ES256: 'prime256v1', ES384: 'secp384r1', ES512: 'secp521r1' };

/** Whether `key` is one `alg` signs with (never a symmetric one: createPublicKey makes none). */
function keyFits(alg: DpopAlg, key: KeyObject): boolean {
  const details = key.asymmetricKeyDetails;
  if (alg.startsWith('ES')) return key.asymmetricKeyType === 'ec' && details?.namedCurve === CURVES[alg];
  if (alg === 'EdDSA') return key.asymmetricKeyType === 'ed25519' || key.asymmetricKeyType === 'ed448';
  return key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) >= 2048;
}

/** Whether `signature` is `k.key`'s signature of `data` under `k.alg` (JWS, RFC 7518 §3); client assertions verify with it too. */
export function signatureVerifies(k: { alg: DpopAlg; key: KeyObject }, data: Buffer, signature: Buffer): boolean {
  try {
    switch (k.alg) {
      case 'ES256':
        return crypto.verify('sha256', data, { key: k.key, dsaEncoding: 'ieee-p1363' }, signature);
      case 'ES384':
        return crypto.verify('sha384', data, { key: k.key, dsaEncoding: 'ieee-p1363' }, signature);
      case 'ES512':
        return crypto.verify('sha512', data, { key: k.key, dsaEncoding: 'ieee-p1363' }, signature);
      case 'RS256':
        return crypto.verify('sha256', data, k.key, signature);
      case 'PS256':
        return crypto.verify(
          'sha256',
          data,
          { key: k.key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: crypto.constants.RSA_PSS_SALTLEN_DIGEST },
          signature,
        );
      case 'EdDSA':
        return crypto.verify(null, data, k.key, signature);
    }
  } catch {
    return false; // a signature of the wrong length, say
  }
}

/**
 * A URI as htu compares it: origin and path, without query and fragment, after the
 * normalization of the WHATWG URL parser ("Servers SHOULD employ Syntax-Based
 * Normalization and Scheme-Based Normalization before comparing the htu claim", §4.3):
 * scheme and host lower case, a default port dropped, percent-encodings upper case.
 */
export function htuOf(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return `${url.origin}${url.pathname}`;
}

/** Whether `s` can be a key's JWK SHA-256 thumbprint (RFC 7638) as `dpop_jkt` names one (§10): 43 base64url characters. */
export const isThumbprint = (s: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(s);

/** base64url(SHA-256(token)): a proof's `ath` for that access token (§4.2). */
export const accessTokenHash = (token: string): string => crypto.createHash('sha256').update(token).digest('base64url');

/** The proofs a request carries: "There is not more than one DPoP HTTP request header field" (§4.3 step 1). */
export function singleProof(proofs: readonly string[] | undefined): string | { problem: string } | undefined {
  if (!proofs || proofs.length === 0) return undefined;
  if (proofs.length > 1) return { problem: 'send one DPoP header, not several' };
  return proofs[0]!;
}

/** Checks one proof (§4.3, steps 2 to 9, 11 and 12's ath; the nonce and replay are ./check.ts's). */
export function verifyProof(proof: string, request: ProofRequest): ProofVerdict {
  // "The DPoP HTTP request header field value is a single and well-formed JWT" (step 2).
  if (proof.length > MAX_PROOF_LENGTH) return { problem: 'the DPoP proof is too long' };
  const firstDot = proof.indexOf('.');
  const lastDot = proof.lastIndexOf('.');
  if (firstDot <= 0 || lastDot === firstDot || proof.indexOf('.', firstDot + 1) !== lastDot) {
    return { problem: 'the DPoP proof is not a compact JWS (header.payload.signature)' };
  }
  const key = keyOf(proof.slice(0, firstDot));
  if ('problem' in key) return key;
  // "The JWT signature verifies with the public key contained in the jwk JOSE Header Parameter" (step 6).
  const signature = Buffer.from(proof.slice(lastDot + 1), 'base64url');
  if (!signatureVerifies(key, Buffer.from(proof.slice(0, lastDot), 'latin1'), signature)) {
    return { problem: "the DPoP proof's signature does not verify with its jwk" };
  }
  let claims: Record<string, unknown>;
  try {
    claims = JSON.parse(Buffer.from(proof.slice(firstDot + 1, lastDot), 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return { problem: "the DPoP proof's payload is not JSON" };
  }
  if (typeof claims !== 'object' || claims === null) return { problem: "the DPoP proof's payload is not a JSON object" };
  // "All required claims per Section 4.2 are contained in the JWT" (step 3).
  const { jti, htm, htu, iat, ath, nonce } = claims;
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
    return { problem: `the DPoP proof needs a jti (a string of 1 to ${MAX_JTI_LENGTH} characters)` };
  }
  if (typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number' || !Number.isFinite(iat)) {
    return { problem: 'the DPoP proof needs htm, htu and iat' };
  }
  if (nonce !== undefined && typeof nonce !== 'string') return { problem: "the DPoP proof's nonce must be a string" };
  // "The htm claim matches the HTTP method of the current request" (step 8).
  if (htm !== request.method) return { problem: `the DPoP proof is for ${htm} requests, not ${request.method}` };
  // "The htu claim matches the HTTP URI value for the HTTP request in which the JWT was
  // received, ignoring any query and fragment parts" (step 9).
  const expected = htuOf(request.url);
  if (expected === undefined || htuOf(htu) !== expected) return { problem: `the DPoP proof is for another URI (htu), not ${expected}` };
  // "The creation time of the JWT ... is within an acceptable window" (step 11).
  const age = request.now / 1000 - iat;
  if (age > PROOF_MAX_AGE_SECONDS) return { problem: `the DPoP proof is stale: its iat is more than ${PROOF_MAX_AGE_SECONDS} s old` };
  if (-age > PROOF_MAX_AHEAD_SECONDS) return { problem: `the DPoP proof's iat is more than ${PROOF_MAX_AHEAD_SECONDS} s ahead` };
  // "ensure that the value of the ath claim equals the hash of that access token" (step 12).
  if (request.accessToken !== undefined && ath !== accessTokenHash(request.accessToken)) {
    return { problem: "the DPoP proof's ath is not the hash of the access token presented" };
  }
  return { jkt: key.jkt, jti, iat, nonce };
}
