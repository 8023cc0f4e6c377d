// Which clients each ServiceAccount is bound to, in memory: a token request that
// names no client_id is routed by its ServiceAccount without a database query.
// Rebuilt after any change of a client.
import { Snapshot } from '../../cache/snapshot.js';
import type { ChangeFeed } from '../../db/notify.js';
import type { Pool } from '../../db/pool.js';
import { clients } from '../../store/clients.js';
import { workloadSettings } from './assertion.js';

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
