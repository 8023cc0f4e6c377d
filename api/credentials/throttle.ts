// Throttling of failed client authentication, per client id and per address,
// in fixed windows, in the memory of each process: it runs before any argon2
// check, on the one path a stranger with curl can drive, and must cost nothing
// there. An attempt is counted BEFORE its secret is checked (and given back when
// the secret was right), so a burst of parallel guesses cannot get more checks
// than the limit by all reading the count at once. A client presenting a secret
// this process has verified before never meets the throttle (client-auth.ts), so
// a flood of wrong secrets for a client id does not lock its real owner out.
// Requests naming a client by client_id alone that miss (an unknown id, a code or
// token not that client's) count for their address only: counted per client id,
// anyone could lock a public client out with made-up tokens.
// With several processes the limits hold per process. The same fixed windows
// also bound what a stranger may make the box write: device codes per address.
import { ApiError } from '../errors.js';

/**
 * What a window counts: attempts naming one client id, or coming from one address.
 * The kind decides the limit (`limitOf`); `windowKey` is the one place it becomes a string.
 */
export type ThrottleKey = { kind: 'client'; id: string } | { kind: 'address'; address: string };

export const clientKey = (id: string): ThrottleKey => ({ kind: 'client', id });
export const addressKey = (address: string): ThrottleKey => ({ kind: 'address', address });

/** The key of a window in the map (kinds apart by their prefix, so a client id never meets an address). */
function windowKey(key: ThrottleKey): string {
  switch (key.kind) {
    case 'client':
      return `client:${key.id}`;
    case 'address':
      return `addr:${key.address}`;
  }
}

interface Window {
  start: number;
  attempts: number;
}

/** Per address a person (or a client) may fail more often than per account: many share one NAT. */
export const ADDRESS_FACTOR = 4;

export class TooManyAttempts extends ApiError {
  constructor(retryAfterSeconds: number, what = 'failed client authentications') {
    super(429, 'too_many_requests', `too many ${what}; try again in ${retryAfterSeconds} s`, {
      'Retry-After': String(retryAfterSeconds),
    });
  }
}

export class FailureThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly maxKeys: number;
  private readonly what: string | undefined;
  private readonly now: () => number;

  constructor(
    private readonly limitOf: (key: ThrottleKey) => number,
    private readonly windowMs: number,
    /** maxKeys: windows kept (the oldest go first); what: what is counted, as the 429 names it. */
    options: { maxKeys?: number; what?: string; now?: () => number } = {},
  ) {
    this.maxKeys = options.maxKeys ?? 100_000;
    this.what = options.what;
    this.now = options.now ?? Date.now;
  }

  /**
   * Counts an attempt for each key; TooManyAttempts (and nothing counted) when one
   * is over its limit. A refused attempt adds no window: otherwise one address,
   * refused at once, could send made-up client ids until the oldest windows
   * (its own among them) were evicted, and start afresh.
   */
  reserve(keys: ThrottleKey[]): void {
    const now = this.now();
    for (const key of keys) {
      const w = this.windows.get(windowKey(key));
      if (w && now - w.start < this.windowMs && w.attempts >= this.limitOf(key)) {
        throw new TooManyAttempts(Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000)), this.what);
      }
    }
    for (const key of keys) this.window(windowKey(key), now).attempts++;
  }

  /** Gives back the attempts of a successful authentication. */
  release(keys: ThrottleKey[]): void {
    for (const key of keys) {
      const w = this.windows.get(windowKey(key));
      if (w && w.attempts > 0) w.attempts--;
    }
  }

  private window(key: string, now: number): Window {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      this.windows.delete(key);
      // Oldest first: a Map iterates in insertion order, and a renewed window is re-inserted.
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!);
      w = { start: now, attempts: 0 };
      this.windows.set(key, w);
    }
    return w;
  }
}
