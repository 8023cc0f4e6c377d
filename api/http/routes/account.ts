// The person's own page, /account (docs/guides/account-page.md): their address and password,
// where they are signed in and the apps they allowed, and an end to any of them. Second factors
// are routes/factors.ts's and routes/passkeys.ts's. A change of address or password asks for the
// current password, or a second factor given minutes ago (api/people/own-account.ts); passwords
// are counted before they are checked, as at sign-in (api/people/attempts.ts).
import type { Argon2Gate } from '../../credentials/secrets.js';
import { Request, Response, Router } from '../router.js';
import { ValidationError } from '../../errors.js';
import { endGrant, endSignIn } from '../../people/accounts.js';
import { minutesUntil, type Attempts } from '../../people/attempts.js';
import { changeOwnAddress, changeOwnPassword, confirmProof, freshSecondFactor, withdrawConsent } from '../../people/own-account.js';
import { requestEmailChange } from '../../people/links.js';
import { passwordAgain } from '../../people/ways/password.js';
import type { Metrics } from '../../metrics.js';
import { browserPage } from '../browser-pages.js';
import { fieldReason } from '../field-reasons.js';
import { pageLanguage } from '../language.js';
import type { AccountServices } from '../../people/accounts.js';
import { userInput } from '../../schema/people.js';
import { passwordCheck } from '../../schema/password-policy.js';
import { pageForm } from '../body.js';
import { browserFacts, csrfToken, endBrowserSession, handOver } from '../browser-session.js';
import { ACCOUNT_PATH, CONFIRM_PATH, CONFIRMED_PAGES, changeOnAccount, holderOrSignIn, showAccount, type Shown } from '../account-page.js';
import { confirmPage } from '../../ui/account-page.js';
import { words, type FieldErrors, type Text } from '../../ui/language.js';
import { renderPage, type SignedInPerson } from '../pages.js';
import { sendLogoutStep, throughApps, type SignOutServices } from '../saml-logout.js';
import { forThisRequest } from '../request-work.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  argon2: Argon2Gate;
  attempts: Attempts;
  metrics: Metrics;
}

export type AccountRouterServices = SignOutServices & AccountServices & Needs;

type Body = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function accountRouter(svc: AccountRouterServices): Router {
  const router = new Router();

  /**
   * The person's current password in `field` of the form, counted before it is checked as at
   * sign-in (api/people/ways/password.ts passwordAgain): an error (by field, or for the page)
   * when it is not theirs.
   */
  async function passwordGiven(
    req: Request,
    res: Response,
    person: SignedInPerson,
    field: string,
  ): Promise<{ errors?: FieldErrors; error?: Text } | undefined> {
    const of = { user: person.user, address: svc.addressOf(req), where: 'the account page' };
    const answer = await passwordAgain(forThisRequest(svc, res), of, String((req.body as Body)[field] ?? ''));
    if ('throttled' in answer) return { error: words('error.wrongPasswords', { minutes: minutesUntil(answer.throttled.retryAt) }) };
    if ('unchecked' in answer) return { error: words('error.busy') };
    if ('refused' in answer) return { errors: { [field]: [words('reason.wrong')] } };
    return undefined;
  }

  /** The current password in `field`, or a fresh second factor, stands for the person (ASVS V2.1.6). */
  const proven = (req: Request, res: Response, person: SignedInPerson, field: string) =>
    freshSecondFactor(person.browser, Date.now()) ? Promise.resolve(undefined) : passwordGiven(req, res, person, field);

  /** What a change from a browser that is signed in no more gets: the sign-in page, back here. */
  const signInAgain = (res: Response): void => res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PATH)}`);

  const page = (req: Request, res: Response, person: SignedInPerson, status = 200, shown = {}) =>
    showAccount(svc, req, res, person, status, shown);

  // The account's pages are under /auth because the box's cookies may be (a box over http, or under
  // a path: api/http/browser-session.ts cookieNames); /account is the address people are told.
  router.get(browserPage('/account'), (_req, res) => res.redirect(302, ACCOUNT_PATH));

  /** What a change posted here says once the browser is back on the page (post, redirect, get). */
  const CHANGED: Record<string, Text> = {
    password: words('changed.password'),
    'email-asked': words('changed.emailAsked'),
    email: words('changed.email'),
    'sign-in': words('changed.signIn'),
    grant: words('changed.grant'),
    consent: words('changed.consent'),
    'provider-linked': words('changed.providerLinked'),
    'provider-unlinked': words('changed.providerUnlinked'),
  };

  router.get(browserPage(ACCOUNT_PATH), async (req, res) => {
    const person = await holderOrSignIn(svc, req, res);
    const changed =
      typeof req.query.changed === 'string' && Object.hasOwn(CHANGED, req.query.changed) ? CHANGED[req.query.changed] : undefined;
    if (person) await page(req, res, person, 200, changed ? { message: changed } : {});
  });

  // --- "confirm it is you": a proof given now, before a change of the person's factors (account-page.ts factorChange)

  const confirmedPage = (value: unknown): (typeof CONFIRMED_PAGES)[number] => CONFIRMED_PAGES.find((p) => p === value) ?? ACCOUNT_PATH;

  const confirmation = (req: Request, res: Response, person: SignedInPerson, returnTo: string, status = 200, shown: Shown = {}) =>
    renderPage(
      res,
      status,
      confirmPage({
        box: svc.config.box,
        csrf: csrfToken(svc, req, res),
        email: person.user.email,
        returnTo,
        password: person.user.passwordSet,
        ...shown,
      }),
    );

  router.get(browserPage(CONFIRM_PATH), async (req, res) => {
    const person = await holderOrSignIn(svc, req, res);
    if (person) confirmation(req, res, person, confirmedPage(req.query.return_to));
  });

  router.post(browserPage(CONFIRM_PATH), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const returnTo = confirmedPage((req.body as Body).return_to);
    if (!person.user.passwordSet) return confirmation(req, res, person, returnTo, 409, { error: words('account.noPassword') });
    const refusal = await passwordGiven(req, res, person, 'password');
    if (refusal) return confirmation(req, res, person, returnTo, refusal.errors ? 422 : 429, refusal);
    const { user, browser } = person;
    if (!(await confirmProof(svc, { userId: user.id, sid: browser.sid, checkedHash: user.passwordHash }, svc.addressOf(req))))
      return signInAgain(res);
    res.redirect(303, returnTo);
  });

  router.post(browserPage('/auth/account/password'), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const body = req.body as Body;
    let password: string | undefined;
    try {
      const check = await passwordCheck(svc.config);
      password = userInput({ password: body.new_password }, false, undefined, { check, email: person.user.email }).password;
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      return page(req, res, person, 422, {
        errors: { new_password: err.errors.password?.map(fieldReason) ?? [words('reason.notPassword')] },
      });
    }
    if (!password) return page(req, res, person, 422, { errors: { new_password: [words('reason.required')] } });
    // The current password typed is a proof given now: the session it continues may change factors for a while.
    const typed = !freshSecondFactor(person.browser, Date.now());
    const refusal = await proven(req, res, person, 'current_password');
    if (refusal) return page(req, res, person, refusal.errors ? 422 : 429, refusal);
    const changed = await changeOwnPassword(forThisRequest(svc, res), person, { password, typed }, browserFacts(svc, req));
    if (changed === 'busy') return page(req, res, person, 503, { error: words('error.busy') });
    if (changed === 'ended') return signInAgain(res);
    // Everything the old password obtained ended; this browser goes on, as what it proved.
    handOver(svc, res, { session: changed });
    res.redirect(303, `${ACCOUNT_PATH}?changed=password`);
  });

  router.post(browserPage('/auth/account/email'), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const body = req.body as Body;
    let email: string | undefined;
    try {
      email = userInput({ email: text(body.new_email) }, false, person.user.id).email;
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      return page(req, res, person, 422, { errors: { new_email: err.errors.email?.map(fieldReason) ?? [words('reason.notAnEmail')] } });
    }
    if (!email) return page(req, res, person, 422, { errors: { new_email: [words('reason.required')] } });
    const refusal = await proven(req, res, person, 'email_password');
    if (refusal) return page(req, res, person, refusal.errors ? 422 : 429, refusal);
    // Where the box mails, the address becomes theirs when its link is followed (people/links.ts
    // requestEmailChange): counted per address, as every mail asked for is, and answered alike
    // for a free address and a taken one.
    if (svc.config.smtp) {
      const throttled = await svc.attempts.begin([{ mailsTo: email }]);
      if (throttled)
        return page(req, res, person, 429, {
          error: words('account.tooManyMails', { minutes: minutesUntil(throttled.retryAt) }),
        });
      const ask = { sid: person.browser.sid, language: pageLanguage(req), address: svc.addressOf(req) };
      if (!(await requestEmailChange(svc, person.user, email, ask))) return signInAgain(res);
      return res.redirect(303, `${ACCOUNT_PATH}?changed=email-asked`);
    }
    // Without mail nothing can prove it: the address changes now, unverified, for an administrator to vouch for.
    const changed = await changeOwnAddress(svc, person, email);
    if (changed === 'taken') return page(req, res, person, 422, { errors: { new_email: [words('account.emailTaken')] } });
    if (changed === 'ended') return signInAgain(res);
    res.redirect(303, `${ACCOUNT_PATH}?changed=email`);
  });

  router.post(browserPage('/auth/account/sign-ins/end'), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const sid = text((req.body as Body).sid);
    const closed = UUID.test(sid)
      ? await endSignIn(svc, person.user.id, sid, { how: 'sign-out', by: { user: String(person.user.id) } })
      : undefined;
    if (!closed) return page(req, res, person, 404, { error: words('account.noSuchSignIn') });
    if (sid === person.browser.sid) {
      await endBrowserSession(svc, req, res);
      // This browser's own sign-in: the SAML apps that hear of it only through this browser first (api/saml/logout-chains.ts).
      const step = await throughApps(svc, req, res, closed, { to: 'place', url: '/auth/signed-in' });
      if (step) return sendLogoutStep(svc, res, step);
      return res.redirect(303, '/auth/signed-in');
    }
    res.redirect(303, `${ACCOUNT_PATH}?changed=sign-in`);
  });

  router.post(browserPage('/auth/account/grants/end'), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const family = text((req.body as Body).grant);
    if (!UUID.test(family) || !(await endGrant(svc, person.user.id, family, { how: 'revoke', by: { user: String(person.user.id) } })))
      return page(req, res, person, 404, { error: words('account.noSuchGrant') });
    res.redirect(303, `${ACCOUNT_PATH}?changed=grant`);
  });

  router.post(browserPage('/auth/account/consents/withdraw'), ...pageForm, async (req, res) => {
    const person = await changeOnAccount(svc, req, res);
    if (!person) return;
    const client = text((req.body as Body).client);
    if (!client || !(await withdrawConsent(svc, person.user.id, client, svc.addressOf(req))))
      return page(req, res, person, 404, { error: words('account.noSuchConsent') });
    res.redirect(303, `${ACCOUNT_PATH}?changed=consent`);
  });

  return router;
}
