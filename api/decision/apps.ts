// The apps a box guards, in memory: by id, and by the origin (scheme, host and
// port) of each of their urls, for gateways that do not name the app. Loaded once,
// dropped when any app changes on any process (the change feed), so the decision
// point's hot path holds no database round trip. A host two apps claim is no app's:
// which one's policies decided would depend on the order the database returns them
// in, which changes as they are written.
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
    private readonly onClash: (host: string, apps: string[]) => void = () => undefined,
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
      const claims = new Map<string, Set<string>>();
      for (const app of all) for (const url of app.urls) claims.set(hostOf(url), (claims.get(hostOf(url)) ?? new Set()).add(app.id));
      const byHost = new Map<string, App>();
      for (const [host, ids] of claims) {
        if (ids.size === 1) byHost.set(host, byId.get([...ids][0]!)!);
        else this.onClash(host, [...ids].sort());
      }
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
