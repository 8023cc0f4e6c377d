// Which host of DATABASE_URL to write to, now. node-postgres connects to one host;
// libpq's answer to a failover is a list of hosts and target_session_attrs, and this
// is that answer for a long-running process: it finds the host that fits (asking
// each server what it is), hands it to every new connection, and keeps watching it,
// so that when the primary dies or stops being the primary the process finds the new
// one by itself, without a restart.
//
// The watch is one query a second on a connection of its own. A connection that breaks
// (a server killed: its sockets reset) is looked into at once; a server that stops
// answering (a machine gone, its packets dropped) is given up after two checks without
// an answer, and every connection to it is cut so that nothing waits on it for the
// kernel's minutes of TCP retries. Until another host fits, find() fails at once with
// DatabaseUnreachable (answered 503), while the hosts are asked again in the background.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { errorMessage } from '../errors.js';
import { pickHost, type DatabaseUrl, type HostPort, type ServerState } from '../database-url.js';

/** How often the host in use is asked whether it still is what we want. */
export const CHECK_INTERVAL_MS = 1000;
/** After a search found nothing, searches wait this long before asking the hosts again (requests fail at once meanwhile). */
const RETRY_MS = 250;
/** Checks in a row without an answer before a host that does not answer is given up. */
const SILENT_CHECKS = 2;
/** How the watch's connection is named in pg_stat_activity. */
export const WATCH_APPLICATION_NAME = 'boxauth host check';

/** No host of the URL can be used now: connections refused, timed out, or every server the wrong kind. */
export class DatabaseUnreachable extends Error {}

export interface Located {
  host: HostPort;
  /** node-postgres' URL for that host. */
  url: string;
}

/** What the locator tells of the host in use (a log line, a metric). */
export type HostChange =
  | { kind: 'lost'; host: string; why: string }
  /** moved: another host than the one used before (a failover), not the first found nor the same one again. */
  | { kind: 'found'; host: string; moved: boolean };

export interface LocatorOptions {
  /** The deadline of a connection and of each check (connect, then one query). */
  timeoutMs: number;
  onChange?: (change: HostChange) => void;
  /**
   * The host a run before this one used (a host's box opened again after idling, api/host/): used
   * at once, without asking the hosts first. A connection to it that fails, or the watch, looks again.
   */
  known?: Located;
}

const STATE_QUERY = "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') = 'on' AS read_only";
// A primary's timeline is the first 8 hex digits of the name of the WAL file it writes
// (pg_walfile_name uses the insertion timeline: the new one from the instant of a promotion,
// where pg_control_checkpoint() waits for the next checkpoint). A standby cannot be asked.
const TIMELINE_QUERY = "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int AS timeline";

/**
 * Asks a connected client what its server is; with `timeline`, a primary's timeline too, where the
 * server tells it (PostgreSQL-compatible services without WAL functions, Aurora's, do not: then
 * none, and the URL's order decides between two primaries as libpq's does).
 */
export async function serverState(client: Pick<pg.Client, 'query'>, timeline = false): Promise<ServerState> {
  const row = (await client.query<{ recovery: boolean; read_only: boolean }>(STATE_QUERY)).rows[0]!;
  const state: ServerState = { inRecovery: row.recovery, readOnly: row.read_only };
  if (timeline && !state.inRecovery) {
    state.timeline = await client.query<{ timeline: number }>(TIMELINE_QUERY).then(
      (r) => r.rows[0]!.timeline,
      () => undefined,
    );
  }
  return state;
}

function hostName(host: HostPort): string {
  return `${host.host.includes(':') ? `[${host.host}]` : host.host}:${host.port}`;
}

/** What a server that does not fit is, in words. */
function kindOf(state: ServerState): string {
  if (state.inRecovery) return 'a standby';
  return state.readOnly ? 'read-only' : 'a primary';
}

const ignore = (): void => undefined;

export class HostLocator extends EventEmitter {
  private located: Located | undefined;
  /** The host used last, kept after it is given up: finding another is a failover. */
  private lastUsed: Located | undefined;
  /** Hosts found after another was used (failovers), for the metrics. */
  moves = 0;
  /**
   * Answers from a host that fits, so far: found, checked, or a statement of a connection to it
   * that succeeded (answered()). Any, since a moment, means the database could be written since.
   */
  answers = 0;
  private searching: Promise<Located> | undefined;
  private failed: { at: number; err: DatabaseUnreachable } | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private watcher: { client: pg.Client; located: Located; broken: boolean } | undefined;
  private checking: Promise<void> | undefined;
  private silent = 0;
  private stopped = false;
  /** Connections handed out, by the host they went to: cut when that host is given up. */
  private readonly clients = new Map<pg.Client, Located>();

  constructor(
    readonly url: DatabaseUrl,
    private readonly options: LocatorOptions,
  ) {
    super();
    this.located = this.lastUsed = options.known;
  }

  /** The host in use, if one is known now. */
  get current(): Located | undefined {
    return this.located;
  }

  /**
   * The host to connect to: the one in use, or found now (one search at a time, shared by every
   * caller). Once a search has found nothing, no caller waits for the next: each is refused at
   * once while it runs in the background (started here at most every RETRY_MS, and by the
   * watch), so that during an outage a request never waits out the connect timeout of hosts
   * known to be down, and what may answer from memory answers at once.
   */
  find(): Promise<Located> {
    if (this.located) return Promise.resolve(this.located);
    if (!this.failed) return this.startSearch();
    if (Date.now() - this.failed.at >= RETRY_MS) this.startSearch().catch(ignore);
    return Promise.reject(this.failed.err);
  }

  private startSearch(): Promise<Located> {
    this.searching ??= this.search().finally(() => {
      this.searching = undefined;
    });
    return this.searching;
  }

  private async search(): Promise<Located> {
    const order = this.url.loadBalance ? shuffled(this.url.hosts) : this.url.hosts;
    const answers = await Promise.all(
      order.map(async (host) => {
        try {
          return { host, state: await this.ask(host), problem: '' };
        } catch (err) {
          return { host, state: undefined, problem: errorMessage(err) };
        }
      }),
    );
    const host = pickHost(this.url.targetSessionAttrs, answers);
    if (!host || this.stopped) {
      const said = answers.map((a) => `${hostName(a.host)} ${a.state ? `is ${kindOf(a.state)}` : `(${a.problem})`}`);
      const err = new DatabaseUnreachable(
        `no host of the database URL fits target_session_attrs=${this.url.targetSessionAttrs}: ${said.join('; ')}`,
      );
      this.failed = { at: Date.now(), err };
      throw err;
    }
    this.failed = undefined;
    this.answers++;
    const found = { host, url: this.url.forHost(host) };
    const was = this.lastUsed;
    this.located = this.lastUsed = found;
    const moved = was !== undefined && was.url !== found.url;
    if (moved) this.moves++;
    this.options.onChange?.({ kind: 'found', host: hostName(host), moved });
    this.emit('found', found);
    return found;
  }

  /** Connects to `host`, asks what it is, and leaves. */
  private async ask(host: HostPort): Promise<ServerState> {
    const client = await this.connect({ host, url: this.url.forHost(host) });
    try {
      // Timelines matter only to choose between hosts (pickHost): asked where there are several.
      const timeline = this.url.hosts.length > 1;
      return await withDeadline(serverState(client, timeline), this.options.timeoutMs, () => client.end().catch(ignore));
    } finally {
      client.end().catch(ignore);
    }
  }

  /** A client connected to `located` (not registered: the caller ends it). */
  private async connect(located: Located, config: pg.ClientConfig = {}): Promise<pg.Client> {
    const client = new pg.Client({ ...config, connectionString: located.url, connectionTimeoutMillis: this.options.timeoutMs });
    client.on('error', ignore); // what breaks is seen by the query in flight or the next one
    await client.connect();
    return client;
  }

  /**
   * A connection to the host in use, checked to be what target_session_attrs asks for (a server
   * can have changed since it was found), and cut if that host is given up. For connections
   * outside a pool (the change feed's); the pool's are made by locatedClient() below.
   */
  async connected(config: pg.ClientConfig = {}): Promise<{ client: pg.Client; located: Located }> {
    const located = await this.find();
    const client = await this.connect(located, config).catch((err: unknown) => {
      this.suspect(located);
      throw unreachable(located, err);
    });
    try {
      await this.verify(client, located);
    } catch (err) {
      client.end().catch(ignore);
      throw err;
    }
    this.hold(client, located);
    return { client, located };
  }

  /** Throws DatabaseUnreachable (and looks for another host) unless the server of `client` fits. */
  async verify(client: Pick<pg.Client, 'query'>, located: Located): Promise<void> {
    if (this.url.targetSessionAttrs === 'any') return;
    const state = await serverState(client);
    if (pickHost(this.url.targetSessionAttrs, [{ host: located, state }])) return this.answered();
    this.suspect(located);
    throw new DatabaseUnreachable(`${hostName(located.host)} is ${kindOf(state)} now`);
  }

  /** A statement on a connection to the host in use succeeded. */
  answered(): void {
    this.answers++;
  }

  /** Keeps `client` to be cut if its host is given up; forgotten when it ends. */
  hold(client: pg.Client, located: Located): void {
    this.clients.set(client, located);
    client.once('end', () => this.clients.delete(client));
  }

  /**
   * Something went wrong on a connection to `located` (refused, reset, a write refused as
   * read-only): check the host now rather than at the next tick. One connection failing
   * does not give up a host that still answers.
   */
  suspect(located: Located): void {
    if (this.located?.url === located.url) void this.check();
  }

  /** Starts the watch: a check every CHECK_INTERVAL_MS, and a search while no host is in use. */
  watch(): void {
    if (this.watchTimer || this.stopped) return;
    this.watchTimer = setInterval(() => {
      if (this.located) void this.check();
      else this.find().catch(ignore);
    }, CHECK_INTERVAL_MS);
    this.watchTimer.unref();
  }

  private check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const located = this.located;
    if (!located || this.stopped) return;
    let timedOut = false;
    try {
      // Watching: on a connection kept for it. Not watching (a pool of the operator's, a migration): once, on one of its own.
      const state = this.watchTimer
        ? await this.askWatcher(located, () => {
            timedOut = true;
          })
        : await this.ask(located.host);
      this.silent = 0;
      if (pickHost(this.url.targetSessionAttrs, [{ host: located, state }])) this.answered();
      else this.lose(located, `it is ${kindOf(state)} now`);
    } catch (err) {
      this.watcher?.client.end().catch(ignore);
      this.watcher = undefined;
      // A refusal or a reset is an answer; silence may be a pause (a busy server, a stalled event loop): twice, then give up.
      if (timedOut && ++this.silent < SILENT_CHECKS) return;
      this.silent = 0;
      this.lose(located, errorMessage(err));
    }
  }

  /**
   * What the host in use says of itself, asked on the watch's own connection, made again when the
   * host changed or it broke between two checks: one connection closed (an administrator's
   * pg_terminate_backend, a firewall's idle timeout) says nothing of the host, and giving the host
   * up for it would cut every connection of the pool. A host that refuses a new one is given up.
   */
  private async askWatcher(located: Located, onTimeout: () => void): Promise<ServerState> {
    if (this.watcher?.located.url !== located.url || this.watcher.broken) {
      this.watcher?.client.end().catch(ignore);
      this.watcher = undefined;
      const watcher = { client: await this.connect(located, { application_name: WATCH_APPLICATION_NAME }), located, broken: false };
      watcher.client.on('error', () => {
        watcher.broken = true;
      });
      this.watcher = watcher;
    }
    return withDeadline(serverState(this.watcher.client), this.options.timeoutMs, onTimeout);
  }

  /** Gives up `located`: no new connection goes there, and every one that is there is cut. */
  private lose(located: Located, why: string): void {
    if (this.located?.url !== located.url) return;
    this.located = undefined;
    this.options.onChange?.({ kind: 'lost', host: hostName(located.host), why });
    for (const [client, at] of this.clients) if (at.url === located.url) cut(client);
    this.emit('lost', located, why);
    this.find().catch(ignore);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.watchTimer);
    this.watcher?.client.end().catch(ignore);
    this.watcher = undefined;
  }
}

/** The error of a connection to `located` that failed: unreachable, saying where (no credentials). */
export function unreachable(located: Located, err: unknown): DatabaseUnreachable {
  return new DatabaseUnreachable(`${hostName(located.host)}: ${errorMessage(err)}`, { cause: err });
}

/** Ends a connection without waiting for the server: its query in flight fails at once ("Connection terminated"). */
export function cut(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** `work`, or a rejection after `ms` (calling `onTimeout` first). */
async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new DatabaseUnreachable(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
