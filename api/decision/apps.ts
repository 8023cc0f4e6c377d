// The apps a box guards, in memory: by id, and by the origin (scheme, host and
// port) of each of their urls, for gateways that do not name the app. Loaded once,
// dropped when any app changes on any process (the change feed), so the decision
// point's hot path holds no database round trip.
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import { apps } from '../store/apps.js';
import type { App } from '../types.js';

interface Directory {
  byId: Map<string, App>;
  /** By `host[:port]` as a Host header carries it (lower case). */
  byHost: Map<string, App>;
}

/** The audience a token must carry at `app`: its own, else its first url. */
export const audienceOf = (app: App): string => app.audience ?? app.urls[0]!;

/** `host[:port]` of a url, as a Host header names it (the default port left out). */
export function hostOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

export class AppDirectory {
  private loaded: Promise<Directory> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly feed: ChangeFeed,
  ) {
    feed.onChange('apps', () => this.forget());
    feed.onReset(() => this.forget());
  }

  forget(): void {
    this.loaded = undefined;
  }

  private load(): Promise<Directory> {
    const loading = apps.all(this.pool).then((all) => {
      const byId = new Map(all.map((a) => [a.id, a]));
      const byHost = new Map<string, App>();
      for (const app of all) for (const url of app.urls) byHost.set(hostOf(url), app);
      return { byId, byHost };
    });
    loading.catch(() => {
      if (this.loaded === loading) this.loaded = undefined;
    });
    return loading;
  }

  private current(): Promise<Directory> {
    if (!this.feed.connected) return this.load(); // without the feed, changes cannot be heard of
    return (this.loaded ??= this.load());
  }

  async byId(id: string): Promise<App | undefined> {
    return (await this.current()).byId.get(id);
  }

  async byHost(host: string): Promise<App | undefined> {
    return (await this.current()).byHost.get(host.toLowerCase());
  }
}
