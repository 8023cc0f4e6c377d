// A keyed work queue, as client-go's workqueue: a key waits at most once; a key
// being worked on is never handed to a second worker (added again meanwhile, it
// is marked dirty and queued once the work is done); a failed key comes back
// after a per-key exponential backoff that resets on success.
//
// A key added with `force` is handed out with force=true: the controller must do
// the whole reconcile (drift check) even when nothing it watches has changed.
//
// A key added as `background` (the periodic resync's) waits behind every other:
// a resync that enqueues thousands of objects must not make a change someone
// just applied wait for all of them. Added again in the foreground, it moves up.
import { systemClock, type Clock } from './clock.js';

export interface QueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  clock?: Clock;
}

export type Work = (key: string, force: boolean) => Promise<{ requeueAfterMs?: number } | void>;

export class WorkQueue {
  private readonly ready: string[] = [];
  /** Keys of the background lane, handed out when `ready` is empty. */
  private readonly later: string[] = [];
  private readonly inLater = new Set<string>();
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly forced = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; cancel: () => void }>();
  private waiters: (() => void)[] = [];
  private stopping = false;
  private running: Promise<void>[] = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly clock: Clock;

  constructor(opts: QueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 250;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.clock = opts.clock ?? systemClock;
  }

  /** Keys waiting to be handed out (not those being worked on or delayed). */
  get length(): number {
    return this.ready.length + this.later.length;
  }

  /** Keys being worked on. */
  get active(): number {
    return this.processing.size;
  }

  add(key: string, opts: { force?: boolean; background?: boolean } = {}): void {
    if (this.stopping) return;
    if (opts.force) this.forced.add(key);
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) {
      if (!opts.background && this.inLater.delete(key)) {
        this.later.splice(this.later.indexOf(key), 1);
        this.ready.push(key);
      }
      return;
    }
    this.queued.add(key);
    if (opts.background) {
      this.later.push(key);
      this.inLater.add(key);
    } else this.ready.push(key);
    this.waiters.shift()?.();
  }

  /** Adds the key after `ms`; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number, opts: { force?: boolean } = {}): void {
    if (this.stopping) return;
    if (ms <= 0) return this.add(key, opts);
    const at = this.clock.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) {
      if (opts.force) this.forced.add(key);
      return;
    }
    pending?.cancel();
    const cancel = this.clock.setTimeout(() => {
      this.timers.delete(key);
      this.add(key, opts);
    }, ms);
    this.timers.set(key, { at, cancel });
  }

  /** Adds the key after its backoff: base·2^failures, capped. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets the key's backoff. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  private async next(): Promise<string | undefined> {
    while (!this.ready.length && !this.later.length) {
      if (this.stopping) return undefined;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    let key = this.ready.shift();
    if (key === undefined) {
      key = this.later.shift()!;
      this.inLater.delete(key);
    }
    this.queued.delete(key);
    this.processing.add(key);
    return key;
  }

  private done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Starts `concurrency` workers calling `work`; a throw requeues the key with backoff. */
  run(concurrency: number, work: Work, onError: (key: string, err: unknown, retryInMs: number) => void): void {
    for (let i = 0; i < concurrency; i++) {
      this.running.push(
        (async () => {
          for (;;) {
            const key = await this.next();
            if (key === undefined) return;
            const force = this.forced.delete(key);
            try {
              const result = await work(key, force);
              this.forget(key);
              if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
            } catch (err) {
              if (force) this.forced.add(key); // the retry must still do the whole reconcile
              onError(key, err, this.addRateLimited(key));
            } finally {
              this.done(key);
            }
          }
        })(),
      );
    }
  }

  /** Hands out nothing more; resolves once work in progress has finished. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const { cancel } of this.timers.values()) cancel();
    this.timers.clear();
    for (const wake of this.waiters.splice(0)) wake();
    await Promise.all(this.running);
  }
}
