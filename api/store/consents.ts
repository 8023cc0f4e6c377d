// Consents: the scopes a person allowed a client, per resource.
import type { Queryable } from '../db/pool.js';

/**
 * The scopes `userId` allowed `clientId` for `resource` (an audience; '' for the box's own API),
 * or undefined when they never allowed it anything there. A row from before consents named their
 * resources (NULL) was given for the box's own API.
 */
export async function consentedScopes(db: Queryable, userId: number, clientId: string, resource: string): Promise<string[] | undefined> {
  const { rows } = await db.query<{ scopes: string[] }>(
    `SELECT scopes FROM consents WHERE user_id = $1 AND client_id = $2 AND $3 = ANY (COALESCE(resources, ARRAY['']))`,
    [userId, clientId, resource],
  );
  return rows[0]?.scopes;
}

/** Remembers that `userId` allowed `clientId` these scopes for `resource`, with what they allowed before. */
export async function recordConsent(db: Queryable, userId: number, clientId: string, scopes: string[], resource = ''): Promise<void> {
  await db.query(
    `INSERT INTO consents (user_id, client_id, scopes, resources) VALUES ($1, $2, $3, ARRAY[$4::text])
     ON CONFLICT (user_id, client_id) DO UPDATE SET
       scopes = ARRAY(SELECT DISTINCT unnest(consents.scopes || EXCLUDED.scopes)),
       resources = ARRAY(SELECT DISTINCT unnest(COALESCE(consents.resources, ARRAY['']) || EXCLUDED.resources)),
       granted_at = now()`,
    [userId, clientId, scopes, resource],
  );
}

export interface Consent {
  clientId: string;
  scopes: string[];
  grantedAt: Date;
}

/** What a person allowed, client by client. */
export async function listConsents(db: Queryable, userId: number): Promise<Consent[]> {
  const { rows } = await db.query<{ client_id: string; scopes: string[]; granted_at: Date }>(
    'SELECT client_id, scopes, granted_at FROM consents WHERE user_id = $1 ORDER BY client_id',
    [userId],
  );
  return rows.map((r) => ({ clientId: r.client_id, scopes: r.scopes, grantedAt: r.granted_at }));
}

/** Withdraws a person's consent to a client; false when there was none. */
export async function deleteConsent(db: Queryable, userId: number, clientId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM consents WHERE user_id = $1 AND client_id = $2', [userId, clientId]);
  return rowCount === 1;
}

/** Withdraws every consent of the person (an account adopted: what its maker allowed is not the new holder's). */
export async function deleteConsentsOf(db: Queryable, userId: number): Promise<void> {
  await db.query('DELETE FROM consents WHERE user_id = $1', [userId]);
}
