// A sign-out in the browser that goes on to the SAML apps needing that browser to hear of it (those
// with only an HTTP-Redirect SingleLogoutService: api/saml/logout-chains.ts): the doors of a
// sign-out (the box's /auth/sign-out, OpenID Connect's /auth/logout, a SAML app's /auth/saml/slo,
// the account page's end of this very sign-in) end the session here and send the browser where the
// chain says.
import type { Request, Response } from './router.js';
import { startLogoutChain, type LogoutChainServices, type LogoutEnd, type LogoutStep } from '../saml/logout-chains.js';
import { words } from '../ui/language.js';
import { messagePage } from '../ui/pages.js';
import { browserId, endBrowserSession, type BrowserServices } from './browser-session.js';
import { renderPage } from './pages.js';
import type { SessionRow } from '../store/sessions.js';

export type SignOutServices = BrowserServices & LogoutChainServices;

/**
 * Signs this browser out, and begins the way through the SAML apps its session signed in to: the
 * step to the first, or undefined when there is none to visit (the door goes on to `end` itself).
 */
export async function signOutThroughApps(
  svc: SignOutServices,
  req: Request,
  res: Response,
  end: LogoutEnd,
  partial = false,
): Promise<LogoutStep | undefined> {
  const closed = await endBrowserSession(svc, req, res);
  return throughApps(svc, req, res, closed, end, partial);
}

/** The way through the SAML apps of the sessions `closed` (this browser's, ended already): its first step, or undefined. */
export function throughApps(
  svc: SignOutServices,
  req: Request,
  res: Response,
  closed: readonly SessionRow[],
  end: LogoutEnd,
  partial = false,
): Promise<LogoutStep | undefined> {
  return startLogoutChain(svc, closed, browserId(svc, req, res), end, partial);
}

/** Gives the browser a step of the chain: a redirect to a place checked before, the signed-out page, or a refusal (no redirect). */
export function sendLogoutStep(svc: Pick<SignOutServices, 'config'>, res: Response, step: LogoutStep): void {
  if ('redirect' in step) return void res.set('Cache-Control', 'no-store').redirect(303, step.redirect);
  if ('page' in step)
    return renderPage(res, 200, messagePage(svc.config.box, words('signedOut.title'), words('signedOut.closePage'), false));
  const why = step.refused;
  const said =
    typeof why === 'object'
      ? words('samlLogout.answerRefused', { reason: why.answerRefused })
      : words(({ over: 'samlLogout.over', notAwaited: 'samlLogout.notAwaited', taken: 'samlLogout.taken' } as const)[why]);
  renderPage(res, 400, messagePage(svc.config.box, words('samlLogout.cannotGoOn'), said));
}
