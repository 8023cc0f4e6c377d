// Client records. Deleting a client closes its sessions in the same transaction:
// a deleted client's tokens stop working at once. The box API deletes through
// api/oauth/closing.ts removeClient (its caches and audit hear of the close); the
// operator, another process, calls removeWithSessions and the box hears through
// the change feed.
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import type { Client } from '../types.js';
import { ResourceTable, type Stored } from './resources.js';
import { closeGrants, type SessionRow } from './sessions.js';

class ClientTable extends ResourceTable<Client> {
  /** Clients bound to ServiceAccounts (auth.workload). */
  async withWorkload(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource->'auth' ? 'workload'",
    );
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  /** Removes the client and closes its sessions in one transaction; returns the record and the sessions closed. */
  async removeWithSessions(
    pool: Pool,
    id: string,
    managedBy: string | null,
  ): Promise<{ removed: Stored<Client>; closed: SessionRow[] } | undefined> {
    return withTransaction(pool, async (tx) => {
      const removed = await this.remove(tx, id, managedBy);
      return removed && { removed, closed: await closeGrants(tx, { client: id }) };
    });
  }
}

export const clients = new ClientTable('clients', 'Client');
