// The checks of an OpenID provider's ID token (Core §3.1.3.7), each of which stands between an
// attacker and an account of the box: signed by a key the provider publishes, with an algorithm it
// says it signs with (never none, never an HMAC whose key is the client secret); from the issuer,
// for this client, current, and for this sign-in (the nonce sent with its authorization request).
import { jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { UpstreamError } from './profile.js';

/** How far the provider's clock may be from the box's, either way. */
export const CLOCK_SKEW_SECONDS = 60;

export interface IdTokenExpected {
  issuer: string;
  clientId: string;
  nonce: string;
  /** The provider's id_token_signing_alg_values_supported (absent: RS256, as Discovery §3 says). */
  algorithms: readonly string[] | undefined;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** The algorithms an ID token may be signed with: the provider's, less none and the HMACs. */
export function signingAlgorithms(advertised: readonly string[] | undefined): string[] {
  return (advertised ?? ['RS256']).filter((alg) => alg !== 'none' && !/^HS/i.test(alg));
}

/** The ID token's claims once every check holds; an 'invalid' UpstreamError saying which did not. */
export async function verifyIdToken(token: string, keys: JWTVerifyGetKey, expected: IdTokenExpected): Promise<JWTPayload> {
  const algorithms = signingAlgorithms(expected.algorithms);
  if (algorithms.length === 0) throw new UpstreamError('invalid', 'the provider signs ID tokens with no algorithm the box accepts');
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(token, keys, {
      algorithms,
      issuer: expected.issuer,
      audience: expected.clientId,
      currentDate: new Date(expected.now()),
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ['sub', 'exp', 'iat'],
    }));
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    const code = (err as { code?: unknown }).code;
    throw new UpstreamError('invalid', `ID token: ${typeof code === 'string' ? code : 'unreadable'}: ${(err as Error).message}`);
  }
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new UpstreamError('invalid', 'ID token: no sub');
  if (typeof claims.iat !== 'number' || claims.iat > expected.now() / 1000 + CLOCK_SKEW_SECONDS) {
    throw new UpstreamError('invalid', 'ID token: issued in the future');
  }
  // Core §3.1.3.7 (4, 5): with several audiences the token names who it was issued to; it must be us.
  const several = Array.isArray(claims.aud) && claims.aud.length > 1;
  if ((several || claims.azp !== undefined) && claims.azp !== expected.clientId) {
    throw new UpstreamError('invalid', 'ID token: issued to another client (azp)');
  }
  if (claims.nonce !== expected.nonce) throw new UpstreamError('invalid', 'ID token: not for this sign-in (nonce)');
  return claims;
}
