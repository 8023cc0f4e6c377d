// The browser flows: authorize → sign in (or sign up) → consent → redirect, and
// sign-out. Pages are rendered here; OAuth decisions live in api/oauth/authorize.ts.
import type { Request, Response, Router } from 'express';
import { ValidationError } from '../../errors.js';
import {
  AUTHORIZE_PARAMS,
  errorRedirect,
  grantAuthorization,
  parseAuthorizeRequest,
  SIGN_IN_AFTER,
  type AuthorizeRequest,
} from '../../oauth/authorize.js';
import { Argon2Busy, dummyHash, hashSecret, verifyHash } from '../../oauth/secrets.js';
import { ADDRESS_FACTOR } from '../../oauth/throttle.js';
import { userInput } from '../../schema/people.js';
import type { Services } from '../../services.js';
import { clearFailures, consentedScopes, countAttempt, recordConsent, uncountAttempt, type BrowserSession } from '../../store/browser.js';
import { ConstraintViolation } from '../../store/constraints.js';
import { createGroup, findGroupByName } from '../../store/groups.js';
import { createUser, findUserByEmail, type UserRow } from '../../store/users.js';
import { consentPage, messagePage, signInPage, signOutPage, signUpPage } from '../../ui/pages.js';
import { csrfToken, csrfValid, endBrowserSession, signIn } from '../browser-session.js';
import { asksForFreshSignIn, signedInAfterRequest, signInMarker } from '../fresh-sign-in.js';
import { renderPage, signedInPerson } from '../pages.js';
import { pageForm } from '../body.js';
import { strictRouter } from '../router.js';

/** The box-wide count of sign-ups (beside one per address) among the sign-in throttle's windows. */
const SIGN_UP_BOX_KEY = 'sign-up:box';

// Only places of this box are valid targets after sign-in: never an open redirect.
function safeReturnTo(value: unknown): string {
  return typeof value === 'string' && /^\/(auth\/authorize\?|auth\/device\/verify(\?|$)|admin(\/|$|\?))/.test(value)
    ? value
    : '/auth/signed-in';
}

export function browserRouter(svc: Services): Router {
  const router = strictRouter();
  const box = svc.config.box;
  const render = renderPage;
  /** The sign-in page, coming back to `returnTo` (an email filled in, an error shown, when given). */
  const signInForm = (
    req: Request,
    res: Response,
    status: number,
    returnTo: string,
    shown: { email?: string; error?: string } = {},
  ): void =>
    render(res, status, signInPage({ box, csrf: csrfToken(svc, req, res), returnTo, registration: svc.config.registration, ...shown }));
  const invalidForm = (res: Response): void =>
    render(
      res,
      403,
      messagePage(
        box,
        'This form has expired',
        'The form was not sent from this page, or it is too old. Go back, reload the page, and try again.',
      ),
    );

  /**
   * Whether the person must sign in (again) before this request is answered:
   * nobody is signed in, id_token_hint names someone else, or prompt asks for a
   * sign-in or max_age has passed since the last one (OpenID Connect Core
   * §3.1.2.1) — and this browser has not signed in since the request came.
   */
  function mustSignIn(
    req: Request,
    request: AuthorizeRequest,
    signedInAs: { user: UserRow; browser: BrowserSession } | undefined,
  ): boolean {
    if (!signedInAs) return true;
    if (request.hintedUser !== undefined && request.hintedUser !== String(signedInAs.user.id)) return true;
    const fresh =
      request.prompt.has('login') ||
      request.prompt.has('select_account') ||
      (request.maxAge !== undefined && Date.now() - signedInAs.browser.authTime.getTime() > request.maxAge * 1000);
    return fresh && !signedInAfterRequest(svc, req, request, signedInAs.browser);
  }

  /**
   * The sign-in page, coming back to the same request: with what asked for the
   * sign-in, and, when that was prompt or max_age, the proof that the sign-in
   * to come is the one the request waits for.
   */
  function askToSignIn(req: Request, res: Response, request: AuthorizeRequest, current: { browser: BrowserSession } | undefined): void {
    const params = asksForFreshSignIn(request)
      ? { ...request.params, [SIGN_IN_AFTER]: signInMarker(svc, req, res, request, current?.browser) }
      : request.params;
    signInForm(req, res, 200, `/auth/authorize?${new URLSearchParams(params)}`, request.loginHint ? { email: request.loginHint } : {});
  }

  /** After sign-in: straight to the client when consent is not needed, else the consent page. */
  async function continueAuthorization(
    req: Request,
    res: Response,
    request: AuthorizeRequest,
    user: UserRow,
    browser: BrowserSession,
  ): Promise<void> {
    const client = request.client.resource;
    const wanted = (request.scope ?? '').split(' ').filter(Boolean);
    const granted = client.first_party ? undefined : await consentedScopes(svc.pool, user.id, client.id);
    const consented = client.first_party || (granted && wanted.every((s) => granted.includes(s)));
    if (consented && !request.prompt.has('consent')) {
      res.redirect(302, await grantAuthorization(svc, request, user, browser));
      return;
    }
    if (request.prompt.has('none')) {
      res.redirect(302, errorRedirect(request, 'consent_required', 'the user has not allowed this client these scopes'));
      return;
    }
    render(
      res,
      200,
      consentPage({
        box,
        csrf: csrfToken(svc, req, res),
        clientId: client.id,
        clientDescription: client.description,
        scope: request.scope,
        email: user.email,
        params: request.params,
      }),
    );
  }

  const signedInAs = (req: Request) => signedInPerson(svc, req);

  async function authorize(res: Response, raw: Record<string, unknown>): Promise<AuthorizeRequest | undefined> {
    const parsed = await parseAuthorizeRequest(svc, raw);
    if ('kind' in parsed) {
      if (parsed.kind === 'page') render(res, parsed.status, messagePage(box, parsed.title, parsed.message));
      else res.redirect(302, parsed.location);
      return undefined;
    }
    return parsed;
  }

  // OpenID Connect Core §3.1.2.1: "Authorization Servers MUST support the use of the HTTP GET
  // and POST methods", POST with the parameters as a form body.
  const authorizeEndpoint = async (req: Request, res: Response, raw: Record<string, unknown>): Promise<void> => {
    const request = await authorize(res, raw);
    if (!request) return;
    const current = await signedInAs(req);
    if (mustSignIn(req, request, current)) {
      if (request.prompt.has('none')) {
        res.redirect(302, errorRedirect(request, 'login_required', 'the user must sign in'));
        return;
      }
      askToSignIn(req, res, request, current);
      return;
    }
    await continueAuthorization(req, res, request, current!.user, current!.browser);
  };
  router.get('/auth/authorize', (req, res) => authorizeEndpoint(req, res, req.query));
  router.post('/auth/authorize', ...pageForm, (req, res) => authorizeEndpoint(req, res, req.body as Record<string, unknown>));

  router.get('/auth/sign-in', (req, res) => {
    signInForm(req, res, 200, safeReturnTo(req.query.return_to));
  });

  router.post('/auth/sign-in', ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(res);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const again = (status: number, error: string): void => signInForm(req, res, status, returnTo, { email, error });

    const address = svc.addressOf(req);
    const accountKey = `email:${email.toLowerCase()}`;
    const addressKey = `addr:${address}`;
    const keys = [accountKey, addressKey];
    const limit = svc.config.signInMaxFailures;
    // Counted before the check, so that N parallel guesses get at most `limit` checks.
    const counts = await countAttempt(svc.pool, keys, svc.config.signInWindowSeconds);
    const over = [...counts].find(([key, c]) => c.attempts > (key === addressKey ? limit * ADDRESS_FACTOR : limit));
    if (over) {
      await uncountAttempt(svc.pool, keys); // nothing was checked: an attempt from a blocked address must not lock the account
      const minutes = Math.max(1, Math.ceil((over[1].retryAt.getTime() - Date.now()) / 60_000));
      svc.metrics.signIns.inc({ result: 'throttled' });
      svc.audit.record({ event: 'sign_in', outcome: 'locked', address, reason: over[0] === addressKey ? 'address' : 'account' });
      return again(429, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`);
    }
    const user = email ? await findUserByEmail(svc.pool, email) : undefined;
    let ok: boolean;
    try {
      // Verify against a real hash even for unknown emails, so timing does not tell which emails exist.
      ok = await verifyHash(user?.passwordHash ?? (await dummyHash()), password, 'sign-in');
    } catch (err) {
      await uncountAttempt(svc.pool, keys);
      if (err instanceof Argon2Busy) return again(503, 'The box is busy. Try again in a moment.');
      throw err;
    }
    if (!user || !ok) {
      svc.metrics.signIns.inc({ result: 'failure' });
      svc.audit.record({
        event: 'sign_in',
        outcome: 'failure',
        address,
        reason: user ? 'wrong password' : 'unknown email',
        ...(user ? { user: String(user.id) } : {}),
      });
      return again(401, 'The email or the password is wrong.');
    }
    await clearFailures(svc.pool, accountKey);
    await uncountAttempt(svc.pool, [addressKey]);
    await signIn(svc, res, user.id);
    svc.metrics.signIns.inc({ result: 'success' });
    svc.audit.record({ event: 'sign_in', outcome: 'success', user: String(user.id), address });
    res.redirect(303, returnTo);
  });

  router.get('/auth/sign-up', (req, res) => {
    if (!svc.config.registration)
      return render(
        res,
        404,
        messagePage(box, 'Sign-up is off', 'This box does not let people register themselves. Ask its administrator for an account.'),
      );
    render(res, 200, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo: safeReturnTo(req.query.return_to) }));
  });

  /**
   * Counts a sign-up for its address and for the box before its password is
   * hashed, so that sign-ups sent at once get no more than the limits; in the
   * database, so that the counts hold across the box's processes. When either
   * is over its limit, nothing stays counted, and the answer says when to come back.
   */
  async function countSignUp(address: string): Promise<{ message: string; retryAfter: number } | undefined> {
    const { config } = svc;
    const addressKey = `sign-up:addr:${address}`;
    const [byAddress, byBox] = await Promise.all([
      countAttempt(svc.pool, [addressKey], config.signUpAddressWindowSeconds),
      countAttempt(svc.pool, [SIGN_UP_BOX_KEY], config.signUpBoxWindowSeconds),
    ]);
    const fromAddress = byAddress.get(addressKey)!;
    const fromAnywhere = byBox.get(SIGN_UP_BOX_KEY)!;
    const over = [
      ...(fromAddress.attempts > config.signUpMaxPerAddress ? [fromAddress] : []),
      ...(fromAnywhere.attempts > config.signUpMaxPerBox ? [fromAnywhere] : []),
    ];
    if (!over.length) return undefined;
    await uncountSignUp(address);
    const retryAfter = Math.max(1, Math.ceil((Math.max(...over.map((c) => c.retryAt.getTime())) - Date.now()) / 1000));
    const minutes = Math.ceil(retryAfter / 60);
    const when = `Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
    return {
      retryAfter,
      message:
        over[0] === fromAddress
          ? `Too many accounts were created from your network recently. ${when}`
          : `Too many people are signing up right now. ${when}`,
    };
  }
  /** Gives back a sign-up that made nothing (refused, or never hashed). */
  const uncountSignUp = (address: string): Promise<void> => uncountAttempt(svc.pool, [`sign-up:addr:${address}`, SIGN_UP_BOX_KEY]);

  router.post('/auth/sign-up', ...pageForm, async (req, res) => {
    if (!svc.config.registration)
      return render(res, 404, messagePage(box, 'Sign-up is off', 'This box does not let people register themselves.'));
    const body = req.body as Record<string, unknown>;
    const returnTo = safeReturnTo(body.return_to);
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(res);
    const email = typeof body.email === 'string' ? body.email : '';
    const again = (errors: Record<string, string[]>): void =>
      render(res, 422, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo, email, errors }));
    /** Not taken at all: throttled (429) or busy (503), with when to come back. */
    const notNow = (status: number, error: string, retryAfter: string): void =>
      render(res, status, signUpPage({ box, csrf: csrfToken(svc, req, res), returnTo, email, error }), { 'Retry-After': retryAfter });
    let input;
    try {
      input = userInput({ email, password: body.password }, true);
    } catch (err) {
      if (err instanceof ValidationError) return again(err.errors);
      throw err;
    }
    const address = svc.addressOf(req);
    const throttled = await countSignUp(address);
    if (throttled) return notNow(429, throttled.message, String(throttled.retryAfter));
    let passwordHash: string;
    try {
      // The last argon2 lane: a flood of sign-ups waits behind sign-ins, admins and clients (secrets.ts).
      passwordHash = await hashSecret(input.password!, 'sign-up');
    } catch (err) {
      await uncountSignUp(address);
      if (err instanceof Argon2Busy) return notNow(503, 'The box is busy. Try again in a moment.', err.headers['Retry-After'] ?? '1');
      throw err;
    }
    const group =
      (await findGroupByName(svc.pool, svc.config.registrationGroup)) ??
      (await createGroup(svc.pool, svc.config.registrationGroup, 'People who signed up themselves.').catch(() =>
        findGroupByName(svc.pool, svc.config.registrationGroup),
      ));
    let user;
    try {
      user = await createUser(svc.pool, {
        email: input.email!,
        passwordHash,
        data: null,
        groupIds: group ? [group.id] : [],
        emailVerified: false,
      });
    } catch (err) {
      if (err instanceof ConstraintViolation && err.field === 'email') {
        return again({ email: ['This email already has an account. Sign in instead.'] });
      }
      throw err;
    }
    svc.audit.record({ event: 'record_changed', kind: 'User', id: String(user.id), action: 'created', by: { user: String(user.id) } });
    await signIn(svc, res, user.id);
    res.redirect(303, returnTo);
  });

  router.post('/auth/consent', ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(res);
    const current = await signedInAs(req);
    if (!current) {
      return render(res, 401, messagePage(box, 'Signed out', 'You are no longer signed in. Go back to the application and start again.'));
    }
    const request = await authorize(res, Object.fromEntries(AUTHORIZE_PARAMS.map((p) => [p, body[p]])));
    if (!request) return;
    if (body.decision !== 'allow') {
      res.redirect(302, errorRedirect(request, 'access_denied', 'the user denied access'));
      return;
    }
    // The consent form carries the request: what it asks of the sign-in holds here too.
    if (mustSignIn(req, request, current)) return askToSignIn(req, res, request, current);
    await recordConsent(svc.pool, current.user.id, request.client.resource.id, (request.scope ?? '').split(' ').filter(Boolean));
    res.redirect(302, await grantAuthorization(svc, request, current.user, current.browser));
  });

  router.get('/auth/sign-out', async (req, res) => {
    const current = await signedInAs(req);
    render(res, 200, signOutPage(box, csrfToken(svc, req, res), safeReturnTo(req.query.return_to), current?.user.email));
  });

  router.post('/auth/sign-out', ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(res);
    await endBrowserSession(svc, req, res);
    const returnTo = safeReturnTo(body.return_to);
    if (returnTo === '/auth/signed-in') return render(res, 200, signOutPage(box, '', returnTo, undefined));
    res.redirect(303, returnTo);
  });

  router.get('/auth/signed-in', async (req, res) => {
    const user = (await signedInAs(req))?.user;
    render(
      res,
      200,
      user
        ? messagePage(box, 'Signed in', `You are signed in as ${user.email}. You can close this page.`, false)
        : signOutPage(box, '', '/auth/signed-in', undefined),
    );
  });

  return router;
}
