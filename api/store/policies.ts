// AccessPolicy records.
import type { Queryable } from '../db/pool.js';
import type { AccessPolicy } from '../types.js';
import { ResourceTable } from './resources.js';

class AccessPolicyTable extends ResourceTable<AccessPolicy> {
  async all(db: Queryable): Promise<AccessPolicy[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<AccessPolicy, 'id'> }>('SELECT id, resource FROM access_policies');
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }

  /** The policies whose `link` names `resourceType`/`id`: their ids and the app each guards (none: the box's API). */
  async linkingTo(db: Queryable, resourceType: string, id: string): Promise<{ id: string; app: string | undefined }[]> {
    const { rows } = await db.query<{ id: string; app: string | null }>(
      "SELECT id, resource->>'app' AS app FROM access_policies WHERE resource->'link' @> $1::jsonb ORDER BY id",
      [JSON.stringify([{ resourceType, id }])],
    );
    return rows.map((r) => ({ id: r.id, app: r.app ?? undefined }));
  }
}

export const accessPolicies = new AccessPolicyTable('access_policies', 'AccessPolicy');
