// The pages of the ways back in through a person's mailbox (docs/guides/password-reset.md):
// asking for a reset link, setting a new password with it, proving an address, and what a
// sign-up that must prove its address says. Their words are the same whether or not an address
// has an account: a page must not tell a stranger who is a person of this box.
import type { FactorSummary } from '../store/factors.js';
import { html, type Html } from './html.js';
import { field, fieldError, hidden, page } from './frame.js';

const alert = (error: string | undefined) => !!error && html`<p class="error" role="alert">${error}</p>`;

export interface ResetRequestPage {
  box: string;
  csrf: string;
  /** The box sends mail; without, the page says whom to ask. */
  mail: boolean;
  email?: string;
  error?: string;
}

export function resetRequestPage(p: ResetRequestPage): string {
  return page({
    title: 'Forgot your password?',
    box: p.box,
    body: p.mail
      ? html`<h1>Forgot your password?</h1>
${alert(p.error)}
<p>Type the email address of your account. If it has one here, a link to set a new password is mailed to it.</p>
<form method="post" action="/auth/reset">
${hidden({ csrf: p.csrf })}
${field('email', 'Email', 'email', p.email ?? '', {}, 'username')}
<button type="submit">Send me a link</button>
</form>
<p><a href="/auth/sign-in">Back to sign-in</a></p>`
      : html`<h1>Forgot your password?</h1>
<p class="notice" role="status">This box does not send mail, so it cannot send you a link. Ask its administrator to set a new password for you.</p>
<p><a href="/auth/sign-in">Back to sign-in</a></p>`,
  });
}

/** What every request for a reset link gets, for an address with an account or without. */
export function resetSentPage(box: string, email: string, minutes: number): string {
  return page({
    title: 'Check your mail',
    box,
    body: html`<h1>Check your mail</h1>
<p role="status">If <strong>${email}</strong> has an account here, a link to set a new password is on its way to it. The link works once, for ${minutes} minutes.</p>
<p>No mail after a few minutes? Look in your spam folder, check the address, and <a href="/auth/reset">ask again</a>.</p>`,
  });
}

export interface NewPasswordPage {
  box: string;
  csrf: string;
  token: string;
  email: string;
  /** The person's second factors, each of which they may remove here (but not every one). */
  factors: FactorSummary[];
  /** The factors ticked for removal when the page is shown again. */
  removing?: number[];
  errors?: Record<string, string[]>;
}

const day = (d: Date | null): string => (d ? d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : 'never');

/**
 * The person's factors with their dates, each with a box to tick to remove it: one they do not
 * know (added by someone who held their signed-in browser) goes with the reset. Not every one: a
 * reset proves a mailbox, not a second factor, so one stays to be given at the next sign-in.
 */
function factorsToRemove(p: NewPasswordPage): Html | false {
  if (!p.factors.length) return false;
  const kind = (f: FactorSummary): string => (f.kind === 'totp' ? 'Authenticator app' : 'Passkey');
  return html`<fieldset id="reset-factors">
<legend>Your second factors</legend>
<p class="hint">They stay, and your next sign-in asks for one. Tick any you do not recognise to remove it; at least one stays.</p>
${fieldError('remove', p.errors?.remove)}
${p.factors.map(
  (f) =>
    html`<p><label class="check"><input type="checkbox" name="remove" value="${String(f.id)}"${p.removing?.includes(f.id) ? html` checked` : ''}> Remove ${kind(f)} “${f.name}”, added ${day(f.createdAt)}, last used ${day(f.lastUsedAt)}</label></p>`,
)}
</fieldset>`;
}

export function newPasswordPage(p: NewPasswordPage): string {
  return page({
    title: 'Set a new password',
    box: p.box,
    body: html`<h1>Set a new password</h1>
<p>For <strong>${p.email}</strong>. Once it is set, every place you are signed in is signed out.</p>
<form method="post" action="/auth/reset/confirm">
${hidden({ csrf: p.csrf, token: p.token })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${field('password', 'New password', 'password', '', p.errors ?? {}, 'new-password')}
${factorsToRemove(p)}
<button type="submit">Set password</button>
</form>`,
  });
}

/** A link that is unknown, used, expired, or for an address that is no longer the person's. */
export function linkInvalidPage(box: string, what: 'reset' | 'verify'): string {
  return page({
    title: 'This link does not work',
    box,
    body: html`<h1>This link does not work</h1>
<p class="notice" role="alert">It was used already, it expired, or the account's address changed since it was sent.</p>
${
  what === 'reset'
    ? html`<p><a href="/auth/reset">Ask for a new link</a>: a reset link works once, for 30 minutes.</p>`
    : html`<p>Sign in to have a new link sent: <a href="/auth/sign-in">sign in</a>.</p>`
}`,
  });
}

export function passwordResetPage(box: string): string {
  return page({
    title: 'Password changed',
    box,
    body: html`<h1>Your password is changed</h1>
<p role="status">Everywhere you were signed in is signed out, and apps you had allowed must sign you in again.</p>
<p><a href="/auth/sign-in">Sign in with your new password</a></p>`,
  });
}

/**
 * A verify link's page: following a link changes nothing (mail scanners follow links), and the
 * account's password confirms it, so that the holder of an address cannot be made to confirm an
 * account someone else made with it (a "pre-account takeover").
 */
export function verifyEmailPage(box: string, action: string, csrf: string, token: string, email: string, error?: string): string {
  return page({
    title: 'Confirm your address',
    box,
    body: html`<h1>Confirm your address</h1>
${alert(error)}
<p>Type your account's password to confirm <strong>${email}</strong> is your address.</p>
<p class="hint">You did not make an account here? Then do not confirm: close this page.</p>
<form method="post" action="${action}">
${hidden({ csrf, token })}
${field('password', 'Password', 'password', '', {}, 'current-password')}
<button type="submit">Confirm my address</button>
</form>`,
  });
}

export function emailVerifiedPage(box: string, email: string): string {
  return page({
    title: 'Address confirmed',
    box,
    body: html`<h1>Address confirmed</h1>
<p role="status"><strong>${email}</strong> is confirmed as your address.</p>
<p><a href="/auth/sign-in">Sign in</a></p>`,
  });
}

/** What a sign-up that must prove its address answers, for a new address and a taken one alike. */
export function signUpSentPage(box: string, email: string): string {
  return page({
    title: 'Check your mail',
    box,
    body: html`<h1>Check your mail</h1>
<p role="status">We sent a mail to <strong>${email}</strong>. Follow its link to open your account; then sign in.</p>
<p>No mail after a few minutes? Look in your spam folder, or <a href="/auth/sign-up">sign up again</a>.</p>`,
  });
}
