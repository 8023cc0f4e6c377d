// TOTP codes as an authenticator app computes them (RFC 6238 over RFC 4226's HOTP), written
// here with node:crypto alone: a second implementation, so a test of the box's TOTP does not
// check otpauth against itself. And an app set up on the account page, as a person does it.
import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { hiddenFields, type FormAgent } from './form-agent.js';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, as an app reads the key a person types. */
export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of text.replace(/=+$/, '').toUpperCase()) {
    const v = BASE32.indexOf(c);
    if (v < 0) throw new Error(`not base32: ${c}`);
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The six-digit code of time step `step` (RFC 4226 §5.3 dynamic truncation). */
export function totpCode(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const h = createHmac('sha1', secret).update(counter).digest();
  const o = h[h.length - 1]! & 0xf;
  const n = (((h[o]! & 0x7f) << 24) | (h[o + 1]! << 16) | (h[o + 2]! << 8) | h[o + 3]!) % 1_000_000;
  return String(n).padStart(6, '0');
}

/** The time step of `ms` (30 seconds). */
export const stepAt = (ms: number): number => Math.floor(ms / 30_000);

/**
 * Sets up an authenticator app on the account page of `browser`, signed in already (its session is
 * strengthened with the app): the app's key, and the time step of the code that confirmed it (a
 * code is taken once: the next one to give is of `step + 1`).
 */
export async function appOnAccountPage(browser: FormAgent): Promise<{ secret: Buffer; step: number }> {
  const account = await browser.get('/auth/account');
  const setup = await browser.post('/auth/account/totp', hiddenFields(account.text));
  expect(setup.status, setup.text).to.equal(200);
  const secret = base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!);
  const step = stepAt(Date.now());
  const confirmed = await browser.post('/auth/account/totp/confirm', { ...hiddenFields(setup.text), code: totpCode(secret, step) });
  expect(confirmed.status, confirmed.text).to.equal(200);
  return { secret, step };
}
