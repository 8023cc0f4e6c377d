// App records: the apps of the cluster a box guards (crds/app.yaml).
import type { Queryable } from '../db/pool.js';
import type { App } from '../types.js';
import { ConstraintViolation } from './constraints.js';
import { ResourceTable, type Stored, type WriteOptions } from './resources.js';

/** The audience a token must carry at `app`: its own, else its first url (compared exactly, as the decision point does). */
export const audienceOf = (app: Pick<App, 'audience' | 'urls'>): string => app.audience ?? app.urls[0]!;

/** `host[:port]` of a url, as a Host header names it (the default port left out). */
export function hostOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

/** An app record, and whether the database holds its audience as its (012_app_audience.sql). */
export interface HeldApp {
  app: App;
  holdsAudience: boolean;
}

class AppTable extends ResourceTable<App> {
  async all(db: Queryable): Promise<HeldApp[]> {
    const { rows } = await db.query<{ id: string; resource: Omit<App, 'id'>; audience: string | null }>(
      'SELECT id, resource, audience FROM apps',
    );
    return rows.map((r) => {
      const app = { ...r.resource, id: r.id };
      return { app, holdsAudience: r.audience === audienceOf(app) };
    });
  }

  protected override columns(app: App): Record<string, unknown> {
    return { audience: audienceOf(app) };
  }

  /**
   * As every table writes; an audience another App holds is a ConstraintViolation of `audience`, and nothing is
   * written. The holder is looked for first, so that the refusal names it without a statement after a failed one
   * (`db` may be a transaction); the unique index still decides between writes that race past the look.
   */
  override async write(db: Queryable, app: App, opts: WriteOptions): Promise<{ stored: Stored<App>; created: boolean }> {
    const audience = audienceOf(app);
    const { rows } = await db.query<{ id: string }>('SELECT id FROM apps WHERE audience = $1 AND id <> $2', [audience, app.id]);
    if (rows[0]) throw audienceTaken(audience, `App "${rows[0].id}"`);
    try {
      return await super.write(db, app, opts);
    } catch (err) {
      const e = err as { code?: string; constraint?: string };
      if (e.code !== '23505' || e.constraint !== 'apps_audience') throw err;
      throw audienceTaken(audience, 'another App');
    }
  }
}

function audienceTaken(audience: string, holder: string): ConstraintViolation {
  return new ConstraintViolation(
    'audience',
    `"${audience}" is the audience of ${holder}: tokens for one app would pass at the other; give this app an audience of its own`,
  );
}

export const apps = new AppTable('apps', 'App');
