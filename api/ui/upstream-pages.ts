// The pages of signing in through an IdentityProvider: its button on the sign-in page, the
// password form of a directory (LDAP), and the account page's list of linked providers.
import { chosen, html, type Html } from './html.js';
import { field, hidden, page, type Page } from './frame.js';
import { textOf, type Say, type Text } from './language.js';

/** A provider as a page offers it. */
export interface OfferedProvider {
  id: string;
  label: string;
  /** A directory (LDAP) asks for its password on a page of the box; the others send the browser to the provider. */
  directory: boolean;
}

/** A button per provider: a form posting to the provider's start (CSRF-protected), or a link to a directory's own form. */
export function upstreamButtons(
  say: Say,
  providers: readonly OfferedProvider[],
  csrf: string,
  returnTo: string,
  acr: string | undefined,
): Html {
  if (!providers.length) return html``;
  const query = new URLSearchParams({ return_to: returnTo, ...(acr ? { acr } : {}) });
  return html`<div class="upstream">
${providers.map((p) =>
  p.directory
    ? html`<p><a class="button" id="upstream-${p.id}" href="/auth/upstream/${encodeURIComponent(p.id)}?${query.toString()}">${say('upstream.signInWith', { provider: chosen(p.label) })}</a></p>`
    : html`<form method="post" action="/auth/upstream/${encodeURIComponent(p.id)}/start">
${hidden({ csrf, return_to: returnTo, acr })}
<button type="submit" id="upstream-${p.id}">${say('upstream.signInWith', { provider: chosen(p.label) })}</button>
</form>`,
)}
</div>`;
}

export interface DirectoryPage {
  box: string;
  csrf: string;
  provider: OfferedProvider;
  returnTo: string;
  acr?: string;
  username?: string;
  error?: Text;
  /** A link from the account page, not a sign-in. */
  link?: boolean;
}

/** A directory's (LDAP) sign-in form: its username and password, checked by the directory, never kept. */
export function directorySignInPage(p: DirectoryPage): Page {
  return page((say) => ({
    title: say('upstream.signInWith', { provider: p.provider.label }),
    box: p.box,
    body: html`<h1>${say('upstream.signInWith', { provider: chosen(p.provider.label) })}</h1>
${p.error ? html`<p class="error" role="alert">${textOf(say, p.error)}</p>` : ''}
<form method="post" action="/auth/upstream/${encodeURIComponent(p.provider.id)}">
${hidden({ csrf: p.csrf, return_to: p.returnTo, acr: p.acr, link: p.link ? '1' : undefined })}
${field('username', say('field.username'), 'text', p.username ?? '', {}, 'username')}
${field('password', say('field.password'), 'password', '', {}, 'current-password')}
<button type="submit">${say('signIn.submit')}</button>
</form>
<p><a href="/auth/sign-in?return_to=${encodeURIComponent(p.returnTo)}">${say('upstream.otherWays')}</a></p>`,
  }));
}

/** A provider on the account page: linked (since when, the address it gave) or not. */
export interface ProviderLink {
  provider: OfferedProvider;
  linked?: { since: Date; email: string | null };
}

/** The account page's section: each provider, with a button to link or unlink it. */
export function linkedProvidersSection(say: Say, links: readonly ProviderLink[], csrf: string): Html {
  if (!links.length) return html``;
  return html`<section id="linked-providers"><h2>${say('upstream.providers')}</h2>
<ul>
${links.map((l) =>
  l.linked
    ? html`<li>${
        l.linked.email
          ? say('upstream.linkedAs', {
              provider: l.provider.label,
              email: l.linked.email,
              since: l.linked.since.toISOString().slice(0, 10),
            })
          : say('upstream.linked', { provider: l.provider.label, since: l.linked.since.toISOString().slice(0, 10) })
      }
<form method="post" action="/auth/account/providers/unlink">${hidden({ csrf, provider: l.provider.id })}<button type="submit" id="unlink-${l.provider.id}">${say('upstream.unlink')}</button></form></li>`
    : html`<li>${say('upstream.notLinked', { provider: l.provider.label })}
<form method="post" action="/auth/upstream/${encodeURIComponent(l.provider.id)}/start">${hidden({ csrf, link: '1', return_to: '/auth/account' })}<button type="submit" id="link-${l.provider.id}">${say('upstream.link')}</button></form></li>`,
)}
</ul></section>`;
}

/**
 * A provider whose set-up at the box does not hold (a client secret it refuses, metadata naming
 * another issuer): nothing the person did, and nothing starting again would mend. The cause is in
 * the box's log and audit trail, never on the page; the person may still sign in another way.
 */
export function providerFaultPage(p: { box: string; provider: string; returnTo: string }): Page {
  return page((say) => ({
    title: say('upstream.faultTitle', { provider: p.provider }),
    box: p.box,
    body: html`<h1>${say('upstream.faultTitle', { provider: p.provider })}</h1>
<p class="notice" role="alert">${say('upstream.fault', { provider: p.provider })}</p>
<p>${say('upstream.faultNext')}</p>
<p><a href="/auth/sign-in?return_to=${encodeURIComponent(p.returnTo)}">${say('upstream.otherWays')}</a></p>`,
  }));
}
