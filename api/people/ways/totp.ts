// An authenticator app's code (TOTP, RFC 6238; the codes' arithmetic is ./totp-codes.ts): the
// second factor of a sign-in, and the proof that an app being set up reads the key — in a
// sign-in's enrolment, or on the person's own page. A code is counted before it is checked, per
// account and per address, as a password is (./way.ts), and accepted once for its time step, by
// one UPDATE, across every process (RFC 6238 §5.2). An app is written in the transaction of what
// it is set up for (the step it completes, the browser session it strengthens), under the
// person's row, with its audit events: a reset, a password change or a sign-out that ended that
// first leaves no app added, and no event of one.
import { withFactor } from '../../credentials/acr.js';
import { seal, unseal } from '../../credentials/sealing.js';
import type { Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import { acceptTotpStep, findTotp, setMustEnrol, startTotp, type Totp } from '../../store/factors.js';
import { holdPerson } from '../../store/users.js';
import { EndedMeanwhile, strengthen, type BrowserFacts, type BrowserToken, type SignedInPerson } from '../browsers.js';
import { tellOfFactorChange } from '../notices.js';
import { advanceStep, completeStep, mayBeSignedIn, type StepServices, type StepTarget, type WentOn } from '../steps.js';
import { newCodesIn } from './recovery-code.js';
import { matchingStep, newTotpSecret, secretText, totpUri } from './totp-codes.js';
import { signInThrough, type Answer, type CodeOf, type WayServices } from './way.js';

/**
 * Everything an app's code does to the database itself (what it completes or strengthens is
 * ../steps.ts's and ../browsers.ts's, the recovery codes made with an app ./recovery-code.ts's).
 */
export interface TotpStore {
  /** The person's app: the confirmed one, or (`pending`) the one being set up. */
  findTotp(db: Queryable, userId: number, which?: 'confirmed' | 'pending'): Promise<Totp | undefined>;
  /** A code taken for its time step, once (one UPDATE); `confirm` confirms an app being set up with it. */
  acceptTotpStep(db: Queryable, id: number, step: number, confirm?: boolean): Promise<boolean>;
  /** An app being set up: pending, its secret sealed; an earlier pending one is replaced. */
  startTotp(tx: Transaction, userId: number, name: string, sealedSecret: Buffer): Promise<number>;
  /** The person owes no enrolment any more (an administrator's reset made them owe one). */
  setMustEnrol(db: Queryable, userId: number, must: boolean): Promise<boolean>;
  /** The person's row held until the transaction ends, as every change of their factors holds it. */
  holdPerson(tx: Transaction, id: number): ReturnType<typeof holdPerson>;
  /** A transaction of its own (an app set up on the account page: confirmed with the session it strengthens). */
  withTransaction: typeof withTransaction;
}

const store: TotpStore = { findTotp, acceptTotpStep, startTotp, setMustEnrol, holdPerson, withTransaction };

/** What the app's code uses of the process's services. */
export type TotpServices = WayServices & StepServices & { factorKey: Buffer; pool: Pool; config: Pick<Config, 'smtp' | 'box'> };

const NAME = 'Authenticator app';
const PURPOSE = 'totp';

/** The time step `code` is a right code of for `totp` and was not taken at yet; undefined when it is wrong. */
function codeStep(svc: Pick<TotpServices, 'factorKey'>, totp: Pick<Totp, 'sealedSecret' | 'lastStep'>, code: string): number | undefined {
  return matchingStep(unseal(svc.factorKey, PURPOSE, totp.sealedSecret), code, Date.now(), totp.lastStep);
}

/** How a code of a sign-in is counted and recorded (./way.ts). */
const asSecondFactor = (of: CodeOf) => ({ address: of.address, account: of.user.email, counts: false, locked: 'second factor' });

/** The app's code as the second factor of the step of `stepToken`: the way on, or `ended` (the step is gone). */
export async function giveCode(
  svc: TotpServices,
  from: BrowserFacts,
  of: CodeOf,
  stepToken: string | undefined,
  code: string,
  target: StepTarget,
): Promise<Answer<WentOn | 'ended'>> {
  return signInThrough<WentOn | 'ended'>(svc, { ...asSecondFactor(of), success: 'totp' }, async () => {
    const totp = await store.findTotp(svc.pool, of.user.id);
    const step = totp && codeStep(svc, totp, code);
    // One UPDATE: of two requests with one code, one wins.
    if (!totp || step === undefined || !(await store.acceptTotpStep(svc.pool, totp.id, step)))
      return { refused: 'wrong code', said: 'wrong code', user: of.user.id };
    const went = await completeStep(svc, from, stepToken, (s) => ({ amr: withFactor(s.amr, ['otp']), factor: 'given' }), target);
    return { proven: went ?? 'ended', user: of.user.id };
  });
}

/** An app being set up: its key, as the person types it into the app, and the otpauth:// URI its QR code carries. */
export interface NewApp {
  secret: string;
  uri: string;
}

/** Starts setting up an app for `user`: a pending one (unconfirmed until its first code), replacing an earlier pending one. */
export async function startApp(
  svc: Pick<TotpServices, 'pool' | 'factorKey' | 'config'>,
  user: { id: number; email: string },
): Promise<NewApp> {
  const secret = newTotpSecret();
  await store.withTransaction(svc.pool, (tx) => store.startTotp(tx, user.id, NAME, seal(svc.factorKey, PURPOSE, secret)));
  return { secret: secretText(secret), uri: totpUri(secret, svc.config.box, user.email) };
}

/** A right code of the person's pending app: which one, and the time step it is of (written only with what it is set up for). */
interface PendingCode {
  id: number;
  step: number;
}

async function pendingCode(svc: TotpServices, userId: number, code: string): Promise<PendingCode | undefined> {
  const pending = await store.findTotp(svc.pool, userId, 'pending');
  const step = pending && codeStep(svc, pending, code);
  return pending && step !== undefined ? { id: pending.id, step } : undefined;
}

/** The pending app confirmed by its code, in `tx`; false when the code was taken meanwhile. */
const confirmedIn = (tx: Transaction, code: PendingCode): Promise<boolean> => store.acceptTotpStep(tx, code.id, code.step, true);

/** How a code of an app being set up is counted and recorded: no sign-in line (the `factor` lines are appAdded's). */
const asEnrolment = (of: CodeOf) => ({ ...asSecondFactor(of), success: false as const });

/**
 * What app `app`, confirmed in `tx`, does there: the person owes no enrolment, is mailed, and the
 * `factor` event is written (one commits with the other); the recovery codes made with it, shown
 * once, are returned (their event: ./recovery-code.ts newCodesIn).
 */
async function appAdded(svc: TotpServices, tx: Transaction, of: CodeOf, app: number): Promise<string[]> {
  await store.setMustEnrol(tx, of.user.id, false);
  await tellOfFactorChange(svc, tx, of.user, { change: 'added', factor: 'totp' });
  const user = String(of.user.id);
  await svc.audit.recordIn(tx, {
    event: 'factor',
    action: 'enrolled',
    kind: 'totp',
    factor: String(app),
    user,
    by: { user },
    address: of.address,
  });
  return newCodesIn(svc, tx, of);
}

/** An app set up, and the recovery codes made with it (shown once), with the token to hand the browser. */
export interface AppAdded<T> {
  app: number;
  codes: string[];
  token: T;
}

/**
 * The code of the app set up in the enrolment of the step of `stepToken`: the step is used up, and a
 * new one holds the factor just enrolled (Continue goes on from it, after the recovery codes);
 * must_enrol is cleared with it, under the person's row. `ended`: the step is gone (a reset that
 * came first took it), and no app is added.
 */
export async function enrolAppInStep(
  svc: TotpServices,
  of: CodeOf,
  stepToken: string | undefined,
  code: string,
): Promise<Answer<AppAdded<BrowserToken> | 'ended'>> {
  return signInThrough<AppAdded<BrowserToken> | 'ended'>(svc, asEnrolment(of), async () => {
    const pending = await pendingCode(svc, of.user.id, code);
    if (!pending) return { refused: 'wrong enrolment code', said: 'wrong code', user: of.user.id };
    const advanced = await advanceStep(svc, stepToken, async (s, tx) => {
      if (s.userId !== of.user.id || !(await confirmedIn(tx, pending))) return undefined;
      return { amr: withFactor(s.amr, ['otp']), factor: 'enrolled', also: await appAdded(svc, tx, of, pending.id) };
    });
    return { proven: advanced ? { app: pending.id, codes: advanced.also, token: advanced.step } : 'ended', user: of.user.id };
  });
}

/**
 * The code of the app set up on the person's own page: confirmed with what it counts for, in one
 * transaction under the person's row — this browser's session counts the app from now on (a new
 * token, the same sid), so the person's own rules, now asking for it, are met; it was enrolled, not
 * given at a sign-in, so the session's sign-in time and last proof stay (../browsers.ts strengthen).
 * `ended`: the session ended meanwhile (a password change, a reset, a sign-out), and takes the app
 * with it; `taken`: the code was used meanwhile.
 */
export async function addAppOnAccount(
  svc: TotpServices,
  from: BrowserFacts,
  person: SignedInPerson,
  code: string,
  address: string,
): Promise<Answer<AppAdded<BrowserToken> | 'ended' | 'taken'>> {
  const of = { user: person.user, address };
  return signInThrough<AppAdded<BrowserToken> | 'ended' | 'taken'>(svc, asEnrolment(of), async () => {
    const pending = await pendingCode(svc, person.user.id, code);
    if (!pending) return { refused: 'wrong enrolment code', said: 'wrong code', user: person.user.id };
    const added = await store
      .withTransaction(svc.pool, async (tx) => {
        const held = await store.holdPerson(tx, person.user.id);
        if (!held || !mayBeSignedIn(held)) return 'ended' as const;
        if (!(await confirmedIn(tx, pending))) return 'taken' as const;
        const since = { proofAt: 'kept', enrolled: true } as const;
        const token = await strengthen(svc, tx, from, withFactor(person.browser.amr, ['otp']), person.browser, since);
        if (!token) throw new EndedMeanwhile();
        return { app: pending.id, codes: await appAdded(svc, tx, of, pending.id), token };
      })
      .catch((err: unknown) => {
        if (err instanceof EndedMeanwhile) return 'ended' as const;
        throw err;
      });
    return { proven: added, user: person.user.id };
  });
}
