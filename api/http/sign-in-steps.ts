// The door of a sign-in in steps (api/people/steps.ts decides): where each step's page is, and
// how the way on is carried out — the cookies the people floor made (a session's token, a step's,
// or the end of a step) handed to the browser, and a 303 to the page or the target.
import type { Request, Response } from './router.js';
import type { SignedInPerson } from '../people/browsers.js';
import { proceed, stepUpOf, type Next, type SignInAgainReason, type StepServices, type StepTarget, type WentOn } from '../people/steps.js';
import { browserFacts, browserTokens, handOver, handOverDevice, type BrowserServices } from './browser-session.js';

export { acrParam, type StepTarget } from '../people/steps.js';

/** Where each step is answered. */
export const STEP_PAGES = { 'second-factor': '/auth/sign-in/second-factor', enrol: '/auth/sign-in/enrol' } as const;

/** A step's page, carrying the way on. */
export function pageOf(page: keyof typeof STEP_PAGES, target: StepTarget): string {
  const query = new URLSearchParams({ return_to: target.returnTo, ...(target.acr ? { acr: target.acr } : {}) });
  return `${STEP_PAGES[page]}?${query}`;
}

/** The sign-in page, again (saying why, when there is something to say: `enrol`), coming back to the target. */
export function signInAgain(target: StepTarget, reason?: SignInAgainReason): string {
  return `/auth/sign-in?${new URLSearchParams({ return_to: target.returnTo, ...(reason ? { reason } : {}) })}`;
}

/** The page `next` names. */
export function whereNext(next: Next, target: StepTarget): string {
  switch (next.to) {
    case 'target':
      return target.returnTo;
    case 'second-factor':
    case 'enrol':
      return pageOf(next.to, target);
    case 'sign-in':
      return signInAgain(target, next.reason);
  }
}

/** Carries out the way on: the browser's cookies, then a 303 to where it goes. */
export function goOn(svc: BrowserServices, res: Response, went: WentOn, target: StepTarget): void {
  handOver(svc, res, went);
  if (went.signedIn !== undefined) handOverDevice(svc, res, went.signedIn);
  res.redirect(303, whereNext(went.next, target));
}

/** The token of this browser's sign-in step, if it has one. */
export const stepToken = (svc: BrowserServices, req: Request): string | undefined => browserTokens(svc, req).step;

/** A step-up of this browser's sign-in (a class it lacks is asked): a new sign-in with the missing factor, from what it proved. */
export async function stepUp(
  svc: BrowserServices & StepServices,
  req: Request,
  res: Response,
  person: SignedInPerson,
  target: StepTarget,
): Promise<void> {
  goOn(svc, res, await proceed(svc, browserFacts(svc, req), stepUpOf(person), target), target);
}
