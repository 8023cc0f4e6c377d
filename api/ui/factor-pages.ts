// The pages of a sign-in's second step (docs/guides/second-factors.md):
// the second factor asked for, a TOTP enrolled (its QR code and secret), recovery codes shown
// once. The forms post back to api/http/routes/factors.ts; the account page is api/ui/account-page.ts.
import { html, Html } from './html.js';
import { field, hidden, page, passkeyButton } from './frame.js';

/** Where a step's page goes on to: carried by its forms. */
export interface StepFields {
  csrf: string;
  returnTo: string;
  acr: string | undefined;
}

const stepHidden = (s: StepFields): Html[] => hidden({ csrf: s.csrf, return_to: s.returnTo, acr: s.acr });
const alert = (error: string | undefined): Html | false => !!error && html`<p class="error" role="alert">${error}</p>`;

/** A step's page asked for without its step (used, expired, ended, never begun): a link to sign in again. */
export function signInAgainPage(box: string, returnTo: string): string {
  return page({
    title: 'Sign in again',
    box,
    body: html`<h1>Sign in again</h1>
<p class="notice" role="alert">This sign-in has ended or was never begun.</p>
<p><a href="/auth/sign-in?${new URLSearchParams({ return_to: returnTo }).toString()}">Sign in</a></p>`,
  });
}

export interface SecondFactorPage extends StepFields {
  box: string;
  totp: boolean;
  passkeys: boolean;
  recoveryCodes: boolean;
  /** The sign-in asked for a passkey (acr phr) and the person has one: nothing else is offered. */
  passkeyOnly: boolean;
  /** The sign-in asked for a passkey and the person has none yet: their code first, then they add one. */
  passkeyNext: boolean;
  error?: string;
}

export function secondFactorPage(p: SecondFactorPage): string {
  // The passkeys script reads the page's CSRF token, return_to and acr from its inputs: a page
  // with no form (a person whose only factor is a passkey) carries them beside the button.
  const passkey =
    p.passkeys &&
    html`${stepHidden(p)}
${passkeyButton('use-passkey', 'Use a passkey', 'authenticate')}`;
  const form = (
    id: string,
    label: string,
    autocomplete: string,
    hint: string,
  ): Html => html`<form method="post" action="/auth/sign-in/second-factor">
${stepHidden(p)}
${field(id, label, 'text', '', {}, autocomplete)}
<p class="hint">${hint}</p>
<button type="submit">Continue</button>
</form>`;
  return page({
    title: 'Second factor',
    box: p.box,
    body: html`<h1>One more step</h1>
${alert(p.error)}
${
  p.passkeyOnly
    ? html`<p>This sign-in asks for a passkey: a code from an app or a recovery code is not enough here.</p>
${passkey}`
    : html`${p.passkeyNext ? html`<p class="notice" role="status">This sign-in asks for a passkey, and you have none yet. Give your code first: you add a passkey next.</p>` : ''}
${passkey}
${p.totp && form('code', 'Code from your authenticator app', 'one-time-code', 'Six digits; a new one every 30 seconds.')}
${
  p.recoveryCodes &&
  html`<details${p.totp || p.passkeys ? '' : html` open`}><summary>Lost your phone?</summary>
${form('recovery_code', 'Recovery code', 'off', 'One of the ten codes you kept when you set up your second factor. Using one removes your second factors: you set up a new one next.')}
</details>`
}`
}`,
  });
}

export interface EnrolPage extends StepFields {
  box: string;
  /** Where the confirming code is posted. */
  action: string;
  /** The QR code of the otpauth:// URI, as inline SVG (no image source for the CSP to allow). */
  qrSvg: string;
  secret: string;
  /** Only a passkey meets what the sign-in asked (acr phr). */
  passkeyOnly: boolean;
  /** A passkey may be added instead of the app (a sign-in's enrolment; the account has its passkeys page). */
  offerPasskey?: boolean;
  error?: string;
}

const ADD_PASSKEY = passkeyButton('add-passkey', 'Add a passkey', 'register');

export function enrolPage(p: EnrolPage): string {
  return page({
    title: 'Set up a second factor',
    box: p.box,
    body: p.passkeyOnly
      ? html`<h1>Add a passkey</h1>
${alert(p.error)}
<p>This sign-in asks for a passkey. Add one now: your device or your password manager keeps it.</p>
${stepHidden(p)}
${ADD_PASSKEY}`
      : html`<h1>Set up an authenticator app</h1>
${alert(p.error)}
<p>Scan this code with an authenticator app (any app that reads TOTP codes), or type the key below into it.</p>
<figure class="qr" role="img" aria-label="QR code of the key below">${new Html(p.qrSvg)}</figure>
<p>Key: <code id="totp-secret">${p.secret}</code></p>
<form method="post" action="${p.action}">
${stepHidden(p)}
${field('code', 'The code the app shows now', 'text', '', {}, 'one-time-code')}
<button type="submit">Confirm</button>
</form>
${
  p.offerPasskey
    ? html`<p>Or use a passkey instead: your device or your password manager keeps it.</p>
${ADD_PASSKEY}`
    : ''
}`,
  });
}

export interface RecoveryCodesPage extends StepFields {
  box: string;
  codes: string[];
  /** Where Continue goes: a form posted with the CSRF token (`post`), or a link. */
  action: string;
  post: boolean;
}

/** Ten recovery codes, shown this once. */
export function recoveryCodesPage(p: RecoveryCodesPage): string {
  return page({
    title: 'Recovery codes',
    box: p.box,
    body: html`<h1>Keep these recovery codes</h1>
<p role="status">Each code signs you in once if you lose your phone or your passkey. Write them down or store them in your password manager: this page is the only time they are shown.</p>
<ul class="codes" id="recovery-codes">${p.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
${
  p.post
    ? html`<form method="post" action="${p.action}">
${stepHidden(p)}
<button type="submit">Continue</button>
</form>`
    : html`<p><a href="${p.action}">Continue</a></p>`
}`,
  });
}
