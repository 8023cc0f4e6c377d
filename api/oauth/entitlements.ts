// What a client may be granted: the audiences and scopes of its allow-lists
// (Client.audience, Client.scope). A client without a list may ask for any value,
// as the spec's audience rule has it; one with a list gets nothing beyond it, so
// policies that test `scope` and services that check `aud` can rely on them. A `resource`
// (RFC 8707) is held to more: it must be a registered resource (registeredResource).
import type { Config } from '../config.js';
import type { App, Client } from '../types.js';
import { OAuthError } from '../credentials/errors.js';
import { scopesOf } from '../credentials/scopes.js';
import { audienceParam, resourceParam, type Params } from './params.js';

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

/**
 * The resources a client may name (RFC 8707), looked up where the box keeps them: the Apps it
 * guards, by audience (api/decision/apps.ts AppDirectory, which the process's services hold), so
 * that an App whose audience is not its own (another App's too, or the box's) names no resource.
 */
export interface RegisteredResources {
  byAudience(audience: string): Promise<App | undefined>;
}

/** What checking a `resource` needs: the Apps of the box, and the box's own address (its API's audience). */
export interface ResourceServices {
  apps: RegisteredResources;
  config: Pick<Config, 'baseUrl'>;
}

/**
 * `resource` (RFC 8707 §2), when it is a registered resource this client may ask for: an entry of
 * the client's `audience` list, which holds a client that has one; without a list, an App's
 * audience or the box's own (its API). Anything else is invalid_target (§2.1: "If the
 * authorization server fails to parse the provided value(s) or does not consider the
 * resource(s) acceptable, it should reject the request with an error response using the error
 * code invalid_target"): a client asks for a token for a service the box knows, never for any
 * URI it makes up, so an `aud` always names a service the box's Apps or the admin vouched for.
 */
export async function registeredResource(svc: ResourceServices, client: Client, resource: string): Promise<string> {
  if (client.audience) {
    if (client.audience.includes(resource)) return resource;
    throw new OAuthError('invalid_target', `client "${client.id}" may not ask for resource "${resource}" (see its audience list)`);
  }
  if (resource === svc.config.baseUrl || (await svc.apps.byAudience(resource))) return resource;
  throw new OAuthError(
    'invalid_target',
    `resource "${resource}" is not a registered resource: name an App's audience (App.audience, else its first url), ` +
      `or list it in client "${client.id}"'s audience`,
  );
}

/**
 * The audience a token request asks for: `audience` (RFC 8693 §2.1, a name or a URI, held only to
 * the client's list) or `resource` (RFC 8707, a registered resource), one target either way; both
 * naming different ones is invalid_target, both naming one is a `resource`, held to its rule.
 */
export async function requestedAudience(svc: ResourceServices, client: Client, params: Params): Promise<string | null> {
  const audience = audienceParam(params.audience);
  const resource = resourceParam(params.resource);
  if (audience && resource && audience !== resource) {
    throw new OAuthError('invalid_target', 'name one target: audience or resource, not two different ones');
  }
  if (resource) return registeredResource(svc, client, resource);
  return grantedAudience(client, audience);
}

/**
 * The audience of a token issued from a grant that remembers what was granted (an authorization
 * code, a device code, a refresh token's session): `granted`, or the one the token request names
 * among it. RFC 8707 §2.2: "In the case of a refresh_token or authorization_code grant type
 * request, such policy may limit the acceptable resources to those that were originally granted
 * by the resource owner or a subset thereof." A grant holds one audience (a session keeps one),
 * so a `resource` is either that one or invalid_target: a token request never reaches a resource
 * the person was not asked about, and a refresh narrows to what it holds, never wider.
 */
export function grantedResource(granted: string | null, requested: string | undefined, grant: string): string | null {
  const resource = resourceParam(requested);
  if (resource === null || resource === granted) return granted;
  throw new OAuthError(
    'invalid_target',
    granted === null
      ? `resource "${resource}" was not granted: the ${grant} was granted for no resource (ask for it in the authorization request)`
      : `resource "${resource}" was not granted: the ${grant} was granted for "${granted}" only`,
  );
}
