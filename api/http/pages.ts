// Sending the box's pages for people. Every page forbids framing, runs only the
// box's own styles (no scripts at all: the admin UI's own and the passkeys script of the
// pages offering a passkey are the exceptions),
// and is never cached: it may carry a CSRF token or say who is signed in.
import { offersFirstStep } from '../people/ways/email-first-step.js';
import type { Request, Response } from './router.js';
import { accountHolder as holderOf, signedInPerson as personOf, type SignedInPerson } from '../people/browsers.js';
import { wayAccepted } from '../credentials/sign-in.js';
import { labelOf, offeredProviders } from '../people/upstream/flow.js';
import { logoSource, NO_BRANDING, type Branding } from '../branding.js';
import { PLAIN_LOOK, type Look, type Page } from '../ui/frame.js';
import { Html } from '../ui/html.js';
import { pickLanguage, words, type Text } from '../ui/language.js';
import { messagePage, signInPage } from '../ui/pages.js';
import { FAILED_MESSAGE } from '../hooks/moments.js';
import { browserTokens, csrfToken, type BrowserServices } from './browser-session.js';

/**
 * The Content-Security-Policy of the box's pages, with what a page needs beyond it (the admin UI:
 * its own script, the API). No page but the admin UI runs a script, inline or not: `script-src
 * 'none'` says so outright rather than through `default-src`. No `form-action`: browsers hold a
 * form's redirects to it too, and the sign-in and consent forms end in a redirect to the client.
 */
export function contentSecurityPolicy(more: Record<string, string> = {}): string {
  const directives: Record<string, string> = {
    'default-src': "'none'",
    'script-src': "'none'",
    'style-src': "'self'",
    'img-src': "'self'",
    'frame-ancestors': "'none'",
    'base-uri': "'none'",
    ...more,
  };
  return Object.entries(directives)
    .map(([name, value]) => `${name} ${value}`)
    .join('; ');
}

/** What every page of the box is sent with (the gRPC door sends them with a denial page too). */
export const PAGE_HEADERS = {
  'Content-Security-Policy': contentSecurityPolicy(),
  'Cache-Control': 'no-store',
};

/**
 * The headers of a page that runs the passkeys script (/assets/passkeys.js, docs/guides/passkeys.md):
 * the box's own scripts, and their calls to the box. Only the pages that offer a passkey use them.
 */
export const SCRIPT_PAGE_HEADERS = {
  ...PAGE_HEADERS,
  'Content-Security-Policy': contentSecurityPolicy({ 'script-src': "'self'", 'connect-src': "'self'" }),
};

/**
 * What a page needs beyond the others: `script`, the box's own scripts (a page offering a passkey);
 * `inlineScript`, the hash source of the one inline script it runs (the form_post page:
 * api/ui/form-post-page.ts), and no other.
 */
export interface PageNeeds {
  script?: boolean;
  inlineScript?: string;
}

/**
 * The headers of a page of a box with this branding: its logo's origin, and only it, joins
 * `img-src` (a data: logo adds `data:`), so that the page loads no other image from elsewhere.
 */
export function pageHeaders(branding: Branding, needs: PageNeeds = {}): Record<string, string> {
  const headers = needs.script ? SCRIPT_PAGE_HEADERS : PAGE_HEADERS;
  const logo = logoSource(branding);
  if (!logo && !needs.inlineScript) return headers;
  const script: Record<string, string> = needs.script
    ? { 'script-src': "'self'", 'connect-src': "'self'" }
    : needs.inlineScript
      ? { 'script-src': needs.inlineScript }
      : {};
  return { ...headers, 'Content-Security-Policy': contentSecurityPolicy({ ...script, ...(logo ? { 'img-src': `'self' ${logo}` } : {}) }) };
}

/** The box's branding, set once on the app (api/http/app.ts), for every page it renders. */
export function setBranding(app: { locals: Record<string, unknown> }, branding: Branding): void {
  app.locals.branding = branding;
}

/** How a page looks for this request: the box's branding, and the language its Accept-Language picks. */
export function lookOf(req: Pick<Request, 'headers'>, branding: Branding): Look {
  return { branding, language: pickLanguage(req.headers['accept-language']) };
}

function brandingOf(res: Response): Branding {
  const branding: unknown = (res.app as { locals?: Record<string, unknown> } | undefined)?.locals?.branding;
  return branding && typeof branding === 'object' ? (branding as Branding) : NO_BRANDING;
}

/** `headers`: what the status calls for besides (Retry-After with a 429 or a 503). */
export function renderPage(res: Response, status: number, page: Page, headers: Record<string, string> = {}, needs: PageNeeds = {}): void {
  const branding = brandingOf(res);
  const look = res.req ? lookOf(res.req, branding) : { ...PLAIN_LOOK, branding };
  res.vary('Accept-Language');
  res
    .status(status)
    .set({ ...pageHeaders(branding, needs), ...headers, 'Content-Language': look.language.tag })
    .type('html')
    .send(page(look));
}

export type { SignedInPerson } from '../people/browsers.js';

/** The signed-in person of this browser, if any (api/people/browsers.ts signedInPerson). */
export const signedInPerson = (svc: BrowserServices, req: Request): Promise<SignedInPerson | undefined> =>
  personOf(svc, browserTokens(svc, req).session);

/** The signed-in person of this browser who may see and change their own account (api/people/browsers.ts accountHolder). */
export const accountHolder = (svc: BrowserServices, req: Request): Promise<SignedInPerson | undefined> =>
  holderOf(svc, browserTokens(svc, req).session);

/** What the sign-in page shows besides its form: an email filled in, an error. */
export interface SignInShown {
  email?: string;
  error?: Text;
  notice?: Text;
}

/** The ways of signing in the client accepts (Client.identityProviders; unset: every way), and the class asked for. */
export interface SignInWays {
  accepted?: readonly string[] | undefined;
  acr?: string | undefined;
}

/**
 * The sign-in page, coming back to `returnTo`: the box's own form where the client accepts it,
 * and a button per IdentityProvider it accepts.
 */
export async function signInForm(
  svc: BrowserServices,
  req: Request,
  res: Response,
  status: number,
  returnTo: string,
  shown: SignInShown = {},
  ways: SignInWays = {},
): Promise<void> {
  const providers = await offeredProviders(svc.pool, ways.accepted);
  const page = signInPage({
    box: svc.config.box,
    csrf: csrfToken(svc, req, res),
    returnTo,
    registration: svc.config.registration,
    providers: providers.map((p) => ({ id: p.id, label: labelOf(p), directory: p.type === 'ldap' })),
    own: wayAccepted(ways.accepted, null),
    usernames: providers.some((p) => p.ldap?.passwordForm === true),
    emailCodes: offersFirstStep(svc.config),
    ...(ways.acr ? { acr: ways.acr } : {}),
    ...shown,
  });
  // The passkeys script: the browser's autofill of passkeys on the email field, and the passkey button.
  renderPage(res, status, page, {}, { script: true });
}

/** A form that did not come from this browser's page (its CSRF token), or is too old. */
export function invalidForm(svc: BrowserServices, res: Response): void {
  renderPage(res, 403, messagePage(svc.config.box, words('form.expired'), words('form.expiredMessage')));
}

/**
 * A Hook's refusal as a page shows it: words a third party chose, so quoted and said to come from
 * the organisation's check (never as the box's own), escaped as every value of the catalogue is,
 * and no longer than an answer may carry them (api/hooks/moments.ts, 512 characters). A failed call
 * of a Hook whose failurePolicy is Fail is the box's own words (FAILED_MESSAGE): said as they are.
 */
export const hookWords = (message: string): Text => (message === FAILED_MESSAGE ? words('hook.failed') : words('hook.said', { message }));

/**
 * Text as plain text in the request's language, for a script that shows it as text (the passkey
 * button's, textContent): nothing escaped, since the script never reads it as HTML. The language
 * is the page's (lookOf): the script's calls carry the browser's Accept-Language as the page did.
 */
export function plainText(req: Pick<Request, 'headers'>, text: Text): string {
  if ('shown' in text) return text.shown;
  const { messages } = pickLanguage(req.headers['accept-language']);
  const values = text.values ?? {};
  return messages[text.key].replace(/\{([a-zA-Z][a-zA-Z0-9]*)\}/g, (whole, name: string) => {
    if (!Object.hasOwn(values, name)) return whole;
    const value = values[name]!;
    return value instanceof Html ? value.text : typeof value === 'object' ? plainText(req, value) : String(value);
  });
}
