// The page of OAuth 2.0 Form Post Response Mode (api/oauth/response-mode.ts): the authorization
// response's values as hidden fields of a form that posts them to the client's redirect URI, and
// submits itself. Form Post §2: "Any technique supported by the User Agent MAY be used to cause
// the submission of the form [...] However, the Client MUST be able to process the message
// without regard for the mechanism by which the form submission was initiated."
import { createHash } from 'node:crypto';
import { hidden, page, type Page } from './frame.js';
import { html, Html } from './html.js';

/**
 * The one script of the page, inline, allowed by its hash alone (FORM_POST_SCRIPT_SOURCE in the
 * page's script-src): no other inline script runs, whatever a value carried. A module script from
 * the box would need a module-aware browser; this runs in any browser with scripts, and without
 * them the page's button posts the form.
 */
const FORM_POST_SCRIPT = "document.getElementById('form-post').submit();";

/** The page's Content-Security-Policy source for its script (api/http/pages.ts PageNeeds). */
export const FORM_POST_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(FORM_POST_SCRIPT).digest('base64')}'`;

/** `action`: the client's redirect URI as registered; `fields`: the response's values (code or tokens, state, iss; or the error). */
export function formPostPage(box: string, action: string, fields: Record<string, string>): Page {
  return page((say) => ({
    title: say('formPost.title'),
    box,
    body: html`<h1>${say('formPost.title')}</h1>
<form method="post" action="${action}" id="form-post">
${hidden(fields)}
<noscript><p>${say('formPost.noScript')}</p><button type="submit">${say('common.continue')}</button></noscript>
</form>
<script>${new Html(FORM_POST_SCRIPT)}</script>`,
  }));
}
