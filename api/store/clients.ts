// Client records. Deleting a client closes its sessions in the same transaction:
// a deleted client's tokens stop working at once. The box API deletes through
// api/credentials/closing.ts removeClient (its caches and audit hear of the close); the
// operator, another process, calls removeWithSessions and the box hears through
// the change feed.
import { withTransaction, type Pool, type Queryable, type Transaction } from '../db/pool.js';
import type { Client } from '../types.js';
import { ResourceTable, type Stored } from './resources.js';
import { closeGrants, type SessionRow } from './sessions.js';
import { lockForTransaction } from './box-locks.js';

type Removed = { removed: Stored<Client>; closed: SessionRow[] };

class ClientTable extends ResourceTable<Client> {
  /** Clients bound to ServiceAccounts (auth.workload). */
  async withWorkload(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource->'auth' ? 'workload'",
    );
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  /** The clients bound to SPIFFE IDs (auth.spiffe): JWT-SVIDs authenticate them (api/oauth/spiffe.ts). */
  async withSpiffe(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource->'auth' ? 'spiffe'",
    );
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  /** The SAML apps (saml): their service providers sign people in through the box (api/saml/service-providers.ts). */
  async withSaml(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource ? 'saml'",
    );
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  /** Removes the client and closes its sessions in one transaction; returns the record and the sessions closed. */
  async removeWithSessions(pool: Pool, id: string, managedBy: string | null): Promise<Removed | undefined> {
    return withTransaction(pool, (tx) => this.removeWithSessionsIn(tx, id, managedBy));
  }

  /** removeWithSessions in `tx`, a larger change's (the box API's writes, under their lock). */
  async removeWithSessionsIn(tx: Transaction, id: string, managedBy: string | null): Promise<Removed | undefined> {
    const removed = await this.remove(tx, id, managedBy);
    return removed && { removed, closed: await closeGrants(tx, { client: id }) };
  }
}

export const clients = new ClientTable('clients', 'Client');

/**
 * Writes a client registered through RFC 7591 (api/oauth/registration.ts) unless `address` made
 * `perHour` registrations in the hour before: counted and written under a lock of that address, so
 * that registrations sent at once from one address are counted one after the other (none slips
 * past the count while another is being written). Returns the client, or undefined when over.
 */
export async function registerClientFrom(
  pool: Pool,
  client: Client,
  address: string,
  perHour: number,
): Promise<Stored<Client> | undefined> {
  return withTransaction(pool, async (tx) => {
    await lockForTransaction(tx, 'register', address);
    const { rows } = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM clients
       WHERE resource->'registration'->>'kind' = 'dynamic' AND resource->'registration'->>'address' = $1
         AND created_at > now() - interval '1 hour'`,
      [address],
    );
    if (rows[0]!.n >= perHour) return undefined;
    return (await clients.write(tx, client, { managedBy: null, secretHash: null })).stored;
  });
}

/**
 * Removes the dynamically registered clients made more than `hours` ago that nobody used: no
 * session, no consent, no code waiting. RFC 7591 leaves a registration's end to the server; one no
 * person ever let in is only a row an anonymous caller made. Returns how many.
 */
export async function removeUnusedRegistrations(db: Queryable, hours: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM clients c
     WHERE c.resource->'registration'->>'kind' = 'dynamic' AND c.managed_by IS NULL
       AND c.created_at < now() - make_interval(hours => $1)
       AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.client_id = c.id)
       AND NOT EXISTS (SELECT 1 FROM consents k WHERE k.client_id = c.id)
       AND NOT EXISTS (SELECT 1 FROM authorization_codes a WHERE a.client_id = c.id)`,
    [hours],
  );
  return rowCount ?? 0;
}
