// The apps a box guards, in memory: by id, and by the origin (scheme, host and
// port) of each of their urls, for gateways that do not name the app. Loaded once,
// dropped when any app changes on any process (the change feed), so the decision
// point's hot path holds no database round trip. A host two apps claim is no app's:
// which one's policies decided would depend on the order the database returns them
// in, which changes as they are written. Likewise an App's audience is its own: an
// App whose audience is the box's, or one the database does not hold as its own (two
// Apps shared it before 012_app_audience.sql), is no app at all, by id or by host.
import { Snapshot } from '../cache/snapshot.js';
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import { apps, audienceOf, hostOf, type HeldApp } from '../store/apps.js';
import type { App } from '../types.js';

export { audienceOf, hostOf };

interface Directory {
  byId: Map<string, App>;
  /** By `host[:port]` as a Host header carries it (lower case). */
  byHost: Map<string, App>;
}

/**
 * Why `app` may not have its audience, when it is the box's own (`boxUrl`, what tokens for the box's API
 * carry besides none): the app's sign-in cookie would open the box's API, and the box's tokens the app.
 */
export function boxAudienceClash(app: Pick<App, 'audience' | 'urls'>, boxUrl: string): string | undefined {
  if (audienceOf(app) !== boxUrl) return undefined;
  const which = app.audience === undefined ? ' (the first url, as no audience is set)' : '';
  return `"${boxUrl}"${which} is the box's own audience: tokens for the box's API would pass at the app, and the app's at the box; give the app an audience of its own`;
}

export class AppDirectory {
  private readonly directory: Snapshot<Directory>;

  constructor(
    pool: Pool,
    feed: ChangeFeed,
    private readonly onClash: (host: string, apps: string[]) => void = () => undefined,
    /** The box's own audience (its base URL), which no app may have. */
    private readonly boxUrl?: string,
    private readonly onAudience: (app: string, why: string) => void = () => undefined,
  ) {
    this.directory = new Snapshot(feed, ['apps'], async () => this.build(await apps.all(pool)));
  }

  forget(): void {
    this.directory.forget();
  }

  /** Which apps decide, by id and by host: an App whose audience is not its own decides nothing, a host two Apps claim finds none. */
  private build(held: HeldApp[]): Directory {
    const all = held.map((h) => h.app);
    const byId = new Map<string, App>();
    for (const { app, holdsAudience } of held) {
      const why =
        (this.boxUrl !== undefined && boxAudienceClash(app, this.boxUrl)) ||
        (!holdsAudience && `its audience "${audienceOf(app)}" is another App's too: change either`);
      if (why) this.onAudience(app.id, why);
      else byId.set(app.id, app);
    }
    const claims = new Map<string, Set<string>>();
    for (const app of all) for (const url of app.urls) claims.set(hostOf(url), (claims.get(hostOf(url)) ?? new Set()).add(app.id));
    const byHost = new Map<string, App>();
    for (const [host, ids] of claims) {
      const app = ids.size === 1 ? byId.get([...ids][0]!) : undefined;
      if (app) byHost.set(host, app);
      else if (ids.size > 1) this.onClash(host, [...ids].sort());
    }
    return { byId, byHost };
  }

  private current(): Promise<Directory> {
    return this.directory.get();
  }

  async byId(id: string): Promise<App | undefined> {
    return (await this.current()).byId.get(id);
  }

  /** The app whose audience tokens for `audience` carry (RFC 8707 resource), if any. */
  async byAudience(audience: string): Promise<App | undefined> {
    for (const app of (await this.current()).byId.values()) if (audienceOf(app) === audience) return app;
    return undefined;
  }

  async byHost(host: string): Promise<App | undefined> {
    return (await this.current()).byHost.get(host.toLowerCase());
  }
}
