// Signing a browser in and out: the sign-in page (a password), self sign-up (with
// BOXAUTH_REGISTRATION), the box's own sign-out page, and "you are signed in".
// Passwords and sign-ups are counted before they are checked (api/people/attempts.ts);
// where a sign-in goes back to is only ever a page of this box.
import type { Argon2Gate } from '../../credentials/secrets.js';
import { browserPage } from '../browser-pages.js';
import { waysAccepted } from '../accepted-ways.js';
import type { AppDirectory } from '../../decision/apps.js';
import { Request, Response, Router } from '../router.js';
import { ValidationError } from '../../errors.js';
import { minutesUntil, secondsUntil, type Attempts } from '../../people/attempts.js';
import { userInput } from '../../schema/people.js';
import { passwordCheck } from '../../schema/password-policy.js';
import type { Metrics } from '../../metrics.js';
import type { AddressOf } from '../client-address.js';
import { words, type FieldErrors, type Text } from '../../ui/language.js';
import { firstStepCodePage, messagePage, signOutPage, signUpPage } from '../../ui/pages.js';
import { signUpSentPage } from '../../ui/link-pages.js';
import { proofOf, register } from '../../people/registration.js';
import { PASSWORD_REFUSALS, signInWithPassword } from '../../people/ways/password.js';
import { askFirstStepCode, FIRST_STEP_REFUSALS, giveFirstStepCode, offersFirstStep } from '../../people/ways/email-first-step.js';
import { proceed } from '../../people/steps.js';
import { pageErrors } from '../field-reasons.js';
import { pageLanguage } from '../language.js';
import { pageForm } from '../body.js';
import { browserFacts, csrfToken, csrfValid, handOver, presentedDevice, type BrowserServices } from '../browser-session.js';
import { sendLogoutStep, signOutThroughApps, type SignOutServices } from '../saml-logout.js';
import { hookWords, invalidForm, renderPage, signedInPerson, signInForm, type SignInWays } from '../pages.js';
import type { Begun } from '../../people/upstream/flow.js';
import type { IdentityProvider } from '../../types.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { Stored } from '../../store/resources.js';
import type { Client } from '../../types.js';

/** The directory's sign-in (routes/upstream.ts), for a password form that falls through to it. */
export type DirectorySignIn = (
  req: Request,
  res: Response,
  directory: IdentityProvider,
  username: string,
  password: string,
  begun: Begun,
) => Promise<void>;
import { acrParam, goOn, stepToken, type StepTarget } from '../sign-in-steps.js';
import { samlSignInOf } from './saml.js';
import { forThisRequest } from '../request-work.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  argon2: Argon2Gate;
  metrics: Metrics;
  attempts: Attempts;
  addressOf: AddressOf;
  clients: RecordCache<Stored<Client>>;
  apps: AppDirectory;
  /** What a code by email is hashed with (api/people/ways/email-first-step.ts). */
  factorKey: Buffer;
}

// Only places of this box are valid targets after sign-in: never an open redirect.
export function safeReturnTo(value: unknown): string {
  return typeof value === 'string' &&
    /^\/(auth\/authorize\?|auth\/saml\/sso\?resume=|auth\/device\/verify(\?|$)|admin(\/|$|\?)|auth\/account(\/passkeys)?$)/.test(value)
    ? value
    : '/auth/signed-in';
}

/** Why a person already signed in is asked to sign in before a step-up enrols a factor. */
const ENROL_NOTICE = words('signIn.enrolNotice');

/** What the sign-in, sign-up and sign-out pages use. */
export type SignInRouterServices = BrowserServices &
  SignOutServices &
  Pick<Needs, 'addressOf' | 'argon2' | 'attempts' | 'metrics' | 'clients' | 'apps' | 'factorKey'>;

export function signInRouter(svc: SignInRouterServices, signInThroughDirectory: DirectorySignIn): Router {
  const router = new Router();
  const box = svc.config.box;

  /** The ways the client a sign-in goes back to accepts (its authorization request, or the SAML request it holds, names it). */
  async function waysOf(returnTo: string): Promise<SignInWays> {
    if (returnTo.startsWith('/auth/saml/sso?')) {
      const saml = samlSignInOf(returnTo);
      return saml ? { accepted: await waysAccepted(svc, saml.clientId, undefined), acr: saml.acr } : {};
    }
    if (!returnTo.startsWith('/auth/authorize?')) return {};
    const query = new URLSearchParams(returnTo.slice('/auth/authorize?'.length));
    const accepted = await waysAccepted(svc, query.get('client_id') ?? undefined, query.get('resource') ?? undefined);
    return { accepted, acr: query.get('acr_values') ?? undefined };
  }

  router.get(browserPage('/auth/sign-in'), async (req, res) => {
    const returnTo = safeReturnTo(req.query.return_to);
    // A step-up that would enrol a factor with no recent proof (api/http/sign-in-steps.ts): this browser's person, in again first.
    const enrol = req.query.reason === 'enrol' ? await signedInPerson(svc, req) : undefined;
    // A Hook refused a sign-in that came back here by a redirect (a passkey, a provider): its words were
    // for the person at the moment; the page says that it was refused, never what a query says.
    const shown = enrol
      ? { email: enrol.user.email, notice: ENROL_NOTICE }
      : req.query.reason === 'refused'
        ? { error: words('signIn.refused') }
        : {};
    await signInForm(svc, req, res, 200, returnTo, shown, await waysOf(returnTo));
  });

  router.post(browserPage('/auth/sign-in'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const again = async (status: number, error: Text): Promise<void> =>
      signInForm(svc, req, res, status, returnTo, { email, error }, await waysOf(returnTo));
    const target = { returnTo, acr: acrParam(body.acr) };
    // "Email me a sign-in code": the same page whoever the address is (api/people/ways/email-first-step.ts).
    if (body.send === 'email-code' && offersFirstStep(svc.config)) {
      if (!email) return again(400, words('signIn.codeNoEmail'));
      const asked = await askFirstStepCode(svc, { email, language: pageLanguage(req), device: presentedDevice(svc, req) });
      if ('throttled' in asked) return again(429, words('email.tooMany', { minutes: minutesUntil(asked.throttled.retryAt) }));
      handOver(svc, res, { step: asked.token });
      return codePage(req, res, 200, target, email);
    }
    const typed = { email, password, address: svc.addressOf(req), acr: target.acr, language: pageLanguage(req) };
    const answer = await signInWithPassword(forThisRequest(svc, res), typed);
    if ('directory' in answer)
      return signInThroughDirectory(req, res, answer.directory, email, password, { returnTo, acr: target.acr ?? null, linkUser: null });
    if ('throttled' in answer) {
      const minutes = minutesUntil(answer.throttled.retryAt);
      return again(429, words(minutes === 1 ? 'signIn.throttledOne' : 'signIn.throttled', { minutes }));
    }
    if ('unchecked' in answer) return again(503, words('error.busy'));
    if ('refused' in answer)
      return answer.said === PASSWORD_REFUSALS.turnedOff ? again(403, words('signIn.turnedOff')) : again(401, wrongPassword);
    // Signed in, or on to the second factor; or refused by a Hook, in its words.
    const went = await proceed(svc, browserFacts(svc, req), answer.proven, target);
    if (went.refused !== undefined) return again(403, hookWords(went.refused));
    goOn(svc, res, went, target);
  });

  /** The page a code by email is typed on. */
  const codePage = (req: Request, res: Response, status: number, target: StepTarget, email: string, error?: Text): void =>
    renderPage(
      res,
      status,
      firstStepCodePage({
        box,
        csrf: csrfToken(svc, req, res),
        returnTo: target.returnTo,
        acr: target.acr,
        email,
        ...(error ? { error } : {}),
      }),
    );

  // A code by email typed instead of a password, in the browser it was asked in (its step cookie).
  router.post(browserPage('/auth/sign-in/email-code'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const target = { returnTo: safeReturnTo(body.return_to), acr: acrParam(body.acr) };
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const signInPage = async (status: number, error: Text): Promise<void> =>
      signInForm(svc, req, res, status, target.returnTo, { email, error }, await waysOf(target.returnTo));
    const code = typeof body.email_code === 'string' ? body.email_code : '';
    const typed = { email, code, address: svc.addressOf(req), acr: target.acr };
    const answer = await giveFirstStepCode(svc, typed, stepToken(svc, req));
    if ('throttled' in answer) {
      const minutes = minutesUntil(answer.throttled.retryAt);
      return codePage(req, res, 429, target, email, words(minutes === 1 ? 'signIn.throttledOne' : 'signIn.throttled', { minutes }));
    }
    if ('unchecked' in answer) return codePage(req, res, 503, target, email, words('error.busy'));
    if ('refused' in answer) {
      if (answer.said === FIRST_STEP_REFUSALS.turnedOff) return signInPage(403, words('signIn.turnedOff'));
      if (answer.said === FIRST_STEP_REFUSALS.notEnough) return signInPage(403, words('signIn.codeNotEnough'));
      return codePage(req, res, 401, target, email, words('email.wrongCode'));
    }
    const went = await proceed(svc, browserFacts(svc, req), answer.proven, target);
    if (went.refused !== undefined) return signInPage(403, hookWords(went.refused));
    goOn(svc, res, went, target);
  });

  /** Where sign-up proves the address first, a failed sign-in may be an account not open yet: the page says so to everyone. */
  const wrongPassword =
    svc.config.registration && proofOf(svc.config) === 'before-sign-in' ? words('signIn.wrongJustSignedUp') : words('signIn.wrong');

  const signUpOff = (res: Response, message: Text): void => renderPage(res, 404, messagePage(box, words('signUp.off'), message));

  router.get(browserPage('/auth/sign-up'), (req, res) => {
    if (!svc.config.registration) return signUpOff(res, words('signUp.offAsk'));
    renderPage(res, 200, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo: safeReturnTo(req.query.return_to) }));
  });

  router.post(browserPage('/auth/sign-up'), ...pageForm, async (req: Request, res: Response) => {
    if (!svc.config.registration) return signUpOff(res, words('signUp.offMessage'));
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const email = typeof body.email === 'string' ? body.email : '';
    const page = (status: number, shown: { errors?: FieldErrors; error?: Text }, headers: Record<string, string> = {}) =>
      renderPage(res, status, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo, email, ...shown }), headers);
    let input;
    try {
      input = userInput({ email, password: body.password }, true, undefined, { check: await passwordCheck(svc.config) });
    } catch (err) {
      if (err instanceof ValidationError) return page(422, { errors: pageErrors(err.errors) });
      throw err;
    }
    const result = await register(forThisRequest(svc, res), {
      email: input.email!,
      password: input.password!,
      address: svc.addressOf(req),
      language: pageLanguage(req),
    });
    if ('throttled' in result) {
      const { key, retryAt } = result.throttled;
      const retryAfter = secondsUntil(retryAt);
      const minutes = Math.ceil(retryAfter / 60);
      const why =
        key === 'sign-ups'
          ? 'signUp.tooManyPeople'
          : typeof key === 'object' && 'mailsTo' in key
            ? 'signUp.tooManyMails'
            : 'signUp.tooManyNetwork';
      const error = words(minutes === 1 ? `${why}One` : why, { minutes });
      return page(429, { error }, { 'Retry-After': String(retryAfter) });
    }
    if ('busy' in result) return page(503, { error: words('error.busy') }, { 'Retry-After': result.busy });
    // A Hook refused (personCreating): its words, as the person is to read them.
    if ('refused' in result) return page(403, { error: hookWords(result.refused) });
    // The address proven first: a new address and a taken one get this same page (registration.ts).
    if (proofOf(svc.config) === 'before-sign-in') return renderPage(res, 200, signUpSentPage(box, input.email!));
    if (!('made' in result)) return page(422, { errors: { email: [words('signUp.taken')] } });
    const target = { returnTo, acr: undefined };
    goOn(
      svc,
      res,
      await proceed(svc, browserFacts(svc, req), { userId: result.made.id, amr: ['pwd'], holds: { provider: null } }, target),
      target,
    );
  });

  router.get(browserPage('/auth/sign-out'), async (req, res) => {
    const person = await signedInPerson(svc, req);
    renderPage(res, 200, signOutPage(box, csrfToken(svc, req, res), safeReturnTo(req.query.return_to), person?.user.email));
  });

  router.post(browserPage('/auth/sign-out'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const returnTo = safeReturnTo(body.return_to);
    // The SAML apps that hear of it only through this browser first, then returnTo (api/saml/logout-chains.ts).
    const step = await signOutThroughApps(svc, req, res, { to: 'place', url: returnTo });
    if (step) return sendLogoutStep(svc, res, step);
    if (returnTo === '/auth/signed-in') return renderPage(res, 200, signOutPage(box, '', returnTo, undefined));
    res.redirect(303, returnTo);
  });

  router.get(browserPage('/auth/signed-in'), async (req, res) => {
    const user = (await signedInPerson(svc, req))?.user;
    renderPage(
      res,
      200,
      user
        ? messagePage(box, words('signedIn.title'), words('signedIn.message', { email: user.email }), false)
        : signOutPage(box, '', '/auth/signed-in', undefined),
    );
  });

  return router;
}
