// The pages of a sign-in's second step (docs/guides/second-factors.md):
// the second factor asked for, an app enrolled (its QR code and secret), mailed codes set up,
// recovery codes shown once. No kind is named here: each kind's part of a page is drawn from its
// declaration (api/factor-kinds.ts), by its shape — `webauthn`, `app` or `mailed`. The forms post back to api/http/routes/factors.ts; the account page is api/ui/account-page.ts.
import { html, Html } from './html.js';
import { field, hidden, page, passkeyButton, type Page } from './frame.js';
import { textOf, type Say, type Text } from './language.js';
import {
  appOf,
  isAppKind,
  isMailedKind,
  isWebAuthnKind,
  mailedOf,
  webauthnOf,
  type AppFactorKind,
  type FactorKind,
  type MailedFactorKind,
  type WebAuthnFactorKind,
} from '../factor-kinds.js';

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
  /**
   * The kinds the person holds, in the order lists show them: each drawn as its declaration says
   * (api/factor-kinds.ts): a `webauthn` kind its button, an `app` kind a form for its code, a
   * `mailed` kind "send a code" and a form for the code mailed.
   */
  kinds: readonly FactorKind[];
  /** The person's address, where mailed codes go. */
  address: string;
  /** The mailed kind whose code was just sent. */
  sent?: MailedFactorKind;
  /**
   * Recovery codes are left. They are no kind (api/factor-kinds.ts RECOVERY_CODES): they stand in for
   * a factor lost, so the page offers them apart, as the way out, whatever the person holds.
   */
  recoveryCodes: boolean;
  /** The person holds a factor (api/factor-kinds.ts): the recovery codes, their way out, stay folded. */
  hasFactor: boolean;
  /**
   * The sign-in asked for a phishing-resistant factor (acr phr, which only a `webauthn` kind meets):
   * `only`: the person holds one, and nothing else is offered; `next`: they hold none yet, their
   * code first, then they add one.
   */
  phr?: 'only' | 'next';
  error?: Text;
}

/**
 * "Send a code" of a mailed kind: a form of its own, posting `send=<kind>` to `action` (a new code
 * replaces the last) — the button's value, so that a code typed in another form of the page never asks for one.
 */
const sendCode = (say: Say, s: StepFields, action: string, kind: MailedFactorKind): Html => html`<form method="post" action="${action}">
${stepHidden(s)}
<button type="submit" name="send" value="${kind}" class="secondary" id="send-${kind}-code">${say(mailedOf(kind).words.send)}</button>
</form>`;

/** Mailed codes of `kind` on a page: what they are, that one was sent (to `address`), and how to ask for one. */
const mailedIntro = (say: Say, s: StepFields, action: string, kind: MailedFactorKind, address: string, sent: boolean): Html => {
  const said = mailedOf(kind).words;
  return html`<p>${say(said.intro, { email: address })}</p>
${sent ? html`<p class="notice" role="status" id="${kind}-code-sent">${say(said.sent, { email: address })}</p>` : ''}
${sendCode(say, s, action, kind)}`;
};

export function secondFactorPage(p: SecondFactorPage): Page {
  const action = '/auth/sign-in/second-factor';
  // The passkeys script reads the page's CSRF token, return_to and acr from its inputs: a page
  // with no form (a person whose only factor is a passkey) carries them beside the button.
  const button = (say: Say, kind: WebAuthnFactorKind): Html => {
    const { path, words: said } = webauthnOf(kind);
    return html`${stepHidden(p)}
${passkeyButton(say, `use-${kind}`, say(said.use), 'authenticate', path)}`;
  };
  const form = (say: Say, id: string, label: Html, autocomplete: string, hint: Html): Html => html`<form method="post" action="${action}">
${stepHidden(p)}
${field(id, label, 'text', '', {}, autocomplete)}
<p class="hint">${hint}</p>
<button type="submit">${say('common.continue')}</button>
</form>`;
  /** What a kind the person holds offers on the page, by its shape. */
  const offered = (say: Say, kind: FactorKind): Html | '' => {
    if (isWebAuthnKind(kind)) return button(say, kind);
    if (isAppKind(kind)) {
      const app = appOf(kind);
      return form(say, app.field, say(app.words.code), 'one-time-code', say(app.words.hint));
    }
    if (isMailedKind(kind)) {
      const mailed = mailedOf(kind);
      return html`<section id="${kind}-codes"><h2>${say(mailed.words.heading)}</h2>
${mailedIntro(say, p, action, kind, p.address, p.sent === kind)}
${form(say, mailed.field, say(mailed.words.code), 'one-time-code', say(mailed.words.hint))}
</section>`;
    }
    return '';
  };
  return page((say) => ({
    title: say('step.title'),
    box: p.box,
    body: html`<h1>${say('step.heading')}</h1>
${alert(say, p.error)}
${
  p.phr === 'only'
    ? html`<p>${say('step.passkeyOnly')}</p>
${p.kinds.filter(isWebAuthnKind).map((kind) => button(say, kind))}`
    : html`${p.phr === 'next' ? html`<p class="notice" role="status">${say('step.passkeyNext')}</p>` : ''}
${p.kinds.map((kind) => offered(say, kind))}
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
  /**
   * The other kinds that may be set up instead (a sign-in's enrolment; the account has its own
   * buttons), in the order lists show them: another app a button posting `setup=<kind>` to
   * `action`, a `webauthn` kind its button, a `mailed` kind "send a code" to `action`.
   */
  offer?: readonly FactorKind[];
  /** Where the confirming code is posted. */
  action: string;
  /** The QR code of the otpauth:// URI, as inline SVG (no image source for the CSP to allow). */
  qrSvg: string;
  secret: string;
  /** The sign-in asked for acr phr: only a `webauthn` kind of `offer` meets it, and nothing else is offered. */
  phrOnly: boolean;
  error?: Text;
}

/** A WebAuthn kind's "add" button. */
const addButton = (say: Say, kind: WebAuthnFactorKind): Html =>
  passkeyButton(say, `add-${kind}`, say(webauthnOf(kind).words.add), 'register', webauthnOf(kind).path);

/** A button that sets up an app of another kind instead, posted to `action`. */
const setUpOther = (say: Say, s: StepFields, action: string, kind: AppFactorKind): Html => html`<form method="post" action="${action}">
${stepHidden(s)}
<button type="submit" name="setup" value="${kind}" class="secondary">${say(appOf(kind).words.setUp)}</button>
</form>`;

/** A kind other than an app offered on the enrolment page instead, by its shape. */
const setUpInstead = (say: Say, s: StepFields, action: string, kind: FactorKind): Html | '' => {
  if (isWebAuthnKind(kind))
    return html`<p>${say(webauthnOf(kind).words.orAdd)}</p>
${addButton(say, kind)}`;
  if (isMailedKind(kind))
    return html`<p>${say(mailedOf(kind).words.orSetUp)}</p>
${sendCode(say, s, action, kind)}`;
  return '';
};

export function enrolPage(p: EnrolPage): Page {
  const app = appOf(p.app);
  const offer = p.offer ?? [];
  const phr = offer.filter(isWebAuthnKind);
  return page((say) => ({
    title: say('enrol.title'),
    box: p.box,
    body: p.phrOnly
      ? html`<h1>${phr[0] ? say(webauthnOf(phr[0]).words.add) : ''}</h1>
${alert(say, p.error)}
<p>${say('enrol.passkeyOnly')}</p>
${stepHidden(p)}
${phr.map((kind) => addButton(say, kind))}`
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
${offer.filter(isAppKind).map((kind) => setUpOther(say, p, p.action, kind))}
${offer.map((kind) => setUpInstead(say, p, p.action, kind))}`,
  }));
}

export interface MailedCodePage extends StepFields {
  box: string;
  /** The mailed kind being set up (api/factor-kinds.ts `mailed`): its words, and the field of its code. */
  kind: MailedFactorKind;
  /** Where the code and "send another" (`send=<kind>`) are posted. */
  action: string;
  /** The person's address, where the code went. */
  address: string;
  /** A code was just mailed. */
  sent: boolean;
  error?: Text;
}

/** Mailed codes being set up: a code was mailed; the person types it. */
export function mailedCodePage(p: MailedCodePage): Page {
  const mailed = mailedOf(p.kind);
  return page((say) => ({
    title: say('enrol.title'),
    box: p.box,
    body: html`<h1>${say(mailed.words.heading)}</h1>
${alert(say, p.error)}
${mailedIntro(say, p, p.action, p.kind, p.address, p.sent)}
<form method="post" action="${p.action}">
${stepHidden(p)}
${field(mailed.field, say(mailed.words.code), 'text', '', {}, 'one-time-code')}
<p class="hint">${say(mailed.words.hint)}</p>
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
