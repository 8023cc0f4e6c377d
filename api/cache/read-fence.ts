// Read-your-writes for records served from memory. A process's caches hear of a
// change through the change feed, a moment after its commit; a GET that follows a
// PUT made on another process must not be answered in that moment. So before a
// read from the cache, the process sends a fence through the same channel
// (pg_notify) and waits until its own feed hears it back: PostgreSQL delivers
// notifications in commit order, so every change committed before the fence was
// sent has reached the caches by then. Reads arriving together share a fence (one
// in flight at a time, the next gathering whoever arrives meanwhile), so under
// load a fence costs a fraction of a query per read instead of the read itself.
import { randomUUID } from 'node:crypto';
import type { Pool } from '../db/pool.js';
import type { ChangeFeed } from '../db/notify.js';
import { sendFence } from '../store/box-channel.js';

/** A fence not heard back within this long is given up: the caller reads from the database. */
const FENCE_TIMEOUT_MS = 2000;

export class ReadFence {
  private readonly instance = randomUUID();
  private sent = 0;
  /** Fences sent and not heard back yet, by token. */
  private readonly waiting = new Map<string, { heard: () => void; lost: (err: Error) => void }>();
  /** The fence that gathers readers now, before it is sent; and the one in flight. */
  private gathering: Promise<void> | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly feed: ChangeFeed,
    private readonly timeoutMs = FENCE_TIMEOUT_MS,
  ) {
    feed.onFence((token) => this.waiting.get(token)?.heard());
    // A fence sent over a connection that is gone will never come back: its readers go to the database now.
    feed.onReset(() => {
      for (const { lost } of this.waiting.values()) lost(new Error('the change feed was lost'));
    });
  }

  /**
   * Resolves once every change committed before the call has reached this
   * process's caches; rejects when that cannot be known (read the database then).
   */
  pass(): Promise<void> {
    if (this.gathering) return this.gathering;
    const after = this.inFlight ?? Promise.resolve();
    const fence = after
      .catch(() => undefined)
      .then(() => {
        this.gathering = undefined; // readers from now on need a fence sent after them
        this.inFlight = fence;
        return this.send();
      })
      .finally(() => {
        if (this.inFlight === fence) this.inFlight = undefined;
      });
    this.gathering = fence;
    return fence;
  }

  private async send(): Promise<void> {
    if (!this.feed.connected) throw new Error('the change feed is not connected');
    const token = `${this.instance}:${++this.sent}`;
    let timer: NodeJS.Timeout | undefined;
    const back = new Promise<void>((resolve, reject) => {
      this.waiting.set(token, { heard: resolve, lost: reject });
      timer = setTimeout(() => reject(new Error('the fence did not come back in time')), this.timeoutMs);
    });
    try {
      // Both awaited at once: `back` may fail while the query still waits (for a pool connection,
      // say), and a rejection nobody awaits yet would end the process.
      await Promise.all([sendFence(this.pool, this.feed.channel, token), back]);
    } finally {
      clearTimeout(timer);
      this.waiting.delete(token);
    }
  }
}
