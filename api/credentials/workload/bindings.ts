// Which clients each ServiceAccount is bound to, in memory: a token request that
// names no client_id is routed by its ServiceAccount without a database query.
// Rebuilt after any change of a client.
import type { ChangeFeed } from '../../db/notify.js';
import type { Pool } from '../../db/pool.js';
import { clients } from '../../store/clients.js';
import { workloadSettings } from './assertion.js';

export class WorkloadBindings {
  private index: Promise<Map<string, string[]>> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly feed: ChangeFeed,
  ) {
    feed.onChange('clients', () => this.forget());
    feed.onReset(() => this.forget());
  }

  forget(): void {
    this.index = undefined;
  }

  private load(): Promise<Map<string, string[]>> {
    const loading = clients.withWorkload(this.pool).then((all) => {
      const index = new Map<string, string[]>();
      for (const client of all) {
        for (const sa of workloadSettings(client)?.serviceAccounts ?? []) {
          const key = `${sa.namespace}/${sa.name}`;
          index.set(key, [...(index.get(key) ?? []), client.id]);
        }
      }
      return index;
    });
    loading.catch(() => {
      if (this.index === loading) this.index = undefined;
    });
    return loading;
  }

  async clientsOf(namespace: string, name: string): Promise<string[]> {
    const index = await (this.feed.connected ? (this.index ??= this.load()) : this.load());
    return index.get(`${namespace}/${name}`) ?? [];
  }
}
