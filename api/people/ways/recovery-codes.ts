// Recovery codes (docs/guides/second-factors.md): ten one-time codes a person keeps on paper,
// a way back in when the phone or the passkey is lost. Each is 80 random bits, written in
// base32 without the letters people misread (no I, L, O, U: Crockford's alphabet), as
// xxxx-xxxx-xxxx-xxxx; the box keeps only their SHA-256 (enough for 80 random bits: nothing
// to guess from a hash of them).
import { randomBytes } from 'node:crypto';
import { tokenHash } from '../../credentials/tokens.js';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const RECOVERY_CODE_COUNT = 10;

/** One code: 16 characters of 5 bits (80 bits), in groups of four. */
function newCode(): string {
  const bytes = randomBytes(10);
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let chars = '';
  for (let i = 15; i >= 0; i--) chars += ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return chars.match(/.{4}/g)!.join('-');
}

/** Ten new codes, as the person is shown them once. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, newCode);
}

/**
 * A code as typed: case, spaces and dashes do not matter, and the look-alikes read as what
 * they look like (O as 0, I and L as 1). Anything else (empty, the wrong length, a letter not
 * of the alphabet) is undefined.
 */
export function normalize(input: string): string | undefined {
  const plain = input.toLowerCase().replace(/[\s-]/g, '').replace(/o/g, '0').replace(/[il]/g, '1');
  if (plain.length !== 16 || [...plain].some((c) => !ALPHABET.includes(c))) return undefined;
  return plain.match(/.{4}/g)!.join('-');
}

/** What the box stores of a code: the SHA-256 of its normal form. */
export function hashOf(code: string): Buffer {
  return tokenHash(normalize(code) ?? code);
}
