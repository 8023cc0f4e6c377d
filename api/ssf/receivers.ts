// Which person's events a receiver may have: an AccessPolicy decision (api/policy/evaluate.ts
// decideSsf), deny by default, asked when the receiver adds a person to a stream and again for
// every event about them, so that a policy changed (or a person who left the group it names)
// takes effect with the next event.
import type { SubjectSettings } from '../credentials/subjects.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Policies } from '../policy/evaluate.js';
import { requestUser, type RequestUser, type SsfRequest } from '../policy/requests.js';
import type { Stored } from '../store/resources.js';
import type { Client, PrincipalUser } from '../types.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
export interface ReceiverNeeds {
  policies: Policies;
  clients: RecordCache<Stored<Client>>;
  users: RecordCache<PrincipalUser>;
  /** What a person's `sub` is for each receiver (api/credentials/subjects.ts). */
  subjects: SubjectSettings;
  /**
   * Why a pairwise receiver's sector_identifier_uri may not give it that sector's subs now
   * (api/oauth/sector-identifier.ts); undefined: it may. A receiver calls with its own token
   * (client credentials), which names nobody, so the token endpoint never asks: the transmitter does.
   */
  sectorRefusal: (client: Client) => Promise<string | undefined>;
}

/** The request object of the question "may `receiver` have events about `subject` on `stream`". */
export function ssfRequest(client: Client, stream: string, subject: RequestUser): SsfRequest {
  return {
    'request-method': 'receive',
    uri: 'ssf:events',
    params: {},
    'query-string': '',
    client: { ...client },
    user: null,
    scope: null,
    ssf: { receiver: client.id, stream, subject },
  };
}

/**
 * A person as the policies see them; one deleted meanwhile (an account purged) as the event
 * remembered them: their id and address, unverified, in no group, with no data (what the outbox
 * keeps of them), so a policy that asks for more than their address does not send their purge.
 */
async function personOf(
  svc: Pick<ReceiverNeeds, 'users'>,
  user: number,
  remembered?: { email: string | null },
): Promise<RequestUser | undefined> {
  const found = await svc.users.get(String(user));
  if (found) return requestUser(found);
  if (!remembered) return undefined;
  return { id: String(user), email: remembered.email ?? '', email_verified: false, groups: [], data: {}, scim: {}, identities: [] };
}

/** Whether `receiver` may have events about person `user` on its stream `stream`. */
export async function mayReceive(
  svc: ReceiverNeeds,
  receiver: string,
  stream: string,
  user: number,
  remembered?: { email: string | null },
): Promise<boolean> {
  const client = await svc.clients.get(receiver);
  if (!client) return false;
  const person = await personOf(svc, user, remembered);
  if (!person) return false;
  return (await svc.policies.decideSsf(ssfRequest(client.resource, stream, person))).allowed;
}
