// The claims a Client shapes (Client.claims, api/policy/claims.ts) for one grant of a person: put
// in its ID tokens, UserInfo answers, JWT access tokens and introspection answers. The person is
// the one the box's decisions see, as they are now: a group removed shows in the next token.
import type { RecordCache } from '../cache/record-cache.js';
import type { Logger } from '../log.js';
import { signInOf } from '../credentials/acr.js';
import { scopesOf } from '../credentials/scopes.js';
import { shapeClaims, shapesClaims, type ClaimGrant } from '../policy/claims.js';
import { requestUser } from '../policy/requests.js';
import type { Stored } from '../store/resources.js';
import type { SessionRow } from '../store/sessions.js';
import type { Client, PrincipalUser } from '../types.js';

/** What a grant's shaped claims are made of: the session's record, as mint() or the store has it. */
export interface ShapedGrant {
  userId: number | null;
  scope: string | null;
  audience: string | null;
  details: Record<string, unknown> | null;
}

/** The grant as a claim expression sees it. */
export function claimGrantOf(clientId: string, grant: ShapedGrant): ClaimGrant {
  const signIn = signInOf(grant);
  return {
    client: clientId,
    scope: scopesOf(grant.scope),
    aud: grant.audience ? [grant.audience] : [],
    amr: signIn?.amr ?? [],
    acr: signIn?.acr ?? '',
  };
}

/**
 * The claims `client` shapes for `grant`, evaluated now: {} when it shapes none or the grant
 * speaks for no person (a client's own token: the expressions are about a person). A claim whose
 * expression fails is left out and logged, never a failed token. The person is read only when
 * there are claims to shape, from the cache the box's decisions read (api/people/principal.ts):
 * it drops a person when their row, a membership, a group or a linked identity changes.
 */
export async function shapedClaimsFor(
  svc: { log: Logger; users: RecordCache<PrincipalUser> },
  client: Client,
  grant: ShapedGrant,
): Promise<Record<string, unknown>> {
  if (!shapesClaims(client) || grant.userId === null) return {};
  const principal = await svc.users.get(String(grant.userId));
  if (!principal) return {};
  const user = requestUser(principal);
  const { claims, leftOut } = shapeClaims(client.claims, { user, grant: claimGrantOf(client.id, grant) });
  for (const { claim, why } of leftOut) {
    svc.log.warn({ client: client.id, claim, user: user.id }, `claim "${claim}" of client "${client.id}" left out: ${why}`);
  }
  return claims;
}

/**
 * The claims the client of a token session shapes for it, evaluated now (UserInfo, introspection):
 * the client as it is now, from the cache that holds its compiled expressions.
 */
export async function shapedClaimsOfSession(
  svc: { log: Logger; users: RecordCache<PrincipalUser>; clients: RecordCache<Stored<Client>> },
  session: SessionRow,
): Promise<Record<string, unknown>> {
  if (session.userId === null) return {};
  const client = (await svc.clients.get(session.clientId))?.resource;
  if (!client) return {};
  return shapedClaimsFor(svc, client, session);
}
