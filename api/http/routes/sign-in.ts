// Signing a browser in and out: the sign-in page (a password), self sign-up (with
// BOXAUTH_REGISTRATION), the box's own sign-out page, and "you are signed in".
// Passwords and sign-ups are counted before they are checked (api/people/attempts.ts);
// where a sign-in goes back to is only ever a page of this box.
import { waysAccepted } from '../accepted-ways.js';
import type { AppDirectory } from '../../decision/apps.js';
import type { Request, Response, Router } from 'express';
import { ValidationError } from '../../errors.js';
import { minutesUntil, secondsUntil, type AttemptKey, type Attempts } from '../../people/attempts.js';
import { Argon2Busy, dummyHash, hashSecret, verifyHash } from '../../credentials/secrets.js';
import { userInput } from '../../schema/people.js';
import { passwordCheck } from '../../schema/password-policy.js';
import type { Metrics } from '../../metrics.js';
import type { AddressOf } from '../client-address.js';
import { ensureGroup } from '../../store/groups.js';
import { findUserByEmail, type UserRow } from '../../store/users.js';
import { messagePage, signOutPage, signUpPage } from '../../ui/pages.js';
import { signUpSentPage } from '../../ui/link-pages.js';
import { proofOf, signUp } from '../../people/registration.js';
import { resendVerification } from '../../people/links.js';
import { pageLanguage } from '../language.js';
import { pageForm } from '../body.js';
import { csrfToken, csrfValid, endBrowserSession, type BrowserServices } from '../browser-session.js';
import { invalidForm, renderPage, signedInPerson, signInForm, type SignInWays } from '../pages.js';
import { passwordFormDirectory, type Begun } from '../../people/upstream/flow.js';
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
import { acrParam, proceed } from '../sign-in-steps.js';
import { strictRouter } from '../router.js';
import { nextStep } from '../../people/factors.js';
import { factorState } from '../../store/factors.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  metrics: Metrics;
  attempts: Attempts;
  addressOf: AddressOf;
  clients: RecordCache<Stored<Client>>;
  apps: AppDirectory;
}

// Only places of this box are valid targets after sign-in: never an open redirect.
export function safeReturnTo(value: unknown): string {
  return typeof value === 'string' &&
    /^\/(auth\/authorize\?|auth\/device\/verify(\?|$)|admin(\/|$|\?)|auth\/account(\/passkeys)?$)/.test(value)
    ? value
    : '/auth/signed-in';
}

/** Why a person already signed in is asked to sign in before a step-up enrols a factor. */
const ENROL_NOTICE =
  'This app asks for a second factor you have not set up yet. Adding one changes how your account is protected, so sign in again first: then you set it up.';

/** What the sign-in, sign-up and sign-out pages use. */
export type SignInRouterServices = BrowserServices & Pick<Needs, 'addressOf' | 'attempts' | 'metrics' | 'clients' | 'apps'>;

export function signInRouter(svc: SignInRouterServices, signInThroughDirectory: DirectorySignIn): Router {
  const router = strictRouter();
  const box = svc.config.box;

  /** The ways the client a sign-in goes back to accepts (its authorization request names it). */
  async function waysOf(returnTo: string): Promise<SignInWays> {
    if (!returnTo.startsWith('/auth/authorize?')) return {};
    const query = new URLSearchParams(returnTo.slice('/auth/authorize?'.length));
    const accepted = await waysAccepted(svc, query.get('client_id') ?? undefined, query.get('resource') ?? undefined);
    return { accepted, acr: query.get('acr_values') ?? undefined };
  }

  router.get('/auth/sign-in', async (req, res) => {
    const returnTo = safeReturnTo(req.query.return_to);
    // A step-up that would enrol a factor with no recent proof (api/http/sign-in-steps.ts): this browser's person, in again first.
    const enrol = req.query.reason === 'enrol' ? await signedInPerson(svc, req) : undefined;
    const shown = enrol ? { email: enrol.user.email, notice: ENROL_NOTICE } : {};
    await signInForm(svc, req, res, 200, returnTo, shown, await waysOf(returnTo));
  });

  router.post('/auth/sign-in', ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const again = async (status: number, error: string): Promise<void> =>
      signInForm(svc, req, res, status, returnTo, { email, error }, await waysOf(returnTo));

    const address = svc.addressOf(req);
    const keys = [{ address }, { account: email }];
    const refused = await svc.attempts.begin(keys);
    if (refused) {
      const minutes = minutesUntil(refused.retryAt);
      svc.metrics.signIns.inc({ result: 'throttled' });
      svc.audit.record({
        event: 'sign_in',
        outcome: 'locked',
        address,
        reason: typeof refused.key === 'object' && 'address' in refused.key ? 'address' : 'account',
      });
      return again(429, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`);
    }
    const found = email ? await findUserByEmail(svc.pool, email) : undefined;
    // A person an IdentityProvider made has no password of the box: the form may ask the directory (ldap.passwordForm).
    const user = found?.passwordSet ? found : undefined;
    if (!user) {
      const directory = await passwordFormDirectory(svc.pool);
      if (directory) {
        await svc.attempts.giveBack(keys);
        return signInThroughDirectory(req, res, directory, email, password, { returnTo, acr: acrParam(body.acr) ?? null, linkUser: null });
      }
    }
    let ok: boolean;
    try {
      // Verify against a real hash even for unknown emails, so timing does not tell which emails exist.
      ok = await verifyHash(user?.passwordHash ?? (await dummyHash()), password, 'sign-in');
    } catch (err) {
      await svc.attempts.giveBack(keys);
      if (err instanceof Argon2Busy) return again(503, 'The box is busy. Try again in a moment.');
      throw err;
    }
    // An account whose address is not proven yet answers as a wrong password does (a sign-up that
    // answered alike for a new address and a taken one must not be told apart here), and its
    // person is mailed the link again (registration.ts).
    const closed = !!user && ok && user.mustVerifyEmail;
    // Turned off by their directory (SCIM active=false) or an administrator: told so, once the password
    // proved it is them (a stranger learns nothing a wrong password would not tell).
    if (user && ok && !user.active) {
      await svc.attempts.giveBack(keys);
      svc.metrics.signIns.inc({ result: 'failure' });
      svc.audit.record({ event: 'sign_in', outcome: 'failure', address, reason: 'deactivated', user: String(user.id) });
      return again(403, 'This account is turned off. Ask the administrator of this box.');
    }
    if (!user || !ok || closed) {
      svc.metrics.signIns.inc({ result: 'failure' });
      svc.audit.record({
        event: 'sign_in',
        outcome: 'failure',
        address,
        reason: closed ? 'email not verified' : user ? 'wrong password' : 'unknown email',
        ...(user ? { user: String(user.id) } : {}),
      });
      if (closed) await mailLinkAgain(req, user);
      return again(401, wrongPassword);
    }
    await svc.attempts.giveBack([{ address }]);
    svc.metrics.signIns.inc({ result: 'success' });
    svc.audit.record({ event: 'sign_in', outcome: 'success', user: String(user.id), address });
    // Signed in, or on to the second factor (api/http/sign-in-steps.ts). The account's failures
    // are wiped only by a sign-in that is done: wrong second-factor codes count there too, and a
    // right password must not wipe them (the password again, then more guesses at the code).
    const target = { returnTo, acr: acrParam(body.acr) };
    const done = nextStep(['pwd'], await factorState(svc.pool, user.id), target.acr) === 'done';
    await (done ? svc.attempts.clear({ account: email }) : svc.attempts.giveBack([{ account: email }]));
    await proceed(svc, res, user.id, ['pwd'], target, { passwordHash: user.passwordHash, provider: null });
  });

  /** Where sign-up proves the address first, a failed sign-in may be an account not open yet: the page says so to everyone. */
  const wrongPassword =
    svc.config.registration && proofOf(svc.config) === 'before-sign-in'
      ? 'The email or the password is wrong. Just signed up? Follow the link in the mail we sent you first.'
      : 'The email or the password is wrong.';

  /** A new link for an account not open yet, as many as its address may be sent (a stranger who made it knows its password too). */
  async function mailLinkAgain(req: Request, user: UserRow): Promise<void> {
    if (svc.config.smtp === undefined || (await svc.attempts.begin([{ mailsTo: user.email }]))) return;
    await resendVerification(svc, user, pageLanguage(req));
  }

  const signUpOff = (res: Response, message: string): void => renderPage(res, 404, messagePage(box, 'Sign-up is off', message));

  router.get('/auth/sign-up', (req, res) => {
    if (!svc.config.registration)
      return signUpOff(res, 'This box does not let people register themselves. Ask its administrator for an account.');
    renderPage(res, 200, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo: safeReturnTo(req.query.return_to) }));
  });

  router.post('/auth/sign-up', ...pageForm, async (req: Request, res: Response) => {
    if (!svc.config.registration) return signUpOff(res, 'This box does not let people register themselves.');
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const email = typeof body.email === 'string' ? body.email : '';
    const page = (status: number, shown: { errors?: Record<string, string[]>; error?: string }, headers: Record<string, string> = {}) =>
      renderPage(res, status, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo, email, ...shown }), headers);
    let input;
    try {
      input = userInput({ email, password: body.password }, true, undefined, { check: await passwordCheck(svc.config) });
    } catch (err) {
      if (err instanceof ValidationError) return page(422, { errors: err.errors });
      throw err;
    }
    // Counted before the password is hashed, per address and box-wide, across the box's processes
    // (and per email address where a mail goes out for any of them: registration.ts).
    const address = svc.addressOf(req);
    const keys: AttemptKey[] = [
      { signUpsFrom: address },
      'sign-ups',
      ...(proofOf(svc.config) === 'before-sign-in' ? [{ mailsTo: input.email! }] : []),
    ];
    const refused = await svc.attempts.begin(keys);
    if (refused) {
      const retryAfter = secondsUntil(refused.retryAt);
      const minutes = Math.ceil(retryAfter / 60);
      const when = `Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
      const why =
        refused.key === 'sign-ups'
          ? 'Too many people are signing up right now.'
          : typeof refused.key === 'object' && 'mailsTo' in refused.key
            ? 'Too many mails went to this address recently.'
            : 'Too many accounts were created from your network recently.';
      return page(429, { error: `${why} ${when}` }, { 'Retry-After': String(retryAfter) });
    }
    let passwordHash: string;
    try {
      // The last argon2 lane: a flood of sign-ups waits behind sign-ins, admins and clients (secrets.ts).
      passwordHash = await hashSecret(input.password!, 'sign-up');
    } catch (err) {
      await svc.attempts.giveBack(keys);
      if (err instanceof Argon2Busy)
        return page(503, { error: 'The box is busy. Try again in a moment.' }, { 'Retry-After': err.headers['Retry-After'] ?? '1' });
      throw err;
    }
    const group = await ensureGroup(svc.pool, svc.config.registrationGroup, 'People who signed up themselves.');
    const result = await signUp(svc, { email: input.email!, passwordHash, groupId: group.id, language: pageLanguage(req) });
    if ('made' in result) {
      const id = String(result.made.id);
      svc.audit.record({ event: 'record_changed', kind: 'User', id, action: 'created', by: { user: id } });
    }
    // The address proven first: a new address and a taken one get this same page (registration.ts).
    if (proofOf(svc.config) === 'before-sign-in') return renderPage(res, 200, signUpSentPage(box, input.email!));
    if (!('made' in result)) return page(422, { errors: { email: ['This email already has an account. Sign in instead.'] } });
    await proceed(svc, res, result.made.id, ['pwd'], { returnTo, acr: undefined }, { provider: null });
  });

  router.get('/auth/sign-out', async (req, res) => {
    const person = await signedInPerson(svc, req);
    renderPage(res, 200, signOutPage(box, csrfToken(svc, req, res), safeReturnTo(req.query.return_to), person?.user.email));
  });

  router.post('/auth/sign-out', ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    await endBrowserSession(svc, req, res);
    const returnTo = safeReturnTo(body.return_to);
    if (returnTo === '/auth/signed-in') return renderPage(res, 200, signOutPage(box, '', returnTo, undefined));
    res.redirect(303, returnTo);
  });

  router.get('/auth/signed-in', async (req, res) => {
    const user = (await signedInPerson(svc, req))?.user;
    renderPage(
      res,
      200,
      user
        ? messagePage(box, 'Signed in', `You are signed in as ${user.email}. You can close this page.`, false)
        : signOutPage(box, '', '/auth/signed-in', undefined),
    );
  });

  return router;
}
