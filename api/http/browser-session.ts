// The browser's side of the flows: the cookies that hold a signed-in session's token and a
// sign-in step's (what they stand for is api/people/browsers.ts's and steps.ts's), and CSRF
// tokens bound to the browser.
//
// CSRF: each browser gets a random, HttpOnly `boxauth_csrf` cookie; a form's
// token is an HMAC of it under the box's CSRF key. A forged form from another
// site can neither read the cookie nor compute the HMAC.
import type { HookCaller } from '../hooks/caller.js';
import type { PrincipalUser } from '../types.js';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from './router.js';
import { parseCookies } from '../cookies.js';
import type { BrowserSession } from '../store/browser-sessions.js';
import type { Pool } from '../db/pool.js';
import { browserSession, signOut, type BrowserFacts, type BrowserToken } from '../people/browsers.js';
import { deviceToken } from '../people/devices.js';
import type { Config } from '../config.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { SessionRow } from '../store/sessions.js';
import type { Audit } from '../audit.js';
import type { AddressOf } from './client-address.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  csrfKey: Buffer;
  deviceKey: Buffer;
  audit: Audit;
  addressOf: AddressOf;
  /** Asked at signingIn, before a sign-in is recorded (api/people/steps.ts). */
  hooks: HookCaller;
  users: RecordCache<PrincipalUser>;
}

/** What a browser's sign-in and CSRF tokens need (the address: where a sign-in came from, as the person's account page shows it). */
export type BrowserServices = Pick<
  Needs,
  'config' | 'csrfKey' | 'deviceKey' | 'pool' | 'sessions' | 'audit' | 'addressOf' | 'hooks' | 'users'
>;

/**
 * The cookies' names and path. Over https at the root of its host, they carry the
 * `__Host-` prefix (RFC 6265bis §4.1.3.2): "If a cookie's name begins with a
 * case-sensitive match for the string `__Host-`, then the cookie will have been
 * set with a `Secure` attribute, a `Path` attribute with a value of `/`, and no
 * `Domain` attribute." So a page of a sibling subdomain or an answer over plain
 * HTTP cannot plant one ("cookie tossing"); the price is `Path=/`, every path of
 * the host (and cookies ignore ports): docs/guides/guard-your-apps.md tells people
 * not to put an app on the box's host name. A box under a path shares its host
 * with other applications, and a box over http (a laptop's localhost) with every
 * server on another port of it: without the prefix (a browser refuses it there),
 * the cookies are scoped to the box's own pages, <base path>/auth, which every
 * page that reads them is under, so the others' servers are not sent them.
 */
export function cookieNames(svc: BrowserServices): { session: string; csrf: string; step: string; device: string; path: string } {
  const base = new URL(svc.config.baseUrl);
  if (base.protocol === 'https:' && base.pathname === '/')
    return {
      session: '__Host-boxauth_session',
      csrf: '__Host-boxauth_csrf',
      step: '__Host-boxauth_step',
      device: '__Host-boxauth_device',
      path: '/',
    };
  const path = `${base.pathname.replace(/\/$/, '')}/auth`;
  return { session: 'boxauth_session', csrf: 'boxauth_csrf', step: 'boxauth_step', device: 'boxauth_device', path };
}

export function cookies(req: Request): Record<string, string> {
  return parseCookies(req.headers.cookie);
}

export function cookieOptions(svc: BrowserServices, maxAgeSeconds?: number, path = cookieNames(svc).path): string {
  const secure = svc.config.baseUrl.startsWith('https:') ? '; Secure' : '';
  return `; Path=${path}; HttpOnly; SameSite=Lax${secure}${maxAgeSeconds !== undefined ? `; Max-Age=${maxAgeSeconds}` : ''}`;
}

export function appendCookie(res: Response, cookie: string): void {
  const prior = res.getHeader('Set-Cookie');
  res.setHeader('Set-Cookie', [...(Array.isArray(prior) ? prior : prior ? [String(prior)] : []), cookie]);
}

/**
 * Ends the session cookie a browser may keep from before the cookies were scoped (`Path=/`):
 * left, it would outlive a sign-out and sign the browser back in as that older session.
 */
function endUnscopedSession(svc: BrowserServices, res: Response): void {
  const { session, path } = cookieNames(svc);
  if (path !== '/') appendCookie(res, `${session}=${cookieOptions(svc, 0, '/')}`);
}

/** Where this request came from, as a sign-in records it (the person's account page shows it). */
export function browserFacts(svc: BrowserServices, req: Request): BrowserFacts {
  return { address: svc.addressOf(req), userAgent: req.get('user-agent')?.slice(0, 300) ?? null };
}

/** The token of this browser's session, and of the sign-in step it is in, as its cookies hold them. */
export function browserTokens(svc: BrowserServices, req: Request): { session: string | undefined; step: string | undefined } {
  const names = cookieNames(svc);
  const jar = cookies(req);
  return { session: jar[names.session], step: jar[names.step] };
}

/** This browser's signed-in session, if any. */
export function signedIn(svc: BrowserServices, req: Request): Promise<BrowserSession | undefined> {
  return browserSession(svc, browserTokens(svc, req).session);
}

/**
 * Hands the browser what the people floor made for it (api/people/steps.ts WentOn): a session's
 * token (signed in: a cookie until the session ends), a step's, or the end of its step.
 */
export function handOver(
  svc: BrowserServices,
  res: Response,
  tokens: { session?: BrowserToken | undefined; step?: BrowserToken | 'end' | undefined },
): void {
  const names = cookieNames(svc);
  const maxAge = (t: BrowserToken): number => Math.max(0, Math.floor((t.expiresAt.getTime() - Date.now()) / 1000));
  if (tokens.session) {
    endUnscopedSession(svc, res);
    appendCookie(res, `${names.session}=${tokens.session.token}${cookieOptions(svc, maxAge(tokens.session))}`);
  }
  if (tokens.step === 'end') appendCookie(res, `${names.step}=${cookieOptions(svc, 0)}`);
  else if (tokens.step) appendCookie(res, `${names.step}=${tokens.step.token}${cookieOptions(svc, maxAge(tokens.step))}`);
}

/**
 * Hands a browser just signed in as `userId` a device cookie naming them (api/people/devices.ts):
 * it outlives sign-outs, so that what this browser asks for them later is counted apart from strangers.
 */
export function handOverDevice(svc: BrowserServices, res: Response, userId: number): void {
  const { token, expiresAt } = deviceToken(svc.deviceKey, userId);
  const maxAge = Math.floor((expiresAt.getTime() - Date.now()) / 1000);
  appendCookie(res, `${cookieNames(svc).device}=${token}${cookieOptions(svc, maxAge)}`);
}

/** The device cookie this browser presents, if any (what it is worth is api/people/devices.ts's to say). */
export const presentedDevice = (svc: BrowserServices, req: Request): string | undefined => cookies(req)[cookieNames(svc).device];

/**
 * Signs this browser out (api/people/browsers.ts signOut: its session, what was issued through it,
 * its step, any step-up of the session), and forgets its cookies; what it closed is returned.
 */
export async function endBrowserSession(svc: BrowserServices, req: Request, res: Response): Promise<SessionRow[]> {
  const names = cookieNames(svc);
  const tokens = browserTokens(svc, req);
  endUnscopedSession(svc, res);
  appendCookie(res, `${names.session}=${cookieOptions(svc, 0)}`);
  if (tokens.step) appendCookie(res, `${names.step}=${cookieOptions(svc, 0)}`);
  return signOut(svc, tokens);
}

function csrfFor(svc: BrowserServices, browserId: string): string {
  return createHmac('sha256', svc.csrfKey).update(browserId).digest('base64url');
}

/** The id of this browser (its CSRF cookie), when it has one. */
export function presentedBrowserId(svc: BrowserServices, req: Request): string | undefined {
  const browserId = cookies(req)[cookieNames(svc).csrf];
  return browserId && /^[A-Za-z0-9_-]{43}$/.test(browserId) ? browserId : undefined;
}

/** The id of this browser, setting its CSRF cookie when it has none. */
export function browserId(svc: BrowserServices, req: Request, res: Response): string {
  let id = presentedBrowserId(svc, req);
  if (!id) {
    const name = cookieNames(svc).csrf;
    id = randomBytes(32).toString('base64url');
    appendCookie(res, `${name}=${id}${cookieOptions(svc)}`);
    // Later reads in this request see the new cookie.
    req.headers.cookie = `${req.headers.cookie ? `${req.headers.cookie}; ` : ''}${name}=${id}`;
  }
  return id;
}

/** The CSRF token for a form on this page, setting the browser's CSRF cookie when it has none. */
export function csrfToken(svc: BrowserServices, req: Request, res: Response): string {
  return csrfFor(svc, browserId(svc, req, res));
}

export function csrfValid(svc: BrowserServices, req: Request, presented: unknown): boolean {
  const browserId = cookies(req)[cookieNames(svc).csrf];
  if (!browserId || typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfFor(svc, browserId));
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
