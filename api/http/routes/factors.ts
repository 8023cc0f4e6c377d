// A person's second factors in the browser (docs/guides/second-factors.md): the sign-in's
// second step (/auth/sign-in/second-factor), enrolment when a sign-in needs a factor the
// person lacks (/auth/sign-in/enrol, then /auth/sign-in/continue), and the person's own page
// (/auth/account). A step's pages act only on the browser's step (api/http/sign-in-steps.ts): no
// browser session exists until it completes. Codes are counted before they are checked, per
// account and per address, as passwords are (api/people/attempts.ts).
import type { Request, Response, Router } from 'express';
import { ACR_PASSKEY, withFactor } from '../../credentials/acr.js';
import { endPersonsGrants } from '../../credentials/closing.js';
import { seal, unseal } from '../../credentials/sealing.js';
import { withTransaction, type Transaction } from '../../db/pool.js';
import { minutesUntil, type Attempts } from '../../people/attempts.js';
import { removeOwnFactor } from '../../people/accounts.js';
import { nextStep } from '../../people/factors.js';
import { tellOfFactorChange } from '../../people/notices.js';
import { hashOf, newRecoveryCodes, normalize } from '../../people/recovery-codes.js';
import { matchingStep, newTotpSecret, secretText, totpUri } from '../../people/totp.js';
import {
  acceptTotpStep,
  factorState,
  findTotp,
  listFactors,
  removeAllFactors,
  replaceRecoveryCodes,
  setMustEnrol,
  startTotp,
  useRecoveryCode,
  type SignInStep,
} from '../../store/factors.js';
import { holdBrowserSession } from '../../store/browser.js';
import { getUser, holdPerson, lockUser, type UserRow } from '../../store/users.js';
import { enrolPage, recoveryCodesPage, secondFactorPage, signInAgainPage, type StepFields } from '../../ui/factor-pages.js';
import { pageForm } from '../body.js';
import { csrfToken, csrfValid, EndedMeanwhile, strengthen, type BrowserServices } from '../browser-session.js';
import type { AddressOf } from '../client-address.js';
import { invalidForm, renderPage, type SignedInPerson } from '../pages.js';
import { factorChange, showAccount, type Shown } from '../account-page.js';
import { strictRouter } from '../router.js';
import {
  acrParam,
  advanceStep,
  completeStep,
  continueStep,
  currentStep,
  pageOf,
  proceed,
  signInAgain as signInAgainPath,
  stepStillThere,
  type StepTarget,
} from '../sign-in-steps.js';
import { safeReturnTo } from './sign-in.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  attempts: Attempts;
  addressOf: AddressOf;
  factorKey: Buffer;
}

export type FactorRouterServices = BrowserServices & Needs;

const TOTP_NAME = 'Authenticator app';
const TOTP_PURPOSE = 'totp';
type Body = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

export function factorRouter(svc: FactorRouterServices): Router {
  const router = strictRouter();
  const box = svc.config.box;

  const targetOf = (from: Body): StepTarget => ({ returnTo: safeReturnTo(from.return_to), acr: acrParam(from.acr) });
  const fields = (req: Request, res: Response, target: StepTarget): StepFields => ({
    csrf: csrfToken(svc, req, res),
    returnTo: target.returnTo,
    acr: target.acr,
  });
  const signInAgain = (res: Response, target: StepTarget): void => renderPage(res, 403, signInAgainPage(box, target.returnTo));

  /** Counts a code before it is checked; the page saying so when the person or the address is over the limit. */
  async function counted(req: Request, email: string): Promise<string | undefined> {
    const address = svc.addressOf(req);
    const refused = await svc.attempts.begin([{ address }, { account: email }]);
    if (!refused) return undefined;
    svc.audit.record({ event: 'sign_in', outcome: 'locked', address, reason: 'second factor' });
    const minutes = minutesUntil(refused.retryAt);
    return `Too many wrong codes. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
  }

  /** A right code: the person's failures are wiped, the address's attempt given back (as the password form does). */
  async function succeeded(req: Request, email: string): Promise<void> {
    await svc.attempts.clear({ account: email });
    await svc.attempts.giveBack([{ address: svc.addressOf(req) }]);
  }

  function failed(req: Request, user: UserRow, reason: string): void {
    svc.audit.record({ event: 'sign_in', outcome: 'failure', address: svc.addressOf(req), user: String(user.id), reason });
  }

  /** The time step `code` is a right code of for `totp` and was not taken at yet; undefined when it is wrong. */
  const codeStep = (totp: { sealedSecret: Buffer; lastStep: number | null }, code: string): number | undefined =>
    matchingStep(unseal(svc.factorKey, TOTP_PURPOSE, totp.sealedSecret), code, Date.now(), totp.lastStep);

  /** The TOTP code of `totp` accepted for its step (one UPDATE: of two requests with one code, one wins). */
  async function totpAccepted(totp: { id: number; sealedSecret: Buffer; lastStep: number | null }, code: string) {
    const step = codeStep(totp, code);
    return step !== undefined && (await acceptTotpStep(svc.pool, totp.id, step));
  }

  // --- the second factor of a sign-in

  async function secondFactor(req: Request, res: Response, step: SignInStep, target: StepTarget, status = 200, error?: string) {
    const state = await factorState(svc.pool, step.userId);
    const askedPasskey = target.acr === ACR_PASSKEY;
    renderPage(
      res,
      status,
      secondFactorPage({
        box,
        ...fields(req, res, target),
        totp: state.totp,
        passkeys: state.passkeys > 0,
        recoveryCodes: state.recoveryCodes > 0,
        passkeyOnly: askedPasskey && state.passkeys > 0,
        passkeyNext: askedPasskey && state.passkeys === 0,
        ...(error ? { error } : {}),
      }),
      {},
      { script: state.passkeys > 0 },
    );
  }

  router.get('/auth/sign-in/second-factor', async (req, res) => {
    const target = targetOf(req.query);
    const step = await currentStep(svc, req);
    if (!step) return signInAgain(res, target);
    const state = await factorState(svc.pool, step.userId);
    // Nothing to give (a recovery code used meanwhile, a reset): the way on is enrolment.
    if (!state.totp && state.passkeys === 0 && state.recoveryCodes === 0) return res.redirect(303, pageOf('enrol', target));
    await secondFactor(req, res, step, target);
  });

  router.post('/auth/sign-in/second-factor', ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const step = await currentStep(svc, req);
    const user = step && (await getUser(svc.pool, step.userId));
    if (!step || !user) return signInAgain(res, target);
    const again = (status: number, error: string) => secondFactor(req, res, step, target, status, error);
    const code = text(body.code);
    const recovery = text(body.recovery_code);
    // A passkey is asked: a person who has one gives it; one who has none gives their code, then adds one (an enrolment).
    if (target.acr === ACR_PASSKEY && (await factorState(svc.pool, user.id)).passkeys > 0)
      return again(400, 'This sign-in asks for a passkey: a code is not enough.');
    if (!code && !recovery) return again(400, 'Type the code your app shows, or one of your recovery codes.');

    const refusal = await counted(req, user.email);
    if (refusal) return again(429, refusal);

    if (code) {
      const totp = await findTotp(svc.pool, user.id);
      if (!totp || !(await totpAccepted(totp, code))) {
        failed(req, user, 'wrong code');
        return again(401, 'That code is wrong or was used already. Wait for the next one and try again.');
      }
      await succeeded(req, user.email);
      svc.audit.record({ event: 'sign_in', outcome: 'success', user: String(user.id), address: svc.addressOf(req), reason: 'totp' });
      const done = await completeStep(svc, req, res, (s) => ({ amr: withFactor(s.amr, ['otp']), factor: 'given' }), target);
      if (!done) return signInAgain(res, target);
      return;
    }

    // A recovery code: a way back in (ARCHITECTURE §12). The person's factors and codes go, so
    // does every other sign-in of theirs; they enrol anew before the sign-in completes.
    const normal = normalize(recovery);
    // Under the person's row and while this sign-in's step is still there: a reset or a password
    // change that came first ended it (the password it proved is not theirs any more), and the code
    // is not used. The password the sign-in goes on with is the one this found.
    const used =
      normal === undefined
        ? undefined
        : await withTransaction(svc.pool, async (tx) => {
            if (!(await lockUser(tx, user.id)) || !(await stepStillThere(svc, req, tx))) return 'ended' as const;
            if (!(await useRecoveryCode(tx, user.id, hashOf(normal)))) return undefined;
            await removeAllFactors(tx, user.id);
            await setMustEnrol(tx, user.id, true);
            await endPersonsGrants(svc, tx, user.id, { how: 'recovery-code', by: { user: String(user.id) } });
            await tellOfFactorChange(svc, tx, user, { change: 'removed', factor: 'every-factor' });
            return { passwordHash: (await getUser(tx, user.id))!.passwordHash };
          });
    if (used === 'ended') return signInAgain(res, target);
    if (!used) {
      failed(req, user, 'wrong recovery code');
      return again(401, 'That recovery code is wrong or was used already.');
    }
    await succeeded(req, user.email);
    svc.audit.record({
      event: 'factor',
      action: 'recovery-code-used',
      user: String(user.id),
      by: { user: String(user.id) },
      address: svc.addressOf(req),
    });
    svc.audit.record({
      event: 'factor',
      action: 'reset',
      user: String(user.id),
      by: { user: String(user.id) },
      address: svc.addressOf(req),
    });
    // Its step went with the person's others. A sign-in's step goes on from what it proved before
    // the code (its password, minutes ago), to enrolment (must_enrol): the code itself is no factor
    // to sign in with. A step-up's proved nothing here (its session ended with the others): the
    // person signs in again, and enrols after that sign-in.
    if (step.replaces !== null) return void res.redirect(303, signInAgainPath(target, 'enrol'));
    await proceed(svc, res, user.id, step.amr, target, { provider: step.provider, passwordHash: used.passwordHash });
  });

  // --- enrolment

  /** A new TOTP, pending until a code confirms it: its page (QR code, key, a code field). */
  async function newTotpPage(req: Request, res: Response, user: UserRow, target: StepTarget, action: string, status = 200, error?: string) {
    const secret = newTotpSecret();
    await withTransaction(svc.pool, (tx) => startTotp(tx, user.id, TOTP_NAME, seal(svc.factorKey, TOTP_PURPOSE, secret)));
    const QRCode = (await import('qrcode')).default; // at the first enrolment: not every box's start pays for it
    const qrSvg = await QRCode.toString(totpUri(secret, box, user.email), { type: 'svg', margin: 2, width: 220 });
    renderPage(
      res,
      status,
      enrolPage({
        box,
        ...fields(req, res, target),
        action,
        qrSvg,
        secret: secretText(secret),
        passkeyOnly: false,
        // In a sign-in's enrolment a passkey may be added instead (the account has its passkeys page).
        offerPasskey: target !== ACCOUNT,
        ...(error ? { error } : {}),
      }),
      {},
      { script: target !== ACCOUNT },
    );
  }

  /**
   * A step may enrol only when it has to: what it holds leaves its person nothing to give but a new
   * factor of the class asked (one who has a factor gives it first: enrolling would skip it; one
   * asked for a passkey who has only an app gives the app's code, then adds a passkey), and a
   * step-up only after a recent proof (api/people/factors.ts nextStep).
   */
  async function enrollingStep(req: Request, target: StepTarget): Promise<{ step: SignInStep; user: UserRow } | undefined> {
    const step = await currentStep(svc, req);
    const user = step && (await getUser(svc.pool, step.userId));
    if (!step || !user) return undefined;
    const stepUp = step.replaces === null ? undefined : { proofAt: step.proofAt, now: Date.now() };
    return nextStep(step.amr, await factorState(svc.pool, user.id), target.acr, stepUp) === 'enrol' ? { step, user } : undefined;
  }

  /** The enrolment of a sign-in asked for a passkey: only a passkey meets it (the passkeys script adds it). */
  const passkeyEnrolPage = (req: Request, res: Response, target: StepTarget, status = 200, error?: string): void =>
    renderPage(
      res,
      status,
      enrolPage({ box, ...fields(req, res, target), action: '', qrSvg: '', secret: '', passkeyOnly: true, ...(error ? { error } : {}) }),
      {},
      { script: true },
    );

  router.get('/auth/sign-in/enrol', async (req, res) => {
    const target = targetOf(req.query);
    const enrolling = await enrollingStep(req, target);
    if (!enrolling) return signInAgain(res, target);
    if (target.acr === ACR_PASSKEY) return passkeyEnrolPage(req, res, target);
    await newTotpPage(req, res, enrolling.user, target, '/auth/sign-in/enrol');
  });

  /** A code of the person's pending TOTP: which factor, and the time step the code is of. */
  interface PendingCode {
    id: number;
    step: number;
  }

  /**
   * The pending TOTP `code` is a right code of, checked and not yet written (undefined, recorded as
   * a failure, when it is wrong): confirmed only with what it is enrolled for (`confirmedIn`).
   */
  async function pendingCode(req: Request, user: UserRow, code: string): Promise<PendingCode | undefined> {
    const pending = await findTotp(svc.pool, user.id, 'pending');
    const step = pending && codeStep(pending, code);
    if (!pending || step === undefined) {
      failed(req, user, 'wrong enrolment code');
      return undefined;
    }
    return { id: pending.id, step };
  }

  /**
   * The pending TOTP confirmed by its code, in `tx`: in the transaction of what it is enrolled for
   * (the step it completes, the browser session it strengthens), so that a reset, a password change
   * or a sign-out that ended that first leaves no app added. False when the code was taken meanwhile.
   */
  const confirmedIn = (tx: Transaction, code: PendingCode): Promise<boolean> => acceptTotpStep(tx, code.id, code.step, true);

  /** What an app confirmed is told (the code was right) and recorded as, once its transaction committed. */
  async function enrolled(req: Request, user: UserRow, code: PendingCode): Promise<void> {
    await succeeded(req, user.email);
    svc.audit.record({
      event: 'factor',
      action: 'enrolled',
      kind: 'totp',
      factor: String(code.id),
      user: String(user.id),
      by: { user: String(user.id) },
      address: svc.addressOf(req),
    });
  }

  /**
   * Ten new recovery codes for the person, their hashes stored in `tx` (with the factor they come
   * with, or while the browser asking is signed in), the plain ones returned to be shown once.
   */
  async function newCodes(tx: Transaction, userId: number): Promise<string[]> {
    const codes = newRecoveryCodes();
    await replaceRecoveryCodes(tx, userId, codes.map(hashOf));
    return codes;
  }

  function codesMade(req: Request, user: UserRow): void {
    svc.audit.record({
      event: 'factor',
      action: 'recovery-codes-made',
      kind: 'recovery-codes',
      user: String(user.id),
      by: { user: String(user.id) },
      address: svc.addressOf(req),
    });
  }

  router.post('/auth/sign-in/enrol', ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const enrolling = await enrollingStep(req, target);
    if (!enrolling) return signInAgain(res, target);
    const { user } = enrolling;
    // An app's code does not meet a sign-in asked for a passkey: enrolling one here would be a factor for nothing.
    if (target.acr === ACR_PASSKEY) return passkeyEnrolPage(req, res, target, 400, 'This sign-in asks for a passkey: add one.');
    const refusal = await counted(req, user.email);
    if (refusal) return newTotpPage(req, res, user, target, '/auth/sign-in/enrol', 429, refusal);
    const code = await pendingCode(req, user, text(body.code));
    if (!code)
      return newTotpPage(req, res, user, target, '/auth/sign-in/enrol', 401, 'That code is wrong. Scan this new code and try again.');
    // The step is used up here, and a new one holds the factor just proven: Continue goes on from it.
    // The app is confirmed and must_enrol cleared with it, under the person's row: a reset that came
    // first took the step, and leaves no app added.
    let codes: string[] = [];
    const advanced = await advanceStep(svc, req, res, async (s, tx) => {
      if (s.userId !== user.id || !(await confirmedIn(tx, code))) return undefined;
      await setMustEnrol(tx, user.id, false);
      await tellOfFactorChange(svc, tx, user, { change: 'added', factor: 'totp' });
      codes = await newCodes(tx, user.id);
      return { amr: withFactor(s.amr, ['otp']), factor: 'enrolled' };
    });
    if (!advanced) return signInAgain(res, target);
    await enrolled(req, user, code);
    codesMade(req, user);
    renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, target), codes, action: '/auth/sign-in/continue', post: true }));
  });

  router.post('/auth/sign-in/continue', ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const done = await continueStep(svc, req, res, target);
    if (!done) signInAgain(res, target);
  });

  // --- the person's own page (its address, password, sign-ins and apps: routes/account.ts). Every
  // change of a factor asks for a recent proof (account-page.ts factorChange) and is mailed.

  const account = (req: Request, res: Response, person: SignedInPerson, status = 200, shown: Shown = {}) =>
    showAccount(svc, req, res, person, status, shown);
  const change = (req: Request, res: Response) => factorChange(svc, req, res);

  const ACCOUNT: StepTarget = { returnTo: '/auth/account', acr: undefined };
  /** What a change posted from a browser signed out meanwhile gets: the sign-in page, back to the account. */
  const toSignIn = (res: Response): void => res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT.returnTo)}`);

  router.post('/auth/account/totp', ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const { user } = person;
    if ((await factorState(svc.pool, user.id)).totp)
      return account(req, res, person, 409, { error: 'You have an authenticator app already. Remove it first to set up another.' });
    await newTotpPage(req, res, user, ACCOUNT, '/auth/account/totp/confirm');
  });

  router.post('/auth/account/totp/confirm', ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const { user, browser } = person;
    const refusal = await counted(req, user.email);
    if (refusal) return newTotpPage(req, res, user, ACCOUNT, '/auth/account/totp/confirm', 429, refusal);
    const wrong = () =>
      newTotpPage(req, res, user, ACCOUNT, '/auth/account/totp/confirm', 401, 'That code is wrong. Scan this new code and try again.');
    const code = await pendingCode(req, user, text((req.body as Body).code));
    if (!code) return wrong();
    // The app goes in with what it counts for, in one transaction under the person's row: this
    // browser's session counts the app from now on (new cookie, same sid), so the person's own
    // rules, now asking for it, are met; it was enrolled, not given at a sign-in, so the session's
    // sign-in time and last proof stay (browser-session.ts strengthen). A session that ended
    // meanwhile (a password change, a reset, a sign-out) is not brought back, and takes the app with it.
    let codes: string[] | 'taken' | undefined;
    try {
      codes = await withTransaction(svc.pool, async (tx) => {
        if (!(await holdPerson(tx, user.id))) return undefined;
        if (!(await confirmedIn(tx, code))) return 'taken' as const;
        const since = { proofAt: 'kept', enrolled: true } as const;
        if (!(await strengthen(svc, tx, res, withFactor(browser.amr, ['otp']), browser, since))) throw new EndedMeanwhile();
        await setMustEnrol(tx, user.id, false);
        await tellOfFactorChange(svc, tx, user, { change: 'added', factor: 'totp' });
        return newCodes(tx, user.id);
      });
    } catch (err) {
      if (!(err instanceof EndedMeanwhile)) throw err;
    }
    if (codes === 'taken') return wrong();
    if (!codes) return toSignIn(res);
    await enrolled(req, user, code);
    codesMade(req, user);
    renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, ACCOUNT), codes, action: '/auth/account', post: false }));
  });

  router.post('/auth/account/recovery-codes', ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const { user } = person;
    // Made while this browser is signed in, under the person's row: a reset or a sign-out that
    // ended it first leaves the person's codes as they were.
    const codes = await withTransaction(svc.pool, async (tx) => {
      if (!(await holdPerson(tx, user.id)) || !(await holdBrowserSession(tx, person.browser.sid))) return 'signed-out' as const;
      if (!(await listFactors(tx, user.id)).length) return 'no-factor' as const;
      await tellOfFactorChange(svc, tx, user, { change: 'added', factor: 'recovery-codes' });
      return newCodes(tx, user.id);
    });
    if (codes === 'signed-out') return toSignIn(res);
    if (codes === 'no-factor') return account(req, res, person, 409, { error: 'Set up a second factor first.' });
    codesMade(req, user);
    renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, ACCOUNT), codes, action: '/auth/account', post: false }));
  });

  router.post('/auth/account/factors/remove', ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const { user } = person;
    const id = Number(text((req.body as Body).factor));
    const removed = Number.isSafeInteger(id) ? await removeOwnFactor(svc, user, id, person.browser.sid) : undefined;
    if (removed === 'signed-out') return toSignIn(res);
    if (removed === 'last')
      return account(req, res, person, 409, {
        error:
          'This is your last second factor, and a group of yours requires one. Add another (a passkey or an authenticator app) before removing this one.',
      });
    if (!removed) return account(req, res, person, 404, { error: 'No such factor of yours.' });
    svc.audit.record({
      event: 'factor',
      action: 'removed',
      kind: removed.kind,
      factor: String(removed.id),
      user: String(user.id),
      by: { user: String(user.id) },
      address: svc.addressOf(req),
    });
    await account(req, res, person, 200, { message: `Removed ${removed.name}.` });
  });

  return router;
}
