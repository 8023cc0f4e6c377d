// What a client may be granted: the audiences and scopes of its allow-lists
// (Client.audience, Client.scope). A client without a list may ask for any value,
// as the spec's audience rule has it; one with a list gets nothing beyond it, so
// policies that test `scope` and services that check `aud` can rely on them.
import type { Client } from '../types.js';
import { OAuthError } from '../credentials/errors.js';
import { scopesOf } from '../credentials/scopes.js';

/** The scope to grant (space-separated), or null; invalid_scope beyond the client's list. */
export function grantedScope(client: Client, requested: string[] | null): string | null {
  if (requested === null) return null;
  const beyond = client.scope ? requested.filter((s) => !client.scope!.includes(s)) : [];
  if (beyond.length) {
    throw new OAuthError(
      'invalid_scope',
      `client "${client.id}" may not be granted ${beyond.map((s) => `"${s}"`).join(', ')} (see its scope list)`,
    );
  }
  return requested.join(' ');
}

/** The audience to grant, or null; invalid_target (RFC 8707) beyond the client's list. */
export function grantedAudience(client: Client, requested: string | null): string | null {
  if (requested === null) return null;
  if (client.audience && !client.audience.includes(requested)) {
    throw new OAuthError('invalid_target', `client "${client.id}" may not ask for audience "${requested}" (see its audience list)`);
  }
  return requested;
}

/**
 * The scope of a refreshed token: the holder's, or narrower when the request
 * names one (RFC 6749 §6: never wider), and still within the client's list in
 * case it was shortened since.
 */
export function refreshedScope(client: Client, held: string | null, requested: string[] | null): string | null {
  const current = scopesOf(held);
  if (requested) {
    const wider = requested.filter((s) => !current.includes(s));
    if (wider.length)
      throw new OAuthError(
        'invalid_scope',
        `a refresh may narrow the scope, not widen it: ${wider.map((s) => `"${s}"`).join(', ')} was not granted`,
      );
  }
  return grantedScope(client, requested ?? (current.length ? current : null));
}
