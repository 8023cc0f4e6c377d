// A recovery code (its making and reading: ./recovery-codes.ts): a way back in when the phone or
// the passkey is lost (docs/guides/second-factors.md), so it does more than sign in. It works
// once, even sent twice at once; the person's factors and codes go, so does every other sign-in
// of theirs (docs/architecture.md §12: every way back in ends the person's other sessions, through the one
// closing path), and they set up a new factor before the sign-in completes. Counted as a code is.
import { endPersonsGrants } from '../../credentials/closing.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import type { Config } from '../../config.js';
import { holdBrowserSession } from '../../store/browser-sessions.js';
import { listFactors, removeAllFactors, setMustEnrol, type FactorSummary } from '../../store/factors.js';
import { replaceRecoveryCodes, useRecoveryCode } from '../../store/recovery-codes.js';
import { type SignInStep } from '../../store/sign-in-steps.js';
import type { SessionRow } from '../../store/sessions.js';
import { getUser, holdPerson, lockUser, type UserRow } from '../../store/users.js';
import type { Audit } from '../../audit.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { AttemptKey, Refusal } from '../attempts.js';
import type { SignedInPerson } from '../browsers.js';
import { tellOfFactorChange } from '../notices.js';
import { stepStillThere, type FirstFactor } from '../steps.js';
import { hashOf, newRecoveryCodes, normalize } from './recovery-codes.js';
import { signInThrough, type Answer, type CodeOf, type WayServices } from './way.js';

/** Everything a recovery code does to the database: the codes, and, when one is used, the person's factors and grants. */
export interface RecoveryCodeStore {
  /** The person's codes replaced by these hashes (the old ones stop working). */
  replaceRecoveryCodes(tx: Transaction, userId: number, hashes: Buffer[]): Promise<void>;
  /** A code used: its row deleted, once (of two requests with one code, one wins). */
  useRecoveryCode(db: Queryable, userId: number, hash: Buffer): Promise<boolean>;
  /** Every factor of the person removed (their codes too). */
  removeAllFactors(db: Queryable, userId: number): Promise<number>;
  /** The person owes an enrolment (a factor set up before the sign-in completes). */
  setMustEnrol(db: Queryable, userId: number, must: boolean): Promise<boolean>;
  /** The person's factors: codes are made only for someone with one. */
  listFactors(db: Queryable, userId: number): Promise<FactorSummary[]>;
  /** The person, for the password hash the sign-in holds. */
  getUser(db: Queryable, id: number): Promise<UserRow | undefined>;
  /** The person's row locked until `tx` ends, whether or not they may sign in (false: gone). */
  lockUser(tx: Transaction, id: number): Promise<boolean>;
  /** The person's row held until the transaction ends, as every change of their factors holds it. */
  holdPerson(tx: Transaction, id: number): ReturnType<typeof holdPerson>;
  /** The browser's session held until `tx` ends (false: it was ended). */
  holdBrowserSession(tx: Transaction, sid: string): Promise<boolean>;
  /** Every grant and session of the person closed (credentials/closing.ts: the one closing path). */
  endPersonsGrants: typeof endPersonsGrants;
  /** The transaction a code is used in, and new codes made on the account page. */
  withTransaction: typeof withTransaction;
}

const store: RecoveryCodeStore = {
  replaceRecoveryCodes,
  useRecoveryCode,
  removeAllFactors,
  setMustEnrol,
  listFactors,
  getUser,
  lockUser,
  holdPerson,
  holdBrowserSession,
  endPersonsGrants,
  withTransaction,
};

/** What a recovery code uses of the process's services (its use ends the person's sessions). */
export type RecoveryServices = WayServices & { pool: Pool; config: Pick<Config, 'smtp'>; sessions: RecordCache<SessionRow>; audit: Audit };

/**
 * Ten new recovery codes for the person of `of`, their hashes stored in `tx` with the `factor`
 * event that says so (one commits with the other), the plain ones returned to be shown once.
 */
export async function newCodesIn(svc: Pick<RecoveryServices, 'audit'>, tx: Transaction, of: CodeOf): Promise<string[]> {
  const codes = newRecoveryCodes();
  await store.replaceRecoveryCodes(tx, of.user.id, codes.map(hashOf));
  const user = String(of.user.id);
  await svc.audit.recordIn(tx, {
    event: 'factor',
    action: 'recovery-codes-made',
    kind: 'recovery-codes',
    user,
    by: { user },
    address: of.address,
  });
  return codes;
}

/**
 * A recovery code given in the step of `stepToken` (`step`, as its page read it). Used under the
 * person's row and only while that step is still there: a reset or a password change that came
 * first ended it (the password it proved is not theirs any more), and the code is not used. Its
 * use and the reset it causes are audited in its transaction. What the sign-in goes on from: a
 * sign-in's step, from what it proved before the code (its password, minutes ago, as it is now) to
 * enrolment (must_enrol: the code itself is no factor to sign in with); a step-up's, nothing
 * (`sign-in-again`: its session ended with the others, and the person signs in again, then enrols).
 */
export async function giveRecoveryCode(
  svc: RecoveryServices,
  of: CodeOf,
  stepToken: string | undefined,
  step: SignInStep,
  code: string,
): Promise<Answer<FirstFactor | 'sign-in-again'>> {
  const attempt = { address: of.address, account: of.user.email, counts: false, locked: 'second factor', success: 'recovery code' };
  return signInThrough<FirstFactor | 'sign-in-again'>(svc, attempt, async () => {
    const normal = normalize(code);
    const used =
      normal === undefined
        ? undefined
        : await store.withTransaction(svc.pool, async (tx) => {
            if (!(await store.lockUser(tx, of.user.id)) || !(await stepStillThere(tx, stepToken))) return 'ended' as const;
            if (!(await store.useRecoveryCode(tx, of.user.id, hashOf(normal)))) return undefined;
            await store.removeAllFactors(tx, of.user.id);
            await store.setMustEnrol(tx, of.user.id, true);
            await store.endPersonsGrants(svc, tx, of.user.id, { how: 'recovery-code', by: { user: String(of.user.id) } });
            await tellOfFactorChange(svc, tx, of.user, { change: 'removed', factor: 'every-factor' });
            const [user, by, address] = [String(of.user.id), { user: String(of.user.id) }, of.address];
            await svc.audit.recordIn(tx, { event: 'factor', action: 'recovery-code-used', user, by, address });
            await svc.audit.recordIn(tx, { event: 'factor', action: 'reset', user, by, address });
            return { passwordHash: (await store.getUser(tx, of.user.id))!.passwordHash };
          });
    if (used === 'ended') return { unchecked: 'the sign-in ended' };
    if (!used) return { refused: 'wrong recovery code', said: 'wrong recovery code', user: of.user.id };
    if (step.replaces !== null) return { proven: 'sign-in-again', user: of.user.id };
    return {
      proven: { userId: of.user.id, amr: step.amr, holds: { provider: step.provider, passwordHash: used.passwordHash } },
      user: of.user.id,
    };
  });
}

/**
 * New recovery codes made on the person's own page (the old ones stop working), while this browser
 * is signed in, under the person's row: a reset or a sign-out that ended it first leaves the codes as
 * they were. Mailed and audited, from `address`. `no-factor`: codes sign in past nothing without a factor.
 */
export async function newCodesOnAccount(
  svc: Pick<RecoveryServices, 'pool' | 'config' | 'audit' | 'attempts'>,
  person: SignedInPerson,
  address: string,
): Promise<string[] | 'signed-out' | 'no-factor' | { throttled: Refusal }> {
  const { user } = person;
  // Counted before the codes are made, so that presses sent at once make no more than the limit; a press that made none is given back.
  const counted: AttemptKey[] = [{ codesMadeBy: user.id }];
  const refused = await svc.attempts.begin(counted);
  if (refused) return { throttled: refused };
  const made = await store.withTransaction(svc.pool, async (tx) => {
    if (!(await store.holdPerson(tx, user.id)) || !(await store.holdBrowserSession(tx, person.browser.sid))) return 'signed-out' as const;
    if (!(await store.listFactors(tx, user.id)).length) return 'no-factor' as const;
    await tellOfFactorChange(svc, tx, user, { change: 'added', factor: 'recovery-codes' });
    return newCodesIn(svc, tx, { user, address });
  });
  if (typeof made === 'string') await svc.attempts.giveBack(counted);
  return made;
}
