// The change feeds of the releases before migration 039, during a rolling update or a rollback
// (docs/operations/upgrades.md). They listen on the channel `boxauth`, which every role of the
// database may listen on; the box's triggers announce there only while no feed of this release
// listens (039's boxauth_announce), so that nothing of the box is sent where another box hears it.
// While both releases listen, a feed of this release tells the older ones of each change it hears
// by cutting their connections (pg_terminate_backend: a role may end its own connections). An
// older process then does what it does whenever its feed is lost: empties its caches, reads
// through them until it listens again (a tenth of a second later), and empties them again.
//
// They are the connections of the box's role named OLDER_FEED_APPLICATION_NAME. The feed looks for
// them with each ping (every second): after a change, it cuts those it saw at its last look; and at
// a look that finds some it did not cut, while it heard a change since the look before (an older
// process that started meanwhile), it cuts them too. So an older process hears of a change, at
// worst, a second late. And once, right after the feed listens: what was announced before that
// went to neither.
import type pg from 'pg';
import type { Logger } from '../log.js';

/** How the feeds of the releases before 039 name their connections (039's boxauth_announce looks for it too). */
export const OLDER_FEED_APPLICATION_NAME = 'boxauth change feed';

const OLDER_FEEDS = `FROM pg_stat_activity WHERE datname = current_database() AND usename = current_user AND application_name = $1`;

export class OlderFeeds {
  /** Older feeds were there at the last look (or cut since). */
  private present = false;
  /** A change was heard since the last look. */
  private heardSinceLook = false;
  private cutting = false;
  private cutAgain = false;

  constructor(private readonly log: Logger) {}

  /** The feed's ping: how many older feeds listen. Resolves when the server answered. */
  async look(client: pg.Client): Promise<void> {
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n ${OLDER_FEEDS}`, [OLDER_FEED_APPLICATION_NAME]);
    const n = rows[0]!.n;
    const heard = this.heardSinceLook;
    this.heardSinceLook = false;
    if (n > 0 && !this.present)
      this.log.info({ feeds: n }, 'processes of an older release listen for this box; each change cuts their feed');
    if (n === 0 && this.present) this.log.info('no process of an older release listens for this box any more');
    this.present = n > 0;
    if (this.present && heard) this.cut(client);
  }

  /** A change was announced on the box's own channel. */
  heard(client: pg.Client): void {
    if (this.present) this.cut(client);
    else this.heardSinceLook = true;
  }

  /** Cuts every older feed now, one cut in flight at a time (a change heard meanwhile cuts again after it). */
  cut(client: pg.Client): void {
    if (this.cutting) {
      this.cutAgain = true;
      return;
    }
    this.cutting = true;
    this.cutOnce(client).then(
      () => undefined,
      () => undefined, // a broken connection is the feed's to find: it is lost, and cuts again once it listens
    );
  }

  private async cutOnce(client: pg.Client): Promise<void> {
    try {
      const { rows } = await client.query<{ n: number }>(`SELECT count(pg_terminate_backend(pid))::int AS n ${OLDER_FEEDS}`, [
        OLDER_FEED_APPLICATION_NAME,
      ]);
      if (rows[0]!.n > 0) this.present = true; // they listen again within a tenth of a second, to be cut at the next change
    } finally {
      this.cutting = false;
      if (this.cutAgain) {
        this.cutAgain = false;
        this.cut(client);
      }
    }
  }
}
