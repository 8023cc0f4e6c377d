// A code by email instead of a password (docs/guides/second-factors.md "A code instead of a
// password"): on a box with BOXAUTH_SMTP_SIGN_IN_CODES=first-step, a person who has no password of
// the box (made by an IdentityProvider, SCIM or an administrator without one: `passwordSet` false)
// types their address on the sign-in page and asks for a code. Asking answers the same whoever the
// address is: the browser gets a new random token (the step cookie: a code works in that browser
// alone), the ask is counted with the resets to that address (`mailsTo`; from a browser that signed
// in as the person before, on its own: ../devices.ts), and one mail row is
// queued every time, naming the person only when they may use a code (so an unknown address, a
// person with a password and one who may not costs the same reads and one insert, and nobody is
// mailed). The mail makes the code (api/mail/kinds.ts `sign-in-code`), keeping its HMAC in
// first_step_codes; typing it is counted as a password is (./way.ts), and one DELETE takes it.
//
// What it proves is one factor, RFC 8176 `otp` (the password's class). Who may use it is narrow, so
// that a code by email is never counted twice: a person whose sign-in needs nothing more than one
// factor — no factor of their own (a person whose factor is codes by email must not prove "two
// factors" with two mails to one mailbox, and a person with an app would give a second `otp`, which
// is no second factor either), no group that requires one, no enrolment due. A person who has a
// passkey signs in with it; one whose sign-in needs more is told a code is not enough.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import { EMAIL_CODE_MINUTES, emailCodeTyped, firstStepCodeHash } from '../../credentials/email-codes.js';
import type { Acr } from '../../credentials/acr.js';
import type { Pool, Queryable } from '../../db/pool.js';
import { enqueueMail, type SignInCodeDetail } from '../../mail/kinds.js';
import { factorState, type FactorState } from '../../store/factors.js';
import { takeFirstStepCode } from '../../store/first-step-codes.js';
import { findUserByEmail, type UserRow } from '../../store/users.js';
import type { Refusal } from '../attempts.js';
import type { BrowserToken } from '../browsers.js';
import { knownDevice } from '../devices.js';
import { nextStep } from '../factors.js';
import { mayBeSignedIn, type FirstFactor } from '../steps.js';
import { boundTo } from './email-code.js';
import { PASSWORD_REFUSALS } from './password.js';
import { signInThrough, type Answer, type WayServices } from './way.js';

/** Everything a code instead of a password does to the database itself (the sign-in it proves is ../steps.ts's). */
export interface FirstStepStore {
  findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined>;
  factorState(db: Queryable, userId: number): Promise<FactorState>;
  /** The code, taken once (one DELETE) while it is the last mailed, for this browser, unexpired. */
  takeFirstStepCode(db: Queryable, userId: number, hash: Buffer, codeFor: Buffer, now: Date): Promise<boolean>;
  enqueueMail: typeof enqueueMail;
}

const store: FirstStepStore = { findUserByEmail, factorState, takeFirstStepCode, enqueueMail };

/** What a code instead of a password uses of the process's services. */
export type FirstStepServices = WayServices & { pool: Pool; factorKey: Buffer; deviceKey: Buffer; config: Pick<Config, 'smtp'> };

/** Whether the box lets people without a password sign in with a code by email (BOXAUTH_SMTP_SIGN_IN_CODES=first-step). */
export const offersFirstStep = (config: Pick<Config, 'smtp'>): boolean => config.smtp?.signInCodes === 'first-step';

/** What a code instead of a password may be said to be refused for, as the page tells it. */
export const FIRST_STEP_REFUSALS = { wrong: 'wrong', turnedOff: PASSWORD_REFUSALS.turnedOff, notEnough: 'not enough' } as const;

/** Whether `user` may sign in with a code by email: no password, an address proven, and a sign-in one factor finishes (see above). */
const mayUseCode = (user: UserRow, factors: FactorState, want: Acr | undefined): boolean =>
  !user.passwordSet && user.emailVerified && !user.mustVerifyEmail && nextStep(['otp'], factors, want) === 'done';

/** What asking for a code answered: the browser's new token (the same answer whoever the address is), or the throttle's refusal. */
export type Asked = { token: BrowserToken } | { throttled: Refusal };

/** "Email me a sign-in code" for `email`, on a box that offers it (the door asks offersFirstStep first). */
export async function askFirstStepCode(
  svc: FirstStepServices,
  typed: { email: string; language: string | undefined; device: string | undefined },
): Promise<Asked> {
  // Read for every ask (the same reads whoever asks): a browser that signed in as this person (its
  // device cookie, ../devices.ts) is counted on its own, so strangers' asks never spend its person's codes.
  const found = await store.findUserByEmail(svc.pool, typed.email);
  const device = found ? knownDevice(svc.deviceKey, typed.device, found.id) : undefined;
  const refused = await svc.attempts.begin([device ? { mailsFromDevice: device } : { mailsTo: typed.email }]);
  if (refused) return { throttled: refused };
  const token = randomBytes(32).toString('base64url');
  // Read for an unknown address too (id 0 is nobody's: no factors), so that it costs the same reads.
  const factors = await store.factorState(svc.pool, found?.id ?? 0);
  const may = found !== undefined && mayBeSignedIn(found) && mayUseCode(found, factors, undefined);
  const detail: SignInCodeDetail = { firstStep: true, for: boundTo({ step: token })!.toString('hex') };
  // Queued whoever asks, so that an address nobody may use costs what one that may does; the mail names the person only when they may.
  await store.enqueueMail(svc.pool, {
    kind: 'sign-in-code',
    address: typed.email,
    ...(may ? { userId: found.id } : {}),
    ...(typed.language ? { language: typed.language } : {}),
    detail: JSON.stringify(detail),
  });
  return { token: { token, expiresAt: new Date(Date.now() + EMAIL_CODE_MINUTES * 60_000) } };
}

/** A code typed instead of a password, and what the sign-in is asked to reach. */
export interface TypedFirstStepCode {
  email: string;
  code: string;
  address: string;
  acr: Acr | undefined;
}

/** A code by email typed in the browser of `token`: a first factor (`otp`), or a refusal, counted as a password is (./way.ts). */
export async function giveFirstStepCode(
  svc: FirstStepServices,
  typed: TypedFirstStepCode,
  token: string | undefined,
): Promise<Answer<FirstFactor>> {
  return signInThrough<FirstFactor>(
    svc,
    { address: typed.address, account: typed.email, counts: true, success: 'email code' },
    async () => {
      const user = typed.email && offersFirstStep(svc.config) ? await store.findUserByEmail(svc.pool, typed.email) : undefined;
      const code = emailCodeTyped(typed.code);
      const bound = boundTo({ step: token });
      const of = user ? { user: user.id } : {};
      const taken =
        user &&
        code !== undefined &&
        bound &&
        (await store.takeFirstStepCode(svc.pool, user.id, firstStepCodeHash(svc.factorKey, user.id, code), bound, new Date()));
      if (!user || !taken) return { refused: user ? 'wrong email code' : 'unknown email', said: FIRST_STEP_REFUSALS.wrong, ...of };
      if (!mayBeSignedIn(user)) return { refused: 'deactivated', said: FIRST_STEP_REFUSALS.turnedOff, user: user.id, givenBack: true };
      // A password set, a factor added, or a class asked that one factor does not reach: the code proves the mailbox, and no more.
      if (!mayUseCode(user, await store.factorState(svc.pool, user.id), typed.acr))
        return { refused: 'email code not enough', said: FIRST_STEP_REFUSALS.notEnough, user: user.id, givenBack: true };
      // A password set meanwhile (its hash another by then) signs nobody in (../steps.ts proceed).
      return { proven: { userId: user.id, amr: ['otp'], holds: { passwordHash: user.passwordHash, provider: null } }, user: user.id };
    },
  );
}
