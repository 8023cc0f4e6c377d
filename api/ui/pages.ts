// The server-rendered pages of the browser flows. Every field has a visible
// label, buttons say what they do, and errors are text next to what they
// concern, in role="alert".
import { scopesOf } from '../credentials/scopes.js';
import { field, fieldError, hidden, page, passkeyButton, type Page } from './frame.js';
import { chosen, html, type Html } from './html.js';
import { saidErrors, textOf, type FieldErrors, type Say, type Text } from './language.js';
import { upstreamButtons, type OfferedProvider } from './upstream-pages.js';

export interface SignInPage {
  box: string;
  csrf: string;
  returnTo: string;
  email?: string;
  error?: Text;
  /** Why the person is asked to sign in (again), when there is something to say. */
  notice?: Text;
  registration: boolean;
  /** The IdentityProviders offered, a button each (api/ui/upstream-pages.ts). */
  providers: readonly OfferedProvider[];
  /** The box's own sign-in (a password, a passkey) is offered: the client accepts it. */
  own: boolean;
  /** The password form checks a directory too (ldap.passwordForm): it takes a username as well as an email. */
  usernames: boolean;
  acr?: string;
  /** "Email me a sign-in code" is offered beside the password (BOXAUTH_SMTP_SIGN_IN_CODES=first-step). */
  emailCodes?: boolean;
}

export function signInPage(p: SignInPage): Page {
  // The class asked for travels with the password, so that its steps ask for it at once (a passkey, say).
  const own = (say: Say): Html => html`<form method="post" action="/auth/sign-in">
${hidden({ csrf: p.csrf, return_to: p.returnTo, acr: p.acr })}
${p.usernames ? field('email', say('signIn.emailOrUsername'), 'text', p.email ?? '', {}, 'username webauthn') : field('email', say('field.email'), 'email', p.email ?? '', {}, 'username webauthn')}
${field('password', say('field.password'), 'password', '', {}, 'current-password')}
<button type="submit">${say('signIn.submit')}</button>
${p.emailCodes ? html`<button type="submit" name="send" value="email-code" class="secondary" formnovalidate>${say('signIn.emailCode')}</button>` : ''}
</form>
${passkeyButton(say, 'sign-in-passkey', say('signIn.passkey'), 'authenticate')}
<p><a href="/auth/reset">${say('signIn.forgot')}</a></p>
${p.registration ? html`<p>${say('signIn.newHere', { link: html`<a href="/auth/sign-up?return_to=${encodeURIComponent(p.returnTo)}">${say('signUp.title')}</a>` })}</p>` : ''}`;
  return page((say) => ({
    title: say('signIn.title'),
    box: p.box,
    body: html`<h1>${say('signIn.title')}</h1>
${p.notice ? html`<p class="notice" role="status">${textOf(say, p.notice)}</p>` : ''}
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
${p.own ? own(say) : ''}
${upstreamButtons(say, p.providers, p.csrf, p.returnTo, p.acr)}`,
  }));
}

export interface FirstStepCodePage {
  box: string;
  csrf: string;
  returnTo: string;
  acr?: string | undefined;
  /** The address typed on the sign-in page (the code, if any, went there). */
  email: string;
  error?: Text;
}

/** A code by email instead of a password: the same page whoever the address is (api/people/ways/email-first-step.ts). */
export function firstStepCodePage(p: FirstStepCodePage): Page {
  return page((say) => ({
    title: say('signIn.title'),
    box: p.box,
    body: html`<h1>${say('signIn.codeHeading')}</h1>
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
<p role="status">${say('signIn.codeSent', { email: p.email })}</p>
<form method="post" action="/auth/sign-in/email-code">
${hidden({ csrf: p.csrf, return_to: p.returnTo, acr: p.acr, email: p.email })}
${field('email_code', say('email.code'), 'text', '', {}, 'one-time-code')}
<button type="submit">${say('signIn.submit')}</button>
</form>
<p><a href="/auth/sign-in?return_to=${encodeURIComponent(p.returnTo)}">${say('signIn.codeBack')}</a></p>`,
  }));
}

export interface SignUpPage {
  box: string;
  csrf: string;
  returnTo: string;
  email?: string;
  errors?: FieldErrors;
  /** Why the form was not taken at all (throttled, busy). */
  error?: Text;
}

export function signUpPage(p: SignUpPage): Page {
  const other = (say: Say): (Html | string)[] => [
    ...(p.error ? [textOf(say, p.error)] : []),
    ...Object.entries(saidErrors(say, p.errors))
      .filter(([f]) => f !== 'email' && f !== 'password')
      .flatMap(([, m]) => m),
  ];
  return page((say) => ({
    title: say('signUp.title'),
    box: p.box,
    body: html`<h1>${say('signUp.title')}</h1>
${other(say).length ? html`<p class="error" role="alert">${other(say).map((m, i) => html`${i ? ' ' : ''}${m}`)}</p>` : ''}
<form method="post" action="/auth/sign-up">
${hidden({ csrf: p.csrf, return_to: p.returnTo })}
${field('email', say('field.email'), 'email', p.email ?? '', saidErrors(say, p.errors), 'username')}
${field('password', say('field.password'), 'password', '', saidErrors(say, p.errors), 'new-password')}
<button type="submit">${say('signUp.title')}</button>
</form>
<p>${say('signUp.haveAccount', { link: html`<a href="/auth/sign-in?return_to=${encodeURIComponent(p.returnTo)}">${say('signIn.title')}</a>` })}</p>`,
  }));
}

/** What a person is asked to allow, in words; the scope's own name stays beside it. */
const SCOPE_WORDS = {
  openid: 'scope.openid',
  email: 'scope.email',
  profile: 'scope.profile',
  address: 'scope.address',
  phone: 'scope.phone',
  groups: 'scope.groups',
} as const;

function scopeList(say: Say, scopes: string[]): Html {
  return html`<ul class="scopes">${scopes.map(
    (s) =>
      html`<li>${Object.hasOwn(SCOPE_WORDS, s) ? html`${say(SCOPE_WORDS[s as keyof typeof SCOPE_WORDS])} <code>${s}</code>` : html`<code>${s}</code>`}</li>`,
  )}</ul>`;
}

/** A resource (RFC 8707) a request asks for: its URI, and the App whose audience it is, when it is one. */
export interface ConsentResource {
  uri: string;
  app?: { name: string; description?: string | undefined };
}

/** Where the tokens will be used: each App by its name and description, any other resource by its URI. */
function resourceList(resources: readonly ConsentResource[]): Html {
  return html`<ul class="resources">${resources.map((r) =>
    r.app
      ? html`<li><strong>${chosen(r.app.name)}</strong>${r.app.description ? html` — ${chosen(r.app.description)}` : ''} <code>${r.uri}</code></li>`
      : html`<li><code>${r.uri}</code></li>`,
  )}</ul>`;
}

export interface ConsentPage {
  box: string;
  csrf: string;
  clientId: string;
  clientDescription?: string;
  /** An agent's client (a Client ID Metadata Document's, a dynamic registration's): what the person is told of it. */
  agent?: { kind: 'metadata-document' | 'dynamic'; name: string | undefined; host: string };
  scope?: string;
  /** The resources (RFC 8707) the tokens will be for; none: the request named none. */
  resources?: readonly ConsentResource[];
  email: string;
  params: Record<string, string | undefined>;
  /** Where the form posts (default /auth/consent; a SAML app's: /auth/saml/consent). */
  action?: string;
}

export function consentPage(p: ConsentPage): Page {
  const scopes = scopesOf(p.scope);
  return page((say) => ({
    title: say('consent.title'),
    box: p.box,
    body: html`<h1>${say('consent.heading', { client: html`<strong>${chosen(p.clientId)}</strong>` })}</h1>
${p.agent ? agentLine(say, p.clientId, p.agent) : p.clientDescription ? html`<p>${chosen(p.clientDescription)}</p>` : ''}
<p>${say('common.signedInAs', { email: html`<strong>${p.email}</strong>` })}</p>
${scopes.length ? html`<p>${say('consent.asksFor')}</p>${scopeList(say, scopes)}` : html`<p>${say('consent.noScope')}</p>`}
${p.resources?.length ? html`<p>${say('consent.forResources')}</p>${resourceList(p.resources)}` : ''}
<form method="post" action="${p.action ?? '/auth/consent'}" class="actions">
${hidden({ csrf: p.csrf, ...p.params })}
<button type="submit" name="decision" value="allow">${say('consent.allow')}</button>
<button type="submit" name="decision" value="deny" class="secondary">${say('consent.deny')}</button>
</form>`,
  }));
}

/**
 * Who an agent is, as far as the box knows: the name it gave itself, and who vouches for it.
 * Draft-ietf-oauth-client-id-metadata-document §8.5: "The authorization server SHOULD display the
 * hostname of the client_id on the authorization interface, in addition to displaying the fetched
 * client information if any."
 */
function agentLine(say: Say, clientId: string, agent: NonNullable<ConsentPage['agent']>): Html {
  const name = html`<strong>${agent.name ? chosen(agent.name) : say('consent.unnamedAgent')}</strong>`;
  const host = html`<strong>${chosen(agent.host)}</strong>`;
  return html`<p id="agent">${
    agent.kind === 'metadata-document'
      ? say('consent.agentDocument', { name, url: html`<code>${chosen(clientId)}</code>`, host })
      : say('consent.agentDynamic', { name, host })
  }</p>`;
}

/** A way on from a page that ends something (an error, a refusal): where the person can go next. */
export interface WayOn {
  href: string;
  label: Text;
}

/** Sign in again, coming back to `returnTo` when it is known. */
export const signInAgain = (returnTo?: string): WayOn => ({
  href: returnTo ? `/auth/sign-in?${new URLSearchParams({ return_to: returnTo }).toString()}` : '/auth/sign-in',
  label: { key: 'wayOn.signIn' },
});

/** A page that says one thing: `title`, `message` (an alert unless `alert` is false) and the ways on from it. */
export function messagePage(box: string, title: Text, message: Text, alert = true, next: readonly WayOn[] = []): Page {
  return page((say) => ({
    title: textOf(say, title),
    box,
    body: html`<h1>${textOf(say, title)}</h1><p ${alert ? html`class="notice" role="alert"` : ''}>${textOf(say, message)}</p>
${next.length ? html`<ul class="way-on">${next.map((w) => html`<li><a href="${w.href}">${textOf(say, w.label)}</a></li>`)}</ul>` : ''}`,
  }));
}

/** What a person finds at the box's root: where to go from here. */
export function homePage(box: string, baseUrl: string): Page {
  return page((say) => ({
    title: 'boxauth',
    box,
    body: html`<h1>${say('home.heading', { box })}</h1>
<p>${say('home.what', { token: html`<code>${baseUrl}/auth/token</code>` })}</p>
<ul>
<li>${say('home.admin', { link: html`<a href="/admin">${say('home.adminLink')}</a>` })}</li>
<li><a href="/auth/signed-in">${say('home.whoAmI')}</a></li>
<li>${say('home.discovery', { discovery: html`<a href="/.well-known/openid-configuration">${say('home.discoveryLink')}</a>`, api: html`<a href="/openapi.json">${say('home.apiLink')}</a>` })}</li>
</ul>`,
  }));
}

export function signOutPage(box: string, csrf: string, returnTo: string, email: string | undefined): Page {
  return page((say) => ({
    title: say('signOut.title'),
    box,
    body: email
      ? html`<h1>${say('signOut.title')}</h1><p>${say('common.signedInAs', { email: html`<strong>${email}</strong>` })}</p>
<form method="post" action="/auth/sign-out">${hidden({ csrf, return_to: returnTo })}<button type="submit">${say('signOut.title')}</button></form>`
      : html`<h1>${say('signedOut.title')}</h1><p role="status">${say('signedOut.message')}</p>`,
  }));
}

/** Signing out of one app: a form, so that a link from elsewhere signs nobody out. */
export function appSignOutPage(box: string, app: string, csrf: string | undefined): Page {
  return page((say) => ({
    title: say('signOut.title'),
    box,
    body: csrf
      ? html`<h1>${say('appSignOut.heading', { app: chosen(app) })}</h1>
<form method="post" action="/.boxauth/sign-out">${hidden({ csrf })}<button type="submit">${say('signOut.title')}</button></form>`
      : html`<h1>${say('signedOut.title')}</h1><p role="status">${say('appSignOut.notSignedIn', { app: chosen(app) })}</p>`,
  }));
}

export interface LogoutPage {
  box: string;
  csrf: string;
  /** Who this browser is signed in as; undefined when it is not. */
  email: string | undefined;
  /** The logout request's parameters, carried through the form. */
  params: Record<string, string | undefined>;
}

/** RP-initiated logout without proof that the application holds this browser's session: the person decides. */
export function logoutPage(p: LogoutPage): Page {
  return page((say) => ({
    title: say('signOut.title'),
    box: p.box,
    body: html`<h1>${say('logout.heading')}</h1>
<p>${say('logout.asks')}
${p.email ? say('logout.signedInAs', { email: html`<strong>${p.email}</strong>` }) : say('logout.notSignedIn')}</p>
<form method="post" action="/auth/logout" class="actions">
${hidden({ csrf: p.csrf, ...p.params })}
<button type="submit">${say('signOut.title')}</button>
</form>`,
  }));
}

export interface DeviceCodePage {
  box: string;
  code?: string;
  error?: Text;
}

/** Where a person types the code their device shows (a GET form: nothing changes until they allow). */
export function deviceCodePage(p: DeviceCodePage): Page {
  return page((say) => ({
    title: say('device.title'),
    box: p.box,
    body: html`<h1>${say('device.title')}</h1>
<p>${say('device.enterCode')}</p>
<form method="get" action="/auth/device/verify">
<div class="field">
<label for="user_code">${say('device.code')}</label>
<input id="user_code" name="user_code" type="text" value="${p.code ?? ''}" autocomplete="off" autocapitalize="characters" required
  ${p.error ? html`aria-invalid="true" aria-describedby="user_code-error"` : ''}>
${fieldError('user_code', p.error ? [String(textOf(say, p.error))] : undefined)}
</div>
<button type="submit">${say('common.continue')}</button>
</form>`,
  }));
}

export interface DeviceConsentPage {
  box: string;
  csrf: string;
  code: string;
  clientId: string;
  clientDescription?: string;
  scope?: string;
  email: string;
}

/** The device's request, for the person to allow or deny: who asks, for what, and the code to compare. */
export function deviceConsentPage(p: DeviceConsentPage): Page {
  const scopes = scopesOf(p.scope);
  return page((say) => ({
    title: say('deviceConsent.title'),
    box: p.box,
    body: html`<h1>${say('deviceConsent.heading', { client: html`<strong>${chosen(p.clientId)}</strong>` })}</h1>
${p.clientDescription ? html`<p>${chosen(p.clientDescription)}</p>` : ''}
<p>${say('deviceConsent.check', { code: html`<strong class="code">${p.code}</strong>` })}</p>
<p>${say('common.signedInAs', { email: html`<strong>${p.email}</strong>` })}</p>
${scopes.length ? html`<p>${say('consent.asksFor')}</p>${scopeList(say, scopes)}` : ''}
<form method="post" action="/auth/device/verify" class="actions">
${hidden({ csrf: p.csrf, user_code: p.code })}
<button type="submit" name="decision" value="allow">${say('consent.allow')}</button>
<button type="submit" name="decision" value="deny" class="secondary">${say('consent.deny')}</button>
</form>`,
  }));
}
