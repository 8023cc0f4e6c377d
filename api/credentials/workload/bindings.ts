// The workloads a Client is bound to (auth.workload: ServiceAccounts, and subjects of
// other issuers), and the other way round: which clients each is bound to, in memory,
// so that a token request that names no client_id is routed by its token without a
// database query. Rebuilt after any change of a client.
import { Snapshot } from '../../cache/snapshot.js';
import type { ChangeFeed } from '../../db/notify.js';
import type { Pool } from '../../db/pool.js';
import { clients } from '../../store/clients.js';
import type { Client } from '../../types.js';
import { bindingNames, type FederatedBinding } from '../../federated-subjects.js';

export interface ServiceAccountBinding {
  namespace: string;
  name: string;
  uid?: string;
}

export interface WorkloadSettings {
  issuer?: string;
  serviceAccounts?: ServiceAccountBinding[];
  federated?: FederatedBinding[];
}

/** A client's binding to ServiceAccounts, when it has one: the workloads that authenticate as it. */
export function workloadSettings(client: Client): WorkloadSettings | undefined {
  return client.auth?.workload;
}

interface Index {
  /** Clients by `namespace/name` of a ServiceAccount. */
  serviceAccounts: Map<string, string[]>;
  /** Every federated binding, with its client. */
  federated: { client: string; binding: FederatedBinding }[];
}

export class WorkloadBindings {
  private readonly index: Snapshot<Index>;

  constructor(pool: Pool, feed: ChangeFeed) {
    this.index = new Snapshot(feed, ['clients'], async () => {
      const index: Index = { serviceAccounts: new Map(), federated: [] };
      for (const client of await clients.withWorkload(pool)) {
        const settings = workloadSettings(client);
        for (const sa of settings?.serviceAccounts ?? []) {
          const key = `${sa.namespace}/${sa.name}`;
          index.serviceAccounts.set(key, [...(index.serviceAccounts.get(key) ?? []), client.id]);
        }
        for (const binding of settings?.federated ?? []) index.federated.push({ client: client.id, binding });
      }
      return index;
    });
  }

  forget(): void {
    this.index.forget();
  }

  async clientsOf(namespace: string, name: string): Promise<string[]> {
    return (await this.index.get()).serviceAccounts.get(`${namespace}/${name}`) ?? [];
  }

  /** The clients with a federated binding naming this issuer and subject (each once). */
  async clientsOfSubject(issuer: string, subject: string): Promise<string[]> {
    const found = (await this.index.get()).federated.filter((f) => bindingNames(f.binding, issuer, subject)).map((f) => f.client);
    return [...new Set(found)];
  }
}
