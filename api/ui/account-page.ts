// A person's own page, /account (docs/guides/account-page.md): their address and password,
// their second factors, where they are signed in, and the apps they allowed. Every change is a
// form posted with the page's CSRF token to api/http/routes/account.ts or factors.ts.
import { linkedProvidersSection, type ProviderLink } from './upstream-pages.js';
import type { BrowserSignIn, Consent } from '../store/browser.js';
import type { FactorSummary } from '../store/factors.js';
import type { PersonGrant } from '../store/sessions.js';
import { html, type Html } from './html.js';
import { field, hidden, page } from './frame.js';

export interface AccountPage {
  box: string;
  csrf: string;
  email: string;
  emailVerified: boolean;
  /** The box sends mail: a changed address gets a link. */
  mail: boolean;
  factors: FactorSummary[];
  recoveryCodesLeft: number;
  /** This browser's sign-in. */
  sid: string;
  /** A sign-in with a second factor minutes ago: no current password asked for a change. */
  fresh: boolean;
  /** A proof given minutes ago (a sign-in, a confirmation): factors may be added and removed. */
  recent: boolean;
  signIns: BrowserSignIn[];
  grants: PersonGrant[];
  consents: Consent[];
  /** The providers people may sign in through, linked to this person or not. */
  providers: ProviderLink[];
  message?: string;
  error?: string;
  errors?: Record<string, string[]>;
}

export const when = (d: Date | null): string => (d ? d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : 'never');

/** What a sign-in proved (RFC 8176 amr), in words. */
export function factorWords(amr: readonly string[]): string {
  const words = [
    ...(amr.includes('pwd') ? ['password'] : []),
    ...(amr.includes('otp') ? ['authenticator app'] : []),
    ...(amr.includes('hwk') || amr.includes('swk') ? ['passkey'] : []),
  ];
  return words.length ? words.join(' + ') : 'unknown';
}

/**
 * A browser as a person tells theirs apart: its name and system from its User-Agent (the whole of
 * it in the cell's title), or the start of it when it names neither.
 */
export function browserName(userAgent: string | null): string {
  if (!userAgent) return 'unknown';
  // In this order: Edge and Opera say Chrome too, Chrome says Safari, Android says Linux.
  const name = ['Edg', 'OPR', 'Firefox', 'HeadlessChrome', 'Chrome', 'Safari'].find((n) => userAgent.includes(`${n}/`));
  const system = ['Windows', 'Android', 'iPhone', 'iPad', 'Mac OS X', 'CrOS', 'Linux'].find((n) => userAgent.includes(n));
  const names: Record<string, string> = { Edg: 'Edge', OPR: 'Opera', HeadlessChrome: 'Chrome', 'Mac OS X': 'macOS', CrOS: 'ChromeOS' };
  if (!name) return userAgent.length > 40 ? `${userAgent.slice(0, 40)}…` : userAgent;
  return `${names[name] ?? name}${system ? ` on ${names[system] ?? system}` : ''}`;
}

const endForm = (action: string, fields: Record<string, string>, label: string): Html =>
  html`<form method="post" action="${action}" class="inline">${hidden(fields)}<button type="submit" class="danger">${label}</button></form>`;

/** The current password, or nothing when a second factor was just given. */
function proof(p: AccountPage, id: string): Html {
  return p.fresh
    ? html`<p class="hint">You signed in with a second factor minutes ago: no password needed.</p>`
    : field(id, 'Current password', 'password', '', p.errors ?? {}, 'current-password');
}

/** What a change of factors asks first, when this browser's last proof is not recent. */
export function confirmNotice(returnTo: string): Html {
  return html`<p class="notice" role="status" id="confirm-first">To add or remove a way to sign in, or make new recovery codes, <a href="/auth/account/confirm?${new URLSearchParams({ return_to: returnTo }).toString()}">confirm it is you</a> first.</p>`;
}

function factorsSection(p: AccountPage): Html {
  const totp = p.factors.some((f) => f.kind === 'totp');
  return html`<h2>Second factors</h2>
${!p.recent && confirmNotice('/auth/account')}
${
  p.factors.length
    ? html`<table id="factors"><thead><tr><th>Name</th><th>Kind</th><th>Added</th><th>Last used</th><th></th></tr></thead><tbody>
${p.factors.map(
  (
    f,
  ) => html`<tr><td>${f.name}</td><td>${f.kind === 'totp' ? 'Authenticator app' : 'Passkey'}</td><td>${when(f.createdAt)}</td><td>${when(f.lastUsedAt)}</td>
<td>${p.recent && endForm('/auth/account/factors/remove', { csrf: p.csrf, factor: String(f.id) }, 'Remove')}</td></tr>`,
)}
</tbody></table>`
    : html`<p>You have no second factor: your password alone signs you in.</p>`
}
${p.recent && !totp && html`<form method="post" action="/auth/account/totp">${hidden({ csrf: p.csrf })}<button type="submit">Set up an authenticator app</button></form>`}
<p><a href="/auth/account/passkeys">Passkeys</a></p>
<h3>Recovery codes</h3>
<p id="codes-left">${p.recoveryCodesLeft} of 10 recovery codes left.</p>
${
  p.recent &&
  p.factors.length > 0 &&
  html`<form method="post" action="/auth/account/recovery-codes">${hidden({ csrf: p.csrf })}<button type="submit" class="secondary">Make new recovery codes</button></form>`
}`;
}

function signInsSection(p: AccountPage): Html {
  return html`<h2>Where you are signed in</h2>
<table id="sign-ins"><thead><tr><th>Since</th><th>From</th><th>Browser</th><th>With</th><th></th></tr></thead><tbody>
${p.signIns.map(
  (
    s,
  ) => html`<tr><td>${when(s.since)}</td><td>${s.address ?? 'unknown'}</td><td title="${s.userAgent ?? ''}">${browserName(s.userAgent)}</td><td>${factorWords(s.amr)}</td>
<td>${s.sid === p.sid ? html`<strong>This browser</strong> ` : ''}${endForm('/auth/account/sign-ins/end', { csrf: p.csrf, sid: s.sid }, 'Sign out')}</td></tr>`,
)}
</tbody></table>`;
}

function appsSection(p: AccountPage): Html {
  return html`<h2>Apps</h2>
${
  p.grants.length
    ? html`<table id="grants"><thead><tr><th>App</th><th>Since</th><th>Last used</th><th>From</th><th>With</th><th>Access</th><th></th></tr></thead><tbody>
${p.grants.map(
  (
    g,
  ) => html`<tr><td>${g.clientId}</td><td>${when(g.since)}</td><td>${when(g.lastUsed)}</td><td>${g.address ?? 'unknown'}</td><td>${factorWords(g.amr)}</td><td>${g.scope ?? ''}</td>
<td>${endForm('/auth/account/grants/end', { csrf: p.csrf, grant: g.family }, 'End')}</td></tr>`,
)}
</tbody></table>`
    : html`<p>No app holds a token of yours.</p>`
}
${
  p.consents.length
    ? html`<h3>What you allowed</h3>
<table id="consents"><thead><tr><th>App</th><th>Allowed</th><th>Since</th><th></th></tr></thead><tbody>
${p.consents.map(
  (c) => html`<tr><td>${c.clientId}</td><td>${c.scopes.join(' ')}</td><td>${when(c.grantedAt)}</td>
<td>${endForm('/auth/account/consents/withdraw', { csrf: p.csrf, client: c.clientId }, 'Withdraw')}</td></tr>`,
)}
</tbody></table>
<p class="hint">Withdrawing ends the app's tokens of yours; it asks you again next time.</p>`
    : ''
}`;
}

export function accountPage(p: AccountPage): string {
  const errors = p.errors ?? {};
  return page({
    title: 'Your account',
    box: p.box,
    wide: true,
    body: html`<h1>Your account</h1>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
${p.message ? html`<p role="status">${p.message}</p>` : ''}
<h2>Email</h2>
<p>Signed in as <strong id="account-email">${p.email}</strong> <span id="email-state">${p.emailVerified ? '(confirmed)' : '(not confirmed)'}</span></p>
${!p.emailVerified && !p.mail ? html`<p class="hint">This box sends no mail: ask its administrator to confirm your address.</p>` : ''}
<details${errors.new_email || errors.email_password ? html` open` : ''}><summary>Change your email</summary>
<form method="post" action="/auth/account/email">
${hidden({ csrf: p.csrf })}
${field('new_email', 'New email', 'email', '', errors, 'email')}
${proof(p, 'email_password')}
${p.mail ? html`<p class="hint">Your email changes when you follow the link mailed to the new address.</p>` : ''}
<button type="submit">Change email</button>
</form></details>
<h2>Password</h2>
<details${errors.new_password || errors.current_password ? html` open` : ''}><summary>Change your password</summary>
<form method="post" action="/auth/account/password">
${hidden({ csrf: p.csrf })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${proof(p, 'current_password')}
${field('new_password', 'New password', 'password', '', errors, 'new-password')}
<p class="hint">Everywhere else you are signed in is signed out, and apps must sign you in again.</p>
<button type="submit">Change password</button>
</form></details>
${factorsSection(p)}
${linkedProvidersSection(p.providers, p.csrf)}
${signInsSection(p)}
${appsSection(p)}`,
  });
}

export interface ConfirmPage {
  box: string;
  csrf: string;
  email: string;
  /** Where the confirmation goes back to. */
  returnTo: string;
  /** The person has a password of the box (one an IdentityProvider made signs in again instead). */
  password: boolean;
  errors?: Record<string, string[]>;
  error?: string;
}

/**
 * "Confirm it is you": the password again (or a sign-in again) before a way to sign in is added
 * or removed, as GitHub's sudo mode asks — whoever holds a signed-in browser is not yet its person.
 */
export function confirmPage(p: ConfirmPage): string {
  const signInAgain = `/auth/sign-in?${new URLSearchParams({ return_to: p.returnTo }).toString()}`;
  return page({
    title: 'Confirm it is you',
    box: p.box,
    body: html`<h1>Confirm it is you</h1>
<p>Adding or removing a way to sign in to ${p.email} asks for a proof that it is you, given in the last few minutes.</p>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
${
  p.password
    ? html`<form method="post" action="/auth/account/confirm">
${hidden({ csrf: p.csrf, return_to: p.returnTo })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${field('password', 'Password', 'password', '', p.errors ?? {}, 'current-password')}
<button type="submit">Confirm</button>
</form>
<p>Or <a href="${signInAgain}">sign in again</a>.</p>`
    : html`<p><a href="${signInAgain}">Sign in again</a> to confirm.</p>`
}`,
  });
}
