// A sign-in code by email (api/people/ways/email-code.ts): six digits, good for ten minutes, once.
// Made when its mail is sent (api/mail/kinds.ts `sign-in-code`), so that the outbox row holds no
// secret, as a reset's link is; checked when it is typed. Both sides are here, below the mail and
// the ways alike. Only its HMAC-SHA-256 under the box's factor key is stored (./sealing.ts keeps
// that key's other use): a million codes are tried against a plain hash in a blink, against this
// one not without the key, which the database does not hold. The factor's id is in what is hashed:
// a code's hash means nothing on another person's row.
import { createHmac, randomInt } from 'node:crypto';

/** How long a mailed code may be used. */
export const EMAIL_CODE_MINUTES = 10;

/** Six random digits. */
export const newEmailCode = (): string => String(randomInt(0, 1_000_000)).padStart(6, '0');

/** A code as a person types it (spaces and dashes dropped), or undefined when it cannot be one. */
export function emailCodeTyped(typed: string): string | undefined {
  const code = typed.replace(/[\s-]/g, '');
  return /^\d{6}$/.test(code) ? code : undefined;
}

/** What is stored of `code` mailed for factor `factorId`. */
export const emailCodeHash = (factorKey: Buffer, factorId: number, code: string): Buffer =>
  createHmac('sha256', factorKey).update(`email-code\0${factorId}\0${code}`).digest();

/** What is stored of `code` mailed to person `userId` as the first step of their sign-in (no factor row to name). */
export const firstStepCodeHash = (factorKey: Buffer, userId: number, code: string): Buffer =>
  createHmac('sha256', factorKey).update(`first-step-code\0${userId}\0${code}`).digest();
