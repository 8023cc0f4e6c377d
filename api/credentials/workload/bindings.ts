// The ServiceAccounts a Client is bound to (auth.workload), and the other way round:
// which clients each ServiceAccount is bound to, in memory, so that a token request
// that names no client_id is routed by its ServiceAccount without a database query.
// Rebuilt after any change of a client.
import { Snapshot } from '../../cache/snapshot.js';
import type { ChangeFeed } from '../../db/notify.js';
import type { Pool } from '../../db/pool.js';
import { clients } from '../../store/clients.js';
import type { Client } from '../../types.js';

export interface ServiceAccountBinding {
  namespace: string;
  name: string;
  uid?: string;
}

export interface WorkloadSettings {
  issuer?: string;
  serviceAccounts: ServiceAccountBinding[];
}

/** A client's binding to ServiceAccounts, when it has one: the workloads that authenticate as it. */
export function workloadSettings(client: Client): WorkloadSettings | undefined {
  return client.auth?.workload;
}

export class WorkloadBindings {
  private readonly index: Snapshot<Map<string, string[]>>;

  constructor(pool: Pool, feed: ChangeFeed) {
    this.index = new Snapshot(feed, ['clients'], async () => {
      const index = new Map<string, string[]>();
      for (const client of await clients.withWorkload(pool)) {
        for (const sa of workloadSettings(client)?.serviceAccounts ?? []) {
          const key = `${sa.namespace}/${sa.name}`;
          index.set(key, [...(index.get(key) ?? []), client.id]);
        }
      }
      return index;
    });
  }

  forget(): void {
    this.index.forget();
  }

  async clientsOf(namespace: string, name: string): Promise<string[]> {
    return (await this.index.get()).get(`${namespace}/${name}`) ?? [];
  }
}
