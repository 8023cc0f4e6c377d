// Attempts at what only a person should be able to do: a password tried at
// sign-in, a user code typed at /auth/device/verify, an account made at sign-up.
// Each is counted in the database (every process of a box sees one count) BEFORE
// it is checked, so that attempts sent at once get no more checks than the limit;
// an attempt that was refused or never checked is given back, so that a blocked
// address cannot lock an account by trying it. Which limit applies follows from
// the kind of key. Mails asked for (a password reset, a link again) count here too, and so do
// sign-ins begun at upstream providers (each writes a row until its provider answers).
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import { emailKey } from '../input.js';
import { ADDRESS_FACTOR } from '../credentials/throttle.js';
import { clearFailures, countAttempt, uncountAttempt } from '../store/sign-in-failures.js';
import { UPSTREAM_SIGN_IN_MINUTES } from '../store/identity-providers.js';

export type AttemptKey =
  /** Failed sign-ins of one account (by email, as emailKey compares them). */
  | { account: string }
  /** Wrong user codes typed by one signed-in person. */
  | { deviceCodesOf: number }
  /** Failed sign-ins and wrong user codes from one address. */
  | { address: string }
  /** Accounts made from one address. */
  | { signUpsFrom: string }
  /** Accounts made box-wide. */
  | 'sign-ups'
  /** Mails asked for one email address (resets, verification links again), as emailKey compares them. */
  | { mailsTo: string }
  /** Sign-in codes asked for its person by a browser that signed in as them (./devices.ts): apart from strangers' `mailsTo`. */
  | { mailsFromDevice: string }
  /** Codes by email asked for by their person, past the password or signed in: apart from strangers' `mailsTo` too. */
  | { mailsAskedBy: number }
  /** Password resets asked for from one network address. */
  | { resetsFrom: string }
  /** Passkey challenges handed out to one network address and not answered (each is a row until it expires). */
  | { challengesFrom: string }
  /** Sign-ins begun at upstream providers from one network address (each writes a row until it ends). */
  | { upstreamStartsFrom: string }
  /** Recovery codes made anew by one person on their own page (each a change the audit trail keeps). */
  | { codesMadeBy: number };

/**
 * New recovery codes one person may make in a mail window (each is mailed to them, as every factor
 * change is): more than anyone who lost theirs needs, and few enough that a person pressing the
 * button in a loop neither floods their mailbox nor writes a flood of changes (docs/security.md).
 */
export const CODES_MADE_PER_WINDOW = 10;

/** Passkey challenges one address may hold unanswered for each sign-in it may fail. */
const CHALLENGES_PER_FAILURE = 10;

type AttemptConfig = Pick<
  Config,
  | 'signInMaxFailures'
  | 'signInWindowSeconds'
  | 'signUpMaxPerAddress'
  | 'signUpAddressWindowSeconds'
  | 'signUpMaxPerBox'
  | 'signUpBoxWindowSeconds'
  | 'mailMaxPerRecipient'
  | 'resetMaxPerAddress'
  | 'mailWindowSeconds'
  | 'upstreamStartsPerAddress'
>;

/** The database key of each kind (the encodings are stable: rows outlive a restart). */
function stored(key: AttemptKey): string {
  if (key === 'sign-ups') return 'sign-up:box';
  if ('account' in key) return `email:${emailKey(key.account)}`;
  if ('deviceCodesOf' in key) return `device:${key.deviceCodesOf}`;
  if ('address' in key) return `addr:${key.address}`;
  if ('mailsTo' in key) return `mail:${emailKey(key.mailsTo)}`;
  if ('mailsFromDevice' in key) return `mail-device:${key.mailsFromDevice}`;
  if ('mailsAskedBy' in key) return `mail-person:${key.mailsAskedBy}`;
  if ('resetsFrom' in key) return `reset:addr:${key.resetsFrom}`;
  if ('challengesFrom' in key) return `challenge:addr:${key.challengesFrom}`;
  if ('upstreamStartsFrom' in key) return `upstream:addr:${key.upstreamStartsFrom}`;
  if ('codesMadeBy' in key) return `codes-made:${key.codesMadeBy}`;
  return `sign-up:addr:${key.signUpsFrom}`;
}

/** A refused attempt: the first of its keys over its limit, and when every key over one may try again. */
export interface Refusal {
  key: AttemptKey;
  retryAt: Date;
}

export class Attempts {
  constructor(
    private readonly pool: Pool,
    private readonly config: AttemptConfig,
  ) {}

  private limit(key: AttemptKey): { max: number; windowSeconds: number } {
    const c = this.config;
    if (key === 'sign-ups') return { max: c.signUpMaxPerBox, windowSeconds: c.signUpBoxWindowSeconds };
    if ('signUpsFrom' in key) return { max: c.signUpMaxPerAddress, windowSeconds: c.signUpAddressWindowSeconds };
    // A known browser, or a person past their password, has the limit of an address to itself: strangers
    // never spend the person's codes, and neither a stolen cookie nor a known password is a flood.
    if ('mailsTo' in key || 'mailsFromDevice' in key || 'mailsAskedBy' in key)
      return { max: c.mailMaxPerRecipient, windowSeconds: c.mailWindowSeconds };
    if ('resetsFrom' in key) return { max: c.resetMaxPerAddress, windowSeconds: c.mailWindowSeconds };
    // The sign-in page asks for one at every load (the browser's passkey autofill): many more than failures.
    if ('challengesFrom' in key)
      return { max: c.signInMaxFailures * ADDRESS_FACTOR * CHALLENGES_PER_FAILURE, windowSeconds: c.signInWindowSeconds };
    // As long as a begun sign-in waits for its provider: at most the limit of them wait at once.
    if ('upstreamStartsFrom' in key) return { max: c.upstreamStartsPerAddress, windowSeconds: UPSTREAM_SIGN_IN_MINUTES * 60 };
    if ('codesMadeBy' in key) return { max: CODES_MADE_PER_WINDOW, windowSeconds: c.mailWindowSeconds };
    if ('address' in key) return { max: c.signInMaxFailures * ADDRESS_FACTOR, windowSeconds: c.signInWindowSeconds };
    return { max: c.signInMaxFailures, windowSeconds: c.signInWindowSeconds };
  }

  /**
   * Counts one attempt under each key, before it is checked. When any key is over
   * its limit the attempt is refused and nothing stays counted: the refusal says
   * which key (the first over it) and when its window ends.
   */
  async begin(keys: AttemptKey[]): Promise<Refusal | undefined> {
    // Keys of one window are counted in one statement (their rows locked in key order).
    const byWindow = new Map<number, AttemptKey[]>();
    for (const key of keys) {
      const { windowSeconds } = this.limit(key);
      byWindow.set(windowSeconds, [...(byWindow.get(windowSeconds) ?? []), key]);
    }
    const counted = new Map<string, { attempts: number; retryAt: Date }>();
    for (const [windowSeconds, group] of byWindow) {
      for (const [k, v] of await countAttempt(this.pool, group.map(stored), windowSeconds)) counted.set(k, v);
    }
    const over = keys.filter((key) => counted.get(stored(key))!.attempts > this.limit(key).max);
    if (!over.length) return undefined;
    await this.giveBack(keys);
    return { key: over[0]!, retryAt: new Date(Math.max(...over.map((key) => counted.get(stored(key))!.retryAt.getTime()))) };
  }

  /** Gives an attempt back: it was not a failure (the password was right), or was never checked. */
  async giveBack(keys: AttemptKey[]): Promise<void> {
    if (keys.length) await uncountAttempt(this.pool, keys.map(stored));
  }

  /** A success wipes the key's failures (an account signed in to). */
  async clear(key: AttemptKey): Promise<void> {
    await clearFailures(this.pool, stored(key));
  }
}

/** Whole minutes until `at` (at least one), as pages say it. */
export function minutesUntil(at: Date, now = Date.now()): number {
  return Math.max(1, Math.ceil((at.getTime() - now) / 60_000));
}

/** Whole seconds until `at` (at least one), as Retry-After says it (RFC 9110 §10.2.3). */
export function secondsUntil(at: Date, now = Date.now()): number {
  return Math.max(1, Math.ceil((at.getTime() - now) / 1000));
}
