// What a person allowed a client (OpenID Connect Core §3.1.2.4: "the Authorization Server MUST
// obtain an authorization decision"): the scopes remembered per person and client, and the
// resources (RFC 8707) they were allowed for, so that a later request within them skips the
// consent page (./interaction.ts decides it). A first-party client asks for no consent at all.
//
// The resource is part of what was allowed: RFC 8707 §2.1 has the authorization server "inform
// the user about the resources the client is going to access on their behalf", and the person
// who let an agent use one MCP server was not asked about another. A request for a resource the
// person has not allowed this client shows the consent page again, whatever its scopes.
import type { Pool } from '../db/pool.js';
import { consentedScopes, recordConsent } from '../store/consents.js';

/** How a consent names the resource of a request: its audience, or '' for none (the box's own API). */
const resourceKey = (audience: string | null | undefined): string => audience ?? '';

/** The scopes `userId` allowed `clientId` before for `audience`; undefined when they never allowed it anything there. */
export const consentOf = (
  svc: { pool: Pool },
  userId: number,
  clientId: string,
  audience: string | null | undefined,
): Promise<string[] | undefined> => consentedScopes(svc.pool, userId, clientId, resourceKey(audience));

/** Remembers that `userId` allowed `clientId` these scopes for `audience` (with what they allowed before). */
export const rememberConsent = (
  svc: { pool: Pool },
  userId: number,
  clientId: string,
  scopes: string[],
  audience: string | null | undefined,
): Promise<void> => recordConsent(svc.pool, userId, clientId, scopes, resourceKey(audience));
