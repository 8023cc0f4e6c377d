// A person's own page, /account (docs/guides/account-page.md): their address and password,
// their second factors, where they are signed in, and the apps they allowed. Every change is a
// form posted with the page's CSRF token to api/http/routes/account.ts or factors.ts.
import { linkedProvidersSection, type ProviderLink } from './upstream-pages.js';
import type { BrowserSignIn } from '../store/browser-sessions.js';
import type { Consent } from '../store/consents.js';
import {
  appOf,
  FACTOR_KINDS,
  mailedOf,
  OFFERED_APP_KINDS,
  WEBAUTHN_FACTOR_KINDS,
  webauthnOf,
  type MailedFactorKind,
} from '../factor-kinds.js';
import type { FactorSummary } from '../store/factors.js';
import type { PersonGrant } from '../store/sessions.js';
import { chosen, html, type Html } from './html.js';
import { field, hidden, page, type Page } from './frame.js';
import { saidErrors, textOf, type FieldErrors, type Say, type Text } from './language.js';

export interface AccountPage {
  box: string;
  csrf: string;
  email: string;
  emailVerified: boolean;
  /** The box sends mail: a changed address gets a link. */
  mail: boolean;
  /** The kinds of mailed codes the box offers to set up (api/factor-kinds.ts `mailed`; BOXAUTH_SMTP_SIGN_IN_CODES). */
  mailedOffered: readonly MailedFactorKind[];
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
  message?: Text;
  error?: Text;
  errors?: FieldErrors;
}

export const when = (say: Say, d: Date | null): Html | string =>
  d ? d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : say('common.never');

/** What a sign-in proved (RFC 8176 amr), in words. */
export function factorWords(say: Say, amr: readonly string[]): Html | string {
  const words = [
    ...(amr.includes('pwd') ? [say('factor.password')] : []),
    ...(amr.includes('otp') ? [say('factor.app')] : []),
    ...(amr.includes('hwk') || amr.includes('swk') ? [say('factor.passkey')] : []),
  ];
  return words.length ? html`${words.map((w, i) => html`${i ? ' + ' : ''}${w}`)}` : say('common.unknown');
}

/**
 * A browser as a person tells theirs apart: its name and system from its User-Agent (the whole of
 * it in the cell's title), or the start of it when it names neither.
 */
export function browserName(userAgent: string | null, say?: Say): Html | string {
  if (!userAgent) return say ? say('common.unknown') : 'unknown';
  // In this order: Edge and Opera say Chrome too, Chrome says Safari, Android says Linux.
  const name = ['Edg', 'OPR', 'Firefox', 'HeadlessChrome', 'Chrome', 'Safari'].find((n) => userAgent.includes(`${n}/`));
  const system = ['Windows', 'Android', 'iPhone', 'iPad', 'Mac OS X', 'CrOS', 'Linux'].find((n) => userAgent.includes(n));
  const names: Record<string, string> = { Edg: 'Edge', OPR: 'Opera', HeadlessChrome: 'Chrome', 'Mac OS X': 'macOS', CrOS: 'ChromeOS' };
  if (!name) return userAgent.length > 40 ? `${userAgent.slice(0, 40)}…` : userAgent;
  const browser = names[name] ?? name;
  if (!system) return browser;
  return say ? say('account.browserOn', { browser, system: names[system] ?? system }) : `${browser} on ${names[system] ?? system}`;
}

const endForm = (action: string, fields: Record<string, string>, label: Html): Html =>
  html`<form method="post" action="${action}" class="inline">${hidden(fields)}<button type="submit" class="danger">${label}</button></form>`;

/** The current password, or nothing when a second factor was just given. */
function proof(say: Say, p: AccountPage, id: string): Html {
  return p.fresh
    ? html`<p class="hint">${say('account.fresh')}</p>`
    : field(id, say('account.currentPassword'), 'password', '', saidErrors(say, p.errors), 'current-password');
}

/** What a change of factors asks first, when this browser's last proof is not recent. */
export function confirmNotice(say: Say, returnTo: string): Html {
  const link = html`<a href="/auth/account/confirm?${new URLSearchParams({ return_to: returnTo }).toString()}">${say('account.confirmLink')}</a>`;
  return html`<p class="notice" role="status" id="confirm-first">${say('account.confirmFirst', { link })}</p>`;
}

function factorsSection(say: Say, p: AccountPage): Html {
  const held = (kind: string): boolean => p.factors.some((f) => f.kind === kind);
  // An app of each kind the person holds none of may be set up (api/factor-kinds.ts `app`), the first the main one.
  const apps = OFFERED_APP_KINDS.filter((kind) => !held(kind));
  // Mailed codes go to a proven address, from a box that offers them (api/people/ways/email-code.ts).
  const mailed = p.emailVerified ? p.mailedOffered.filter((kind) => !held(kind)) : [];
  return html`<h2>${say('account.factors')}</h2>
${!p.recent && confirmNotice(say, '/auth/account')}
${
  p.factors.length
    ? html`<table id="factors"><thead><tr><th>${say('table.name')}</th><th>${say('table.kind')}</th><th>${say('table.added')}</th><th>${say('table.lastUsed')}</th><th><span class="visually-hidden">${say('table.actions')}</span></th></tr></thead><tbody>
${p.factors.map(
  (
    f,
  ) => html`<tr><td>${f.name}</td><td>${say(FACTOR_KINDS[f.kind].label)}</td><td>${when(say, f.createdAt)}</td><td>${when(say, f.lastUsedAt)}</td>
<td>${p.recent && endForm('/auth/account/factors/remove', { csrf: p.csrf, factor: String(f.id) }, say('common.remove'))}</td></tr>`,
)}
</tbody></table>`
    : html`<p>${say('account.noFactor')}</p>`
}
${
  p.recent &&
  apps.map(
    (kind, i) =>
      html`<form method="post" action="/auth/account/${appOf(kind).path}">${hidden({ csrf: p.csrf })}<button type="submit"${i ? html` class="secondary"` : ''}>${say(appOf(kind).words.setUp)}</button></form>`,
  )
}
${
  p.recent &&
  mailed.map(
    (kind) =>
      html`<form method="post" action="/auth/account/${mailedOf(kind).path}">${hidden({ csrf: p.csrf })}<button type="submit" class="secondary">${say(mailedOf(kind).words.setUp)}</button></form>`,
  )
}
${WEBAUTHN_FACTOR_KINDS.map((kind) => html`<p><a href="/auth/account/${webauthnOf(kind).path}">${say(webauthnOf(kind).words.title)}</a></p>`)}
<h3>${say('account.recoveryCodes')}</h3>
<p id="codes-left">${say('account.codesLeft', { left: p.recoveryCodesLeft })}</p>
${
  p.recent &&
  p.factors.length > 0 &&
  html`<form method="post" action="/auth/account/recovery-codes">${hidden({ csrf: p.csrf })}<button type="submit" class="secondary">${say('account.newCodes')}</button></form>`
}`;
}

function signInsSection(say: Say, p: AccountPage): Html {
  return html`<h2>${say('account.signIns')}</h2>
<table id="sign-ins"><thead><tr><th>${say('table.since')}</th><th>${say('table.from')}</th><th>${say('table.browser')}</th><th>${say('table.with')}</th><th><span class="visually-hidden">${say('table.actions')}</span></th></tr></thead><tbody>
${p.signIns.map(
  (
    s,
  ) => html`<tr><td>${when(say, s.since)}</td><td>${s.address ?? say('common.unknown')}</td><td title="${s.userAgent ?? ''}">${browserName(s.userAgent, say)}</td><td>${factorWords(say, s.amr)}</td>
<td>${s.sid === p.sid ? html`<strong>${say('account.thisBrowser')}</strong> ` : ''}${endForm('/auth/account/sign-ins/end', { csrf: p.csrf, sid: s.sid }, say('signOut.title'))}</td></tr>`,
)}
</tbody></table>`;
}

/** The app of a grant: an agent's client (a metadata document's, a dynamic registration's) says so, with the name it gave itself. */
function appName(say: Say, g: PersonGrant): Html {
  if (!g.agent) return html`${g.clientId}`;
  return html`<span class="tag">${say('account.agent')}</span> ${g.agent.clientName ? html`${chosen(g.agent.clientName)} ` : ''}<code>${chosen(g.clientId)}</code>`;
}

function appsSection(say: Say, p: AccountPage): Html {
  return html`<h2>${say('account.apps')}</h2>
${
  p.grants.length
    ? html`<table id="grants"><thead><tr><th>${say('table.app')}</th><th>${say('table.since')}</th><th>${say('table.lastUsed')}</th><th>${say('table.from')}</th><th>${say('table.with')}</th><th>${say('table.access')}</th><th><span class="visually-hidden">${say('table.actions')}</span></th></tr></thead><tbody>
${p.grants.map(
  (
    g,
  ) => html`<tr${g.agent ? html` class="agent"` : ''}><td>${appName(say, g)}</td><td>${when(say, g.since)}</td><td>${when(say, g.lastUsed)}</td><td>${g.address ?? say('common.unknown')}</td><td>${factorWords(say, g.amr)}</td><td>${g.scope ?? ''}</td>
<td>${endForm('/auth/account/grants/end', { csrf: p.csrf, grant: g.family }, say('account.end'))}</td></tr>`,
)}
</tbody></table>`
    : html`<p>${say('account.noGrants')}</p>`
}
${
  p.consents.length
    ? html`<h3>${say('account.allowed')}</h3>
<table id="consents"><thead><tr><th>${say('table.app')}</th><th>${say('table.allowed')}</th><th>${say('table.since')}</th><th><span class="visually-hidden">${say('table.actions')}</span></th></tr></thead><tbody>
${p.consents.map(
  (c) => html`<tr><td>${c.clientId}</td><td>${c.scopes.join(' ')}</td><td>${when(say, c.grantedAt)}</td>
<td>${endForm('/auth/account/consents/withdraw', { csrf: p.csrf, client: c.clientId }, say('account.withdraw'))}</td></tr>`,
)}
</tbody></table>
<p class="hint">${say('account.withdrawHint')}</p>`
    : ''
}`;
}

export function accountPage(p: AccountPage): Page {
  return page((say) => {
    const errors = saidErrors(say, p.errors);
    return {
      title: say('account.title'),
      box: p.box,
      wide: true,
      body: html`<h1>${say('account.title')}</h1>
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
${p.message ? html`<p role="status">${textOf(say, p.message)}</p>` : ''}
<h2>${say('field.email')}</h2>
<p>${say('account.signedInAs', { email: html`<strong id="account-email">${p.email}</strong>`, state: html`<span id="email-state">${p.emailVerified ? say('account.confirmed') : say('account.notConfirmed')}</span>` })}</p>
${!p.emailVerified && !p.mail ? html`<p class="hint">${say('account.noMail')}</p>` : ''}
<details${errors.new_email || errors.email_password ? html` open` : ''}><summary>${say('account.changeEmail')}</summary>
<form method="post" action="/auth/account/email">
${hidden({ csrf: p.csrf })}
${field('new_email', say('account.newEmail'), 'email', '', errors, 'email')}
${proof(say, p, 'email_password')}
${p.mail ? html`<p class="hint">${say('account.emailLinkHint')}</p>` : ''}
<button type="submit">${say('account.changeEmailButton')}</button>
</form></details>
<h2>${say('field.password')}</h2>
<details${errors.new_password || errors.current_password ? html` open` : ''}><summary>${say('account.changePassword')}</summary>
<form method="post" action="/auth/account/password">
${hidden({ csrf: p.csrf })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${proof(say, p, 'current_password')}
${field('new_password', say('field.newPassword'), 'password', '', errors, 'new-password')}
<p class="hint">${say('account.passwordHint')}</p>
<button type="submit">${say('account.changePasswordButton')}</button>
</form></details>
${factorsSection(say, p)}
${linkedProvidersSection(say, p.providers, p.csrf)}
${signInsSection(say, p)}
${appsSection(say, p)}`,
    };
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
  errors?: FieldErrors;
  error?: Text;
}

/**
 * "Confirm it is you": the password again (or a sign-in again) before a way to sign in is added
 * or removed, as GitHub's sudo mode asks — whoever holds a signed-in browser is not yet its person.
 */
export function confirmPage(p: ConfirmPage): Page {
  const signInAgain = `/auth/sign-in?${new URLSearchParams({ return_to: p.returnTo }).toString()}`;
  return page((say) => ({
    title: say('confirm.title'),
    box: p.box,
    body: html`<h1>${say('confirm.title')}</h1>
<p>${say('confirm.why', { email: p.email })}</p>
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
${
  p.password
    ? html`<form method="post" action="/auth/account/confirm">
${hidden({ csrf: p.csrf, return_to: p.returnTo })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${field('password', say('field.password'), 'password', '', saidErrors(say, p.errors), 'current-password')}
<button type="submit">${say('confirm.submit')}</button>
</form>
<p>${say('confirm.orSignInAgain', { link: html`<a href="${signInAgain}">${say('confirm.signInAgainLink')}</a>` })}</p>`
    : html`<p>${say('confirm.signInAgainToConfirm', { link: html`<a href="${signInAgain}">${say('wayOn.signIn')}</a>` })}</p>`
}`,
  }));
}
