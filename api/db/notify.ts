// One LISTEN connection per process. Triggers on the box's tables announce every
// change (see 001_core.sql); this turns them into events the caches subscribe to.
// They announce on the box's own channel, whose name is a secret of the box kept in its
// schema (migration 039): boxes may share a database, and any role of it may LISTEN, or
// NOTIFY, on any channel it can name. The outboxes' wakes go on channels named after it.
// While the connection is down, announcements are lost, so on reconnect every
// subscriber is told to forget everything ('reset') rather than trust its cache.
//
// Notifications exist on the primary only, so the connection goes where the locator
// says writes go (./locator.ts), never through a transaction-mode pooler (PgBouncer
// hands a LISTEN's server connection to others between transactions: nothing is
// heard), and follows a failover: when the host is given up, its connection is cut,
// and the feed listens again on the new primary as soon as there is one.
//
// A connection that only listens hears nothing when it dies without a word (a firewall or
// a NAT that forgot it, a server process stuck): the caches would trust a feed that is
// gone. So it is pinged every CHECK_INTERVAL_MS, and cut (then lost, and made again) when
// UNANSWERED_PINGS in a row get no answer.
//
// While it is lost, what a cache held when the feed went may stand in for a read the
// database cannot answer, for outageMemoryMs (mayAnswerFromMemory): changes committed
// before the loss were heard (but for those whose notification was in flight at that
// instant), and none are made while the database is unreachable — provided the database
// has not answered since the loss: a feed lost while the database still answers (its
// connection alone broke) hears nothing of the writes that follow, so once anything
// answered after the loss, memory answers for nothing.
import type pg from 'pg';
import type { Logger } from '../log.js';
import { CHECK_INTERVAL_MS, cut, type HostLocator } from './locator.js';
import { OlderFeeds } from './older-feeds.js';

/** Pings in a row without an answer after which the feed's connection is taken for dead. */
const UNANSWERED_PINGS = 2;
/**
 * How the feed's connection is named in pg_stat_activity: not as the feeds of the releases before
 * migration 039 name theirs, which listen elsewhere (./older-feeds.ts). 039's boxauth_announce
 * looks for both names.
 */
export const CHANGE_FEED_APPLICATION_NAME = 'boxauth box feed';

/** The box's own channel, as SQL over the box's schema (a secret of the box: migration 039). */
export const BOX_CHANNEL_SQL = "(SELECT value FROM box_settings WHERE name = 'change_channel')";

/** The channel of the box's notices of `kind` (api/store/box-channel.ts wakes them): its own, suffixed. */
export const noticeChannel = (boxChannel: string, kind: string): string => `${boxChannel}_${kind}`;

export interface Change {
  table: string;
  id: string;
  /** Another key the row is known by (an opaque token's digest, hex). */
  key?: string;
}

/** What the feed tells its subscribers: a change of a table, a notice on a channel, a fence, or 'reset'. */
type Topic = `change:${string}` | `notice:${string}` | 'fence' | 'reset';

// The subscribers are kept in lists of the feed's own rather than as an EventEmitter's listeners:
// every cache, the mail outbox and the composition root subscribe once each, at start-up, to
// 'reset' (eleven of them with SMTP set), which is no leak; Node's warning past ten listeners
// (MaxListenersExceededWarning) was a false alarm printed at every start.
export class ChangeFeed {
  private readonly subscribers = new Map<Topic, ((...args: never[]) => void)[]>();
  private client: pg.Client | undefined;
  private stopped = false;
  private boxChannel = '';
  private readonly olderFeeds: OlderFeeds;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;
  /** When the connection was lost (ms since the epoch); undefined while listening, or before the first connection. */
  private lostAt: number | undefined;
  /** The database's answers (HostLocator.answers) when the connection was lost. */
  private answersAtLoss = 0;
  private pinger: NodeJS.Timeout | undefined;
  /** Kinds of notices listened for beside the changes (onNotice). */
  private readonly notices = new Set<string>();

  constructor(
    private readonly locator: HostLocator,
    private readonly log: Logger,
    /** How long after its loss what the caches knew may answer for an unreachable database (0: never). */
    private readonly outageMemoryMs = 0,
    /** The locators of pools that do not go where the feed goes (a pooler's): their answers count too. */
    private readonly otherLocators: HostLocator[] = [],
  ) {
    this.olderFeeds = new OlderFeeds(log);
    // A new primary: listen there now rather than at the next retry.
    locator.on('found', () => {
      if (!this.client && this.retryTimer && !this.stopped) {
        clearTimeout(this.retryTimer);
        this.retryTimer = undefined;
        this.retry();
      }
    });
  }

  /** Resolves once listening; later connection losses are retried in the background. */
  async start(): Promise<void> {
    await this.connect();
  }

  private subscribe(topic: Topic, handler: (...args: never[]) => void): void {
    const handlers = this.subscribers.get(topic);
    if (handlers) handlers.push(handler);
    else this.subscribers.set(topic, [handler]);
  }

  /** Calls each of the topic's subscribers in the order they subscribed. */
  private publish(topic: Topic, ...args: unknown[]): void {
    for (const handler of this.subscribers.get(topic) ?? []) (handler as (...a: unknown[]) => void)(...args);
  }

  onChange(table: string, handler: (change: Change) => void): void {
    this.subscribe(`change:${table}`, handler);
  }

  onReset(handler: () => void): void {
    this.subscribe('reset', handler);
  }

  /**
   * Notices of `kind` the box's processes send each other (a mail enqueued: api/store/box-channel.ts
   * wake), on the box's channel of that kind. Lost while the connection is down, as changes are: a
   * listener that must not miss one also listens for 'reset', and looks for itself.
   */
  onNotice(kind: string, handler: () => void): void {
    this.subscribe(`notice:${kind}`, handler);
    if (this.notices.has(kind)) return;
    this.notices.add(kind);
    const client = this.client;
    // a lost connection listens again on reconnect
    client?.query(`LISTEN ${client.escapeIdentifier(noticeChannel(this.boxChannel, kind))}`).catch(() => undefined);
  }

  /** A read fence came back (api/cache/read-fence.ts). */
  onFence(handler: (token: string) => void): void {
    this.subscribe('fence', handler);
  }

  private async connect(): Promise<void> {
    const { client } = await this.locator.connected({ application_name: CHANGE_FEED_APPLICATION_NAME });
    client.on('notification', (msg) => {
      if (msg.channel === this.boxChannel) this.dispatch(client, msg.payload);
      else {
        const kind = [...this.notices].find((k) => msg.channel === noticeChannel(this.boxChannel, k));
        if (kind !== undefined) this.publish(`notice:${kind}`);
      }
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      const { rows } = await client.query<{ c: string | null }>(`SELECT ${BOX_CHANNEL_SQL} AS c`);
      if (!rows[0]!.c) throw new Error("the box's schema has no change channel: its migrations are not all applied");
      this.boxChannel = rows[0]!.c;
      await client.query(`LISTEN ${client.escapeIdentifier(this.boxChannel)}`);
      for (const kind of this.notices) await client.query(`LISTEN ${client.escapeIdentifier(noticeChannel(this.boxChannel, kind))}`);
    } catch (err) {
      // Refused (a server that became a standby since it was found: "cannot execute LISTEN during recovery"), or
      // broken: a connection that does not listen is not kept, else each retry would leave one more behind.
      client.end().catch(() => undefined);
      throw err;
    }
    this.client = client;
    this.lostAt = undefined;
    this.retryMs = 100;
    this.ping(client);
    // Changes announced before it listened reached no feed of this release: the older ones forget theirs too.
    this.olderFeeds.cut(client);
  }

  /**
   * Pings `client` while it is the feed's; cuts it when UNANSWERED_PINGS in a row go unanswered.
   * The ping looks for the feeds of older releases (./older-feeds.ts).
   */
  private ping(client: pg.Client): void {
    let unanswered = 0;
    clearInterval(this.pinger);
    this.pinger = setInterval(() => {
      if (this.client !== client) return;
      if (unanswered >= UNANSWERED_PINGS) {
        this.log.warn({ unanswered }, 'change feed connection does not answer; cutting it');
        cut(client); // 'end' follows: lost(), and a new connection
        return;
      }
      unanswered++;
      this.olderFeeds.look(client).then(
        () => {
          unanswered = 0;
        },
        () => undefined, // a broken connection is lost() by its 'error'
      );
    }, CHECK_INTERVAL_MS).unref();
  }

  /** Every answer the database gave so far, through the feed's locator and the others. */
  private answers(): number {
    return this.otherLocators.reduce((sum, l) => sum + l.answers, this.locator.answers);
  }

  private dispatch(client: pg.Client, payload: string | undefined): void {
    if (!payload) return;
    let change: Change & { fence?: string };
    try {
      change = JSON.parse(payload) as Change & { fence?: string };
    } catch {
      return;
    }
    // Only the box's triggers and processes know its channel: no need to look whose schema it names.
    if (change.fence !== undefined) {
      this.publish('fence', change.fence);
    } else {
      this.publish(`change:${change.table}`, change);
      this.olderFeeds.heard(client);
    }
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    clearInterval(this.pinger);
    this.lostAt = Date.now();
    this.answersAtLoss = this.answers();
    this.log.warn({ err: err?.message }, 'change feed connection lost; caches are read through until it is back');
    this.publish('reset');
    client.end().catch(() => undefined);
    this.retryTimer = setTimeout(() => this.retry(), this.retryMs).unref();
  }

  private retry(): void {
    this.retryTimer = undefined;
    if (this.stopped) return;
    this.connect().then(
      () => {
        this.log.info('change feed reconnected');
        this.publish('reset'); // changes made while we were away were never announced
      },
      () => {
        // No longer than the locator's watch: a failover's new primary is listened on within a second of being found.
        this.retryMs = Math.min(this.retryMs * 2, CHECK_INTERVAL_MS);
        if (!this.stopped) this.retryTimer = setTimeout(() => this.retry(), this.retryMs).unref();
      },
    );
  }

  /**
   * Whether a value a cache held when the feed was lost may answer now for a database that
   * cannot be read: the feed is lost, less than outageMemoryMs ago, and the database has not
   * answered since (nothing can have been written that the feed did not hear).
   */
  mayAnswerFromMemory(now = Date.now()): boolean {
    return (
      this.client === undefined &&
      this.lostAt !== undefined &&
      now - this.lostAt <= this.outageMemoryMs &&
      this.answers() === this.answersAtLoss
    );
  }

  /** The box's own channel, where changes are announced and read fences sent (api/cache/read-fence.ts). */
  get channel(): string {
    return this.boxChannel;
  }

  /** True while notifications can arrive; caches must not be trusted otherwise. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pinger);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
