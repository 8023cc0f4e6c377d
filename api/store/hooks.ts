// Hooks (migration 039): the resource table, its signing secret sealed. What a Hook is called
// with and what its answers mean are api/hooks/'s.
import type { Queryable } from '../db/pool.js';
import type { Hook } from '../types.js';
import { ResourceTable, toStored, type Row, type Stored } from './resources.js';

class HookTable extends ResourceTable<Hook> {
  /** Every Hook of the box that is not disabled, with its sealed secret: what the box's calls choose from. */
  async enabled(db: Queryable): Promise<Stored<Hook>[]> {
    const { rows } = await db.query<Row>({
      name: 'hooks-enabled',
      text: `SELECT id, resource, managed_by, version, created_at, updated_at, secret_sealed FROM hooks
               WHERE coalesce((resource->>'disabled')::boolean, false) = false ORDER BY id`,
    });
    return rows.map((row) => toStored<Hook>(row));
  }
}

export const hooks = new HookTable('hooks', 'Hook');
