// The person's own passkeys page (/auth/account/passkeys, docs/guides/passkeys.md): their passkeys,
// named, with a button to add one and a form to remove each.
import type { FactorSummary } from '../store/factors.js';
import { html, type Html } from './html.js';
import { confirmNotice } from './account-page.js';
import { page, passkeyButton, type Page } from './frame.js';
import { textOf, type Say, type Text } from './language.js';

export interface PasskeysPage {
  box: string;
  csrf: string;
  email: string;
  passkeys: FactorSummary[];
  /** A proof given minutes ago: passkeys may be added and removed (else the page asks to confirm it is you first). */
  recent: boolean;
  /** Why the last change was refused, when it was. */
  error?: Text;
}

const day = (say: Say, d: Date | null): Html | string => (d ? d.toISOString().slice(0, 10) : say('common.never'));

export function passkeysPage(p: PasskeysPage): Page {
  return page((say) => ({
    title: say('passkeys.title'),
    box: p.box,
    body: html`<h1>${say('passkeys.title')}</h1>
<p>${say('passkeys.intro', { email: p.email })}</p>
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
${!p.recent && confirmNotice(say, '/auth/account/passkeys')}
${
  p.passkeys.length
    ? html`<table class="passkeys">
<thead><tr><th scope="col">${say('table.name')}</th><th scope="col">${say('table.kind')}</th><th scope="col">${say('table.added')}</th><th scope="col">${say('table.lastUsed')}</th><th scope="col"><span class="visually-hidden">${say('table.actions')}</span></th></tr></thead>
<tbody>${p.passkeys.map(
        (
          k,
        ) => html`<tr><td>${k.name}</td><td>${k.deviceType === 'multiDevice' ? say('passkeys.synced') : say('passkeys.thisDevice')}</td><td>${day(say, k.createdAt)}</td><td>${day(say, k.lastUsedAt)}</td>
<td>${p.recent && html`<form method="post" action="/auth/account/passkeys/remove"><input type="hidden" name="csrf" value="${p.csrf}"><input type="hidden" name="id" value="${String(k.id)}"><button type="submit" aria-label="${say('passkeys.removeNamed', { name: k.name })}">${say('common.remove')}</button></form>`}</td></tr>`,
      )}</tbody>
</table>`
    : html`<p>${say('passkeys.none')}</p>`
}
${
  p.recent &&
  html`<form id="passkey-form">
<input type="hidden" name="csrf" value="${p.csrf}">
<div class="field">
<label for="passkey-name">${say('passkeys.name')}</label>
<input id="passkey-name" name="name" type="text" maxlength="64" placeholder="${say('passkeys.placeholder', { n: p.passkeys.length + 1 })}">
</div>
</form>
${passkeyButton(say, 'add-passkey', say('passkeys.add'), 'register')}`
}`,
  }));
}
