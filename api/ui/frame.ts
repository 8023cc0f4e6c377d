// The frame every page of the box shares: the document around a page's body, and the
// parts of its forms (hidden fields, labelled fields with their errors, the passkey
// button). Below every page module, so that pages import it and never each other for it.
import { html, type Html } from './html.js';

export interface PageOptions {
  title: string;
  box: string;
  body: Html;
  /** A page of tables (the account page): the card takes the width they need. */
  wide?: boolean;
}

export function page({ title, box, body, wide }: PageOptions): string {
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${box}</title>
<link rel="stylesheet" href="/assets/boxauth.css">
</head>
<body>
<main class="card${wide ? ' wide' : ''}">
<p class="brand">boxauth · <span>${box}</span></p>
${body}
</main>
</body>
</html>`.text
  }`;
}

export function hidden(fields: Record<string, string | undefined>): Html[] {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
}

export function fieldError(id: string, messages: string[] | undefined): Html | false {
  return !!messages?.length && html`<p class="error" id="${id}-error" role="alert">${messages.join(' ')}</p>`;
}

export function field(
  id: string,
  label: string,
  type: string,
  value: string,
  errors: Record<string, string[]>,
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
 * and sends what it answered to `data-finish`. Hidden until the script shows it: without the
 * script or WebAuthn, the page is what it was.
 */
export function passkeyButton(id: string, label: string, what: 'register' | 'authenticate'): Html {
  return html`<p class="passkey"><button type="button" id="${id}" data-begin="/auth/passkeys/${what}/options" data-finish="/auth/passkeys/${what}" hidden>${label}</button></p>
<p class="error" id="passkey-error" role="alert" hidden></p>
<script type="module" src="/assets/passkeys.js"></script>`;
}
