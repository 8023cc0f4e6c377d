// A person's TOTP (RFC 6238), as every authenticator app reads it: HMAC-SHA1, six digits, a
// 30-second step (docs/guides/second-factors.md). Pure, with the clock given: the secret is
// sealed and stored, and a step accepted, by the caller (api/store/factors.ts).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { HOTP, Secret, TOTP } from 'otpauth';

const PERIOD = 30;
const DIGITS = 6;
/** RFC 6238 §5.2: "We RECOMMEND that at most one time step is allowed as the network delay." */
const WINDOW = 1;

/** A new secret: 20 random bytes (RFC 4226 §4: "The length of the shared secret MUST be at least 128 bits ... RECOMMENDs ... 160 bits"). */
export function newTotpSecret(): Buffer {
  return randomBytes(20);
}

/** The secret as a person types it into an app: base32. */
export function secretText(secret: Buffer): string {
  return new Secret({ buffer: new Uint8Array(secret).buffer }).base32;
}

/** The `otpauth://totp/…` URI a QR code carries: issuer the box, label the person's email. */
export function totpUri(secret: Buffer, issuer: string, email: string): string {
  return new TOTP({
    issuer,
    label: email,
    secret: new Secret({ buffer: new Uint8Array(secret).buffer }),
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD,
  }).toString();
}

/** The time step of `now` (milliseconds). */
export function stepOf(now: number): number {
  return Math.floor(now / 1000 / PERIOD);
}

/**
 * The time step `code` is for, within one step either side of `now`, or undefined. A step at
 * or before `lastStep` (the last one accepted) is refused: a code used once is refused again,
 * and so is an older one. Every candidate is computed and compared in constant time.
 */
export function matchingStep(secret: Buffer, code: string, now: number, lastStep: number | null): number | undefined {
  const given = Buffer.from(code.replace(/\s/g, ''));
  if (!/^[0-9]{6}$/.test(given.toString())) return undefined;
  const key = new Secret({ buffer: new Uint8Array(secret).buffer });
  const current = stepOf(now);
  let found: number | undefined;
  for (let step = current - WINDOW; step <= current + WINDOW; step++) {
    const expected = Buffer.from(HOTP.generate({ secret: key, algorithm: 'SHA1', digits: DIGITS, counter: step }));
    if (timingSafeEqual(expected, given) && found === undefined) found = step;
  }
  return found !== undefined && (lastStep === null || found > lastStep) ? found : undefined;
}
