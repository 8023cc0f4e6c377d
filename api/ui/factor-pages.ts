// The pages of a sign-in's second step (docs/guides/second-factors.md):
// the second factor asked for, a TOTP enrolled (its QR code and secret), codes by email set up,
// recovery codes shown once. The forms post back to api/http/routes/factors.ts; the account page is api/ui/account-page.ts.
import { html, Html } from './html.js';
import { field, hidden, page, passkeyButton, type Page } from './frame.js';
import { textOf, type Say, type Text } from './language.js';
import { appOf, type AppFactorKind } from '../factor-kinds.js';

/** Where a step's page goes on to: carried by its forms. */
export interface StepFields {
  csrf: string;
  returnTo: string;
  acr: string | undefined;
}

const stepHidden = (s: StepFields): Html[] => hidden({ csrf: s.csrf, return_to: s.returnTo, acr: s.acr });
const alert = (say: Say, error: Text | undefined): Html | false => !!error && html`<p class="error" role="alert">${textOf(say, error)}</p>`;

/** A step's page asked for without its step (used, expired, ended, never begun): a link to sign in again. */
export function signInAgainPage(box: string, returnTo: string): Page {
  return page((say) => ({
    title: say('wayOn.signIn'),
    box,
    body: html`<h1>${say('wayOn.signIn')}</h1>
<p class="notice" role="alert">${say('step.ended')}</p>
<p><a href="/auth/sign-in?${new URLSearchParams({ return_to: returnTo }).toString()}">${say('signIn.title')}</a></p>`,
  }));
}

export interface SecondFactorPage extends StepFields {
  box: string;
  /** The kinds of app the person holds (api/factor-kinds.ts `app`): a form each, with its field and words. */
  apps: readonly AppFactorKind[];
  passkeys: boolean;
  recoveryCodes: boolean;
  /** The person holds a factor (api/factor-kinds.ts): the recovery codes, their way out, stay folded. */
  hasFactor: boolean;
  /** The sign-in asked for a passkey (acr phr) and the person has one: nothing else is offered. */
  passkeyOnly: boolean;
  /** The sign-in asked for a passkey and the person has none yet: their code first, then they add one. */
  passkeyNext: boolean;
  /** The person gets codes by email (api/people/ways/email-code.ts): at their address; `sent`: one was just mailed. */
  email?: { address: string; sent: boolean };
  error?: Text;
}

/**
 * "Send a code": a form of its own, posting `send=email` to `action` (a new code replaces the
 * last) — the button's value, so that a code typed in another form of the page never asks for one.
 */
const sendEmailCode = (say: Say, s: StepFields, action: string): Html => html`<form method="post" action="${action}">
${stepHidden(s)}
<button type="submit" name="send" value="email" class="secondary" id="send-email-code">${say('email.send')}</button>
</form>`;

/** Codes by email on a page: what they are, that one was sent, and how to ask for one. */
const emailCodeIntro = (say: Say, s: StepFields, action: string, email: { address: string; sent: boolean }): Html =>
  html`<p>${say('email.intro', { email: email.address })}</p>
${email.sent ? html`<p class="notice" role="status" id="email-code-sent">${say('email.sent', { email: email.address })}</p>` : ''}
${sendEmailCode(say, s, action)}`;

export function secondFactorPage(p: SecondFactorPage): Page {
  // The passkeys script reads the page's CSRF token, return_to and acr from its inputs: a page
  // with no form (a person whose only factor is a passkey) carries them beside the button.
  const passkey = (say: Say): Html | false =>
    p.passkeys &&
    html`${stepHidden(p)}
${passkeyButton(say, 'use-passkey', say('step.usePasskey'), 'authenticate')}`;
  const form = (
    say: Say,
    id: string,
    label: Html,
    autocomplete: string,
    hint: Html,
  ): Html => html`<form method="post" action="/auth/sign-in/second-factor">
${stepHidden(p)}
${field(id, label, 'text', '', {}, autocomplete)}
<p class="hint">${hint}</p>
<button type="submit">${say('common.continue')}</button>
</form>`;
  return page((say) => ({
    title: say('step.title'),
    box: p.box,
    body: html`<h1>${say('step.heading')}</h1>
${alert(say, p.error)}
${
  p.passkeyOnly
    ? html`<p>${say('step.passkeyOnly')}</p>
${passkey(say)}`
    : html`${p.passkeyNext ? html`<p class="notice" role="status">${say('step.passkeyNext')}</p>` : ''}
${passkey(say)}
${p.apps.map((kind) => {
  const app = appOf(kind);
  return form(say, app.field, say(app.words.code), 'one-time-code', say(app.words.hint));
})}
${
  p.email &&
  html`<section id="email-codes"><h2>${say('email.heading')}</h2>
${emailCodeIntro(say, p, '/auth/sign-in/second-factor', p.email)}
${form(say, 'email_code', say('email.code'), 'one-time-code', say('email.codeHint'))}
</section>`
}
${
  p.recoveryCodes &&
  html`<details${p.hasFactor ? '' : html` open`}><summary>${say('step.lostPhone')}</summary>
${form(say, 'recovery_code', say('step.recoveryCode'), 'off', say('step.recoveryCodeHint'))}
</details>`
}`
}`,
  }));
}

export interface EnrolPage extends StepFields {
  box: string;
  /** The kind of app being set up (api/factor-kinds.ts `app`): its words, and the field of its code. */
  app: AppFactorKind;
  /** The other kinds of app that may be set up instead: a button each (posting `setup=<kind>` to `action`). */
  otherApps?: readonly AppFactorKind[];
  /** Where the confirming code is posted. */
  action: string;
  /** The QR code of the otpauth:// URI, as inline SVG (no image source for the CSP to allow). */
  qrSvg: string;
  secret: string;
  /** Only a passkey meets what the sign-in asked (acr phr). */
  passkeyOnly: boolean;
  /** A passkey may be added instead of the app (a sign-in's enrolment; the account has its passkeys page). */
  offerPasskey?: boolean;
  /** Codes by email may be set up instead, at this address (a sign-in's enrolment, where the box sends mail and the address is proven). */
  offerEmail?: string;
  error?: Text;
}

const addPasskey = (say: Say): Html => passkeyButton(say, 'add-passkey', say('passkeys.add'), 'register');

/** A button that sets up an app of another kind instead, posted to `action`. */
const setUpOther = (say: Say, s: StepFields, action: string, kind: AppFactorKind): Html => html`<form method="post" action="${action}">
${stepHidden(s)}
<button type="submit" name="setup" value="${kind}" class="secondary">${say(appOf(kind).words.setUp)}</button>
</form>`;

export function enrolPage(p: EnrolPage): Page {
  const app = appOf(p.app);
  return page((say) => ({
    title: say('enrol.title'),
    box: p.box,
    body: p.passkeyOnly
      ? html`<h1>${say('passkeys.add')}</h1>
${alert(say, p.error)}
<p>${say('enrol.passkeyOnly')}</p>
${stepHidden(p)}
${addPasskey(say)}`
      : html`<h1>${say(app.words.heading)}</h1>
${alert(say, p.error)}
<p>${say(app.words.scan)}</p>
<figure class="qr" role="img" aria-label="${say('enrol.qrLabel')}">${new Html(p.qrSvg)}</figure>
<p>${say('enrol.key', { key: html`<code id="totp-secret">${p.secret}</code>` })}</p>
<form method="post" action="${p.action}">
${stepHidden(p)}
${field(app.field, say('enrol.code'), 'text', '', {}, 'one-time-code')}
<button type="submit">${say('confirm.submit')}</button>
</form>
${(p.otherApps ?? []).map((kind) => setUpOther(say, p, p.action, kind))}
${
  p.offerPasskey
    ? html`<p>${say('enrol.orPasskey')}</p>
${addPasskey(say)}`
    : ''
}
${
  p.offerEmail
    ? html`<p>${say('enrol.orEmail')}</p>
${sendEmailCode(say, p, p.action)}`
    : ''
}`,
  }));
}

export interface EmailCodePage extends StepFields {
  box: string;
  /** Where the code (`email_code`) and "send another" (`send=email`) are posted. */
  action: string;
  /** The person's address, where the code went. */
  address: string;
  /** A code was just mailed. */
  sent: boolean;
  error?: Text;
}

/** Codes by email being set up: a code was mailed; the person types it. */
export function emailCodePage(p: EmailCodePage): Page {
  return page((say) => ({
    title: say('enrol.title'),
    box: p.box,
    body: html`<h1>${say('email.heading')}</h1>
${alert(say, p.error)}
${emailCodeIntro(say, p, p.action, { address: p.address, sent: p.sent })}
<form method="post" action="${p.action}">
${stepHidden(p)}
${field('email_code', say('email.code'), 'text', '', {}, 'one-time-code')}
<p class="hint">${say('email.codeHint')}</p>
<button type="submit">${say('confirm.submit')}</button>
</form>`,
  }));
}

export interface RecoveryCodesPage extends StepFields {
  box: string;
  codes: string[];
  /** Where Continue goes: a form posted with the CSRF token (`post`), or a link. */
  action: string;
  post: boolean;
}

/** Ten recovery codes, shown this once. */
export function recoveryCodesPage(p: RecoveryCodesPage): Page {
  return page((say) => ({
    title: say('account.recoveryCodes'),
    box: p.box,
    body: html`<h1>${say('codes.heading')}</h1>
<p role="status">${say('codes.keep')}</p>
<ul class="codes" id="recovery-codes">${p.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
${
  p.post
    ? html`<form method="post" action="${p.action}">
${stepHidden(p)}
<button type="submit">${say('common.continue')}</button>
</form>`
    : html`<p><a href="${p.action}">${say('common.continue')}</a></p>`
}`,
  }));
}
