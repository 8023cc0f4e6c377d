// An app's one-time code, of every kind whose codes an app computes from a key it shares with the
// box (api/factor-kinds.ts `app`: TOTP, ./totp.ts; HOTP, or any other the ways declare): the
// second factor of a sign-in, and the proof that an app being set up reads the key — in a
// sign-in's enrolment, or on the person's own page. The codes' arithmetic is ./one-time-codes.ts,
// moved on by a time step or a counter as the kind says. A code is counted before it is checked,
// per account and per address, as a password is (./way.ts), and accepted once for its step, by
// one UPDATE, across every process (RFC 6238 §5.2, RFC 4226 §7.2). An app is written in the
// transaction of what it is set up for (the step it completes, the browser session it
// strengthens), under the person's row, with its audit events (./enrolment.ts): a reset, a
// password change or a sign-out that ended that first leaves no app added, and no event of one.
import { withFactor } from '../../credentials/acr.js';
import { seal, unseal } from '../../credentials/sealing.js';
import type { Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import { appOf, type AppFactorKind } from '../../factor-kinds.js';
import { acceptCodeStep, findFactor, startFactor, type AppFactor } from '../../store/factors.js';
import type { BrowserFacts, SignedInPerson } from '../browsers.js';
import { completeStep, type StepServices, type StepTarget, type WentOn } from '../steps.js';
import { enrolInStep, enrolOnAccount, type Confirming, type PendingCheck } from './enrolment.js';
import { matchingStep, newSecret, otpauthUri, secretText } from './one-time-codes.js';
import { signInThrough, type Answer, type CodeOf, type WayServices } from './way.js';

/**
 * Everything an app's code does to the database itself (what it completes or strengthens is
 * ../steps.ts's and ../browsers.ts's, what an app set up brings ./enrolment.ts's).
 */
export interface AppCodeStore {
  /** The person's app of a kind: the confirmed one, or (`pending`) the one being set up. */
  findFactor(db: Queryable, userId: number, kind: AppFactorKind, which?: 'confirmed' | 'pending'): Promise<AppFactor | undefined>;
  /** A code taken for its step, once (one UPDATE); `confirm` confirms an app being set up with it. */
  acceptCodeStep(db: Queryable, id: number, step: number, confirm?: boolean): Promise<boolean>;
  /** An app being set up: pending, its secret sealed; an earlier pending one of its kind is replaced. */
  startFactor(tx: Transaction, userId: number, name: string, start: { kind: AppFactorKind; sealedSecret: Buffer }): Promise<number>;
  /** A transaction of its own (an app being set up replaces the one before). */
  withTransaction: typeof withTransaction;
}

const store: AppCodeStore = { findFactor, acceptCodeStep, startFactor, withTransaction };

/** What the app's code uses of the process's services. */
export type AppCodeServices = WayServices & StepServices & { factorKey: Buffer; pool: Pool; config: Pick<Config, 'smtp' | 'box'> };

/** The step `code` is a right code of for `app` and was not taken at yet; undefined when it is wrong. The secret is sealed under the kind's name. */
function codeStep(svc: Pick<AppCodeServices, 'factorKey'>, app: Pick<AppFactor, 'kind' | 'sealedSecret' | 'lastStep'>, code: string) {
  return matchingStep(appOf(app.kind).moving, unseal(svc.factorKey, app.kind, app.sealedSecret), code, Date.now(), app.lastStep);
}

/** How a code of a sign-in is counted and recorded (./way.ts). */
const asSecondFactor = (of: CodeOf) => ({ address: of.address, account: of.user.email, counts: false, locked: 'second factor' });

/** The app's code of `kind` as the second factor of the step of `stepToken`: the way on, or `ended` (the step is gone). */
export async function giveAppCode(
  svc: AppCodeServices,
  kind: AppFactorKind,
  from: BrowserFacts,
  of: CodeOf,
  stepToken: string | undefined,
  code: string,
  target: StepTarget,
): Promise<Answer<WentOn | 'ended'>> {
  return signInThrough<WentOn | 'ended'>(svc, { ...asSecondFactor(of), success: kind }, async () => {
    const app = await store.findFactor(svc.pool, of.user.id, kind);
    const step = app && codeStep(svc, app, code);
    // One UPDATE: of two requests with one code, one wins.
    if (!app || step === undefined || !(await store.acceptCodeStep(svc.pool, app.id, step)))
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

/** Starts setting up an app of `kind` for `user`: a pending one (unconfirmed until its first code), replacing an earlier pending one. */
export async function startApp(
  svc: Pick<AppCodeServices, 'pool' | 'factorKey' | 'config'>,
  kind: AppFactorKind,
  user: { id: number; email: string },
): Promise<NewApp> {
  const secret = newSecret();
  const spec = appOf(kind);
  await store.withTransaction(svc.pool, (tx) =>
    store.startFactor(tx, user.id, spec.name, { kind, sealedSecret: seal(svc.factorKey, kind, secret) }),
  );
  return { secret: secretText(secret), uri: otpauthUri(spec.moving, secret, svc.config.box, user.email) };
}

/** A right code of the person's pending app: which one, and the step it is of (written only with what it is set up for). */
async function pendingCode(svc: AppCodeServices, kind: AppFactorKind, userId: number, code: string): Promise<Confirming | undefined> {
  const pending = await store.findFactor(svc.pool, userId, kind, 'pending');
  const step = pending && codeStep(svc, pending, code);
  if (!pending || step === undefined) return undefined;
  // Confirmed by its code, in the transaction of what it is set up for; false when the code was taken meanwhile.
  return { kind, id: pending.id, confirm: (tx) => store.acceptCodeStep(tx, pending.id, step, true) };
}

/** The code of the app being set up, as ./enrolment.ts checks it. */
const pendingApp = (svc: AppCodeServices, kind: AppFactorKind, userId: number, code: string): PendingCheck => ({
  check: () => pendingCode(svc, kind, userId, code),
  reason: 'wrong enrolment code',
});

/**
 * The code of the app set up in the enrolment of the step of `stepToken` (./enrolment.ts: the step
 * used up, a new one holding the app, the recovery codes made). `ended`: the step is gone (a reset
 * that came first took it), and no app is added.
 */
export const enrolAppInStep = (svc: AppCodeServices, kind: AppFactorKind, of: CodeOf, stepToken: string | undefined, code: string) =>
  enrolInStep(svc, of, stepToken, pendingApp(svc, kind, of.user.id, code));

/**
 * The code of the app set up on the person's own page, confirmed with the session it strengthens
 * (./enrolment.ts). `ended`: the session ended meanwhile, and takes the app with it; `taken`: the
 * code was used meanwhile.
 */
export const addAppOnAccount = (
  svc: AppCodeServices,
  kind: AppFactorKind,
  from: BrowserFacts,
  person: SignedInPerson,
  code: string,
  address: string,
) => enrolOnAccount(svc, from, person, address, pendingApp(svc, kind, person.user.id, code));
