// Client records. Deleting a client closes its sessions in the same transaction:
// a deleted client's tokens stop working at once. The box API deletes through
// api/credentials/closing.ts removeClient (its caches and audit hear of the close); the
// operator, another process, calls removeWithSessions and the box hears through
// the change feed.
import { withTransaction, type Pool, type Queryable, type Transaction } from '../db/pool.js';
import type { Client } from '../types.js';
import { ResourceTable, type Stored } from './resources.js';
import { closeGrants, type SessionRow } from './sessions.js';

type Removed = { removed: Stored<Client>; closed: SessionRow[] };

class ClientTable extends ResourceTable<Client> {
  /** Clients bound to ServiceAccounts (auth.workload). */
  async withWorkload(db: Queryable): Promise<Client[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<Client, 'id'> }>(
      "SELECT id, resource FROM clients WHERE resource->'auth' ? 'workload'",
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
