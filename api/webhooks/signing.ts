// Signing per the Standard Webhooks specification (github.com/standard-webhooks, spec/standard-webhooks.md):
// - "The content to be signed is therefore: `{msg_id}.{timestamp}.{payload}`", with HMAC-SHA256
//   under the secret's bytes, sent as "v1, followed by a comma (`,`), followed by the base64 encoded
//   signature" in the `webhook-signature` header, beside `webhook-id` and `webhook-timestamp`
//   ("integer unix timestamp (seconds since epoch)").
// - The secret: "Random. At least 24 bytes (192 bits, 512 maximum)", "base64 encoded, prefixed with
//   `whsec_`".
// The secret is sent on by no one (the receiver holds its own copy), but the box must sign with it,
// so it cannot be hashed: it is sealed under the box's factor key (api/credentials/sealing.ts).
import { createHmac } from 'node:crypto';
import { seal, unseal } from '../credentials/sealing.js';

const PREFIX = 'whsec_';
const MIN_BYTES = 24;
const MAX_BYTES = 64;

/** Why `secret` is no Standard Webhooks signing secret, in words that never repeat it; undefined when it is one. */
export function secretProblem(secret: string): string | undefined {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : undefined;
  if (encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    return `must be "${PREFIX}" followed by the base64 of ${MIN_BYTES} to ${MAX_BYTES} random bytes (e.g. "${PREFIX}$(openssl rand -base64 32)")`;
  }
  const bytes = Buffer.from(encoded, 'base64').length;
  if (bytes < MIN_BYTES || bytes > MAX_BYTES) return `must hold ${MIN_BYTES} to ${MAX_BYTES} bytes once decoded (it holds ${bytes})`;
  return undefined;
}

const purpose = (webhook: string): string => `webhook:${webhook}`;

export function sealWebhookSecret(key: Buffer, webhook: string, secret: string): Buffer {
  return seal(key, purpose(webhook), Buffer.from(secret, 'utf8'));
}

/** The Webhook's signing secret, or undefined when it has none. */
export function webhookSecret(key: Buffer, webhook: string, sealed: Buffer | null): string | undefined {
  return sealed === null ? undefined : unseal(key, purpose(webhook), sealed).toString('utf8');
}

/** The Standard Webhooks headers of one attempt to send `body` as message `id` at `now`. */
export function signedHeaders(secret: string, id: string, body: string, now: Date): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

const hookPurpose = (hook: string): string => `hook:${hook}`;

/** A Hook's signing secret sealed (api/hooks/): under a purpose of its own, so that a Webhook's sealed value is no Hook's. */
export function sealHookSecret(key: Buffer, hook: string, secret: string): Buffer {
  return seal(key, hookPurpose(hook), Buffer.from(secret, 'utf8'));
}

/** The Hook's signing secret, or undefined when it has none. */
export function hookSecret(key: Buffer, hook: string, sealed: Buffer | null): string | undefined {
  return sealed === null ? undefined : unseal(key, hookPurpose(hook), sealed).toString('utf8');
}
