// Sign-in codes by email (docs/guides/second-factors.md): the second factor of a sign-in, and the
// proof that the person reads the mail of their (verified) address when they set it up — in a
// sign-in's enrolment, or on their own page. A code is six digits, good for ten minutes, once
// (../../credentials/email-codes.ts); it is made when its mail is sent (api/mail/kinds.ts
// `sign-in-code`), so the outbox holds no secret, and only its HMAC under the factor key is kept,
// on the factor's row, with the sign-in (or signed-in browser) it was asked for: a code works
// there alone, and a new one replaces it. Asking for one is counted per person (`mailsAskedBy`:
// nobody mail-bombs a person through it, and strangers' asks to the address never spend it); a code typed is counted before it is
// checked, per account and per address, as an app's is (./way.ts), and taken by one UPDATE. What
// it sets up is written as an app is (./enrolment.ts): in the transaction of what it is set up for,
// under the person's row, with its audit event and mail. Every function takes the mailed kind
// (api/factor-kinds.ts `mailed`), which the pages and routes draw from its declaration: a new kind
// of mailed code is its declaration alone, in a way module of its own (as ./totp.ts is for apps).
import { createHash, timingSafeEqual } from 'node:crypto';
import { withFactor } from '../../credentials/acr.js';
import { emailCodeHash, emailCodeTyped } from '../../credentials/email-codes.js';
import { offersSignInCodes, type Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import { mailedOf, type FactorKindSpec, type MailedFactorKind } from '../../factor-kinds.js';
import { enqueueMail, type SignInCodeDetail } from '../../mail/kinds.js';
import { findFactor, startFactor, takeEmailCode, type EmailFactor } from '../../store/factors.js';
import { holdPerson } from '../../store/users.js';
import type { Refusal } from '../attempts.js';
import type { BrowserFacts, SignedInPerson } from '../browsers.js';
import { completeStep, type StepServices, type StepTarget, type WentOn } from '../steps.js';
import { enrolInStep, enrolOnAccount, type Confirming, type PendingCheck } from './enrolment.js';
import { signInThrough, type Answer, type CodeOf, type WayServices } from './way.js';

/**
 * Codes by email as a kind of factor (api/factor-kinds.ts; `make generate` copies it there): RFC
 * 8176 `otp` when given, as an app's code. NIST SP 800-63B §5.1.3.1 does not count email as an
 * out-of-band authenticator (docs/guides/second-factors.md says what it protects).
 */
export const FACTOR_KIND = {
  kind: 'email',
  position: 30,
  label: 'factor.emailKind',
  mailWord: 'factor.emailInMail',
  ssfCredential: 'email-code',
  mailed: {
    name: 'Codes by email',
    path: 'email-codes',
    field: 'email_code',
    words: {
      heading: 'email.heading',
      intro: 'email.intro',
      send: 'email.send',
      sent: 'email.sent',
      code: 'email.code',
      hint: 'email.codeHint',
      wrongCode: 'email.wrongCode',
      tooMany: 'email.tooMany',
      addressFirst: 'email.addressFirst',
      notOffered: 'email.notOffered',
      orSetUp: 'enrol.orEmail',
      setUp: 'account.setUpEmail',
      already: 'account.emailAlready',
    },
  },
} as const satisfies FactorKindSpec;

/** Everything a code by email does to the database itself (what it completes is ../steps.ts's, what codes set up bring ./enrolment.ts's). */
export interface EmailCodeStore {
  /** The person's codes by email: the confirmed factor, or (`pending`) the one being set up, with the code mailed last. */
  findFactor(db: Queryable, userId: number, kind: MailedFactorKind, which?: 'confirmed' | 'pending'): Promise<EmailFactor | undefined>;
  /** Codes by email being set up: pending; an earlier pending one is replaced. */
  startFactor(tx: Transaction, userId: number, name: string, start: { kind: MailedFactorKind }): Promise<number>;
  /** The code taken, once (one UPDATE), while it is the last mailed, for this sign-in, unexpired; `confirm` confirms a factor being set up. */
  takeEmailCode(db: Queryable, id: number, hash: Buffer, codeFor: Buffer, now: Date, confirm?: boolean): Promise<boolean>;
  /** The person's row held until the transaction ends, as every change of their factors holds it. */
  holdPerson(tx: Transaction, id: number): ReturnType<typeof holdPerson>;
  /** The mail asking for a code, in the transaction of the factor it is for (api/mail/kinds.ts). */
  enqueueMail: typeof enqueueMail;
  /** A transaction of its own (codes being set up, and their first code asked for). */
  withTransaction: typeof withTransaction;
}

const store: EmailCodeStore = { findFactor, startFactor, takeEmailCode, holdPerson, enqueueMail, withTransaction };

/** What codes by email use of the process's services. */
export type EmailCodeServices = WayServices & StepServices & { factorKey: Buffer; pool: Pool; config: Pick<Config, 'smtp' | 'box'> };

/** What a code is bound to: the SHA-256 of a sign-in step's id (its cookie), or of a signed-in browser's sid. */
export type CodeFor = { step: string | undefined } | { browser: string };

/** The binding a code is stored with (undefined: no step to bind it to). */
export const boundTo = (to: CodeFor): Buffer | undefined => {
  if ('browser' in to) return createHash('sha256').update(`browser\0${to.browser}`).digest();
  return to.step === undefined ? undefined : createHash('sha256').update(`step\0${to.step}`).digest();
};

/**
 * Whether `user` may set up codes by email: the box offers them (BOXAUTH_SMTP_SIGN_IN_CODES, off in
 * the release that brought them, since the release before counts no such factor:
 * docs/operations/upgrades.md "A new kind"), and their address is proven. Codes set up already
 * work either way, wherever the box sends mail.
 */
export const maySetUpEmailCodes = (svc: { config: Pick<Config, 'smtp'> }, user: { emailVerified: boolean }): boolean =>
  offersSignInCodes(svc.config.smtp) && user.emailVerified;

/** What asking for a code answered: mailed, throttled (too many mails to that address), or nothing to mail it for. */
export type Sent = 'sent' | 'none' | { throttled: Refusal };

/** Mails a new code for `factor` bound to `to`, in `tx`: the mail's detail names both, never the code. */
async function mailCode(db: Queryable, of: CodeOf, factor: number, to: Buffer, language: string | undefined): Promise<void> {
  await store.enqueueMail(db, {
    kind: 'sign-in-code',
    address: of.user.email,
    userId: of.user.id,
    ...(language ? { language } : {}),
    detail: JSON.stringify({ factor, for: to.toString('hex') } satisfies SignInCodeDetail),
  });
}

/**
 * Counted as the person's own asks (they are past their password, or signed in): a refusal, or
 * undefined to go on. Not with strangers' asks to the address (`mailsTo`, which anyone may spend
 * from the sign-in page), so that those never keep a person from their second factor.
 */
const mailCounted = async (svc: EmailCodeServices, of: CodeOf): Promise<Refusal | undefined> =>
  svc.attempts.begin([{ mailsAskedBy: of.user.id }]);

/** "Send a code" in the step `to` of a sign-in: a code for the person's codes of `kind`. */
export async function sendCodeInStep(
  svc: EmailCodeServices,
  kind: MailedFactorKind,
  of: CodeOf,
  to: CodeFor,
  language?: string,
): Promise<Sent> {
  const bound = boundTo(to);
  const factor = await store.findFactor(svc.pool, of.user.id, kind);
  if (!factor || !bound || svc.config.smtp === undefined) return 'none';
  const refused = await mailCounted(svc, of);
  if (refused) return { throttled: refused };
  await mailCode(svc.pool, of, factor.id, bound, language);
  return 'sent';
}

/** Starts setting up codes of `kind` for the sign-in or browser `to`: a pending factor, and its first code mailed. */
export async function startEmailCodes(
  svc: EmailCodeServices,
  kind: MailedFactorKind,
  of: CodeOf,
  to: CodeFor,
  language?: string,
): Promise<Sent> {
  const bound = boundTo(to);
  if (!bound || !offersSignInCodes(svc.config.smtp)) return 'none';
  const refused = await mailCounted(svc, of);
  if (refused) return { throttled: refused };
  const started = await store.withTransaction(svc.pool, async (tx) => {
    if (!(await store.holdPerson(tx, of.user.id))) return false;
    await mailCode(tx, of, await store.startFactor(tx, of.user.id, mailedOf(kind).name, { kind }), bound, language);
    return true;
  });
  return started ? 'sent' : 'none';
}

/** The HMAC of `typed` when it is the code `factor` holds for `bound`, unexpired (compared in constant time); undefined otherwise. */
function matchingCode(svc: Pick<EmailCodeServices, 'factorKey'>, factor: EmailFactor, typed: string, bound: Buffer): Buffer | undefined {
  const code = emailCodeTyped(typed);
  if (code === undefined || !factor.codeHash || !factor.codeFor || !factor.codeExpiresAt) return undefined;
  if (factor.codeExpiresAt.getTime() <= Date.now() || !factor.codeFor.equals(bound)) return undefined;
  const hash = emailCodeHash(svc.factorKey, factor.id, code);
  return timingSafeEqual(hash, factor.codeHash) ? hash : undefined;
}

/** How a code of a sign-in is counted and recorded (./way.ts): as an app's. */
const asSecondFactor = (of: CodeOf) => ({ address: of.address, account: of.user.email, counts: false, locked: 'second factor' });

/** A mailed code of `kind` as the second factor of the step of `stepToken`: the way on, or `ended` (the step is gone). */
export async function giveEmailCode(
  svc: EmailCodeServices,
  kind: MailedFactorKind,
  from: BrowserFacts,
  of: CodeOf,
  stepToken: string | undefined,
  code: string,
  target: StepTarget,
): Promise<Answer<WentOn | 'ended'>> {
  return signInThrough<WentOn | 'ended'>(svc, { ...asSecondFactor(of), success: 'email code' }, async () => {
    const bound = boundTo({ step: stepToken });
    const factor = await store.findFactor(svc.pool, of.user.id, kind);
    const hash = factor && bound && matchingCode(svc, factor, code, bound);
    // One UPDATE: of two requests with one code, one wins.
    if (!factor || !bound || !hash || !(await store.takeEmailCode(svc.pool, factor.id, hash, bound, new Date())))
      return { refused: 'wrong email code', said: 'wrong code', user: of.user.id };
    const went = await completeStep(svc, from, stepToken, (s) => ({ amr: withFactor(s.amr, ['otp']), factor: 'given' }), target);
    return { proven: went ?? 'ended', user: of.user.id };
  });
}

/** A right code of the person's codes by email being set up: the factor, taken (once) only with what it is set up for. */
async function pendingCode(
  svc: EmailCodeServices,
  kind: MailedFactorKind,
  userId: number,
  code: string,
  to: CodeFor,
): Promise<Confirming | undefined> {
  const bound = boundTo(to);
  const pending = bound && (await store.findFactor(svc.pool, userId, kind, 'pending'));
  const hash = pending && bound && matchingCode(svc, pending, code, bound);
  if (!pending || !bound || !hash) return undefined;
  return { kind, id: pending.id, confirm: (tx) => store.takeEmailCode(tx, pending.id, hash, bound, new Date(), true) };
}

/** The code of codes by email being set up, mailed for `to`, as ./enrolment.ts checks it. */
const pendingEmail = (svc: EmailCodeServices, kind: MailedFactorKind, userId: number, code: string, to: CodeFor): PendingCheck => ({
  check: () => pendingCode(svc, kind, userId, code, to),
  reason: 'wrong enrolment email code',
});

/** The code of codes by email set up in the enrolment of the step of `stepToken` (./enrolment.ts). `ended`: the step is gone. */
export const enrolEmailInStep = (svc: EmailCodeServices, kind: MailedFactorKind, of: CodeOf, stepToken: string | undefined, code: string) =>
  enrolInStep(svc, of, stepToken, pendingEmail(svc, kind, of.user.id, code, { step: stepToken }));

/**
 * The code of codes by email set up on the person's own page, confirmed with the session it
 * strengthens (./enrolment.ts). `ended`: the session ended meanwhile; `taken`: the code was used meanwhile.
 */
export const addEmailOnAccount = (
  svc: EmailCodeServices,
  kind: MailedFactorKind,
  from: BrowserFacts,
  person: SignedInPerson,
  code: string,
  address: string,
) => enrolOnAccount(svc, from, person, address, pendingEmail(svc, kind, person.user.id, code, { browser: person.browser.sid }));
