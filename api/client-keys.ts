// What a Client's own keys may be (private_key_jwt: OpenID Connect Core §9, RFC 7523 §2.2; the
// metadata names jwks and jwks_uri are RFC 7591 §2's). One set of rules, judged where a Client is
// written (api/schema/resources.ts: REST, the operator, the CLI) and again on each JWK Set fetched
// from a jwks_uri (api/oauth/client-assertion.ts), since its owner may change it at any time.
import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto';
import { addressProblem, literalAddress } from './outbound.js';

/**
 * The signing algorithms a client assertion may use, and the key each needs. RS256 is refused
 * (PKCS#1 v1.5: PS256 signs with the same RSA keys without its weaknesses), HS* are refused (a
 * client's keys here are public: a MAC "signed" with one proves nothing), none is no signature.
 */
export const CLIENT_ASSERTION_ALGS = ['ES256', 'PS256', 'EdDSA'] as const;
export type ClientAssertionAlg = (typeof CLIENT_ASSERTION_ALGS)[number];

/** The least RSA modulus a client's key may have (NIST SP 800-131A; RFC 7518 §3.3: "2048 bits or larger"). */
export const MIN_RSA_BITS = 2048;
/** The largest: a verification's cost grows with the modulus, and a client's key must not make each of its assertions a burden. */
export const MAX_RSA_BITS = 8192;
/**
 * The RSA public exponents a client's key may have: odd, above 2^16 (NIST SP 800-56B Rev. 2 §6.2.1:
 * 2^16 < e < 2^256) and below 2^32, as every key generator's 65537 is. A verification's cost grows
 * with the exponent's size: one of 2^255 would make each assertion of the client cost the box ~15
 * times what 65537's does, and an assertion anyone sends is verified before it is known to be good.
 */
const MIN_RSA_EXPONENT = 2n ** 16n;
const MAX_RSA_EXPONENT = 2n ** 32n;

/** JWK members that hold private or symmetric key material (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

/** Why `jwk` cannot verify `alg` (its type, curve or size); undefined: it can. */
export function keyAlgProblem(alg: string, key: KeyObject): string | undefined {
  const type = key.asymmetricKeyType;
  switch (alg) {
    case 'ES256':
      return type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? undefined : 'ES256 needs an EC P-256 key';
    case 'PS256':
      if (type !== 'rsa') return 'PS256 needs an RSA key';
      return rsaProblem(key);
    case 'EdDSA':
      return type === 'ed25519' ? undefined : 'EdDSA needs an Ed25519 key';
    default:
      return `the algorithm ${alg} is not accepted (${CLIENT_ASSERTION_ALGS.join(', ')} are)`;
  }
}

/** Why an RSA key is too weak, or too costly to verify with; undefined: it is neither. */
function rsaProblem(key: KeyObject): string | undefined {
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) return `the RSA key is shorter than ${MIN_RSA_BITS} bits`;
  if (bits > MAX_RSA_BITS) return `the RSA key is longer than ${MAX_RSA_BITS} bits`;
  const e = key.asymmetricKeyDetails?.publicExponent ?? 0n;
  if (e <= MIN_RSA_EXPONENT || e >= MAX_RSA_EXPONENT || e % 2n === 0n)
    return 'the RSA public exponent (e) must be odd, above 2^16 and below 2^32: 65537 (AQAB), as key generators make it';
  return undefined;
}

/** Why one JWK of a client's set cannot be held (private, symmetric, of a kind or size no accepted alg takes); undefined: it can. */
function keyProblem(jwk: Record<string, unknown>): string | undefined {
  const privateMembers = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (jwk.kty === 'oct') return 'is a symmetric key (kty "oct"): register public keys only';
  if (privateMembers.length)
    return `holds private key material (${privateMembers.join(', ')}): register the public key only, and treat this one as disclosed`;
  if (jwk.use !== undefined && jwk.use !== 'sig') return 'has use other than "sig"';
  let key: KeyObject;
  try {
    key = crypto.createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return 'is not a public key Node.js can read (kty EC, RSA or OKP with its members)';
  }
  if (typeof jwk.alg === 'string') {
    const problem = keyAlgProblem(jwk.alg, key);
    return problem && `alg ${jwk.alg}: ${problem}`;
  }
  if (key.asymmetricKeyType === 'rsa') return keyAlgProblem('PS256', key);
  return CLIENT_ASSERTION_ALGS.some((alg) => !keyAlgProblem(alg, key))
    ? undefined
    : 'fits none of ES256 (EC P-256), PS256 (RSA), EdDSA (Ed25519)';
}

/** Why a client's JWK Set cannot be held, one problem a line; empty: it can. */
export function jwkSetProblems(jwks: unknown): string[] {
  const keys = (jwks as { keys?: unknown } | undefined)?.keys;
  if (!Array.isArray(keys) || !keys.length) return ['must be a JWK Set: {"keys": [...]} with at least one key'];
  const problems: string[] = [];
  const kids = new Set<string>();
  keys.forEach((jwk: unknown, i) => {
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return void problems.push(`keys[${i}] is not a JWK`);
    const key = jwk as Record<string, unknown>;
    const problem = keyProblem(key);
    if (problem) problems.push(`keys[${i}]${typeof key.kid === 'string' ? ` (kid ${key.kid})` : ''} ${problem}`);
    // OpenID Connect Core §10.1: "If there are multiple keys in the referenced JWK Set document, a kid value MUST be provided".
    if (keys.length > 1 && typeof key.kid !== 'string') problems.push(`keys[${i}] has no kid: with more than one key, each needs one`);
    if (typeof key.kid === 'string') {
      if (kids.has(key.kid)) problems.push(`keys[${i}]: kid ${key.kid} is used twice`);
      kids.add(key.kid);
    }
  });
  return problems;
}

/**
 * Why `uri` cannot be a client's jwks_uri, judged without resolving it: https only, and not a
 * literal special-use address (loopback, link-local, private: RFC 6890). A name is judged at each
 * fetch, in the lookup the connection uses (api/document-fetch.ts).
 */
export function jwksUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:') return 'must be an https URL';
  if (url.username || url.password) return 'must not carry credentials';
  const literal = literalAddress(url);
  // No allowance here: a record outlives the settings of the box that took it. A name works where a box allows it.
  const problem = literal && addressProblem(literal, { allowed: [] }, new Set());
  return problem ? `must not name a special-use address: ${problem}` : undefined;
}

/** The write-time problems of a Client's keys, by field. */
export function clientKeysProblems(client: { jwks?: unknown; jwks_uri?: string }): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (client.jwks !== undefined) {
    const problems = jwkSetProblems(client.jwks);
    if (problems.length) out.jwks = problems;
  }
  if (client.jwks_uri !== undefined) {
    const problem = jwksUriProblem(client.jwks_uri);
    if (problem) out.jwks_uri = [problem];
  }
  return out;
}

/** Whether a client has keys of its own to authenticate with (private_key_jwt). */
export const hasClientKeys = (client: { jwks?: unknown; jwks_uri?: string }): boolean =>
  client.jwks !== undefined || client.jwks_uri !== undefined;

/** RFC 7591 §2's token_endpoint_auth_methods of a client that authenticates with its secret (HTTP Basic, or in the body). */
export const SECRET_METHODS = ['client_secret_basic', 'client_secret_post'] as const;

/** The token_endpoint_auth_methods of a client that holds a credential of its own: keys (private_key_jwt) or a certificate (RFC 8705 §2). */
export const CREDENTIAL_METHODS = ['private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth'] as const;

export const isSecretMethod = (method: string | undefined): method is (typeof SECRET_METHODS)[number] =>
  (SECRET_METHODS as readonly (string | undefined)[]).includes(method);

export const isCredentialMethod = (method: string | undefined): method is (typeof CREDENTIAL_METHODS)[number] =>
  (CREDENTIAL_METHODS as readonly (string | undefined)[]).includes(method);

/**
 * Whether a client holds a credential of its own besides a secret: keys (private_key_jwt) or a
 * certificate (token_endpoint_auth_method: RFC 8705's tls_client_auth, self_signed_tls_client_auth).
 * Such a client needs no secret. One that declares a secret method (its keys then sign only its
 * request objects) or none (a public client) holds none that authenticates it.
 */
export const hasOwnCredential = (client: { jwks?: unknown; jwks_uri?: string; token_endpoint_auth_method?: string }): boolean => {
  const method = client.token_endpoint_auth_method;
  if (method === 'none' || isSecretMethod(method)) return false;
  return hasClientKeys(client) || isCredentialMethod(method);
};
