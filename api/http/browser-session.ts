// The browser's side of the flows: the signed-in cookie (a random token whose
// SHA-256 is the browser_sessions key) and CSRF tokens bound to the browser.
//
// CSRF: each browser gets a random, HttpOnly `boxauth_csrf` cookie; a form's
// token is an HMAC of it under the box's CSRF key. A forged form from another
// site can neither read the cookie nor compute the HMAC.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { parseCookies } from '../cookies.js';
import {
  createBrowserSession,
  deleteBrowserSession,
  endForStepUp,
  findBrowserSession,
  type BrowserSession,
  type NewBrowserSession,
} from '../store/browser.js';
import { deleteSignInStepsReplacing, takeSignInStep } from '../store/factors.js';
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import { endBrowsersGrants } from '../credentials/closing.js';
import { tokenHash } from '../credentials/tokens.js';
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
  audit: Audit;
  addressOf: AddressOf;
}

/** What a browser's sign-in and CSRF tokens need (the address: where a sign-in came from, as the person's account page shows it). */
export type BrowserServices = Pick<Needs, 'config' | 'csrfKey' | 'pool' | 'sessions' | 'audit' | 'addressOf'>;

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
export function cookieNames(svc: BrowserServices): { session: string; csrf: string; step: string; path: string } {
  const base = new URL(svc.config.baseUrl);
  if (base.protocol === 'https:' && base.pathname === '/')
    return { session: '__Host-boxauth_session', csrf: '__Host-boxauth_csrf', step: '__Host-boxauth_step', path: '/' };
  return { session: 'boxauth_session', csrf: 'boxauth_csrf', step: 'boxauth_step', path: `${base.pathname.replace(/\/$/, '')}/auth` };
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

/** This browser's signed-in session, if any. */
export async function signedIn(svc: BrowserServices, req: Request): Promise<BrowserSession | undefined> {
  const token = cookies(req)[cookieNames(svc).session];
  if (!token) return undefined;
  return findBrowserSession(svc.pool, tokenHash(token));
}

/**
 * Signs this browser in as `userId`, with what the sign-in proved (`amr`): a new session, its
 * sign-in time and its last proof now. In `tx`, under the person's row (api/http/sign-in-steps.ts
 * holds it): a change of their credentials racing it ends it too. `enrolled`: a factor of `amr`
 * was enrolled in the sign-in rather than given, so the session is not `proven` (it stands for no
 * password: one signed in at an upstream provider, its second factor an app it just added, knows
 * none of the box's).
 */
export async function signIn(
  svc: BrowserServices,
  tx: Transaction,
  res: Response,
  userId: number,
  amr: readonly string[],
  provider: string | null,
  enrolled: boolean,
): Promise<void> {
  // The process's clock, as every time the box compares with it (an expiry, a proof's age).
  const now = new Date();
  const expiresAt = new Date(now.getTime() + svc.config.browserSessionHours * 3600_000);
  await startBrowserSession(svc, tx, res, { userId, amr, provider, proven: !enrolled, authTime: now, proofAt: now, expiresAt });
}

/**
 * What a session continued in another proved since: its last proof (a factor given in a step-up
 * renews it; `kept`: the session's own), and whether a factor was enrolled in it (on the person's
 * own page, or by a step-up that enrols) rather than given: an enrolment proves nothing of who
 * holds the browser, so the session is no longer `proven`. Neither is a sign-in: the session's
 * sign-in time and its end stay (docs/security.md#what-a-sign-in-proves).
 */
export interface ProvenSince {
  proofAt: Date | 'kept';
  enrolled: boolean;
}

/**
 * Strengthens this browser's session `sid` with what was just proven or enrolled in it (`amr`):
 * a new cookie, the same sid, so that what was issued through it stays tied to it and one
 * sign-out still ends everything. False, and nobody signed in, when the session ended meanwhile
 * (a sign-out, a password change or a reset that won the race, its end come): a change made from
 * a session never outlives the session's end.
 */
export async function strengthen(
  svc: BrowserServices,
  tx: Transaction,
  res: Response,
  amr: readonly string[],
  session: Pick<BrowserSession, 'userId' | 'sid' | 'provider'>,
  since: ProvenSince,
): Promise<boolean> {
  const kept = await endForStepUp(tx, session.sid, session.userId);
  if (!kept) return false;
  await startBrowserSession(svc, tx, res, {
    userId: session.userId,
    amr,
    provider: session.provider,
    sid: session.sid,
    authTime: kept.authTime,
    expiresAt: kept.expiresAt,
    proofAt: since.proofAt === 'kept' ? kept.proofAt : since.proofAt,
    proven: kept.proven && !since.enrolled,
  });
  return true;
}

/**
 * Thrown in the transaction of a change made for a browser session when strengthen finds that
 * session ended meanwhile: the change (a factor enrolled in it) rolls back with it.
 */
export class EndedMeanwhile extends Error {}

/**
 * Signs this browser in again as what its ended session had proven (a person who changed their
 * password stays signed in where they did it): a new session and sid, with the ended one's
 * sign-in time, last proof and end; not itself a sign-in, so not `proven` (what stands for a
 * password is a sign-in, never its continuation).
 */
export async function continueSignIn(
  svc: BrowserServices,
  tx: Transaction,
  res: Response,
  ended: Pick<BrowserSession, 'userId' | 'amr' | 'provider' | 'authTime' | 'proofAt' | 'expiresAt'>,
): Promise<void> {
  const { userId, amr, provider, authTime, proofAt, expiresAt } = ended;
  await startBrowserSession(svc, tx, res, { userId, amr, provider, authTime, proofAt, expiresAt, proven: false });
}

async function startBrowserSession(
  svc: BrowserServices,
  tx: Transaction,
  res: Response,
  session: Omit<NewBrowserSession, 'from'>,
): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  const from = { address: svc.addressOf(res.req), userAgent: res.req.get('user-agent')?.slice(0, 300) ?? null };
  await createBrowserSession(tx, tokenHash(token), { ...session, from });
  endUnscopedSession(svc, res);
  const seconds = Math.max(0, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000));
  appendCookie(res, `${cookieNames(svc).session}=${token}${cookieOptions(svc, seconds)}`);
}

/**
 * Signs this browser out: its session ends, and so do the token sessions issued
 * through it (they carry its sid) and its codes not yet exchanged, as a person
 * signing out expects of the apps they signed in to with it. So does a sign-in step
 * the browser is in the middle of, and any step-up of the session: left, the next
 * person at this browser could finish it (enrol a factor of their own) and be signed
 * in as the one who signed out.
 */
export async function endBrowserSession(svc: BrowserServices, req: Request, res: Response): Promise<void> {
  const names = cookieNames(svc);
  const token = cookies(req)[names.session];
  const step = cookies(req)[names.step];
  endUnscopedSession(svc, res);
  appendCookie(res, `${names.session}=${cookieOptions(svc, 0)}`);
  if (step) appendCookie(res, `${names.step}=${cookieOptions(svc, 0)}`);
  if (!token && !step) return;
  await withTransaction(svc.pool, async (tx) => {
    if (step) await takeSignInStep(tx, tokenHash(step));
    const ended = token && (await deleteBrowserSession(tx, tokenHash(token)));
    if (!ended) return;
    await deleteSignInStepsReplacing(tx, ended.sid);
    await endBrowsersGrants(svc, tx, ended.sid, { how: 'logout', by: { user: String(ended.userId) } });
  });
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
