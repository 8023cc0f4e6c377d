// prompt=login and max_age ask for a sign-in made for the request (OpenID Connect
// Core §3.1.2.1: prompt=login means "the Authorization Server SHOULD prompt the
// End-User for reauthentication"; max_age, that "the End-User [be] actively
// re-authenticated" when the last sign-in is older). The sign-in page's way back to
// /auth/authorize keeps them, with a marker, `sign_in_after`: which sign-in this browser
// held when the request was first seen here (or none), bound by an HMAC under the box's
// CSRF key to the request's parameters and to this browser's CSRF cookie. A request
// carrying it is satisfied by any other sign-in of this browser: one made after the
// request began. A sign-in is its person and its auth_time, not its session: a step-up, a
// factor enrolled or a password changed continues a session (even under a new sid) and
// keeps its auth_time, so it is no sign-in made for the request. Opening the way back
// without signing in, or in another browser, or with the marker of another request,
// proves nothing.
//
// No clocks are compared: a sign-in's auth_time is only compared with itself, and a
// marker's age (it lives an hour) is the process's.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from './router.js';
import { AUTHORIZE_PARAMS, SIGN_IN_AFTER, type AuthorizationRequest } from '../oauth/authorization-request.js';
import type { BrowserSession } from '../store/browser-sessions.js';
import { browserId, presentedBrowserId, type BrowserServices } from './browser-session.js';

/** What the sign-in marker needs (the CSRF key, the browser id). */
export type FreshSignInServices = BrowserServices;

/** A sign-in page left open longer than this asks again after the sign-in (the marker is too old to count). */
const MARKER_SECONDS = 3600;

function hmac(svc: FreshSignInServices, parts: unknown[]): string {
  return createHmac('sha256', svc.csrfKey)
    .update(JSON.stringify([SIGN_IN_AFTER, ...parts]))
    .digest('base64url');
}

const sessionTag = (svc: FreshSignInServices, browser: BrowserSession | undefined): string =>
  hmac(svc, ['sign-in', browser ? [browser.userId, browser.authTime.toISOString()] : '']).slice(0, 22);

/** The request's own parameters, in one order, without the marker. */
const signedParams = (params: Record<string, string>): (string | null)[] =>
  AUTHORIZE_PARAMS.filter((p) => p !== SIGN_IN_AFTER).map((p) => params[p] ?? null);

const mac = (svc: FreshSignInServices, id: string, issuedAt: string, tag: string, params: Record<string, string>): string =>
  // 'sign-in-2': markers of the release that tagged sessions by sid do not verify (they would name "another" sign-in).
  hmac(svc, ['sign-in-2', id, issuedAt, tag, signedParams(params)]);

/** The marker for the way back from the sign-in page: the request, this browser, and its session now (`browser`, if signed in). */
export function signInMarker(
  svc: FreshSignInServices,
  req: Request,
  res: Response,
  request: AuthorizationRequest,
  browser: BrowserSession | undefined,
): string {
  const issuedAt = String(Math.floor(Date.now() / 1000));
  const tag = sessionTag(svc, browser);
  return `${issuedAt}.${tag}.${mac(svc, browserId(svc, req, res), issuedAt, tag, request.params)}`;
}

/** Whether `browser` signed in after the request was first seen in this browser: its marker is valid and names another sign-in. */
export function signedInAfterRequest(
  svc: FreshSignInServices,
  req: Request,
  request: AuthorizationRequest,
  browser: BrowserSession,
): boolean {
  const [, issuedAt, tag, presented] = /^(\d{1,12})\.([\w-]{22})\.([\w-]{43})$/.exec(request.params[SIGN_IN_AFTER] ?? '') ?? [];
  const id = presentedBrowserId(svc, req);
  if (!id || !issuedAt || !tag || !presented || Date.now() / 1000 - Number(issuedAt) > MARKER_SECONDS) return false;
  const expected = Buffer.from(mac(svc, id, issuedAt, tag, request.params));
  if (!timingSafeEqual(expected, Buffer.from(presented))) return false;
  return tag !== sessionTag(svc, browser);
}
