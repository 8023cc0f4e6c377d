// Client secrets at rest are argon2id hashes: a copy of the database does not
// yield them, even when a person chose a weak one. argon2 is slow on purpose, too
// slow for a token endpoint answering thousands of requests a second, so each
// process remembers secrets it has verified, as SHA-256 digests only, bound to
// the hash they were checked against: a changed secret (new hash) is checked
// again with argon2, and a wrong secret never matches a remembered digest.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import argon2 from 'argon2';
import { ApiError } from '../errors.js';

// OWASP's recommended minimum for argon2id: 19 MiB, 2 iterations, 1 lane.
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

// Each argon2 run takes 19 MiB and a core for tens of milliseconds. Two at a
// time per process keep a burst (say, many sign-ups at once) from holding four
// times that memory in libuv's threads without finishing any sooner.
const MAX_CONCURRENT = 2;

/**
 * What an argon2 run is for, in the order waiting runs are served: a person
 * signing in goes ahead of secrets being written, which go ahead of client
 * secrets being verified, so a flood of wrong client secrets (anyone can send
 * them) never makes a person wait for it. Sign-ups come last: anyone may send
 * them too, and each is a hash, so a flood of them must slow only sign-ups.
 * Each kind's queue is bounded.
 */
export type Argon2Lane = 'sign-in' | 'write' | 'client' | 'sign-up';
const LANES: readonly Argon2Lane[] = ['sign-in', 'write', 'client', 'sign-up'];

/** 503: too many argon2 runs are waiting already; nothing was done. */
export class Argon2Busy extends ApiError {
  constructor() {
    super(503, 'temporarily_unavailable', 'the box is busy checking secrets; try again in a moment', { 'Retry-After': '1' });
  }
}

/**
 * 503 too, though no one reads it: the run waited for a slot and left the queue, never run, because
 * its client had gone (its connection closed). Where a full queue is "not checked", so is this.
 */
export class Argon2Abandoned extends Argon2Busy {}

/** What a request's work asks of argon2 (a box's gate, or the gate for one request: Argon2Gate.until). */
export interface Argon2 {
  hash(secret: string, lane?: 'write' | 'sign-up'): Promise<string>;
  verify(hash: string, presented: string, lane?: Argon2Lane): Promise<boolean>;
}

/** The process's argon2 runs: at most MAX_CONCURRENT, at most one of them a sign-up. */
const slots = { running: 0, signUps: 0 };
/** The gates with runs waiting, in the order they are served: the one served goes last. */
const turns: Argon2Gate[] = [];

const mayStart = (lane: Argon2Lane): boolean => lane !== 'sign-up' || slots.signUps === 0;

/**
 * One box's way to the process's argon2 runs: its own queue per lane, bounded by its own settings
 * (BOXAUTH_ARGON2_MAX_WAITING; sign-ups: BOXAUTH_SIGN_UP_MAX_WAITING). The boxes of a host take
 * turns: a run that ends hands its slot to the next box with a run waiting (within that box, by
 * lane), so a box that floods the host with hashes holds another box's next run by at most one run
 * of its own per slot, and fills only its own queues (docs/kubernetes/hosted-boxes.md).
 */
export class Argon2Gate implements Argon2 {
  private readonly waiting = new Map<Argon2Lane, (() => void)[]>(LANES.map((lane) => [lane, []]));

  constructor(private readonly limits: { maxWaiting: number; signUpMaxWaiting: number } = { maxWaiting: 32, signUpMaxWaiting: 4 }) {}

  /** An argon2id hash of a secret or password: 'write' for what an admin or a client sets, 'sign-up' for a stranger's sign-up. */
  hash(secret: string, lane: 'write' | 'sign-up' = 'write', gone?: AbortSignal): Promise<string> {
    return this.limited(lane, gone, () => argon2.hash(secret, HASH_OPTIONS));
  }

  /** argon2 verification of a secret or password against its stored hash; false for a malformed hash. */
  verify(hash: string, presented: string, lane: Argon2Lane = 'sign-in', gone?: AbortSignal): Promise<boolean> {
    return this.limited(lane, gone, () => argon2.verify(hash, presented).catch(() => false));
  }

  /**
   * This gate for the work of one request: a run of it still waiting for a slot when `gone` aborts
   * (the request's client has left: Response.gone) leaves its queue at once and never runs, failing
   * with Argon2Abandoned. Else a client that sends its requests and leaves (wrk ending, a bot, a
   * stranger) would have the box hash for no one, and fill the queue that the next request finds
   * full. A run already started goes on: argon2 cannot be stopped halfway.
   */
  until(gone: AbortSignal): Argon2 {
    return {
      hash: (secret, lane) => this.hash(secret, lane, gone),
      verify: (hash, presented, lane) => this.verify(hash, presented, lane, gone),
    };
  }

  /** Runs waiting, per lane (metrics, tests). */
  waitingByLane(): Record<Argon2Lane, number> {
    return Object.fromEntries(LANES.map((lane) => [lane, this.waiting.get(lane)!.length])) as Record<Argon2Lane, number>;
  }

  private async limited<T>(lane: Argon2Lane, gone: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    if (gone?.aborted) throw new Argon2Abandoned();
    // A finished run hands its slot straight to the next waiter (slots are counted for it then),
    // so a caller arriving in between cannot take it as well.
    if (slots.running < MAX_CONCURRENT && mayStart(lane)) {
      slots.running++;
      if (lane === 'sign-up') slots.signUps++;
    } else {
      const queue = this.waiting.get(lane)!;
      if (queue.length >= (lane === 'sign-up' ? this.limits.signUpMaxWaiting : this.limits.maxWaiting)) throw new Argon2Busy();
      await new Promise<void>((resolve, reject) => {
        const start = (): void => {
          gone?.removeEventListener('abort', leave);
          resolve();
        };
        const leave = (): void => {
          queue.splice(queue.indexOf(start), 1);
          if (!this.hasWaiting) turns.splice(turns.indexOf(this), 1);
          reject(new Argon2Abandoned());
        };
        queue.push(start);
        gone?.addEventListener('abort', leave, { once: true });
        if (!turns.includes(this)) turns.push(this);
      });
    }
    try {
      return await work();
    } finally {
      if (lane === 'sign-up') slots.signUps--;
      handOn();
    }
  }

  /** Starts this gate's next run that may start (by lane), if any; whether it did. */
  startNext(): boolean {
    const lane = LANES.find((l) => mayStart(l) && this.waiting.get(l)!.length);
    if (!lane) return false;
    if (lane === 'sign-up') slots.signUps++;
    this.waiting.get(lane)!.shift()!();
    return true;
  }

  get hasWaiting(): boolean {
    return LANES.some((lane) => this.waiting.get(lane)!.length > 0);
  }
}

/** A slot given back: to the first gate in turn with a run that may start (which then goes last), else free. */
function handOn(): void {
  for (let at = 0; at < turns.length; at++) {
    const gate = turns[at]!;
    if (!gate.startNext()) continue;
    turns.splice(at, 1);
    if (gate.hasWaiting) turns.push(gate);
    return;
  }
  slots.running--;
}

/** The process's one gate: a box process's, the operator's (a host gives each of its boxes one of its own). */
export const processGate = new Argon2Gate();

/** An argon2id hash, through the process's own gate (a box's services have their own: Services.argon2). */
export function hashSecret(secret: string, lane: 'write' | 'sign-up' = 'write'): Promise<string> {
  return processGate.hash(secret, lane);
}

/** argon2 verification through the process's own gate (a box's services have their own: Services.argon2). */
export function verifyHash(hash: string, presented: string, lane: Argon2Lane = 'sign-in'): Promise<boolean> {
  return processGate.verify(hash, presented, lane);
}

/** A hash of a random secret: checking a presented secret against it costs what a real check costs. */
let dummy: Promise<string> | undefined;
export const dummyHash = (): Promise<string> => (dummy ??= argon2.hash(generateSecret(), HASH_OPTIONS));

export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A password the box makes for a person (the first admin's): 24 random characters, or as many as
 * the box's minimum when that is more (48 bytes give 64, BOXAUTH_PASSWORD_MIN_LENGTH's most).
 */
export function generatePassword(minLength: number): string {
  return randomBytes(48).toString('base64url').slice(0, Math.max(24, minLength));
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Counts a check of a presented secret before it runs, and gives the count back when it was right (throttle.ts). */
export interface CheckGuard {
  reserve(): void;
  release(): void;
}

export class SecretVerifier {
  private verified = new Map<string, { hash: string; digest: Buffer }>();
  /** Checks running, by client, hash and presented secret: the same secret sent many times at once is checked once. */
  private readonly running = new Map<string, Promise<boolean>>();

  constructor(
    private readonly gate: Argon2Gate = processGate,
    private readonly maxEntries = 10_000,
  ) {}

  /** Whether `presented` is the very secret that passed argon2 against `hash` before (no argon2 run). */
  remembered(clientId: string, hash: string, presented: string): boolean {
    const known = this.verified.get(clientId);
    return known !== undefined && known.hash === hash && timingSafeEqual(known.digest, digest(presented));
  }

  /**
   * Whether `presented` matches `hash`. A burst of requests with one secret (an
   * app starting many workers) shares one argon2 run and one `guard` count, so
   * only different guesses count against a throttle.
   */
  verify(clientId: string, hash: string, presented: string, options: { lane?: Argon2Lane; guard?: CheckGuard } = {}): Promise<boolean> {
    if (this.remembered(clientId, hash, presented)) return Promise.resolve(true);
    const key = `${clientId}\u0000${hash}\u0000${digest(presented).toString('hex')}`;
    let check = this.running.get(key);
    if (!check) {
      check = this.check(clientId, hash, presented, options.lane ?? 'client', options.guard);
      this.running.set(key, check);
      const done = (): void => {
        this.running.delete(key);
      };
      check.then(done, done);
    }
    return check;
  }

  private async check(
    clientId: string,
    hash: string,
    presented: string,
    lane: Argon2Lane,
    guard: CheckGuard | undefined,
  ): Promise<boolean> {
    guard?.reserve();
    let ok: boolean;
    try {
      ok = await this.gate.verify(hash, presented, lane);
    } catch (err) {
      guard?.release(); // not checked (the argon2 queue is full): not a failure
      throw err;
    }
    if (ok) {
      guard?.release();
      this.remember(clientId, hash, presented);
    }
    return ok;
  }

  /** Records that `secret` matches `hash` without running argon2: for a hash just made from it. */
  remember(clientId: string, hash: string, secret: string): void {
    if (this.verified.size >= this.maxEntries) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(clientId, { hash, digest: digest(secret) });
  }
}
