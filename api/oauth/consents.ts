// What a person allowed a client (OpenID Connect Core §3.1.2.4: "the Authorization Server MUST
// obtain an authorization decision"): the scopes remembered per person and client, so that a later
// request within them skips the consent page (./interaction.ts decides it). A first-party client
// asks for no consent at all.
import type { Pool } from '../db/pool.js';
import { consentedScopes, recordConsent } from '../store/browser.js';

/** The scopes `userId` allowed `clientId` before; undefined when they never allowed it anything. */
export const consentOf = (svc: { pool: Pool }, userId: number, clientId: string): Promise<string[] | undefined> =>
  consentedScopes(svc.pool, userId, clientId);

/** Remembers that `userId` allowed `clientId` these scopes (with what they allowed before). */
export const rememberConsent = (svc: { pool: Pool }, userId: number, clientId: string, scopes: string[]): Promise<void> =>
  recordConsent(svc.pool, userId, clientId, scopes);
