// PKCE (RFC 7636), S256 only: the plain method gives no protection against a
// stolen code and is refused.
import { createHash, timingSafeEqual } from 'node:crypto';

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

export const isChallenge = (s: string): boolean => CHALLENGE.test(s);

/** The S256 challenge of a verifier (what a client sends with its authorization request). */
export const s256Challenge = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');

export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(s256Challenge(verifier));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
