// The pages of the ways back in through a person's mailbox (docs/guides/password-reset.md):
// asking for a reset link, setting a new password with it, proving an address, and what a
// sign-up that must prove its address says. Their words are the same whether or not an address
// has an account: a page must not tell a stranger who is a person of this box.
import { FACTOR_KINDS } from '../factor-kinds.js';
import type { FactorSummary } from '../store/factors.js';
import { html, type Html } from './html.js';
import { field, fieldError, hidden, page, type Page } from './frame.js';
import { saidErrors, textOf, type FieldErrors, type Say, type Text } from './language.js';

const alert = (say: Say, error: Text | undefined) => !!error && html`<p class="error" role="alert">${textOf(say, error)}</p>`;

export interface ResetRequestPage {
  box: string;
  csrf: string;
  /** The box sends mail; without, the page says whom to ask. */
  mail: boolean;
  email?: string;
  error?: Text;
}

export function resetRequestPage(p: ResetRequestPage): Page {
  return page((say) => ({
    title: say('signIn.forgot'),
    box: p.box,
    body: p.mail
      ? html`<h1>${say('signIn.forgot')}</h1>
${alert(say, p.error)}
<p>${say('reset.explain')}</p>
<form method="post" action="/auth/reset">
${hidden({ csrf: p.csrf })}
${field('email', say('field.email'), 'email', p.email ?? '', {}, 'username')}
<button type="submit">${say('reset.send')}</button>
</form>
<p><a href="/auth/sign-in">${say('reset.back')}</a></p>`
      : html`<h1>${say('signIn.forgot')}</h1>
<p class="notice" role="status">${say('reset.noMail')}</p>
<p><a href="/auth/sign-in">${say('reset.back')}</a></p>`,
  }));
}

/** What every request for a reset link gets, for an address with an account or without. */
export function resetSentPage(box: string, email: string, minutes: number): Page {
  return page((say) => ({
    title: say('mail.check'),
    box,
    body: html`<h1>${say('mail.check')}</h1>
<p role="status">${say('reset.sent', { email: html`<strong>${email}</strong>`, minutes })}</p>
<p>${say('reset.noMailYet', { link: html`<a href="/auth/reset">${say('reset.askAgain')}</a>` })}</p>`,
  }));
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
  errors?: FieldErrors;
}

const day = (say: Say, d: Date | null): Html | string =>
  d ? d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : say('common.never');

/**
 * The person's factors with their dates, each with a box to tick to remove it: one they do not
 * know (added by someone who held their signed-in browser) goes with the reset. Not every one: a
 * reset proves a mailbox, not a second factor, so one stays to be given at the next sign-in.
 */
function factorsToRemove(say: Say, p: NewPasswordPage): Html | false {
  if (!p.factors.length) return false;
  const kind = (f: FactorSummary): Html => say(FACTOR_KINDS[f.kind].label);
  return html`<fieldset id="reset-factors">
<legend>${say('newPassword.factors')}</legend>
<p class="hint">${say('newPassword.factorsHint')}</p>
${fieldError('remove', saidErrors(say, p.errors).remove)}
${p.factors.map(
  (f) =>
    html`<p><label class="check"><input type="checkbox" name="remove" value="${String(f.id)}"${p.removing?.includes(f.id) ? html` checked` : ''}> ${say('newPassword.remove', { kind: kind(f), name: f.name, added: day(say, f.createdAt), used: day(say, f.lastUsedAt) })}</label></p>`,
)}
</fieldset>`;
}

export function newPasswordPage(p: NewPasswordPage): Page {
  return page((say) => ({
    title: say('newPassword.title'),
    box: p.box,
    body: html`<h1>${say('newPassword.title')}</h1>
<p>${say('newPassword.for', { email: html`<strong>${p.email}</strong>` })}</p>
<form method="post" action="/auth/reset/confirm">
${hidden({ csrf: p.csrf, token: p.token })}
<input type="hidden" name="username" value="${p.email}" autocomplete="username">
${field('password', say('field.newPassword'), 'password', '', saidErrors(say, p.errors), 'new-password')}
${factorsToRemove(say, p)}
<button type="submit">${say('newPassword.submit')}</button>
</form>`,
  }));
}

/** A link that is unknown, used, expired, or for an address that is no longer the person's. */
export function linkInvalidPage(box: string, what: 'reset' | 'verify'): Page {
  return page((say) => ({
    title: say('link.invalid'),
    box,
    body: html`<h1>${say('link.invalid')}</h1>
<p class="notice" role="alert">${say('link.why')}</p>
${
  what === 'reset'
    ? html`<p>${say('link.askNew', { link: html`<a href="/auth/reset">${say('link.askNewLink')}</a>` })}</p>`
    : html`<p>${say('link.signInForNew', { link: html`<a href="/auth/sign-in">${say('link.signInLink')}</a>` })}</p>`
}`,
  }));
}

export function passwordResetPage(box: string): Page {
  return page((say) => ({
    title: say('passwordChanged.title'),
    box,
    body: html`<h1>${say('passwordChanged.heading')}</h1>
<p role="status">${say('passwordChanged.message')}</p>
<p><a href="/auth/sign-in">${say('passwordChanged.signIn')}</a></p>`,
  }));
}

/**
 * A verify link's page: following a link changes nothing (mail scanners follow links), and the
 * account's password confirms it, so that the holder of an address cannot be made to confirm an
 * account someone else made with it (a "pre-account takeover").
 */
export function verifyEmailPage(box: string, action: string, csrf: string, token: string, email: string, error?: Text): Page {
  return page((say) => ({
    title: say('verify.title'),
    box,
    body: html`<h1>${say('verify.title')}</h1>
${alert(say, error)}
<p>${say('verify.explain', { email: html`<strong>${email}</strong>` })}</p>
<p class="hint">${say('verify.notYou')}</p>
<form method="post" action="${action}">
${hidden({ csrf, token })}
${field('password', say('field.password'), 'password', '', {}, 'current-password')}
<button type="submit">${say('verify.submit')}</button>
</form>`,
  }));
}

export function emailVerifiedPage(box: string, email: string): Page {
  return page((say) => ({
    title: say('verified.title'),
    box,
    body: html`<h1>${say('verified.title')}</h1>
<p role="status">${say('verified.message', { email: html`<strong>${email}</strong>` })}</p>
<p><a href="/auth/sign-in">${say('signIn.title')}</a></p>`,
  }));
}

/** What a sign-up that must prove its address answers, for a new address and a taken one alike. */
export function signUpSentPage(box: string, email: string): Page {
  return page((say) => ({
    title: say('mail.check'),
    box,
    body: html`<h1>${say('mail.check')}</h1>
<p role="status">${say('signUpSent.message', { email: html`<strong>${email}</strong>` })}</p>
<p>${say('signUpSent.noMail', { link: html`<a href="/auth/sign-up">${say('signUpSent.again')}</a>` })}</p>`,
  }));
}
