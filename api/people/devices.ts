// Device cookies (OWASP's "Slow Down Online Guessing Attacks with Device Cookies"): a browser that
// signed in as a person is handed a token naming that person, so that what it asks later on their
// behalf is counted apart from what strangers ask. "Email me a sign-in code" is the reason
// (./ways/email-first-step.ts): the limit of mails to an address protects the mailbox from
// strangers, and strangers must not spend it for its owner, whose own browser has a limit of its own.
//
// The token is `<user>.<expires>.<nonce>.<mac>`, an HMAC-SHA256 under the box's device key (the
// setting `device_key`, made at the first start): nothing is stored, so nothing of it is at rest,
// and only the box can make one. It names a person, not an address, and proves nothing but that
// the browser signed in as them once: it is never a way in.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** How long a browser is known after its last sign-in. */
export const DEVICE_DAYS = 180;

const mac = (key: Buffer, body: string): Buffer => createHmac('sha256', key).update(`device:${body}`).digest();

/** A new device token for `userId`, and when it ends. */
export function deviceToken(key: Buffer, userId: number, now = Date.now()): { token: string; expiresAt: Date } {
  const expires = Math.floor(now / 1000) + DEVICE_DAYS * 86_400;
  const body = `${userId}.${expires}.${randomBytes(16).toString('base64url')}`;
  return { token: `${body}.${mac(key, body).toString('base64url')}`, expiresAt: new Date(expires * 1000) };
}

/** The device (its nonce, the key its asks are counted under) when `token` is a good, unexpired one for `userId`. */
export function knownDevice(key: Buffer, token: string | undefined, userId: number, now = Date.now()): string | undefined {
  const parts = /^(\d{1,15})\.(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '');
  if (!parts || Number(parts[1]) !== userId || Number(parts[2]) * 1000 <= now) return undefined;
  const given = Buffer.from(parts[4]!, 'base64url');
  const expected = mac(key, `${parts[1]}.${parts[2]}.${parts[3]}`);
  return given.length === expected.length && timingSafeEqual(given, expected) ? parts[3] : undefined;
}
