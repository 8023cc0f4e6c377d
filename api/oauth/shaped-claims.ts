// The claims a Client shapes (Client.claims, api/policy/claims.ts) for one grant of a person: put
// in its ID tokens, UserInfo answers, JWT access tokens and introspection answers. The person is
// read afresh, as an ID token states them: a group removed shows in the next token.
import type { Pool, Queryable } from '../db/pool.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Logger } from '../log.js';
import { signInOf } from '../credentials/acr.js';
import { scopesOf } from '../credentials/scopes.js';
import { shapeClaims, shapesClaims, type ClaimGrant, type ClaimsPerson } from '../policy/claims.js';
import { identitiesOf } from '../store/identity-providers.js';
import type { Stored } from '../store/resources.js';
import type { SessionRow } from '../store/sessions.js';
import { getUser, type UserRow } from '../store/users.js';
import type { Client } from '../types.js';
import { dataOf } from './openid.js';

/** What a grant's shaped claims are made of: the session's record, as mint() or the store has it. */
export interface ShapedGrant {
  userId: number | null;
  scope: string | null;
  audience: string | null;
  details: Record<string, unknown> | null;
}

/** The SCIM attributes the box keeps of the person, as SCIM shows them (api/people/scim/resources.ts); {} for none. */
function scimOf(user: UserRow): Record<string, unknown> {
  if (user.scim === null && user.externalId === null) return {};
  return { ...(user.externalId !== null ? { externalId: user.externalId } : {}), userName: user.email, ...(user.scim ?? {}) };
}

/** The person as a claim expression sees them: this person alone, as policies see them (request.user). */
export function claimsPersonOf(user: UserRow, identities: readonly { provider: string; subject: string }[]): ClaimsPerson {
  return {
    id: String(user.id),
    email: user.email,
    email_verified: user.emailVerified,
    groups: user.groups.map((g) => g.name),
    data: dataOf(user),
    scim: scimOf(user),
    identities: identities.map(({ provider, subject }) => ({ provider, subject })),
  };
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
 * The person of a grant as claim expressions see them, read afresh (`known`: the row the caller
 * holds already); undefined when they no longer exist. A grant's store declares it (claimsPerson).
 */
export async function readClaimsPerson(db: Queryable, userId: number, known?: UserRow): Promise<ClaimsPerson | undefined> {
  const user = known ?? (await getUser(db, userId));
  return user && claimsPersonOf(user, await identitiesOf(db, user.id));
}

/**
 * The claims `client` shapes for `grant`, evaluated now: {} when it shapes none or the grant
 * speaks for no person (a client's own token: the expressions are about a person). A claim whose
 * expression fails is left out and logged, never a failed token. `person` reads the grant's person
 * (readClaimsPerson, through the caller's store), only when there are claims to shape.
 */
export async function shapedClaimsFor(
  svc: { log: Logger },
  client: Client,
  grant: ShapedGrant,
  person: (userId: number) => Promise<ClaimsPerson | undefined>,
): Promise<Record<string, unknown>> {
  if (!shapesClaims(client) || grant.userId === null) return {};
  const user = await person(grant.userId);
  if (!user) return {};
  const { claims, leftOut } = shapeClaims(client.claims, { user, grant: claimGrantOf(client.id, grant) });
  for (const { claim, why } of leftOut) {
    svc.log.warn({ client: client.id, claim, user: user.id }, `claim "${claim}" of client "${client.id}" left out: ${why}`);
  }
  return claims;
}

/**
 * The claims the client of a token session shapes for it, evaluated now (UserInfo, introspection):
 * the client as it is now, from the cache that holds its compiled expressions. `user`: the row the
 * caller read already.
 */
export async function shapedClaimsOfSession(
  svc: { pool: Pool; log: Logger; clients: RecordCache<Stored<Client>> },
  session: SessionRow,
  user?: UserRow,
): Promise<Record<string, unknown>> {
  if (session.userId === null) return {};
  const client = (await svc.clients.get(session.clientId))?.resource;
  if (!client) return {};
  return shapedClaimsFor(svc, client, session, (id) => readClaimsPerson(svc.pool, id, user));
}
