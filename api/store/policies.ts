// AccessPolicy records.
import type { Queryable } from '../db/pool.js';
import type { AccessPolicy } from '../types.js';
import { ResourceTable } from './resources.js';

class AccessPolicyTable extends ResourceTable<AccessPolicy> {
  async all(db: Queryable): Promise<AccessPolicy[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<AccessPolicy, 'id'> }>('SELECT id, resource FROM access_policies');
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }
}

export const accessPolicies = new AccessPolicyTable('access_policies', 'AccessPolicy');
