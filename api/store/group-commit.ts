// Group commit: concurrent requests share one statement (and so one commit and
// its fsync) instead of paying for one each. Each request still waits until its
// own item is committed. While a batch is in flight, newly arriving items queue
// up and go together in the next one: under load a commit carries many items;
// alone, a request waits for just its own.
//
// One statement means one fate: a single row the database refuses (a value it cannot
// store, a broken constraint) fails the statement for every row in it. So a failed batch
// of several items is committed again item by item, each in a statement of its own, and
// only the request whose item fails again fails: a hostile request cannot fail the honest
// ones it happened to share a batch with.
//
// With traces on, a batch is one span (batchSpan, api/tracing.ts) linked to the spans of the
// requests it carried, its statements beneath it; each of those requests' spans names it back.
import type { Span } from '@opentelemetry/api';
import { batchSpan, spanForBatch, tracingOn } from '../tracing.js';

export interface GroupCommitOptions<I> {
  /** Batches running at once; more lets PostgreSQL overlap their fsyncs. */
  maxInFlight?: number;
  maxBatch?: number;
  /** Told the size of each batch before it runs (a metric). */
  onBatch?: (size: number) => void;
  /**
   * Items with the same key never share a batch (the later one waits for the
   * next), for statements where two rows about one record would collide.
   */
  key?: (item: I) => string;
  /**
   * Whether an error of a batch may be the fault of one of its items, so that retrying them
   * one by one is worth it (default: always). No for failures of the database itself (a lost
   * connection, a full pool): there each retry would fail again, after its own wait.
   */
  isolate?: (err: Error) => boolean;
}

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (err: Error) => void;
  /** The span of the request that submitted it (traces on). */
  span: Span | undefined;
}

export class GroupCommit<I, R> {
  private queue: Pending<I, R>[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;

  /** `run` commits a batch and returns one result per item, in order. */
  constructor(
    private readonly run: (items: I[]) => Promise<R[]>,
    private readonly options: GroupCommitOptions<I> = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 2;
    this.maxBatch = options.maxBatch ?? 500;
  }

  /** Resolves with the item's result once its batch is committed. */
  submit(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject, span: tracingOn() ? spanForBatch() : undefined });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.take();
      this.options.onBatch?.(batch.length);
      this.inFlight++;
      void this.commit(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  /**
   * Settles every item of the batch. The retries hold the batch's slot and go in queue order,
   * one at a time, so maxInFlight and the key rule hold for them as for any batch.
   */
  private async commit(batch: Pending<I, R>[]): Promise<void> {
    let results: R[];
    try {
      const items = batch.map((p) => p.item);
      results = await (tracingOn()
        ? batchSpan(
            'group commit',
            batch.map((p) => p.span),
            () => this.run(items),
          )
        : this.run(items));
    } catch (err) {
      if (batch.length > 1 && (this.options.isolate?.(err as Error) ?? true)) {
        for (const p of batch) await this.commit([p]);
      } else {
        batch.forEach((p) => p.reject(err as Error));
      }
      return;
    }
    batch.forEach((p, i) => p.resolve(results[i]!));
  }

  /** The next batch: queue order, skipping items whose key is already in it. */
  private take(): Pending<I, R>[] {
    const key = this.options.key;
    if (!key) return this.queue.splice(0, this.maxBatch);
    const batch: Pending<I, R>[] = [];
    const rest: Pending<I, R>[] = [];
    const keys = new Set<string>();
    for (const p of this.queue) {
      const k = key(p.item);
      if (batch.length < this.maxBatch && !keys.has(k)) {
        keys.add(k);
        batch.push(p);
      } else {
        rest.push(p);
      }
    }
    this.queue = rest;
    return batch;
  }
}
