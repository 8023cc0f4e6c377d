// Client records. Deleting a client closes its sessions in the same transaction:
// a deleted client's tokens stop working at once.
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import type { Client } from '../types.js';
import { ResourceTable, type Stored } from './resources.js';
import { closeGrants } from './sessions.js';

class ClientTable extends ResourceTable<Client> {
  /** Clients bound to ServiceAccounts (auth.workload). */
  async withWorkload(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource->'auth' ? 'workload'",
    );
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  async removeWithSessions(pool: Pool, id: string, managedBy: string | null): Promise<Stored<Client> | undefined> {
    return withTransaction(pool, async (tx) => {
      const removed = await this.remove(tx, id, managedBy);
      if (removed) await closeGrants(tx, { client: id });
      return removed;
    });
  }
}

export const clients = new ClientTable('clients', 'Client');
