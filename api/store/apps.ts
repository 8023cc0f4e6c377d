// App records: the apps of the cluster a box guards (crds/app.yaml).
import type { Queryable } from '../db/pool.js';
import type { App } from '../types.js';
import { ResourceTable } from './resources.js';

class AppTable extends ResourceTable<App> {
  async all(db: Queryable): Promise<App[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<App, 'id'> }>('SELECT id, resource FROM apps');
    return rows.map((r) => ({ ...r.resource, id: r.id }));
  }
}

export const apps = new AppTable('apps', 'App');
