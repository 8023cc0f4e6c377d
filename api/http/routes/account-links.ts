// The pages of the ways back in through a person's mailbox (api/people/links.ts): /auth/reset
// asks for a link, /auth/reset/confirm sets a new password with it, /auth/verify-email proves an
// address, /auth/confirm-email makes a new address a person asked for theirs. Requests for mail are counted per email address and per network address before
// anything else; a link that does not work counts as a failed sign-in of its network address
// (api/people/attempts.ts), so links are not guessed faster than passwords.
import type { Argon2Gate } from '../../credentials/secrets.js';
import { Request, Response, Router } from '../router.js';
import { ValidationError } from '../../errors.js';
import { passwordAgain } from '../../people/ways/password.js';
import type { Metrics } from '../../metrics.js';
import { minutesUntil, secondsUntil, type Attempts } from '../../people/attempts.js';
import {
  confirmEmailChange,
  factorsToList,
  LINK_MINUTES,
  linkHolder,
  requestReset,
  resetPassword,
  verifyEmail,
} from '../../people/links.js';
import type { LinkPurpose } from '../../store/account-links.js';
import type { AccountServices } from '../../people/accounts.js';
import { userInput } from '../../schema/people.js';
import { passwordCheck } from '../../schema/password-policy.js';
import {
  emailVerifiedPage,
  linkInvalidPage,
  newPasswordPage,
  passwordResetPage,
  resetRequestPage,
  resetSentPage,
  verifyEmailPage,
} from '../../ui/link-pages.js';
import { words, type FieldErrors, type Text } from '../../ui/language.js';
import { messagePage } from '../../ui/pages.js';
import { browserPage } from '../browser-pages.js';
import { pageForm } from '../body.js';
import { csrfToken, csrfValid, type BrowserServices } from '../browser-session.js';
import { pageErrors } from '../field-reasons.js';
import { pageLanguage } from '../language.js';
import { invalidForm, renderPage } from '../pages.js';
import { forThisRequest } from '../request-work.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  argon2: Argon2Gate;
  attempts: Attempts;
  metrics: Metrics;
}

export type LinkRouterServices = BrowserServices & AccountServices & Needs;

type Body = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

export function accountLinkRouter(svc: LinkRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;
  const mail = svc.config.smtp !== undefined;

  const tooMany = (res: Response, retryAt: Date): void =>
    renderPage(res, 429, messagePage(box, words('error.tooManyAttempts'), words('error.tryAgainIn', { minutes: minutesUntil(retryAt) })), {
      'Retry-After': String(secondsUntil(retryAt)),
    });

  /**
   * The person of the link in `token`, counting a link that does not work as a failure of the
   * network address; the page saying why when there is none.
   */
  async function holderOf(req: Request, res: Response, token: string, purpose: LinkPurpose) {
    const keys = [{ address: svc.addressOf(req) }];
    const refused = await svc.attempts.begin(keys);
    if (refused) return void tooMany(res, refused.retryAt);
    const holder = await linkHolder(svc, token, purpose);
    if (!holder) return void renderPage(res, 400, linkInvalidPage(box, purpose === 'reset' ? 'reset' : 'verify'));
    await svc.attempts.giveBack(keys);
    return holder;
  }

  // --- a password reset

  router.get(browserPage('/auth/reset'), (req, res) => {
    renderPage(res, 200, resetRequestPage({ box, csrf: csrfToken(svc, req, res), mail }));
  });

  router.post(browserPage('/auth/reset'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    if (!mail) return renderPage(res, 200, resetRequestPage({ box, csrf: csrfToken(svc, req, res), mail }));
    const email = text(body.email);
    const again = (status: number, error: Text) =>
      renderPage(res, status, resetRequestPage({ box, csrf: csrfToken(svc, req, res), mail, email, error }));
    if (!email || email.length > 320 || !email.includes('@')) return again(400, words('link.typeEmail'));
    // Counted whether or not the address has an account: the answer cannot tell them apart.
    const address = svc.addressOf(req);
    const refused = await svc.attempts.begin([{ resetsFrom: address }, { mailsTo: email }]);
    if (refused) return tooMany(res, refused.retryAt);
    await requestReset(svc, email, pageLanguage(req), address);
    renderPage(res, 200, resetSentPage(box, email, LINK_MINUTES.reset));
  });

  /** The factors ticked for removal on the new password's page (`remove`, once or more), as numbers. */
  const ticked = (value: unknown): number[] =>
    (Array.isArray(value) ? value : [value]).flatMap((v) => (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) ? [Number(v)] : []));

  router.get(browserPage('/auth/reset/confirm'), async (req, res) => {
    const token = text(req.query.token);
    const user = (await holderOf(req, res, token, 'reset'))?.user;
    if (!user) return;
    const factors = await factorsToList(svc, user.id);
    renderPage(res, 200, newPasswordPage({ box, csrf: csrfToken(svc, req, res), token, email: user.email, factors }));
  });

  router.post(browserPage('/auth/reset/confirm'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const token = text(body.token);
    const user = (await holderOf(req, res, token, 'reset'))?.user;
    if (!user) return;
    const remove = ticked(body.remove);
    const again = async (status: number, errors: FieldErrors) =>
      renderPage(
        res,
        status,
        newPasswordPage({
          box,
          csrf: csrfToken(svc, req, res),
          token,
          email: user.email,
          factors: await factorsToList(svc, user.id),
          removing: remove,
          errors,
        }),
      );
    let password: string;
    try {
      const check = await passwordCheck(svc.config);
      password = userInput({ password: body.password }, false, undefined, { check, email: user.email }).password ?? '';
      if (!password) return await again(422, { password: [words('reason.required')] });
    } catch (err) {
      if (err instanceof ValidationError) return again(422, pageErrors(err.errors));
      throw err;
    }
    // The link is used here, once: of two requests with it, one sets the password.
    const done = await resetPassword(forThisRequest(svc, res), token, password, svc.addressOf(req), remove);
    if (done === 'busy') return again(503, { password: [words('error.busy')] });
    if (done === 'keep-one')
      return again(422, {
        remove: [words('newPassword.keepOne')],
      });
    if (!done) return renderPage(res, 400, linkInvalidPage(box, 'reset'));
    renderPage(res, 200, passwordResetPage(box));
  });

  // --- an address proven: the person's own (verify), or a new one they asked for (change)

  for (const [path, purpose] of [
    ['/auth/verify-email', 'verify'],
    ['/auth/confirm-email', 'change'],
  ] as const) {
    router.get(browserPage(path), async (req, res) => {
      const token = text(req.query.token);
      const holder = await holderOf(req, res, token, purpose);
      if (holder) renderPage(res, 200, verifyEmailPage(box, path, csrfToken(svc, req, res), token, holder.sentTo));
    });

    router.post(browserPage(path), ...pageForm, async (req, res) => {
      const body = req.body as Body;
      if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
      const token = text(body.token);
      const holder = await holderOf(req, res, token, purpose);
      if (!holder) return;
      const { user, sentTo } = holder;
      const again = (status: number, error: Text) =>
        renderPage(res, status, verifyEmailPage(box, path, csrfToken(svc, req, res), token, sentTo, error));
      // The account's password, counted as at sign-in: the link alone proves the mailbox, not the account.
      const of = { user, address: svc.addressOf(req), where: "a mailed link's page" };
      const answer = await passwordAgain(forThisRequest(svc, res), of, typeof body.password === 'string' ? body.password : '');
      if ('throttled' in answer) return again(429, words('link.tooManyPasswords', { minutes: minutesUntil(answer.throttled.retryAt) }));
      if ('unchecked' in answer) return again(503, words('error.busy'));
      if ('refused' in answer) return again(401, words('link.wrongPassword'));
      const done =
        purpose === 'verify'
          ? await verifyEmail(svc, token, user.passwordHash, svc.addressOf(req))
          : await confirmEmailChange(svc, token, user.passwordHash);
      if (done === 'taken') return again(409, words('link.emailTaken'));
      if (!done) return renderPage(res, 400, linkInvalidPage(box, 'verify'));
      renderPage(res, 200, emailVerifiedPage(box, done.email));
    });
  }

  return router;
}
