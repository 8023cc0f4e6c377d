// Sending the box's pages for people. Every page forbids framing, runs only the
// box's own styles (no scripts at all), and is never cached: it may carry a CSRF
// token or say who is signed in.
import type { Request, Response } from 'express';
import type { UserRow } from '../store/users.js';
import { getUser } from '../store/users.js';
import type { BrowserSession } from '../store/browser.js';
import type { Services } from '../services.js';
import { signedIn } from './browser-session.js';

const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Cache-Control': 'no-store',
};

/** `headers`: what the status calls for besides (Retry-After with a 429 or a 503). */
export function renderPage(res: Response, status: number, html: string, headers: Record<string, string> = {}): void {
  res
    .status(status)
    .set({ ...PAGE_HEADERS, ...headers })
    .type('html')
    .send(html);
}

/** The signed-in person of this browser, if any (and if they still exist). */
export async function signedInPerson(svc: Services, req: Request): Promise<{ user: UserRow; browser: BrowserSession } | undefined> {
  const browser = await signedIn(svc, req);
  const user = browser && (await getUser(svc.pool, browser.userId));
  return user && browser && { user, browser };
}
