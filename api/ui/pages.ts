// The server-rendered pages of the browser flows. Every field has a visible
// label, buttons say what they do, and errors are text next to what they
// concern, in role="alert".
import { scopesOf } from '../credentials/scopes.js';
import { field, fieldError, hidden, page, passkeyButton } from './frame.js';
import { html, type Html } from './html.js';
import { upstreamButtons, type OfferedProvider } from './upstream-pages.js';

export interface SignInPage {
  box: string;
  csrf: string;
  returnTo: string;
  email?: string;
  error?: string;
  /** Why the person is asked to sign in (again), when there is something to say. */
  notice?: string;
  registration: boolean;
  /** The IdentityProviders offered, a button each (api/ui/upstream-pages.ts). */
  providers: readonly OfferedProvider[];
  /** The box's own sign-in (a password, a passkey) is offered: the client accepts it. */
  own: boolean;
  /** The password form checks a directory too (ldap.passwordForm): it takes a username as well as an email. */
  usernames: boolean;
  acr?: string;
}

export function signInPage(p: SignInPage): string {
  // The class asked for travels with the password, so that its steps ask for it at once (a passkey, say).
  const own = html`<form method="post" action="/auth/sign-in">
${hidden({ csrf: p.csrf, return_to: p.returnTo, acr: p.acr })}
${p.usernames ? field('email', 'Email or username', 'text', p.email ?? '', {}, 'username webauthn') : field('email', 'Email', 'email', p.email ?? '', {}, 'username webauthn')}
${field('password', 'Password', 'password', '', {}, 'current-password')}
<button type="submit">Sign in</button>
</form>
${passkeyButton('sign-in-passkey', 'Sign in with a passkey', 'authenticate')}
<p><a href="/auth/reset">Forgot your password?</a></p>
${p.registration ? html`<p>New here? <a href="/auth/sign-up?return_to=${encodeURIComponent(p.returnTo)}">Sign up</a></p>` : ''}`;
  return page({
    title: 'Sign in',
    box: p.box,
    body: html`<h1>Sign in</h1>
${p.notice ? html`<p class="notice" role="status">${p.notice}</p>` : ''}
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
${p.own ? own : ''}
${upstreamButtons(p.providers, p.csrf, p.returnTo, p.acr)}`,
  });
}

export interface SignUpPage {
  box: string;
  csrf: string;
  returnTo: string;
  email?: string;
  errors?: Record<string, string[]>;
  /** Why the form was not taken at all (throttled, busy). */
  error?: string;
}

export function signUpPage(p: SignUpPage): string {
  const errors = p.errors ?? {};
  const other = [
    ...(p.error ? [p.error] : []),
    ...Object.entries(errors)
      .filter(([f]) => f !== 'email' && f !== 'password')
      .flatMap(([, m]) => m),
  ];
  return page({
    title: 'Sign up',
    box: p.box,
    body: html`<h1>Sign up</h1>
${other.length ? html`<p class="error" role="alert">${other.join(' ')}</p>` : ''}
<form method="post" action="/auth/sign-up">
${hidden({ csrf: p.csrf, return_to: p.returnTo })}
${field('email', 'Email', 'email', p.email ?? '', errors, 'username')}
${field('password', 'Password', 'password', '', errors, 'new-password')}
<button type="submit">Sign up</button>
</form>
<p>Already have an account? <a href="/auth/sign-in?return_to=${encodeURIComponent(p.returnTo)}">Sign in</a></p>`,
  });
}

/** What a person is asked to allow, in words; the scope's own name stays beside it. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are on this box',
  email: 'Your email address',
  profile: 'Your name and profile',
  address: 'Your postal address',
  phone: 'Your phone number',
  groups: 'The groups you belong to',
};

function scopeList(scopes: string[]): Html {
  return html`<ul class="scopes">${scopes.map(
    (s) => html`<li>${Object.hasOwn(SCOPE_WORDS, s) ? html`${SCOPE_WORDS[s]} <code>${s}</code>` : html`<code>${s}</code>`}</li>`,
  )}</ul>`;
}

export interface ConsentPage {
  box: string;
  csrf: string;
  clientId: string;
  clientDescription?: string;
  scope?: string;
  email: string;
  params: Record<string, string | undefined>;
}

export function consentPage(p: ConsentPage): string {
  const scopes = scopesOf(p.scope);
  return page({
    title: 'Allow access?',
    box: p.box,
    body: html`<h1>Allow <strong>${p.clientId}</strong> to access your account?</h1>
${p.clientDescription ? html`<p>${p.clientDescription}</p>` : ''}
<p>Signed in as <strong>${p.email}</strong>.</p>
${
  scopes.length ? html`<p>It asks for:</p>${scopeList(scopes)}` : html`<p>It asks for access to your account, with no particular scope.</p>`
}
<form method="post" action="/auth/consent" class="actions">
${hidden({ csrf: p.csrf, ...p.params })}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  });
}

export function messagePage(box: string, title: string, message: string, alert = true): string {
  return page({
    title,
    box,
    body: html`<h1>${title}</h1><p ${alert ? html`class="notice" role="alert"` : ''}>${message}</p>`,
  });
}

/** What a person finds at the box's root: where to go from here. */
export function homePage(box: string, baseUrl: string): string {
  return page({
    title: 'boxauth',
    box,
    body: html`<h1>This is box ${box}</h1>
<p>An OAuth 2.0 and OpenID Connect provider. Apps send people here to sign in; programs get their tokens at <code>${baseUrl}/auth/token</code>.</p>
<ul>
<li><a href="/admin">Admin UI</a>: users and groups</li>
<li><a href="/auth/signed-in">Who am I signed in as?</a></li>
<li><a href="/.well-known/openid-configuration">OpenID Connect discovery</a> and <a href="/openapi.json">the API (OpenAPI)</a></li>
</ul>`,
  });
}

export function signOutPage(box: string, csrf: string, returnTo: string, email: string | undefined): string {
  return page({
    title: 'Sign out',
    box,
    body: email
      ? html`<h1>Sign out</h1><p>Signed in as <strong>${email}</strong>.</p>
<form method="post" action="/auth/sign-out">${hidden({ csrf, return_to: returnTo })}<button type="submit">Sign out</button></form>`
      : html`<h1>Signed out</h1><p role="status">You are signed out.</p>`,
  });
}

/** Signing out of one app: a form, so that a link from elsewhere signs nobody out. */
export function appSignOutPage(box: string, app: string, csrf: string | undefined): string {
  return page({
    title: 'Sign out',
    box,
    body: csrf
      ? html`<h1>Sign out of ${app}?</h1>
<form method="post" action="/.boxauth/sign-out">${hidden({ csrf })}<button type="submit">Sign out</button></form>`
      : html`<h1>Signed out</h1><p role="status">You are not signed in to ${app}.</p>`,
  });
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
export function logoutPage(p: LogoutPage): string {
  return page({
    title: 'Sign out',
    box: p.box,
    body: html`<h1>Sign out?</h1>
<p>An application asks to sign you out of this box.
${p.email ? html`You are signed in as <strong>${p.email}</strong>.` : 'This browser is not signed in.'}</p>
<form method="post" action="/auth/logout" class="actions">
${hidden({ csrf: p.csrf, ...p.params })}
<button type="submit">Sign out</button>
</form>`,
  });
}

export interface DeviceCodePage {
  box: string;
  code?: string;
  error?: string;
}

/** Where a person types the code their device shows (a GET form: nothing changes until they allow). */
export function deviceCodePage(p: DeviceCodePage): string {
  return page({
    title: 'Connect a device',
    box: p.box,
    body: html`<h1>Connect a device</h1>
<p>Enter the code your device shows.</p>
<form method="get" action="/auth/device/verify">
<div class="field">
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" value="${p.code ?? ''}" autocomplete="off" autocapitalize="characters" required
  ${p.error ? html`aria-invalid="true" aria-describedby="user_code-error"` : ''}>
${fieldError('user_code', p.error ? [p.error] : undefined)}
</div>
<button type="submit">Continue</button>
</form>`,
  });
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
export function deviceConsentPage(p: DeviceConsentPage): string {
  const scopes = scopesOf(p.scope);
  return page({
    title: 'Allow the device?',
    box: p.box,
    body: html`<h1>Allow <strong>${p.clientId}</strong> on your device?</h1>
${p.clientDescription ? html`<p>${p.clientDescription}</p>` : ''}
<p>Check that your device shows the code <strong class="code">${p.code}</strong>. Only allow a device you are using yourself.</p>
<p>Signed in as <strong>${p.email}</strong>.</p>
${scopes.length ? html`<p>It asks for:</p>${scopeList(scopes)}` : ''}
<form method="post" action="/auth/device/verify" class="actions">
${hidden({ csrf: p.csrf, user_code: p.code })}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  });
}
