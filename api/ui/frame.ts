// The frame every page of the box shares: the document around a page's body, and the
// parts of its forms (hidden fields, labelled fields with their errors, the passkey
// button). Below every page module, so that pages import it and never each other for it.
import { NO_BRANDING, type Branding } from '../branding.js';
import { html, type Html } from './html.js';
import { ENGLISH, sayer, type Language, type Say } from './language.js';

/** What a page looks like for this request: the box's branding, the person's language. */
export interface Look {
  branding: Branding;
  language: Language;
}

export const PLAIN_LOOK: Look = { branding: NO_BRANDING, language: ENGLISH };

/** A page, rendered once the request's look is known (api/http/pages.ts renderPage). */
export type Page = (look: Look) => string;

export interface PageOptions {
  title: Html | string;
  box: string;
  body: Html;
  /** A page of tables (the account page): the card takes the width they need. */
  wide?: boolean;
}

/** The box's name as the page's head shows it: the company's logo and name, or "boxauth · box". */
function brandLine(box: string, b: Branding): Html {
  if (b.displayName === undefined) return html`<p class="brand">boxauth · <span>${box}</span></p>`;
  return html`<p class="brand">${b.logoUrl ? html`<img class="logo" src="${b.logoUrl}" alt="" height="32">` : ''}<span>${b.displayName}</span></p>`;
}

/** A way to get help, on every page of a box that names one. */
function supportLine(say: Say, b: Branding): Html | string {
  return b.supportUrl ? html`<p class="support"><a href="${b.supportUrl}">${say('frame.support')}</a></p>` : '';
}

/** A page in the frame every page shares, its words in the person's language. */
export function page(build: (say: Say) => PageOptions): Page {
  return ({ branding, language }) => {
    const say = sayer(language);
    const { title, box, body, wide } = build(say);
    return `<!doctype html>${
      html`<html lang="${language.tag}" dir="${language.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${branding.displayName ?? box}</title>
<link rel="stylesheet" href="/assets/boxauth.css">
${branding.primaryColor || branding.backgroundColor ? html`<link rel="stylesheet" href="/assets/brand.css">` : ''}
</head>
<body>
<main class="card${wide ? ' wide' : ''}">
${brandLine(box, branding)}
${body}
${supportLine(say, branding)}
</main>
</body>
</html>`.text
    }`;
  };
}

export function hidden(fields: Record<string, string | undefined>): Html[] {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
}

export function fieldError(id: string, messages: readonly (Html | string)[] | undefined): Html | false {
  return (
    !!messages?.length && html`<p class="error" id="${id}-error" role="alert">${messages.map((m, i) => html`${i ? ' ' : ''}${m}`)}</p>`
  );
}

export function field(
  id: string,
  label: Html | string,
  type: string,
  value: string,
  errors: Record<string, readonly (Html | string)[]>,
  autocomplete: string,
): Html {
  const describedBy = errors[id]?.length ? `${id}-error` : undefined;
  return html`<div class="field">
<label for="${id}">${label}</label>
<input id="${id}" name="${id}" type="${type}" value="${value}" autocomplete="${autocomplete}" required
  ${describedBy ? html`aria-invalid="true" aria-describedby="${describedBy}"` : ''}>
${fieldError(id, errors[id])}
</div>`;
}

/**
 * A button the passkeys script (api/ui/browser/passkeys.ts, /assets/passkeys.js) wires: it asks
 * `data-begin` for options, lets the browser make (`register`) or use (`authenticate`) a passkey,
 * and sends what it answered to `data-finish` (under /auth/<path>/: a WebAuthn kind's, api/factor-kinds.ts `webauthn`). Hidden until the script shows it: without the
 * script or WebAuthn, the page is what it was.
 */
export function passkeyButton(say: Say, id: string, label: Html | string, what: 'register' | 'authenticate', path = 'passkeys'): Html {
  // The script's own words (a prompt closed, the box's refusal) travel in the page's language on its error line.
  return html`<p class="passkey"><button type="button" id="${id}" data-begin="/auth/${path}/${what}/options" data-finish="/auth/${path}/${what}" hidden>${label}</button></p>
<p class="error" id="passkey-error" role="alert" hidden data-closed="${say('passkey.closed')}" data-failed="${say('passkey.failed')}" data-answered="${say('passkey.answered')}"></p>
<script type="module" src="/assets/passkeys.js"></script>`;
}
