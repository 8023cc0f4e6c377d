// One LISTEN connection per process. Triggers on the box's tables announce every
// change (see 001_core.sql); this turns them into events the caches subscribe to.
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

/** Pings in a row without an answer after which the feed's connection is taken for dead. */
const UNANSWERED_PINGS = 2;
/** How the feed's connection is named in pg_stat_activity. */
export const CHANGE_FEED_APPLICATION_NAME = 'boxauth change feed';

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
  private currentSchema = '';
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;
  /** When the connection was lost (ms since the epoch); undefined while listening, or before the first connection. */
  private lostAt: number | undefined;
  /** The database's answers (HostLocator.answers) when the connection was lost. */
  private answersAtLoss = 0;
  private pinger: NodeJS.Timeout | undefined;
  /** Channels listened on beside the change feed's own (onNotice). */
  private readonly channels = new Set<string>();

  constructor(
    private readonly locator: HostLocator,
    private readonly log: Logger,
    /** How long after its loss what the caches knew may answer for an unreachable database (0: never). */
    private readonly outageMemoryMs = 0,
    /** The locators of pools that do not go where the feed goes (a pooler's): their answers count too. */
    private readonly otherLocators: HostLocator[] = [],
  ) {
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
   * Notifications on `channel` whose payload is this box's schema (a mail enqueued,
   * api/store/mail-outbox.ts). Lost while the connection is down, as changes are: a listener
   * that must not miss one also listens for 'reset', and looks for itself.
   */
  onNotice(channel: string, handler: () => void): void {
    this.subscribe(`notice:${channel}`, handler);
    if (this.channels.has(channel)) return;
    this.channels.add(channel);
    this.client?.query(`LISTEN ${this.client.escapeIdentifier(channel)}`).catch(() => undefined); // a lost connection listens again on reconnect
  }

  /** A read fence came back (api/cache/read-fence.ts). */
  onFence(handler: (token: string) => void): void {
    this.subscribe('fence', handler);
  }

  private async connect(): Promise<void> {
    const { client } = await this.locator.connected({ application_name: CHANGE_FEED_APPLICATION_NAME });
    client.on('notification', (msg) => {
      if (msg.channel === 'boxauth') this.dispatch(msg.payload);
      else if (msg.payload === this.currentSchema) this.publish(`notice:${msg.channel}`);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      this.currentSchema = (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s;
      await client.query('LISTEN boxauth');
      for (const channel of this.channels) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
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
  }

  /** Pings `client` while it is the feed's; cuts it when UNANSWERED_PINGS in a row go unanswered. */
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
      client.query('SELECT 1').then(
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

  private dispatch(payload: string | undefined): void {
    if (!payload) return;
    let change: Change & { schema: string; fence?: string };
    try {
      change = JSON.parse(payload) as Change & { schema: string; fence?: string };
    } catch {
      return;
    }
    if (change.schema !== this.currentSchema) return; // another box sharing the database
    if (change.fence !== undefined) this.publish('fence', change.fence);
    else this.publish(`change:${change.table}`, change);
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

  /** The box's schema: announcements name it, since boxes may share a database. */
  get schema(): string {
    return this.currentSchema;
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
