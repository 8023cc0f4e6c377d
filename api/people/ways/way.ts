// The contract every way in keeps (docs/security.md#what-a-sign-in-proves): a way is how a person
// proves who they are — a password (./password.ts), a passkey (./passkey.ts), an authenticator
// app's code (./app-codes.ts), a recovery code (./recovery-code.ts), an upstream provider's answer
// (./upstream.ts). Each says what it checks and what it proved: `{proven}` (whose sign-in, what
// RFC 8176 amr) or `{refused}` (why, for the audit, and what the person is told), or that it did
// not check at all (the box was busy, or the form belongs to a directory). signInThrough does for
// every way what each would otherwise repeat: the attempt counted before it is checked
// (../attempts.ts: attempts sent at once get no more checks than the limit), given back when it
// was no failure, the sign-in metric, and one audit line. What the proof leads to (signed in, or
// one more step) is ../steps.ts's.
import type { Audit } from '../../audit.js';
import type { Metrics } from '../../metrics.js';
import type { AttemptKey, Attempts, Refusal } from '../attempts.js';

/** What signInThrough uses of the process's services. */
export interface WayServices {
  attempts: Attempts;
  metrics: Metrics;
  audit: Audit;
}

/** How one attempt through a way is counted and recorded. */
export interface Attempt {
  /** The network address it came from (api/http/client-address.ts). */
  address: string;
  /** The account it names (an email), counted too where the way guards an account: a password, a code. */
  account?: string;
  /** Whether it is a sign-in of its own (the sign-in metric), not a step of one. */
  counts: boolean;
  /** Not counted against a throttle: its proof is no guess (a provider's answer, bound to the browser that asked for it). */
  unthrottled?: boolean;
  /** What the audit says of a success (`totp`, `through corp`); false: no line (an enrolment's code is no sign-in). */
  success?: string | false;
  /** What the audit says of a refusal by the throttle (default: which key, `address` or `account`). */
  locked?: string;
}

/** Whose code (an app's, a recovery code), from where: what a step's second factor is counted by. */
export interface CodeOf {
  user: { id: number; email: string };
  address: string;
}

/** What a way's check answered. */
export type Checked<T> =
  /** Proven: `user` is whose proof it is (for the audit). `keepAccountCount`: the sign-in still wants a factor, so the account's failures stay. */
  | { proven: T; user?: number; keepAccountCount?: boolean }
  /** A failure, counted (unless `givenBack`: no guess, the right password of a person turned off): `reason` for the audit, `said` for the page. */
  | { refused: string; said: string; user?: number; givenBack?: boolean }
  /** Not checked (the box is busy, the form is a directory's): given back, no failure. */
  | { unchecked: string };

/** What a way answered, counted: Checked, or refused before it was checked (`throttled`). */
export type Answer<T> = Checked<T> | { throttled: Refusal };

/** Which key of an attempt its throttle refused, as the audit says it. */
const lockedBy = (refusal: Refusal, attempt: Attempt): string =>
  attempt.locked ?? (typeof refusal.key === 'object' && 'address' in refusal.key ? 'address' : 'account');

/**
 * Counts `attempt`, runs `check`, and records what it answered, once for every way: a throttled
 * attempt is refused before anything is checked (429); a failure stays counted; anything else is
 * given back (a right answer wipes the account's failures, unless the sign-in still wants a factor:
 * a right password must not buy more guesses at the code).
 */
export async function signInThrough<T>(svc: WayServices, attempt: Attempt, check: () => Promise<Checked<T>>): Promise<Answer<T>> {
  const { address, account } = attempt;
  const keys: AttemptKey[] = attempt.unthrottled ? [] : [{ address }, ...(account !== undefined ? [{ account }] : [])];
  const throttled = keys.length ? await svc.attempts.begin(keys) : undefined;
  if (throttled) {
    if (attempt.counts) svc.metrics.signIns.inc({ result: 'throttled' });
    svc.audit.record({ event: 'sign_in', outcome: 'locked', address, reason: lockedBy(throttled, attempt) });
    return { throttled };
  }
  let checked: Checked<T>;
  try {
    checked = await check();
  } catch (err) {
    await svc.attempts.giveBack(keys);
    throw err;
  }
  if ('unchecked' in checked) {
    await svc.attempts.giveBack(keys);
    return checked;
  }
  const user = checked.user === undefined ? {} : { user: String(checked.user) };
  if ('refused' in checked) {
    if (checked.givenBack) await svc.attempts.giveBack(keys);
    if (attempt.counts) svc.metrics.signIns.inc({ result: 'failure' });
    svc.audit.record({ event: 'sign_in', outcome: 'failure', address, reason: checked.refused, ...user });
    return checked;
  }
  if (keys.length) await svc.attempts.giveBack([{ address }]);
  if (keys.length && account !== undefined)
    await (checked.keepAccountCount ? svc.attempts.giveBack([{ account }]) : svc.attempts.clear({ account }));
  if (attempt.counts) svc.metrics.signIns.inc({ result: 'success' });
  if (attempt.success !== false)
    svc.audit.record({ event: 'sign_in', outcome: 'success', address, ...user, ...(attempt.success ? { reason: attempt.success } : {}) });
  return checked;
}
