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

/** What to tell the author of a reference to a key the Secret does not have: the keys it has instead. */
export function missingKeyMessage(secret: SecretObject, key: string): string {
  const keys = Object.keys(secret.data ?? {});
  return `Secret ${secret.metadata.namespace}/${secret.metadata.name} has no key "${key}"${keys.length ? ` (it has: ${keys.join(', ')})` : ''}`;
}
