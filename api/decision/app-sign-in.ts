// People in browsers at an app: without a session the gate sends them to
// <app url>/.boxauth/start, which the gateway routes to the box; from there to the
// box's sign-in (the authorization code flow of the App's signIn client, with PKCE
// and RFC 8707's resource = the app's audience) and back to <app url>/.boxauth/callback,
// which sets the app's own cookie (for the app's host only) and returns to the
// page they asked for. Signing out of the box closes that session (it carries the
// browser's sid), and the gate refuses the cookie from then on.
//
// CSRF and login fixation: `state` is HMAC'd under the box's CSRF key and names a
// nonce whose cookie only the browser that started the flow holds; the PKCE
// verifier is derived from that nonce. Signing out of an app is a POST carrying a
// token derived from the app's cookie (signOutToken): another site can neither make
// a browser sign out with a link nor forge the form. Open redirects: the way back is a path of
// the app's own origin (`/…`, never `//…`).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { App } from '../types.js';

const STATE_SECONDS = 600;

export const START_PATH = '/.boxauth/start';
export const CALLBACK_PATH = '/.boxauth/callback';
export const SIGN_OUT_PATH = '/.boxauth/sign-out';

/** The attributes of the app's cookies: for the app's host only, never sent cross-site, Secure over https. */
export function appCookieAttributes(https: boolean, maxAge?: number): string {
  return `; Path=/; HttpOnly; SameSite=Lax${https ? '; Secure' : ''}${maxAge !== undefined ? `; Max-Age=${maxAge}` : ''}`;
}

/** Where the gate may send a person back to: a path of the app's origin. */
export function safeReturnPath(rd: unknown): string {
  return typeof rd === 'string' && rd.startsWith('/') && !rd.startsWith('//') && !rd.startsWith('/\\') && rd.length <= 2048 ? rd : '/';
}

const hmac = (key: Buffer, ...parts: string[]): Buffer => createHmac('sha256', key).update(JSON.stringify(parts)).digest();
const b64 = (b: Buffer): string => b.toString('base64url');

/** The PKCE verifier of a flow, from its nonce (only the browser that started it holds the nonce). */
export const verifierOf = (key: Buffer, nonce: string): string => b64(hmac(key, 'app-pkce', nonce));

export interface StartedFlow {
  nonce: string;
  state: string;
  verifier: string;
}

/** A new flow for `app` coming back to `rd`. */
export function startFlow(key: Buffer, app: App, rd: string, now = Date.now()): StartedFlow {
  const nonce = b64(randomBytes(32));
  const body = b64(
    Buffer.from(JSON.stringify({ a: app.id, rd, n: b64(hmac(key, 'nonce', nonce)), exp: Math.floor(now / 1000) + STATE_SECONDS })),
  );
  return { nonce, state: `${body}.${b64(hmac(key, 'app-state', body))}`, verifier: verifierOf(key, nonce) };
}

/** The way back of a flow, when `state` is this box's, for `app`, unexpired, and `nonce` (the cookie) is its own. */
export function finishFlow(key: Buffer, app: App, state: unknown, nonce: string | undefined, now = Date.now()): { rd: string } | undefined {
  if (typeof state !== 'string' || !nonce) return undefined;
  const [body, mac] = state.split('.');
  if (!body || !mac) return undefined;
  const expected = hmac(key, 'app-state', body);
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: { a?: unknown; rd?: unknown; n?: unknown; exp?: unknown };
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return undefined;
  }
  if (claims.a !== app.id || typeof claims.exp !== 'number' || claims.exp * 1000 < now) return undefined;
  const n = Buffer.from(String(claims.n), 'base64url');
  const mine = hmac(key, 'nonce', nonce);
  if (n.length !== mine.length || !timingSafeEqual(n, mine)) return undefined;
  return { rd: safeReturnPath(claims.rd) };
}

/** The sign-out form's token for the app's cookie: only a page that read the cookie's holder can post it. */
export const signOutToken = (key: Buffer, app: App, cookie: string): string => b64(hmac(key, 'app-sign-out', app.id, cookie));

export function isSignOutToken(key: Buffer, app: App, cookie: string | undefined, token: unknown): boolean {
  if (cookie === undefined || typeof token !== 'string') return false;
  const expected = hmac(key, 'app-sign-out', app.id, cookie);
  const given = Buffer.from(token, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
