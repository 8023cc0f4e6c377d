// The outbox of notices (api/store/notices.ts), in every process of a box that runs it: a
// dispatcher that fans each event out into notices, and a sender that sends them. Both wake when
// told (NOTIFY at the commit of an event or a notice) and every POLL_MS anyway (a notification lost
// with a connection, a retry come due).
//
// Dispatch: one transaction at a time per box (a lock of the box's), taking the oldest events in
// order, asking every kind for its notices, writing them and removing the events: an event is
// fanned out once, whole, or not yet. A give-up is never fanned out to the destination it is about,
// and the give-up of a notice that told of a give-up is fanned out to no one (no loops).
//
// Send: the head of each queue only (a destination's notices about one subject: a person's logout
// tokens or events reach a receiver in order), leased longer than the deadline, at most
// BOXAUTH_NOTICE_SENDING_AT_ONCE at once in this process and a quarter of that to one destination
// (a slow receiver holds a few places, never all). Acknowledged: the row goes. Failed: it waits,
// doubling its wait, and the later notices of its queue wait behind it; another queue is not held. Refused (NoticeRefused) or failing past its kind's giveUpAfterMs: removed with an
// audit event, in one transaction. A process killed while sending leaves the row to its lease:
// then any process sends it. A notice is sent at least once, and twice only if a process died
// between the receiver's answer and the row's removal.
import type { Audit, AuditEvent } from '../audit.js';
import type { NoticeConfig } from '../config.js';
import type { ChangeFeed } from '../db/notify.js';
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import { errorMessage } from '../errors.js';
import { LeasedSends } from '../leased-sends.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import {
  claimEvents,
  claimNotices,
  eventsWaiting,
  insertNotices,
  noticeQueues,
  NOTICE_CHANNEL,
  NOTICE_EVENT_CHANNEL,
  removeEvents,
  retryNotice,
  sentNotice,
  type ClaimedNotice,
} from '../store/notices.js';
import {
  metricsDestination,
  NoticeRefused,
  type BoxEvent,
  type EventFacts,
  type NoticeDraft,
  type NoticeKind,
  type NoticeKindName,
} from './kinds.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: { baseUrl: string; notices: NoticeConfig };
  pool: Pool;
  feed: ChangeFeed;
  log: Logger;
  audit: Audit;
  metrics: Metrics;
}

const POLL_MS = 2000;
/** Events fanned out in one transaction. */
const EVENTS_AT_ONCE = 100;
/** The metrics' counts of the queues, at most this often. */
const COUNT_EVERY_MS = 10_000;

/** Seconds to wait after the `attempts`th attempt failed: `first`, doubling, up to `longest`. */
export function retryDelaySeconds(attempts: number, first: number, longest: number): number {
  return Math.min(longest, first * 2 ** Math.min(30, Math.max(0, attempts - 1)));
}

/** The heads of one destination's queues sent at once (or waiting for a retry): a quarter of the process's places, at least one. */
export function perDestination(sendingAtOnce: number): number {
  return Math.max(1, Math.floor(sendingAtOnce / 4));
}

/** A lease longer than the deadline by a margin: a send that ends at its deadline still removes its row. */
export function leaseSeconds(timeoutMs: number): number {
  return Math.ceil(timeoutMs / 1000) + 30;
}

/**
 * The notices `drafts` may become for `event`: none for the give-up of a notice that told of a
 * give-up, and never a give-up told to the destination it is about.
 */
export function draftsToKeep(kind: NoticeKindName, event: BoxEvent, drafts: NoticeDraft[]): NoticeDraft[] {
  const e = event.event;
  if (e.event !== 'notice') return drafts;
  if (event.facts.quietGiveUp) return [];
  return drafts.filter((d) => !(e.kind === kind && d.destination === e.destination));
}

/** Whether a failed notice is given up now: refused, or failing longer than its kind allows. */
export function givesUp(
  err: unknown,
  notice: Pick<ClaimedNotice, 'createdAt'>,
  kind: Pick<NoticeKind, 'giveUpAfterMs'>,
  now: number,
): boolean {
  return err instanceof NoticeRefused || now - notice.createdAt.getTime() >= kind.giveUpAfterMs;
}

/** A promise that rejects once `signal` aborts: a send that ignores its signal frees its place all the same. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const abort = (): void => reject(new Error('no acknowledgement before the deadline'));
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}

export class NoticeOutbox {
  private readonly kinds: ReadonlyMap<NoticeKindName, NoticeKind>;
  private readonly sends: LeasedSends<ClaimedNotice>;
  private dispatching: Promise<void> | undefined;
  private dispatchAgain = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private countedAt = 0;

  constructor(
    private readonly svc: Needs,
    kinds: ReadonlyMap<NoticeKindName, NoticeKind>,
  ) {
    this.kinds = kinds;
    const { sendingAtOnce, timeoutMs } = svc.config.notices;
    this.sends = new LeasedSends(
      sendingAtOnce,
      (free) => claimNotices(svc.pool, [...this.kinds.keys()], free, leaseSeconds(timeoutMs), perDestination(sendingAtOnce)),
      (notice) => this.deliver(notice),
      (err) => svc.log.warn({ err: errorMessage(err) }, 'the outbox of notices could not be read; trying again'),
    );
  }

  start(): void {
    this.svc.feed.onNotice(NOTICE_EVENT_CHANNEL, () => this.dispatch());
    this.svc.feed.onNotice(NOTICE_CHANNEL, () => this.send());
    this.svc.feed.onReset(() => this.wake()); // notifications were lost while the feed was away
    this.timer = setInterval(() => {
      this.wake();
      this.count();
    }, POLL_MS);
    this.timer.unref();
    this.wake();
  }

  /**
   * Nothing new is dispatched or claimed; what is under way may finish within `waitMs` (the
   * shutdown's drain). A send that takes longer is left to its lease.
   */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sends.stop(waitMs, [this.dispatching]);
  }

  private wake(): void {
    this.dispatch();
    this.send();
  }

  // --- fan-out

  private dispatch(): void {
    if (this.stopped) return;
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    this.dispatchAgain = false;
    this.dispatching = this.fanOutBatch()
      .then(
        (taken) => {
          if (taken === EVENTS_AT_ONCE) this.dispatchAgain = true; // more may wait
        },
        (err: unknown) => this.svc.log.warn({ err: errorMessage(err) }, 'the outbox of notices could not be dispatched; trying again'),
      )
      .finally(() => {
        this.dispatching = undefined;
        if (this.dispatchAgain) this.dispatch();
      });
  }

  /** Fans out the oldest events (one transaction); the number taken, or undefined when another process holds the fan-out. */
  private async fanOutBatch(): Promise<number | undefined> {
    return withTransaction(this.svc.pool, async (tx) => {
      const events = await claimEvents(tx, EVENTS_AT_ONCE);
      if (!events) return undefined;
      for (const event of events) await this.fanOut(tx, event);
      await removeEvents(
        tx,
        events.map((e) => e.id),
      );
      return events.length;
    });
  }

  /** One event through every kind, in `tx`. */
  private async fanOut(tx: Transaction, event: BoxEvent): Promise<void> {
    if (event.facts.quietGiveUp) return;
    for (const [name, kind] of this.kinds) {
      const drafts = draftsToKeep(name, event, await kind.fanOut(tx, event));
      await insertNotices(tx, name, event.id, drafts, event.event.event === 'notice');
    }
  }

  // --- sending

  private send(): void {
    if (this.kinds.size) this.sends.wake();
  }

  private async deliver(notice: ClaimedNotice): Promise<void> {
    const { pool, log, metrics, config } = this.svc;
    const kind = this.kinds.get(notice.kind)!;
    const labels = { kind: notice.kind, destination: notice.destination };
    const counted = { kind: notice.kind, destination: metricsDestination(notice) };
    const deadline = AbortSignal.timeout(config.notices.timeoutMs);
    const started = Date.now();
    try {
      await Promise.race([kind.send(notice, deadline), whenAborted(deadline)]);
      if (await sentNotice(pool, notice)) {
        metrics.notices.inc({ ...counted, result: 'sent' });
        metrics.noticeDelivery.observe({ kind: notice.kind }, (Date.now() - notice.createdAt.getTime()) / 1000);
      }
      log.debug(
        {
          notice: notice.id,
          ...labels,
          attempts: notice.attempts,
          ms: Date.now() - started,
          waitedMs: started - notice.createdAt.getTime(),
        },
        'notice sent',
      );
    } catch (err) {
      const why = errorMessage(err);
      if (givesUp(err, notice, kind, Date.now())) {
        await this.giveUp(notice, why).catch((e: unknown) =>
          log.error(
            { notice: notice.id, ...labels, err: errorMessage(e) },
            'giving up a notice failed; its lease ends and it is tried again',
          ),
        );
        return;
      }
      metrics.notices.inc({ ...counted, result: 'retrying' });
      const delay = retryDelaySeconds(notice.attempts, config.notices.firstRetrySeconds, config.notices.longestRetrySeconds);
      log.warn(
        { notice: notice.id, ...labels, attempts: notice.attempts, retryInSeconds: delay, err: why },
        'sending a notice failed; it is tried again',
      );
      await retryNotice(pool, notice, delay, why).catch(() => undefined); // not recorded: the lease ends, and it is tried then
    }
  }

  /** The notice taken out of the outbox with its audit event, in one transaction: neither without the other. */
  private async giveUp(notice: ClaimedNotice, why: string): Promise<void> {
    const labels = { kind: notice.kind, destination: notice.destination };
    const event: AuditEvent = { event: 'notice', action: 'given-up', ...labels, reason: why.slice(0, 300) };
    // A notice that told of a give-up: its own give-up is told to no one (the dispatcher reads this).
    const facts: EventFacts | undefined = notice.quiet ? { quietGiveUp: true } : undefined;
    const removed = await withTransaction(this.svc.pool, async (tx) => {
      if (!(await sentNotice(tx, notice))) return false; // another process took it over
      await this.svc.audit.recordIn(tx, event, facts);
      return true;
    });
    if (!removed) return;
    this.svc.log.error({ notice: notice.id, ...labels, attempts: notice.attempts, err: why }, 'a notice was given up');
    this.svc.metrics.notices.inc({ kind: notice.kind, destination: metricsDestination(notice), result: 'given_up' });
  }

  // --- metrics

  /** The queues' sizes and ages for the metrics, now and then (every process counts the box's tables). */
  private count(): void {
    if (Date.now() - this.countedAt < COUNT_EVERY_MS) return;
    this.countedAt = Date.now();
    const { pool, metrics } = this.svc;
    Promise.all([noticeQueues(pool), eventsWaiting(pool)]).then(
      ([queues, events]) => {
        metrics.noticesWaiting.reset();
        metrics.noticeOldestSeconds.reset();
        // Queues named alike in the metrics (the streams of one receiver) add up, and the oldest is theirs.
        const byLabel = new Map<string, { kind: NoticeKindName; destination: string; waiting: number; oldestSeconds: number }>();
        for (const q of queues) {
          const destination = q.receiver ?? q.destination;
          const key = JSON.stringify([q.kind, destination]);
          const seen = byLabel.get(key);
          if (seen) {
            seen.waiting += q.waiting;
            seen.oldestSeconds = Math.max(seen.oldestSeconds, q.oldestSeconds);
          } else byLabel.set(key, { kind: q.kind, destination, waiting: q.waiting, oldestSeconds: q.oldestSeconds });
        }
        for (const { kind, destination, waiting, oldestSeconds } of byLabel.values()) {
          metrics.noticesWaiting.set({ kind, destination }, waiting);
          metrics.noticeOldestSeconds.set({ kind, destination }, oldestSeconds);
        }
        metrics.noticeEventsWaiting.set(events.count);
      },
      () => undefined,
    );
  }
}

/**
 * Starts the outbox of this process with the kinds of notice the box sends, by name
 * (api/notice-kinds.ts noticeKinds), and the rules every POST to a receiver is held to: the allowed ranges of
 * BOXAUTH_NOTICE_ALLOWED_ADDRESSES and of the runtime setting (PUT /settings/notices), read at
 * each use so that a change on any process holds at once.
 */
export function startNotices(svc: Needs, kinds: ReadonlyMap<NoticeKindName, NoticeKind>): NoticeOutbox {
  const outbox = new NoticeOutbox(svc, kinds);
  outbox.start();
  return outbox;
}
