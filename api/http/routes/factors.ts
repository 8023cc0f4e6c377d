// The pages of a person's second factors (docs/guides/second-factors.md): the sign-in's second
// step (/auth/sign-in/second-factor), enrolment when a sign-in needs a factor the person lacks
// (/auth/sign-in/enrol, then /auth/sign-in/continue), and the factors on the person's own page
// (/auth/account). What a code proves and what it changes is api/people/ways/'s (app-codes.ts for
// every kind of app, email-code.ts every kind of mailed code, recovery-code.ts); where a sign-in goes
// on, api/people/steps.ts's. This door reads the forms and the browser's cookies, and answers with
// pages. The kinds are the registry's (api/factor-kinds.ts): each app's and each mailed kind's form
// field, `send` value, words and account page path are read from there, none named here; a
// `webauthn` kind is given and added by its own routes (./passkeys.ts), and is the one a sign-in
// asked for acr phr wants.
import { offersSignInCodes } from '../../config.js';
import { Request, Response, Router } from '../router.js';
import { ACR_PASSKEY } from '../../credentials/acr.js';
import {
  appKindOfForm,
  appOf,
  FACTOR_KIND_NAMES,
  hasFactor,
  holdsWebAuthn,
  isAppKind,
  isMailedKind,
  isWebAuthnKind,
  MAILED_FACTOR_KINDS,
  mailedKindOfForm,
  mailedKindToSend,
  mailedOf,
  OFFERED_APP_KINDS,
  WEBAUTHN_FACTOR_KINDS,
  type AppFactorKind,
  type FactorKind,
  type MailedFactorKind,
} from '../../factor-kinds.js';
import { CODES_MADE_PER_WINDOW, minutesUntil, secondsUntil, type Attempts, type Refusal } from '../../people/attempts.js';
import { removeOwnFactor } from '../../people/accounts.js';
import { nextStep } from '../../people/factors.js';
import { factorsOf } from '../../people/own-account.js';
import { currentStep, continueStep, proceed, type StepServices, type WentOn } from '../../people/steps.js';
import {
  addEmailOnAccount,
  enrolEmailInStep,
  giveEmailCode,
  maySetUpEmailCodes,
  sendCodeInStep,
  startEmailCodes,
  type CodeFor,
} from '../../people/ways/email-code.js';
import { giveRecoveryCode, newCodesOnAccount } from '../../people/ways/recovery-code.js';
import { addAppOnAccount, enrolAppInStep, giveAppCode, startApp } from '../../people/ways/app-codes.js';
import type { Answer, CodeOf } from '../../people/ways/way.js';
import type { SignInStep } from '../../store/sign-in-steps.js';
import type { UserRow } from '../../store/users.js';
import { enrolPage, mailedCodePage, recoveryCodesPage, secondFactorPage, signInAgainPage, type StepFields } from '../../ui/factor-pages.js';
import { words, type Text } from '../../ui/language.js';
import { browserPage } from '../browser-pages.js';
import { pageForm } from '../body.js';
import { pageLanguage } from '../language.js';
import { browserFacts, csrfToken, csrfValid, handOver, type BrowserServices } from '../browser-session.js';
import type { AddressOf } from '../client-address.js';
import { invalidForm, renderPage, type SignedInPerson } from '../pages.js';
import { factorChange, showAccount, type Shown } from '../account-page.js';
import { acrParam, goOn, pageOf, signInAgain as signInAgainPath, stepToken, type StepTarget } from '../sign-in-steps.js';
import { safeReturnTo } from './sign-in.js';
import type { Metrics } from '../../metrics.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  attempts: Attempts;
  addressOf: AddressOf;
  factorKey: Buffer;
  metrics: Metrics;
}

export type FactorRouterServices = BrowserServices & StepServices & Needs;

type Body = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

export function factorRouter(svc: FactorRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;

  const targetOf = (from: Body): StepTarget => ({ returnTo: safeReturnTo(from.return_to), acr: acrParam(from.acr) });
  const fields = (req: Request, res: Response, target: StepTarget): StepFields => ({
    csrf: csrfToken(svc, req, res),
    returnTo: target.returnTo,
    acr: target.acr,
  });
  const signInAgain = (res: Response, target: StepTarget): void => renderPage(res, 403, signInAgainPage(box, target.returnTo));
  /** What a throttle's refusal says on a page of codes. */
  const tooManyCodes = (refusal: Refusal): Text => {
    const minutes = minutesUntil(refusal.retryAt);
    return words(minutes === 1 ? 'code.tooManyOne' : 'code.tooMany', { minutes });
  };
  const codeOf = (req: Request, user: UserRow): CodeOf => ({ user, address: svc.addressOf(req) });
  /** What a throttle's refusal of a mailed code of `kind` says. */
  const tooManyMails = (kind: MailedFactorKind, refusal: Refusal): Text =>
    words(mailedOf(kind).words.tooMany, { minutes: minutesUntil(refusal.retryAt) });
  /** Mailed codes of `kind` being set up, posted to `action`: a code mailed (or not: `sent`), the field to type it. */
  const mailedPage = (
    req: Request,
    res: Response,
    kind: MailedFactorKind,
    user: UserRow,
    target: StepTarget,
    action: string,
    sent: boolean,
    status = 200,
    error?: Text,
  ) =>
    renderPage(
      res,
      status,
      mailedCodePage({ box, ...fields(req, res, target), kind, action, address: user.email, sent, ...(error ? { error } : {}) }),
    );

  // --- the second factor of a sign-in

  async function secondFactor(
    req: Request,
    res: Response,
    step: SignInStep,
    target: StepTarget,
    status = 200,
    error?: Text,
    sent?: MailedFactorKind,
  ) {
    const { user, factors } = await factorsOf(svc, step.userId);
    const phr = target.acr === ACR_PASSKEY ? (holdsWebAuthn(factors) ? 'only' : 'next') : undefined;
    // A mailed kind is offered only to a person found (a code goes to their address).
    const kinds = FACTOR_KIND_NAMES.filter((kind) => factors[kind] > 0 && (user || !isMailedKind(kind)));
    renderPage(
      res,
      status,
      secondFactorPage({
        box,
        ...fields(req, res, target),
        kinds,
        address: user?.email ?? '',
        ...(sent ? { sent } : {}),
        recoveryCodes: factors.recoveryCodes > 0,
        hasFactor: hasFactor(factors),
        ...(phr ? { phr } : {}),
        ...(error ? { error } : {}),
      }),
      {},
      { script: holdsWebAuthn(factors) },
    );
  }

  /** The browser's step and its person, when it has one still valid. */
  async function stepAndPerson(req: Request): Promise<{ step: SignInStep; user: UserRow } | undefined> {
    const step = await currentStep(svc, stepToken(svc, req));
    const user = step && (await factorsOf(svc, step.userId)).user;
    return step && user && { step, user };
  }

  router.get(browserPage('/auth/sign-in/second-factor'), async (req, res) => {
    const target = targetOf(req.query);
    const step = await currentStep(svc, stepToken(svc, req));
    if (!step) return signInAgain(res, target);
    const { factors } = await factorsOf(svc, step.userId);
    // Nothing to give (a recovery code used meanwhile, a reset): the way on is enrolment.
    if (!hasFactor(factors) && factors.recoveryCodes === 0) return res.redirect(303, pageOf('enrol', target));
    await secondFactor(req, res, step, target);
  });

  router.post(browserPage('/auth/sign-in/second-factor'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const found = await stepAndPerson(req);
    if (!found) return signInAgain(res, target);
    const { step, user } = found;
    const again = (status: number, error: Text) => secondFactor(req, res, step, target, status, error);
    const app = appKindOfForm(body);
    const recovery = text(body.recovery_code);
    const mailed = mailedKindOfForm(body);
    // A passkey is asked: a person who has one gives it; one who has none gives their code, then adds one (an enrolment).
    if (target.acr === ACR_PASSKEY && holdsWebAuthn((await factorsOf(svc, user.id)).factors)) return again(400, words('step.passkeyAsked'));

    // "Send a code": a mailed code of its kind for this step (api/people/ways/email-code.ts).
    const toSend = mailedKindToSend(body);
    if (toSend) {
      const sent = await sendCodeInStep(svc, toSend, codeOf(req, user), { step: stepToken(svc, req) }, pageLanguage(req));
      if (sent === 'none') return again(400, words('step.typeCode'));
      if (sent !== 'sent') return again(429, tooManyMails(toSend, sent.throttled));
      return secondFactor(req, res, step, target, 200, undefined, toSend);
    }
    /** A code's answer (an app's, a mailed one) as the page: throttled, wrong (`wrong` said), the sign-in gone, or on. */
    const onward = (answer: Answer<WentOn | 'ended'>, wrong: Text) => {
      if ('throttled' in answer) return again(429, tooManyCodes(answer.throttled));
      if ('refused' in answer) return again(401, wrong);
      if ('unchecked' in answer || answer.proven === 'ended') return signInAgain(res, target);
      return goOn(svc, res, answer.proven, target);
    };
    const given = { from: browserFacts(svc, req), of: codeOf(req, user), step: stepToken(svc, req) };
    if (mailed) {
      const code = text(body[mailedOf(mailed).field]);
      return onward(
        await giveEmailCode(svc, mailed, given.from, given.of, given.step, code, target),
        words(mailedOf(mailed).words.wrongCode),
      );
    }
    if (!app && !recovery) return again(400, words('step.typeCode'));
    if (app) {
      const code = text(body[appOf(app).field]);
      return onward(await giveAppCode(svc, app, given.from, given.of, given.step, code, target), words('step.wrongCode'));
    }

    // A recovery code: a way back in (api/people/ways/recovery-code.ts).
    const answer = await giveRecoveryCode(svc, codeOf(req, user), stepToken(svc, req), step, recovery);
    if ('throttled' in answer) return again(429, tooManyCodes(answer.throttled));
    if ('refused' in answer) return again(401, words('step.wrongRecoveryCode'));
    if ('unchecked' in answer) return signInAgain(res, target);
    if (answer.proven === 'sign-in-again') return void res.redirect(303, signInAgainPath(target, 'enrol'));
    goOn(svc, res, await proceed(svc, browserFacts(svc, req), answer.proven, target), target);
  });

  // --- enrolment

  /** A new app of `kind`, pending until a code confirms it: its page (QR code, key, a code field). */
  async function newAppPage(
    req: Request,
    res: Response,
    kind: AppFactorKind,
    user: UserRow,
    target: StepTarget,
    action: string,
    status = 200,
    error?: Text,
  ) {
    const app = await startApp(svc, kind, user);
    const QRCode = (await import('qrcode')).default; // at the first enrolment: not every box's start pays for it
    const qrSvg = await QRCode.toString(app.uri, { type: 'svg', margin: 2, width: 220 });
    renderPage(
      res,
      status,
      enrolPage({
        box,
        ...fields(req, res, target),
        app: kind,
        action,
        qrSvg,
        secret: app.secret,
        phrOnly: false,
        // In a sign-in's enrolment every other kind offered may be set up instead (the account has its own buttons and pages).
        ...(target !== ACCOUNT ? { offer: FACTOR_KIND_NAMES.filter((other) => other !== kind && offeredInEnrolment(other, user)) } : {}),
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
    const found = await stepAndPerson(req);
    if (!found) return undefined;
    const { step } = found;
    const stepUp = step.replaces === null ? undefined : { proofAt: step.proofAt, now: Date.now() };
    return nextStep(step.amr, (await factorsOf(svc, step.userId)).factors, target.acr, stepUp) === 'enrol' ? found : undefined;
  }

  /** Whether a sign-in's enrolment offers `kind` to `user`: an app the box offers, a `webauthn` kind, mailed codes the person may set up. */
  const offeredInEnrolment = (kind: FactorKind, user: UserRow): boolean => {
    if (isAppKind(kind)) return OFFERED_APP_KINDS.includes(kind);
    if (isMailedKind(kind)) return maySetUpEmailCodes(svc, user);
    return isWebAuthnKind(kind);
  };

  /** The enrolment of a sign-in asked for a passkey: only a `webauthn` kind meets it (the passkeys script adds it). */
  const passkeyEnrolPage = (req: Request, res: Response, target: StepTarget, status = 200, error?: Text): void =>
    renderPage(
      res,
      status,
      enrolPage({
        box,
        ...fields(req, res, target),
        app: OFFERED_APP_KINDS[0]!,
        action: '',
        qrSvg: '',
        secret: '',
        offer: WEBAUTHN_FACTOR_KINDS,
        phrOnly: true,
        ...(error ? { error } : {}),
      }),
      {},
      { script: true },
    );

  router.get(browserPage('/auth/sign-in/enrol'), async (req, res) => {
    const target = targetOf(req.query);
    const enrolling = await enrollingStep(req, target);
    if (!enrolling) return signInAgain(res, target);
    if (target.acr === ACR_PASSKEY) return passkeyEnrolPage(req, res, target);
    await newAppPage(req, res, OFFERED_APP_KINDS[0]!, enrolling.user, target, '/auth/sign-in/enrol');
  });

  router.post(browserPage('/auth/sign-in/enrol'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const enrolling = await enrollingStep(req, target);
    if (!enrolling) return signInAgain(res, target);
    const { user } = enrolling;
    // An app's code does not meet a sign-in asked for a passkey: enrolling one here would be a factor for nothing.
    if (target.acr === ACR_PASSKEY) return passkeyEnrolPage(req, res, target, 400, words('enrol.addPasskey'));
    // Codes by email instead of an app: a code mailed, then typed.
    const action = '/auth/sign-in/enrol';
    const inStep: CodeFor = { step: stepToken(svc, req) };
    // Another kind of app asked for instead (its button on the enrolment page): a new one of that kind.
    const setup = OFFERED_APP_KINDS.find((offered) => offered === body.setup);
    if (setup) return newAppPage(req, res, setup, user, target, action);
    const kind = appKindOfForm(body) ?? OFFERED_APP_KINDS[0]!;
    // Mailed codes instead of an app: "send a code" (`send=<kind>`), then the code mailed typed.
    const toSend = mailedKindToSend(body);
    const mailed = toSend ?? mailedKindOfForm(body);
    if (mailed) {
      if (!maySetUpEmailCodes(svc, user)) return newAppPage(req, res, kind, user, target, action, 400);
      const page = (status: number, sent: boolean, error?: Text) => mailedPage(req, res, mailed, user, target, action, sent, status, error);
      if (toSend) {
        const sent = await startEmailCodes(svc, toSend, codeOf(req, user), inStep, pageLanguage(req));
        if (sent === 'none') return signInAgain(res, target);
        if (sent !== 'sent') return page(429, false, tooManyMails(toSend, sent.throttled));
        return page(200, true);
      }
      const answer = await enrolEmailInStep(svc, mailed, codeOf(req, user), stepToken(svc, req), text(body[mailedOf(mailed).field]));
      if ('throttled' in answer) return page(429, false, tooManyCodes(answer.throttled));
      if ('refused' in answer) return page(401, false, words(mailedOf(mailed).words.wrongCode));
      if ('unchecked' in answer || answer.proven === 'ended') return signInAgain(res, target);
      handOver(svc, res, { step: answer.proven.token });
      const codes = answer.proven.codes;
      return renderPage(
        res,
        200,
        recoveryCodesPage({ box, ...fields(req, res, target), codes, action: '/auth/sign-in/continue', post: true }),
      );
    }
    const answer = await enrolAppInStep(svc, kind, codeOf(req, user), stepToken(svc, req), text(body[appOf(kind).field]));
    if ('throttled' in answer) return newAppPage(req, res, kind, user, target, action, 429, tooManyCodes(answer.throttled));
    if ('refused' in answer) return newAppPage(req, res, kind, user, target, action, 401, words('enrol.wrongCode'));
    if ('unchecked' in answer) return signInAgain(res, target);
    const added = answer.proven;
    if (added === 'ended') return signInAgain(res, target);
    // The step holds the app just set up: Continue goes on from it, after the codes.
    handOver(svc, res, { step: added.token });
    const codes = added.codes;
    renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, target), codes, action: '/auth/sign-in/continue', post: true }));
  });

  router.post(browserPage('/auth/sign-in/continue'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const target = targetOf(body);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const went = await continueStep(svc, browserFacts(svc, req), stepToken(svc, req), target);
    if (!went) return signInAgain(res, target);
    goOn(svc, res, went, target);
  });

  // --- the person's own page (its address, password, sign-ins and apps: routes/account.ts). Every
  // change of a factor asks for a recent proof (account-page.ts factorChange) and is mailed.

  const account = (req: Request, res: Response, person: SignedInPerson, status = 200, shown: Shown = {}) =>
    showAccount(svc, req, res, person, status, shown);
  const change = (req: Request, res: Response) => factorChange(svc, req, res);

  const ACCOUNT: StepTarget = { returnTo: '/auth/account', acr: undefined };
  /** What a change posted from a browser signed out meanwhile gets: the sign-in page, back to the account. */
  const toSignIn = (res: Response): void => res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT.returnTo)}`);

  // An app of each kind (api/factor-kinds.ts `app`) set up on the person's own page: its key, then its first code.
  for (const kind of OFFERED_APP_KINDS) {
    const { path, field, words: said } = appOf(kind);
    const confirmAt = `/auth/account/${path}/confirm`;
    router.post(browserPage(`/auth/account/${path}`), ...pageForm, async (req, res) => {
      const person = await change(req, res);
      if (!person) return;
      const { user } = person;
      if ((await factorsOf(svc, user.id)).factors[kind]) return account(req, res, person, 409, { error: words(said.already) });
      await newAppPage(req, res, kind, user, ACCOUNT, confirmAt);
    });

    router.post(browserPage(confirmAt), ...pageForm, async (req, res) => {
      const person = await change(req, res);
      if (!person) return;
      const { user } = person;
      const retry = (status: number, error: Text) => newAppPage(req, res, kind, user, ACCOUNT, confirmAt, status, error);
      const typed = text((req.body as Body)[field]);
      const answer = await addAppOnAccount(svc, kind, browserFacts(svc, req), person, typed, svc.addressOf(req));
      const wrong = words('enrol.wrongCode');
      if ('throttled' in answer) return retry(429, tooManyCodes(answer.throttled));
      if ('unchecked' in answer) return toSignIn(res);
      if ('refused' in answer) return retry(401, wrong);
      const added = answer.proven;
      if (added === 'ended') return toSignIn(res);
      if (added === 'taken') return retry(401, wrong);
      handOver(svc, res, { session: added.token });
      const codes = added.codes;
      renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, ACCOUNT), codes, action: '/auth/account', post: false }));
    });
  }

  // Mailed codes of each kind (api/factor-kinds.ts `mailed`) set up on the person's own page: "send"
  // (the button, or "send another") mails a code for this browser; the code typed confirms them.
  for (const kind of MAILED_FACTOR_KINDS) {
    const { path, field, words: said } = mailedOf(kind);
    const action = `/auth/account/${path}`;
    router.post(browserPage(action), ...pageForm, async (req, res) => {
      const person = await change(req, res);
      if (!person) return;
      const { user } = person;
      if ((await factorsOf(svc, user.id)).factors[kind]) return account(req, res, person, 409, { error: words(said.already) });
      if (!maySetUpEmailCodes(svc, user))
        return account(req, res, person, 409, {
          error: words(offersSignInCodes(svc.config.smtp) ? said.addressFirst : said.notOffered),
        });
      const page = (status: number, sent: boolean, error?: Text) => mailedPage(req, res, kind, user, ACCOUNT, action, sent, status, error);
      const typed = text((req.body as Body)[field]);
      if (!typed) {
        const sent = await startEmailCodes(svc, kind, codeOf(req, user), { browser: person.browser.sid }, pageLanguage(req));
        if (sent === 'none') return toSignIn(res);
        if (sent !== 'sent') return page(429, false, tooManyMails(kind, sent.throttled));
        return page(200, true);
      }
      const answer = await addEmailOnAccount(svc, kind, browserFacts(svc, req), person, typed, svc.addressOf(req));
      if ('throttled' in answer) return page(429, false, tooManyCodes(answer.throttled));
      if ('unchecked' in answer) return toSignIn(res);
      if ('refused' in answer) return page(401, false, words(said.wrongCode));
      const added = answer.proven;
      if (added === 'ended') return toSignIn(res);
      if (added === 'taken') return page(401, false, words(said.wrongCode));
      handOver(svc, res, { session: added.token });
      const codes = added.codes;
      renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, ACCOUNT), codes, action: '/auth/account', post: false }));
    });
  }

  router.post(browserPage('/auth/account/recovery-codes'), ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const codes = await newCodesOnAccount(svc, person, svc.addressOf(req));
    if (codes === 'signed-out') return toSignIn(res);
    if (codes === 'no-factor') return account(req, res, person, 409, { error: words('account.factorFirst') });
    if ('throttled' in codes) {
      const minutes = minutesUntil(codes.throttled.retryAt);
      const error = words(minutes === 1 ? 'account.tooManyCodesMadeOne' : 'account.tooManyCodesMade', {
        count: CODES_MADE_PER_WINDOW,
        minutes,
      });
      res.set('Retry-After', String(secondsUntil(codes.throttled.retryAt)));
      return account(req, res, person, 429, { error });
    }
    renderPage(res, 200, recoveryCodesPage({ box, ...fields(req, res, ACCOUNT), codes, action: '/auth/account', post: false }));
  });

  router.post(browserPage('/auth/account/factors/remove'), ...pageForm, async (req, res) => {
    const person = await change(req, res);
    if (!person) return;
    const { user } = person;
    const id = Number(text((req.body as Body).factor));
    const removed = Number.isSafeInteger(id) ? await removeOwnFactor(svc, user, id, person.browser.sid, svc.addressOf(req)) : undefined;
    if (removed === 'signed-out') return toSignIn(res);
    if (removed === 'last')
      return account(req, res, person, 409, {
        error: words('account.lastFactor'),
      });
    if (!removed) return account(req, res, person, 404, { error: words('account.noSuchFactor') });
    await account(req, res, person, 200, { message: words('account.removed', { name: removed.name }) });
  });

  return router;
}
