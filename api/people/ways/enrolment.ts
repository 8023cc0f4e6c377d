// A factor set up by a code the person types (an app's, ./app-codes.ts; a mailed one, ./email-code.ts),
// once its code is known right: confirmed in the transaction of what it is set up for, under the
// person's row, with what every new factor brings there — the person owes no enrolment any more, is
// mailed, the `factor` event is written (and with it the Shared Signals' event), and ten recovery
// codes are made (shown once). In a sign-in's enrolment the step is used up and a new one holds the
// factor; on the person's own page the browser's session counts it from then on. A reset, a password
// change or a sign-out that came first leaves no factor added, and no event of one. Each way keeps
// its check and its code; this is the part they share.
import { withFactor } from '../../credentials/acr.js';
import type { Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import type { FactorKind } from '../../factor-kinds.js';
import { setMustEnrol } from '../../store/factors.js';
import { holdPerson } from '../../store/users.js';
import { EndedMeanwhile, strengthen, type BrowserFacts, type BrowserToken, type SignedInPerson } from '../browsers.js';
import { tellOfFactorChange } from '../notices.js';
import { advanceStep, mayBeSignedIn, type StepServices } from '../steps.js';
import { newCodesIn } from './recovery-code.js';
import { signInThrough, type Answer, type Attempt, type CodeOf, type WayServices } from './way.js';

/** Everything a factor's confirmation does to the database itself (its own row: the way's `confirm`). */
export interface EnrolmentStore {
  /** The person owes no enrolment any more (an administrator's reset made them owe one). */
  setMustEnrol(db: Queryable, userId: number, must: boolean): Promise<boolean>;
  /** The person's row held until the transaction ends, as every change of their factors holds it. */
  holdPerson(tx: Transaction, id: number, lock: 'change'): ReturnType<typeof holdPerson>;
  /** The transaction a factor is set up in on the account page (with the session it strengthens). */
  withTransaction: typeof withTransaction;
}

const store: EnrolmentStore = { setMustEnrol, holdPerson, withTransaction };

/** What setting up a factor uses of the process's services: a step's, a session's, the audit's and the mail's. */
export type EnrolmentServices = WayServices & StepServices & { pool: Pool; config: Pick<Config, 'smtp' | 'box'> };

/** A factor being set up whose code was right: its kind and id, and how its row is confirmed in `tx` (false: its code was taken meanwhile). */
export interface Confirming {
  kind: FactorKind;
  id: number;
  confirm(tx: Transaction): Promise<boolean>;
}

/** The factor being set up that a typed code is right for, or undefined (a wrong code); `reason` says so in the audit. */
export interface PendingCheck {
  check(): Promise<Confirming | undefined>;
  reason: string;
}

/** A factor set up, and the recovery codes made with it (shown once), with the token to hand the browser. */
export interface FactorAdded<T> {
  factor: number;
  codes: string[];
  token: T;
}

/** What factor `f`, confirmed in `tx`, does there (one commits with the other); the recovery codes made with it. */
async function addedIn(svc: EnrolmentServices, tx: Transaction, of: CodeOf, f: Confirming): Promise<string[]> {
  await store.setMustEnrol(tx, of.user.id, false);
  await tellOfFactorChange(svc, tx, of.user, { change: 'added', factor: f.kind });
  const user = String(of.user.id);
  await svc.audit.recordIn(tx, {
    event: 'factor',
    action: 'enrolled',
    kind: f.kind,
    factor: String(f.id),
    user,
    by: { user },
    address: of.address,
  });
  return newCodesIn(svc, tx, of);
}

/**
 * Factor `f` set up in the enrolment of the step of `stepToken`: the step is used up, and a new one
 * holds the factor just enrolled (Continue goes on from it, after the recovery codes). `ended`: the
 * step is gone (a reset that came first took it), or the code was taken meanwhile: nothing is added.
 */
async function enrolledInStep(
  svc: EnrolmentServices,
  of: CodeOf,
  stepToken: string | undefined,
  f: Confirming,
): Promise<FactorAdded<BrowserToken> | 'ended'> {
  const advanced = await advanceStep(svc, stepToken, async (s, tx) => {
    if (s.userId !== of.user.id || !(await f.confirm(tx))) return undefined;
    return { amr: withFactor(s.amr, ['otp']), factor: 'enrolled', also: await addedIn(svc, tx, of, f) };
  });
  return advanced ? { factor: f.id, codes: advanced.also, token: advanced.step } : 'ended';
}

/**
 * Factor `f` set up on the person's own page: confirmed with what it counts for — this browser's
 * session counts it from now on (a new token, the same sid), so the person's own rules, now asking
 * for it, are met; it was enrolled, not given at a sign-in, so the session's sign-in time and last
 * proof stay (../browsers.ts strengthen). `ended`: the session ended meanwhile (a password change,
 * a reset, a sign-out), and takes the factor with it; `taken`: the code was used meanwhile.
 */
async function enrolledOnAccount(
  svc: EnrolmentServices,
  from: BrowserFacts,
  person: SignedInPerson,
  address: string,
  f: Confirming,
): Promise<FactorAdded<BrowserToken> | 'ended' | 'taken'> {
  const of = { user: person.user, address };
  return store
    .withTransaction(svc.pool, async (tx) => {
      // Held as the write of addedIn holds it: of many confirmations at once, one adds, the others wait and find the code taken.
      const held = await store.holdPerson(tx, person.user.id, 'change');
      if (!held || !mayBeSignedIn(held)) return 'ended' as const;
      if (!(await f.confirm(tx))) return 'taken' as const;
      const since = { proofAt: 'kept', enrolled: true } as const;
      const token = await strengthen(svc, tx, from, withFactor(person.browser.amr, ['otp']), person.browser, since);
      if (!token) throw new EndedMeanwhile();
      return { factor: f.id, codes: await addedIn(svc, tx, of, f), token };
    })
    .catch((err: unknown) => {
      if (err instanceof EndedMeanwhile) return 'ended' as const;
      throw err;
    });
}

/**
 * How a code of a factor being set up is counted: as a code of a sign-in, per account and per
 * address (./way.ts), with no sign-in line (the `factor` lines are addedIn's): an enrolment is no sign-in.
 */
const asEnrolment = (of: CodeOf): Attempt => ({
  address: of.address,
  account: of.user.email,
  counts: false,
  locked: 'second factor',
  success: false,
});

/**
 * A code typed to set up a factor in the enrolment of the step of `stepToken`, counted before it
 * is checked: the factor added there (enrolledInStep), or `ended` (the step is gone).
 */
export async function enrolInStep(
  svc: EnrolmentServices,
  of: CodeOf,
  stepToken: string | undefined,
  pending: PendingCheck,
): Promise<Answer<FactorAdded<BrowserToken> | 'ended'>> {
  return signInThrough<FactorAdded<BrowserToken> | 'ended'>(svc, asEnrolment(of), async () => {
    const f = await pending.check();
    if (!f) return { refused: pending.reason, said: 'wrong code', user: of.user.id };
    return { proven: await enrolledInStep(svc, of, stepToken, f), user: of.user.id };
  });
}

/**
 * A code typed to set up a factor on the person's own page, counted before it is checked: the
 * factor added with the session it strengthens (enrolledOnAccount), `ended` or `taken`.
 */
export async function enrolOnAccount(
  svc: EnrolmentServices,
  from: BrowserFacts,
  person: SignedInPerson,
  address: string,
  pending: PendingCheck,
): Promise<Answer<FactorAdded<BrowserToken> | 'ended' | 'taken'>> {
  const of = { user: person.user, address };
  return signInThrough<FactorAdded<BrowserToken> | 'ended' | 'taken'>(svc, asEnrolment(of), async () => {
    const f = await pending.check();
    if (!f) return { refused: pending.reason, said: 'wrong code', user: person.user.id };
    return { proven: await enrolledOnAccount(svc, from, person, address, f), user: person.user.id };
  });
}
