// Secrets as the API server returns them: every value base64-encoded under
// `data` (`stringData` is for writing only). Read through here, so every
// reader decodes them the same way.
import type { KObject } from './kube.js';

export type SecretObject = KObject & { type?: string; data?: Record<string, string> };

/** The value under `key`, decoded; undefined when the Secret (or the key) is not there. */
export function secretValue(secret: SecretObject | undefined, key: string): string | undefined {
  const raw = secret?.data?.[key];
  return raw === undefined ? undefined : Buffer.from(raw, 'base64').toString('utf8');
}

/** Every value, decoded. */
export function secretData(secret: SecretObject): Record<string, string> {
  return Object.fromEntries(Object.keys(secret.data ?? {}).map((key) => [key, secretValue(secret, key)!]));
}
