// Time in the operator: the clock it reads and waits on, and the formats the
// API server writes time in.
//
// Work queue backoffs and delays, informer relists and watchdogs, Lease
// renewals, condition timestamps and Event de-duplication all go through a
// Clock, so that their tests move time by hand (test/support/clock.ts) and
// never sleep.

export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Calls `fn` once, `ms` from now; calling the answer cancels it. */
  setTimeout(fn: () => void, ms: number): () => void;
}

/** The system's clock. Its timers hold the process open as Node's do: whoever sets one cancels it when stopping. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

/** Resolves `ms` from now by `clock`, or as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const wake = (): void => {
      cancel();
      signal?.removeEventListener('abort', wake);
      resolve();
    };
    const cancel = clock.setTimeout(wake, ms);
    signal?.addEventListener('abort', wake, { once: true });
  });
}

/** metav1.Time: RFC 3339 in whole seconds, as the API server stores it (a fraction would show up as a change). */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime (a Lease's acquireTime and renewTime): RFC 3339 with microseconds. */
export function kubeMicroTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}
