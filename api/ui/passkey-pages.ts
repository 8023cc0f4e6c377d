// The person's own passkeys page (/auth/account/passkeys, docs/guides/passkeys.md): their passkeys,
// named, with a button to add one and a form to remove each.
import type { FactorSummary } from '../store/factors.js';
import { html } from './html.js';
import { confirmNotice } from './account-page.js';
import { page, passkeyButton } from './frame.js';

export interface PasskeysPage {
  box: string;
  csrf: string;
  email: string;
  passkeys: FactorSummary[];
  /** A proof given minutes ago: passkeys may be added and removed (else the page asks to confirm it is you first). */
  recent: boolean;
  /** Why the last change was refused, when it was. */
  error?: string;
}

const day = (d: Date | null): string => (d ? d.toISOString().slice(0, 10) : 'never');

export function passkeysPage(p: PasskeysPage): string {
  return page({
    title: 'Passkeys',
    box: p.box,
    body: html`<h1>Passkeys</h1>
<p>Signed in as ${p.email}. A passkey signs you in without a password, with your device's screen lock.</p>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
${!p.recent && confirmNotice('/auth/account/passkeys')}
${
  p.passkeys.length
    ? html`<table class="passkeys">
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col"></th></tr></thead>
<tbody>${p.passkeys.map(
        (
          k,
        ) => html`<tr><td>${k.name}</td><td>${k.deviceType === 'multiDevice' ? 'synced' : 'this device only'}</td><td>${day(k.createdAt)}</td><td>${day(k.lastUsedAt)}</td>
<td>${p.recent && html`<form method="post" action="/auth/account/passkeys/remove"><input type="hidden" name="csrf" value="${p.csrf}"><input type="hidden" name="id" value="${String(k.id)}"><button type="submit" aria-label="Remove ${k.name}">Remove</button></form>`}</td></tr>`,
      )}</tbody>
</table>`
    : html`<p>You have no passkey yet.</p>`
}
${
  p.recent &&
  html`<form id="passkey-form">
<input type="hidden" name="csrf" value="${p.csrf}">
<div class="field">
<label for="passkey-name">Name of the new passkey</label>
<input id="passkey-name" name="name" type="text" maxlength="64" placeholder="Passkey ${String(p.passkeys.length + 1)}">
</div>
</form>
${passkeyButton('add-passkey', 'Add a passkey', 'register')}`
}`,
  });
}
