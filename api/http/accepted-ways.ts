// The ways of signing in a request accepts: its client's (Client.identityProviders) and, when it
// asks for an app's audience (RFC 8707 resource), that app's (App.signIn.identityProviders) —
// both must accept a way (api/credentials/sign-in.ts acceptedWays). The authorization endpoint, the
// sign-in page and the device page read them here.
import type { AppDirectory } from '../decision/apps.js';
import type { RecordCache } from '../cache/record-cache.js';
import { acceptedWays } from '../credentials/sign-in.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
export interface AcceptedWaysServices {
  clients: RecordCache<Stored<Client>>;
  apps: AppDirectory;
}

/** The ways a request of `client` (its record, or its id) for `audience` accepts; undefined: every way. */
export async function waysAccepted(
  svc: AcceptedWaysServices,
  client: Client | string | undefined,
  audience: string | undefined,
): Promise<readonly string[] | undefined> {
  const record = typeof client === 'string' ? (await svc.clients.get(client))?.resource : client;
  const app = audience === undefined ? undefined : await svc.apps.byAudience(audience);
  return acceptedWays(record?.identityProviders, app?.signIn?.identityProviders);
}
