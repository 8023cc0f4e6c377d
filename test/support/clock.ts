// Time by hand for the operator's unit tests: a Clock (operator/clock.ts) that
// moves only when the test says, so backoffs, watchdogs and Lease expiries run
// in no time and in a known order, and nothing sleeps on the wall clock.
import type { Clock } from '../../operator/clock.js';

interface Timer {
  at: number;
  order: number;
  fn: () => void;
}

export class ManualClock implements Clock {
  private time: number;
  private timers: Timer[] = [];
  private made = 0;

  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): () => void {
    const timer = { at: this.time + Math.max(0, ms), order: this.made++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Timers set and not yet fired or cancelled. */
  get pending(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`. Each timer due on the way fires at its own
   * time, in order; the work it sets off runs (settle()) before the next one,
   * so timers that work sets within the span fire too.
   */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = end;
    await settle();
  }
}

/**
 * One turn of the event loop: every promise continuation already queued runs
 * first, and I/O that is ready is handled. Not a wait on the wall clock.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Turns the event loop until `condition` holds: for work that waits on real
 * I/O (a fake API server on loopback). Fails, naming `what`, after `timeoutMs`.
 */
export async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs} ms`);
    await settle();
  }
}
