// One-time codes an app computes from a key it shares with the box, every kind of them in one
// place: HOTP (RFC 4226), moved on by a counter, and TOTP (RFC 6238), HOTP of a time step — as
// every authenticator app reads them: HMAC-SHA1, six digits (docs/guides/second-factors.md). A
// kind says what moves its codes on (api/factor-kinds.ts `AppCodesSpec.moving`). Pure, with the
// clock given: the secret is sealed and stored, and a step accepted, by the caller
// (./app-codes.ts, api/store/factors.ts).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { HOTP, Secret, TOTP } from 'otpauth';
import type { AppCodesSpec } from '../../factor-kinds.js';

/** What moves a kind's codes on: a time step of `period` seconds, or a counter tried `lookAhead` codes ahead. */
export type Moving = AppCodesSpec['moving'];

const DIGITS = 6;
/** RFC 6238 §5.2: "We RECOMMEND that at most one time step is allowed as the network delay." */
const WINDOW = 1;

const secretOf = (secret: Buffer): Secret => new Secret({ buffer: new Uint8Array(secret).buffer });

/** A new secret: 20 random bytes (RFC 4226 §4: "The length of the shared secret MUST be at least 128 bits ... RECOMMENDs ... 160 bits"). */
export function newSecret(): Buffer {
  return randomBytes(20);
}

/** The secret as a person types it into an app: base32. */
export function secretText(secret: Buffer): string {
  return secretOf(secret).base32;
}

/** The `otpauth://totp/…` or `otpauth://hotp/…` URI a QR code carries: issuer the box, label the person's email; a counter starts at 0. */
export function otpauthUri(moving: Moving, secret: Buffer, issuer: string, email: string): string {
  const common = { issuer, label: email, secret: secretOf(secret), algorithm: 'SHA1', digits: DIGITS };
  return ('period' in moving ? new TOTP({ ...common, period: moving.period }) : new HOTP({ ...common, counter: 0 })).toString();
}

/** The time step of `now` (milliseconds) for a step of `period` seconds. */
export function stepOf(now: number, period: number): number {
  return Math.floor(now / 1000 / period);
}

/**
 * The steps a code may be of: one time step either side of `now`'s, or the `lookAhead` counters
 * after the last one accepted (RFC 4226 §7.4: the look-ahead window a counter resynchronises in).
 */
function candidates(moving: Moving, now: number, lastStep: number | null): number[] {
  const first = 'period' in moving ? stepOf(now, moving.period) - WINDOW : (lastStep ?? -1) + 1;
  const count = 'period' in moving ? 2 * WINDOW + 1 : moving.lookAhead;
  return Array.from({ length: count }, (_, i) => first + i);
}

/**
 * The step (time step or counter) `code` is for, among those a code of `moving` may be of at
 * `now`, or undefined. A step at or before `lastStep` (the last one accepted) is refused: a code
 * used once is refused again, and so is an older one. Every candidate is computed and compared
 * in constant time.
 */
export function matchingStep(moving: Moving, secret: Buffer, code: string, now: number, lastStep: number | null): number | undefined {
  const given = Buffer.from(code.replace(/\s/g, ''));
  if (!/^[0-9]{6}$/.test(given.toString())) return undefined;
  const key = secretOf(secret);
  let found: number | undefined;
  for (const step of candidates(moving, now, lastStep)) {
    const expected = Buffer.from(HOTP.generate({ secret: key, algorithm: 'SHA1', digits: DIGITS, counter: step }));
    if (timingSafeEqual(expected, given) && found === undefined) found = step;
  }
  return found !== undefined && (lastStep === null || found > lastStep) ? found : undefined;
}
