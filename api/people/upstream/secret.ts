// A provider's client secret or bind password is sent on, so it cannot be hashed: it is sealed
// under the box's factor key (api/credentials/sealing.ts), bound to the provider it is for.
import { seal, unseal } from '../../credentials/sealing.js';

const purpose = (provider: string): string => `identity-provider:${provider}`;

export function sealProviderSecret(key: Buffer, provider: string, secret: string): Buffer {
  return seal(key, purpose(provider), Buffer.from(secret, 'utf8'));
}

/** The provider's secret, or undefined when it has none. */
export function providerSecret(key: Buffer, provider: string, sealed: Buffer | null): string | undefined {
  return sealed === null ? undefined : unseal(key, purpose(provider), sealed).toString('utf8');
}
