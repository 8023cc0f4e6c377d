// Passkeys over HTTP (docs/guides/passkeys.md): the JSON the passkeys script
// (api/ui/browser/passkeys.ts) exchanges with the box, and the person's passkeys page.
// Every call carries the page's CSRF token (header x-csrf-token), and every WebAuthn
// challenge is bound to the browser it was handed to (SHA-256 of its CSRF cookie id) and
// used once: an assertion replayed, or carried to another browser, finds no challenge.
// What is checked is api/people/ways/passkey.ts's; where a sign-in goes on, api/people/steps.ts's.
import { createHash } from 'node:crypto';
import { Request, Response, Router } from '../router.js';
import type { Metrics } from '../../metrics.js';
import { secondsUntil, type Attempts } from '../../people/attempts.js';
import { removeOwnFactor } from '../../people/accounts.js';
import { provenRecently } from '../../people/own-account.js';
import type { StepServices, StepTarget, WentOn } from '../../people/steps.js';
import {
  addPasskeyFor,
  passkeyAdder,
  passkeysOf,
  registrationChallenge,
  signInOptions,
  signInWithPasskey,
  type Caller,
  type NotAdded,
  type Options,
} from '../../people/ways/passkey.js';
import { words, type MessageKey, type Text } from '../../ui/language.js';
import { messagePage } from '../../ui/pages.js';
import { passkeysPage } from '../../ui/passkey-pages.js';
import { browserPage } from '../browser-pages.js';
import { confirmPath, factorChange } from '../account-page.js';
import { pageForm, pageJson } from '../body.js';
import {
  browserFacts,
  browserTokens,
  csrfToken,
  csrfValid,
  handOver,
  presentedBrowserId,
  type BrowserServices,
} from '../browser-session.js';
import type { AddressOf } from '../client-address.js';
import { accountHolder, hookWords, plainText, renderPage } from '../pages.js';
import { acrParam, stepToken, whereNext } from '../sign-in-steps.js';
import { safeReturnTo } from './sign-in.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  factorKey: Buffer;
  attempts: Attempts;
  addressOf: AddressOf;
  metrics: Metrics;
}

export type PasskeyRouterServices = BrowserServices & StepServices & Needs;

const ACCOUNT_PAGE = '/auth/account/passkeys';

/** The browser a challenge is bound to: SHA-256 of its CSRF cookie id. */
function browserOf(svc: BrowserServices, req: Request): Buffer | undefined {
  const id = presentedBrowserId(svc, req);
  return id === undefined ? undefined : createHash('sha256').update(id).digest();
}

/** A refusal as the script shows it on the page (textContent): `{error}`, in the page's language; `more`, where to go. */
const refuse = (req: Request, res: Response, status: number, error: Text, more: { location?: string } = {}): void =>
  void res
    .vary('Accept-Language')
    .status(status)
    .json({ error: plainText(req, error), ...more });

/** What the script is told when no passkey was added. */
const NOT_ADDED: Record<NotAdded, [number, MessageKey]> = {
  'not for this page': [400, 'passkey.notForThisPage'],
  'not checked': [400, 'passkey.notChecked'],
  'bad name': [422, 'passkey.badName'],
  taken: [409, 'passkey.taken'],
  ended: [409, 'passkey.ended'],
};

/** Where the sign-in goes on to, as the page's script sends it. */
const targetOf = (body: Record<string, unknown>): StepTarget => ({ returnTo: safeReturnTo(body.return_to), acr: acrParam(body.acr) });

export function passkeyRouter(svc: PasskeyRouterServices): Router {
  const router = new Router();

  /** Who calls: the browser of a call with a valid CSRF token (undefined, answered 403, otherwise), and its address. */
  const callerOf = (req: Request, res: Response): Caller | undefined => {
    const browser = csrfValid(svc, req, req.get('x-csrf-token')) ? browserOf(svc, req) : undefined;
    if (!browser) refuse(req, res, 403, words('passkey.pageExpired'));
    return browser && { browser, address: svc.addressOf(req) };
  };

  /** Options for the browser's prompt, or why none (a flood from the address: 429). */
  const answerOptions = (req: Request, res: Response, options: Options): void => {
    if ('options' in options) return void res.json(options.options);
    if ('none' in options)
      return options.none === 'no passkey'
        ? refuse(req, res, 409, words('passkey.noPasskey'))
        : refuse(req, res, 401, words('passkey.signInFirst'));
    res.set('Retry-After', String(secondsUntil(options.throttled.retryAt)));
    refuse(req, res, 429, words('passkey.tooManyPrompts'));
  };

  // --- signing in with a passkey: alone (no step), or as the second factor of a step

  router.post(browserPage('/auth/passkeys/authenticate/options'), ...pageJson, async (req, res) => {
    const caller = callerOf(req, res);
    if (caller) answerOptions(req, res, await signInOptions(svc, caller, stepToken(svc, req)));
  });

  router.post(browserPage('/auth/passkeys/authenticate'), ...pageJson, async (req, res) => {
    const caller = callerOf(req, res);
    if (!caller) return;
    const body = req.body as Record<string, unknown>;
    const target = targetOf(body);
    const answer = await signInWithPasskey(svc, browserFacts(svc, req), caller, stepToken(svc, req), body.response, target);
    if ('throttled' in answer) return refuse(req, res, 429, words('passkey.tooManyFailures'));
    if ('refused' in answer || 'unchecked' in answer) return refuse(req, res, 401, words('passkey.notAccepted'));
    const went = answer.proven;
    if (went === 'ended') return refuse(req, res, 409, words('passkey.signInExpired'));
    // A Hook refused the sign-in (signingIn): its words, which the script shows as text on the page.
    if (went.refused !== undefined) return refuse(req, res, 403, hookWords(went.refused));
    goOnAsJson(res, went, target);
  });

  /** The way on, as JSON (`{ location }`): the script called with fetch, and takes the browser there itself. */
  const goOnAsJson = (res: Response, went: WentOn, target: StepTarget): void => {
    handOver(svc, res, went);
    res.json({ location: whereNext(went.next, target) });
  };

  // --- adding a passkey: a signed-in person on their passkeys page, or a step's person enrolling

  /** A signed-in person without a recent proof is sent to confirm it is them (the script follows `location`). */
  const confirmFirst = (req: Request, res: Response): void =>
    refuse(req, res, 403, words('passkey.confirmFirst'), { location: confirmPath(ACCOUNT_PAGE) });

  router.post(browserPage('/auth/passkeys/register/options'), ...pageJson, async (req, res) => {
    const caller = callerOf(req, res);
    if (!caller) return;
    const adder = await passkeyAdder(svc, browserTokens(svc, req));
    if (adder === 'confirm') return confirmFirst(req, res);
    answerOptions(req, res, adder ? await registrationChallenge(svc, caller, adder) : { none: 'not signed in' });
  });

  router.post(browserPage('/auth/passkeys/register'), ...pageJson, async (req, res) => {
    const caller = callerOf(req, res);
    if (!caller) return;
    const body = req.body as Record<string, unknown>;
    const adder = await passkeyAdder(svc, browserTokens(svc, req));
    if (adder === 'confirm') return confirmFirst(req, res);
    if (!adder) return refuse(req, res, 401, words('passkey.signInFirst'));
    const target = targetOf(body);
    const made = { response: body.response, name: body.name };
    const added = await addPasskeyFor(svc, browserFacts(svc, req), caller, adder, stepToken(svc, req), made, target);
    if ('refused' in added) {
      const [status, key] = NOT_ADDED[added.refused];
      return refuse(req, res, status, words(key));
    }
    if ('went' in added) return goOnAsJson(res, added.went, target);
    handOver(svc, res, { session: added.session });
    res.json({ location: ACCOUNT_PAGE });
  });

  // --- the person's passkeys page

  const showPage = async (req: Request, res: Response, status = 200, error?: Text): Promise<void> => {
    const person = await accountHolder(svc, req);
    if (!person) return void res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PAGE)}`);
    const passkeys = await passkeysOf(svc, person.user.id);
    const csrf = csrfToken(svc, req, res);
    const page = passkeysPage({ box: svc.config.box, csrf, email: person.user.email, passkeys, recent: provenRecently(person), error });
    renderPage(res, status, page, {}, { script: true });
  };

  router.get(browserPage(ACCOUNT_PAGE), (req, res) => showPage(req, res));

  router.post(browserPage(`${ACCOUNT_PAGE}/remove`), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const person = await factorChange(svc, req, res, ACCOUNT_PAGE);
    if (!person) return;
    const id = typeof body.id === 'string' && /^[1-9][0-9]{0,15}$/.test(body.id) ? Number(body.id) : undefined;
    const keys = await passkeysOf(svc, person.user.id);
    if (id === undefined || !keys.some((k) => k.id === id))
      return renderPage(
        res,
        404,
        messagePage(svc.config.box, words('passkeys.noSuch'), words('passkeys.noSuchMessage'), true, [
          { href: '/auth/account/passkeys', label: words('passkeys.title') },
        ]),
      );
    const removed = await removeOwnFactor(svc, person.user, id, person.browser.sid, svc.addressOf(req));
    if (removed === 'signed-out') return void res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PAGE)}`);
    if (removed === 'last') return showPage(req, res, 409, words('passkeys.lastRequired'));
    res.redirect(303, ACCOUNT_PAGE);
  });

  return router;
}
