// A read-through cache of database records, kept honest by the change feed: an
// entry is dropped when its row changes anywhere, and the whole cache is
// bypassed while the feed is disconnected (a missed announcement would otherwise
// serve a stale record). What it held when the feed was lost may answer while the
// database cannot (./memory.ts): a token known a moment before an outage is still
// known during it.
import type { ChangeFeed } from '../db/notify.js';
import { loadOrRemember } from './memory.js';

export class RecordCache<V> {
  private entries = new Map<string, V>();
  private loading = new Map<string, Promise<V | undefined>>();
  /** The entries at the moment the feed was lost. */
  private remembered = new Map<string, V>();
  /** Bumped on every invalidation: a load that raced with one is not cached. */
  private epoch = 0;

  constructor(
    private readonly feed: ChangeFeed,
    table: string,
    private readonly load: (key: string) => Promise<V | undefined>,
    private readonly maxEntries = 10_000,
  ) {
    // A row is cached under its id, or under its other key (see Change.key).
    feed.onChange(table, (change) => this.invalidate(change.key ?? change.id, change.id));
    feed.onReset(() => {
      // Lost: remember what was current. Back: changes made meanwhile were never announced.
      const current = this.entries;
      this.clear();
      if (!feed.connected) this.remembered = current;
    });
  }

  async get(key: string): Promise<V | undefined> {
    if (!this.feed.connected) return loadOrRemember(this.feed, () => this.load(key), this.remembered.get(key));
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    let pending = this.loading.get(key);
    if (!pending) {
      const epoch = this.epoch;
      pending = this.load(key).then(
        (value) => {
          this.loading.delete(key);
          if (value !== undefined && epoch === this.epoch) this.set(key, value);
          return value;
        },
        (err: unknown) => {
          this.loading.delete(key);
          throw err;
        },
      );
      this.loading.set(key, pending);
    }
    return pending;
  }

  set(key: string, value: V): void {
    if (this.entries.size >= this.maxEntries) {
      // Drop the oldest entry; Map iterates in insertion order.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, value);
  }

  invalidate(...keys: string[]): void {
    this.epoch++;
    for (const key of keys) {
      this.entries.delete(key);
      this.loading.delete(key);
      this.remembered.delete(key);
    }
  }

  clear(): void {
    this.epoch++;
    this.entries = new Map();
    this.loading.clear();
    this.remembered = new Map();
  }
}
