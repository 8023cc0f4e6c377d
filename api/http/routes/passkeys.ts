// Passkeys over HTTP (docs/guides/passkeys.md): the JSON the passkeys script
// (api/ui/browser/passkeys.ts) exchanges with the box, and the person's passkeys page.
// Every call carries the page's CSRF token (header x-csrf-token), and every WebAuthn
// challenge is bound to the browser it was handed to (SHA-256 of its CSRF cookie id) and
// used once: an assertion replayed, or carried to another browser, finds no challenge.
// What is checked is api/people/passkeys.ts's; where a sign-in goes on is sign-in-steps.ts's.
import { createHash } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { withFactor } from '../../credentials/acr.js';
import type { Metrics } from '../../metrics.js';
import type { Attempts } from '../../people/attempts.js';
import {
  assertedCredentialId,
  assertedUserHandle,
  authenticationOptions,
  checkAssertion,
  checkRegistration,
  defaultPasskeyName,
  mayEnrolInStep,
  passkeyAmr,
  passkeyName,
  registrationOptions,
  relyingParty,
  userHandle,
} from '../../people/passkeys.js';
import { removeOwnFactor } from '../../people/accounts.js';
import { ConstraintViolation } from '../../store/constraints.js';
import {
  addPasskey,
  createChallenge,
  factorState,
  findPasskey,
  listPasskeys,
  recordPasskeyUse,
  setMustEnrol,
  takeChallenge,
  type Challenge,
} from '../../store/factors.js';
import { getUser } from '../../store/users.js';
import { messagePage } from '../../ui/pages.js';
import { passkeysPage } from '../../ui/passkey-pages.js';
import { pageForm, pageJson } from '../body.js';
import { csrfToken, csrfValid, presentedBrowserId, type BrowserServices } from '../browser-session.js';
import type { AddressOf } from '../client-address.js';
import { invalidForm, renderPage, signedInPerson } from '../pages.js';
import { acrParam, completeStep, currentStep, proceed, type StepTarget } from '../sign-in-steps.js';
import { strictRouter } from '../router.js';
import { safeReturnTo } from './sign-in.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  factorKey: Buffer;
  attempts: Attempts;
  addressOf: AddressOf;
  metrics: Metrics;
}

export type PasskeyRouterServices = BrowserServices & Needs;

/** A challenge lives this long: the browser's own timeout for a passkey prompt is five minutes. */
const CHALLENGE_MINUTES = 5;

const ACCOUNT_PAGE = '/auth/account/passkeys';

/** The browser a challenge is bound to: SHA-256 of its CSRF cookie id. */
function browserOf(svc: BrowserServices, req: Request): Buffer | undefined {
  const id = presentedBrowserId(svc, req);
  return id === undefined ? undefined : createHash('sha256').update(id).digest();
}

/** The challenge a WebAuthn response answers (in its clientDataJSON), when it names one. */
function answeredChallenge(response: unknown): string | undefined {
  const data = (response as { response?: { clientDataJSON?: unknown } } | null)?.response?.clientDataJSON;
  if (typeof data !== 'string' || data.length > 4096) return undefined;
  try {
    const challenge = (JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    return typeof challenge === 'string' && challenge.length <= 256 ? challenge : undefined;
  } catch {
    return undefined;
  }
}

const refuse = (res: Response, status: number, error: string): void => void res.status(status).json({ error });

/**
 * Answers a step's or a sign-in's redirect as JSON (`{ location }`): the script called with
 * fetch, and takes the browser there itself. The cookies set on the way stay.
 */
function redirectAsJson(res: Response): void {
  res.redirect = (status: unknown, url?: unknown) => {
    res.status(200).json({ location: typeof status === 'string' ? status : url });
  };
}

/** Where the sign-in goes on to, as the page's script sends it. */
const targetOf = (body: Record<string, unknown>): StepTarget => ({ returnTo: safeReturnTo(body.return_to), acr: acrParam(body.acr) });

export function passkeyRouter(svc: PasskeyRouterServices): Router {
  const router = strictRouter();
  const rp = relyingParty(svc.config.baseUrl, svc.config.box);

  /** The browser of a call with a valid CSRF token; undefined (answered 403) otherwise. */
  const callingBrowser = (req: Request, res: Response): Buffer | undefined => {
    const browser = csrfValid(svc, req, req.get('x-csrf-token')) ? browserOf(svc, req) : undefined;
    if (!browser) refuse(res, 403, 'This page has expired. Reload it and try again.');
    return browser;
  };

  const handOut = async (
    res: Response,
    browser: Buffer,
    purpose: Challenge['purpose'],
    userId: number | null,
    options: { challenge: string },
  ) => {
    await createChallenge(svc.pool, {
      challenge: options.challenge,
      browser,
      purpose,
      userId,
      expiresAt: new Date(Date.now() + CHALLENGE_MINUTES * 60_000),
    });
    res.json(options);
  };

  /** The challenge a response answers, used up: only this browser's, for this purpose, once, before it expired. */
  const answered = (browser: Buffer, purpose: Challenge['purpose'], response: unknown): Promise<Challenge | undefined> => {
    const challenge = answeredChallenge(response);
    return challenge ? takeChallenge(svc.pool, challenge, browser, purpose) : Promise.resolve(undefined);
  };

  // --- signing in with a passkey: alone (no step), or as the second factor of a step

  router.post('/auth/passkeys/authenticate/options', ...pageJson, async (req, res) => {
    const browser = callingBrowser(req, res);
    if (!browser) return;
    const step = await currentStep(svc, req);
    // Alone: no credentials named, the browser offers the discoverable ones (and its autofill).
    const allowed = step ? await listPasskeys(svc.pool, step.userId) : [];
    if (step && !allowed.length) return refuse(res, 409, 'You have no passkey. Use another way to sign in.');
    await handOut(res, browser, 'authenticate', step?.userId ?? null, await authenticationOptions(rp, allowed));
  });

  router.post('/auth/passkeys/authenticate', ...pageJson, async (req, res) => {
    const browser = callingBrowser(req, res);
    if (!browser) return;
    const body = req.body as Record<string, unknown>;
    const address = svc.addressOf(req);
    const refused = await svc.attempts.begin([{ address }]);
    if (refused) {
      svc.metrics.signIns.inc({ result: 'throttled' });
      svc.audit.record({ event: 'sign_in', outcome: 'locked', address, reason: 'address' });
      return refuse(res, 429, 'Too many failed sign-ins. Try again later.');
    }
    const failed = (reason: string, user?: number): void => {
      svc.metrics.signIns.inc({ result: 'failure' });
      svc.audit.record({ event: 'sign_in', outcome: 'failure', address, reason, ...(user ? { user: String(user) } : {}) });
      refuse(res, 401, 'That passkey was not accepted. Try again, or sign in another way.');
    };
    const challenge = await answered(browser, 'authenticate', body.response);
    if (!challenge) return failed('passkey: no such challenge');
    const step = await currentStep(svc, req);
    // A challenge handed out for one sign-in (alone, or a step's person) answers only that one.
    if (challenge.userId !== (step?.userId ?? null)) return failed('passkey: challenge of another sign-in');
    const credentialId = assertedCredentialId(body.response);
    const key = credentialId && (await findPasskey(svc.pool, credentialId));
    if (!key) return failed('passkey: unknown credential');
    // A second factor is the step's person's own passkey, whatever its signature.
    if (step && key.userId !== step.userId) return failed('passkey: another person', step.userId);
    // Alone, the credential names its person; the authenticator's user handle must say the same.
    const handle = assertedUserHandle(body.response);
    if (!step && !handle?.equals(userHandle(svc.factorKey, key.userId))) return failed('passkey: user handle', key.userId);
    const assertion = await checkAssertion(rp, challenge.challenge, key, body.response);
    if (!assertion) return failed('passkey: assertion', key.userId);
    // The counter as read: of two sign-ins with one assertion, one moves it.
    if (!(await recordPasskeyUse(svc.pool, key.id, key.signCount, assertion.newCount))) return failed('passkey: counter', key.userId);
    await svc.attempts.giveBack([{ address }]);
    svc.metrics.signIns.inc({ result: 'success' });
    svc.audit.record({ event: 'sign_in', outcome: 'success', user: String(key.userId), address });
    const proved = passkeyAmr(assertion.deviceType, assertion.userVerified);
    redirectAsJson(res);
    if (!step) return proceed(svc, res, key.userId, withFactor([], proved), targetOf(body));
    const done = await completeStep(svc, req, res, (s) => withFactor(s.amr, s.userId === key.userId ? proved : []), targetOf(body));
    if (!done) refuse(res, 409, 'This sign-in has expired. Sign in again.');
  });

  // --- adding a passkey: a signed-in person on their passkeys page, or a step's person enrolling

  /**
   * Who is adding a passkey: the step's person when the step is an enrolment, else the
   * signed-in person. A step that still wants a factor the person has is no way to add one.
   */
  const adder = async (req: Request): Promise<{ userId: number; inStep: boolean } | undefined> => {
    const step = await currentStep(svc, req);
    if (step) return mayEnrolInStep(step.amr, await factorState(svc.pool, step.userId)) ? { userId: step.userId, inStep: true } : undefined;
    const person = await signedInPerson(svc, req);
    return person && { userId: person.user.id, inStep: false };
  };

  router.post('/auth/passkeys/register/options', ...pageJson, async (req, res) => {
    const browser = callingBrowser(req, res);
    if (!browser) return;
    const who = await adder(req);
    const user = who && (await getUser(svc.pool, who.userId));
    if (!who || !user) return refuse(res, 401, 'Sign in first.');
    const existing = await listPasskeys(svc.pool, user.id);
    const options = await registrationOptions(rp, { handle: userHandle(svc.factorKey, user.id), email: user.email }, existing);
    await handOut(res, browser, 'register', user.id, options);
  });

  router.post('/auth/passkeys/register', ...pageJson, async (req, res) => {
    const browser = callingBrowser(req, res);
    if (!browser) return;
    const body = req.body as Record<string, unknown>;
    const who = await adder(req);
    if (!who) return refuse(res, 401, 'Sign in first.');
    const challenge = await answered(browser, 'register', body.response);
    if (!challenge || challenge.userId !== who.userId) return refuse(res, 400, 'The passkey was not made for this page. Try again.');
    const made = await checkRegistration(rp, challenge.challenge, body.response);
    if (!made) return refuse(res, 400, 'The passkey could not be checked. Try again.');
    const given = body.name === undefined || body.name === '' ? undefined : passkeyName(body.name);
    if (body.name !== undefined && body.name !== '' && !given) return refuse(res, 422, 'A name has 1 to 64 characters.');
    const name = given ?? defaultPasskeyName((await listPasskeys(svc.pool, who.userId)).map((k) => k.name));
    let added;
    try {
      added = await addPasskey(svc.pool, who.userId, { ...made, name });
    } catch (err) {
      if (err instanceof ConstraintViolation) return refuse(res, 409, 'You have a passkey of that name, or this passkey already.');
      throw err;
    }
    svc.audit.record({
      event: 'factor',
      action: 'enrolled',
      user: String(who.userId),
      kind: 'passkey',
      factor: String(added.id),
      by: { user: String(who.userId) },
      address: svc.addressOf(req),
    });
    if (!who.inStep) return void res.json({ location: ACCOUNT_PAGE });
    await setMustEnrol(svc.pool, who.userId, false);
    redirectAsJson(res);
    const proved = passkeyAmr(made.deviceType, made.userVerified);
    const done = await completeStep(svc, req, res, (s) => withFactor(s.amr, s.userId === who.userId ? proved : []), targetOf(body));
    if (!done) refuse(res, 409, 'This sign-in has expired. Sign in again.');
  });

  // --- the person's passkeys page

  const showPage = async (req: Request, res: Response, status = 200, error?: string): Promise<void> => {
    const person = await signedInPerson(svc, req);
    if (!person) return void res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PAGE)}`);
    const passkeys = await listPasskeys(svc.pool, person.user.id);
    const csrf = csrfToken(svc, req, res);
    renderPage(res, status, passkeysPage({ box: svc.config.box, csrf, email: person.user.email, passkeys, error }), {}, { script: true });
  };

  router.get(ACCOUNT_PAGE, (req, res) => showPage(req, res));

  router.post(`${ACCOUNT_PAGE}/remove`, ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const person = await signedInPerson(svc, req);
    if (!person) return void res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PAGE)}`);
    const id = typeof body.id === 'string' && /^[1-9][0-9]{0,15}$/.test(body.id) ? Number(body.id) : undefined;
    const keys = await listPasskeys(svc.pool, person.user.id);
    if (id === undefined || !keys.some((k) => k.id === id))
      return renderPage(
        res,
        404,
        messagePage(svc.config.box, 'No such passkey', 'That passkey is not one of yours. Go back and reload the page.'),
      );
    const removed = await removeOwnFactor(svc, person.user.id, id);
    if (removed === 'last')
      return showPage(req, res, 409, 'Your group requires a second factor: add another one before you remove this one.');
    if (removed)
      svc.audit.record({
        event: 'factor',
        action: 'removed',
        user: String(person.user.id),
        kind: 'passkey',
        factor: String(removed.id),
        by: { user: String(person.user.id) },
        address: svc.addressOf(req),
      });
    res.redirect(303, ACCOUNT_PAGE);
  });

  return router;
}
