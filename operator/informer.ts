// An informer: a local cache of one resource type kept current by list + watch,
// calling handlers on every add, update and delete.
//
// Written here rather than taken from @kubernetes/client-node's makeInformer/
// ListWatch (1.4), because that one stops for good on any watch error other than
// 410 (its ERROR callback must restart it), never notices a watch that hangs
// without closing (no timeout, and a watch cannot be aborted before its answer
// arrives), and never relists. This one:
// - relists on start, after 410 Gone, after an error, after the watchdog fired,
//   and every `relistMs` (jittered); a relist diffs against the cache, so handlers
//   see deletes that happened while the watch was down;
// - asks the server to end each watch before the next relist is due
//   (timeoutSeconds) and for bookmarks, so a healthy watch is never silent for
//   long; the watchdog cuts a watch that has been silent for `idleMs`;
// - retries with exponential backoff (200 ms .. 30 s) and never gives up.
import { errorMessage, type Logger } from '../api/public.js';
import { sleep, systemClock, type Clock } from './clock.js';
import { isGone, KubeError, resourcePath, type HttpKube, type KObject, type ResourceType } from './kube.js';
import type { OperatorMetrics } from './metrics.js';

export type InformerEvent = 'add' | 'update' | 'delete';
export type Handler<T> = (event: InformerEvent, obj: T, old: T | undefined) => void;

export interface InformerOptions {
  type: ResourceType;
  /** Only objects with these labels. */
  labelSelector?: string;
  /** Cache metadata only (PartialObjectMetadata): for Secrets, whose values the cache must not hold. */
  metadataOnly?: boolean;
  relistMs: number;
  idleMs: number;
  clock?: Clock;
}

const PAGE = 500;
const META_ACCEPT = (kind: string): string => `application/json;as=${kind};g=meta.k8s.io;v=v1,application/json`;

/** What controllers read from an informer: its cache, and word of every change. */
export interface ObjectCache<T extends KObject = KObject> {
  on(handler: Handler<T>): void;
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): T[];
}

export const keyOf = (obj: { metadata: { namespace?: string; name: string } }): string =>
  obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;

class WatchdogFired extends Error {}

export class Informer<T extends KObject = KObject> implements ObjectCache<T> {
  private readonly store = new Map<string, T>();
  /** The store by namespace: a namespace's objects without a walk over every object (a Box's event lists its namespace's records). */
  private readonly byNamespace = new Map<string, Map<string, T>>();
  private readonly handlers: Handler<T>[] = [];
  private resourceVersion = '';
  private nextRelist = 0;
  private relistCause = 'start';
  private abort: AbortController | undefined;
  private watchError: KubeError | undefined;
  private stopped = false;
  private syncedFlag = false;
  private markSynced!: () => void;
  /** Resolves once the first list has filled the cache. */
  readonly synced = new Promise<void>((resolve) => {
    this.markSynced = resolve;
  });
  private readonly clock: Clock;

  constructor(
    private readonly kube: HttpKube,
    readonly name: string,
    private readonly opts: InformerOptions,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  get hasSynced(): boolean {
    return this.syncedFlag;
  }

  on(handler: Handler<T>): void {
    this.handlers.push(handler);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }

  list(namespace?: string): T[] {
    return [...(namespace === undefined ? this.store : (this.byNamespace.get(namespace) ?? [])).values()];
  }

  private put(key: string, obj: T): void {
    this.store.set(key, obj);
    const ns = obj.metadata.namespace ?? '';
    let objects = this.byNamespace.get(ns);
    if (!objects) this.byNamespace.set(ns, (objects = new Map()));
    objects.set(key, obj);
  }

  private remove(key: string): T | undefined {
    const old = this.store.get(key);
    if (!old) return undefined;
    this.store.delete(key);
    const ns = old.metadata.namespace ?? '';
    const objects = this.byNamespace.get(ns);
    objects?.delete(key);
    if (objects?.size === 0) this.byNamespace.delete(ns);
    return old;
  }

  /** Runs until stop(); errors are logged and retried, never thrown. */
  start(): void {
    void this.run();
  }

  /** Forces a relist now (used by tests of the watchdog and by callers that know the cache is stale). */
  relistSoon(cause: string): void {
    this.relistCause = cause;
    this.nextRelist = 0;
    this.abort?.abort();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  private emit(event: InformerEvent, obj: T, old: T | undefined): void {
    for (const handler of this.handlers) {
      try {
        handler(event, obj, old);
      } catch (err) {
        this.log.error({ informer: this.name, err }, 'informer handler failed'); // a bug: with its stack
      }
    }
  }

  private async run(): Promise<void> {
    let backoffMs = 200;
    while (!this.stopped) {
      try {
        if (!this.resourceVersion || this.clock.now() >= this.nextRelist) await this.relist();
        await this.watch();
        backoffMs = 200;
      } catch (err) {
        if (this.stopped) break;
        this.metrics.watchErrors.inc({ informer: this.name });
        if (isGone(err)) {
          this.log.info({ informer: this.name }, 'watch expired (410 Gone); relisting');
          this.resourceVersion = '';
          this.relistCause = 'gone';
          continue;
        }
        const watchdog = err instanceof WatchdogFired;
        this.log.warn(
          { informer: this.name, err: errorMessage(err) },
          watchdog ? 'watch silent too long; relisting' : 'list/watch failed; retrying',
        );
        this.resourceVersion = '';
        this.relistCause = watchdog ? 'watchdog' : 'error';
        await sleep(this.clock, backoffMs * (0.8 + Math.random() * 0.4));
        backoffMs = Math.min(backoffMs * 2, 30_000);
      }
    }
  }

  private async relist(): Promise<void> {
    const path = resourcePath(this.opts.type);
    const seen = new Map<string, T>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.kube.request<{ items: T[]; metadata: { resourceVersion: string; continue?: string } }>('GET', path, {
        query: { limit: PAGE, continue: cont, labelSelector: this.opts.labelSelector },
        accept: this.opts.metadataOnly ? META_ACCEPT('PartialObjectMetadataList') : undefined,
        timeoutMs: 60_000,
      });
      for (const item of page.items ?? []) seen.set(keyOf(item), item);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion;
    } while (cont);
    this.metrics.relists.inc({ informer: this.name, cause: this.relistCause });
    for (const [key, old] of this.store) {
      if (!seen.has(key)) {
        this.remove(key);
        this.emit('delete', old, old);
      }
    }
    for (const [key, obj] of seen) this.upsert(key, obj);
    this.resourceVersion = rv;
    this.nextRelist = this.clock.now() + this.opts.relistMs * (0.9 + Math.random() * 0.2);
    this.relistCause = 'period';
    if (!this.syncedFlag) {
      this.syncedFlag = true;
      this.markSynced();
    }
  }

  private upsert(key: string, obj: T): void {
    const old = this.store.get(key);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    this.put(key, obj);
    this.emit(old ? 'update' : 'add', obj, old);
  }

  private async watch(): Promise<void> {
    const remainingS = Math.max(1, Math.floor((this.nextRelist - this.clock.now()) / 1000));
    const abort = new AbortController();
    this.abort = abort;
    let watchdogFired = false;
    let cancelWatchdog: (() => void) | undefined;
    const pet = (): void => {
      cancelWatchdog?.();
      cancelWatchdog = this.clock.setTimeout(() => {
        watchdogFired = true;
        abort.abort();
      }, this.opts.idleMs);
    };
    this.watchError = undefined;
    pet();
    try {
      await this.kube.stream(
        resourcePath(this.opts.type),
        {
          query: {
            watch: 1,
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: Math.min(remainingS, 300),
            labelSelector: this.opts.labelSelector,
          },
          accept: this.opts.metadataOnly ? META_ACCEPT('PartialObjectMetadata') : undefined,
          signal: abort.signal,
        },
        (line) => {
          pet();
          this.onWatchEvent(line);
        },
      );
    } catch (err) {
      const failure = this.failedWatch();
      if (failure) throw failure;
      if (watchdogFired) throw new WatchdogFired(`no watch event for ${this.opts.idleMs} ms`, { cause: err });
      if (this.stopped || (abort.signal.aborted && this.nextRelist === 0)) return; // stop() or relistSoon()
      throw err;
    } finally {
      cancelWatchdog?.();
      if (this.abort === abort) this.abort = undefined;
    }
    const failure = this.failedWatch();
    if (failure) throw failure;
  }

  /** The error an event of the watch reported (set by onWatchEvent, while the watch runs). */
  private failedWatch(): KubeError | undefined {
    return this.watchError;
  }

  private onWatchEvent(line: string): void {
    let event: { type: string; object: T & { code?: number; reason?: string; message?: string } };
    try {
      event = JSON.parse(line);
    } catch {
      return;
    }
    const obj = event.object;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.upsert(keyOf(obj), obj);
        break;
      case 'DELETED': {
        const old = this.remove(keyOf(obj));
        this.emit('delete', obj, old);
        break;
      }
      case 'BOOKMARK':
        break;
      case 'ERROR':
        // A Status: 410 means our resourceVersion is too old; anything else ends this watch too.
        this.watchError = new KubeError(obj.code ?? 500, obj.reason ?? 'Error', obj.message ?? 'watch error');
        this.abort?.abort();
        return;
      default:
        return;
    }
    if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
  }
}
