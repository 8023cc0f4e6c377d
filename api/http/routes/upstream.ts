// Signing in through an IdentityProvider (docs/guides/upstream-providers.md): its button on the
// sign-in page starts a sign-in there (oidc, oauth2, github, saml) or opens the directory's password
// form (ldap); the provider's answer comes back to the callback (saml: posted to the ACS, and the
// box's SP metadata served beside it); the person it names is made or
// linked (api/people/upstream/admit.ts) and signed in like any other, second factor and all
// (api/http/sign-in-steps.ts proceed). From the account page the same way links a provider to
// the signed-in person, and unlinks it. This file only translates: the rules are in
// api/people/upstream/.
import { Request, Response, Router } from '../router.js';
import { minutesUntil, secondsUntil, type Attempts } from '../../people/attempts.js';
import { unlink, type AdmitServices } from '../../people/upstream/admit.js';
import { proceed } from '../../people/steps.js';
import { signInAtDirectory } from '../../people/ways/password.js';
import { throughProvider } from '../../people/ways/upstream.js';
import {
  beginUpstream,
  enabledProvider,
  finishSamlUpstream,
  finishUpstream,
  labelOf,
  type Begun,
  type FlowServices,
} from '../../people/upstream/flow.js';
import { spMetadata } from '../../people/upstream/saml-metadata.js';
import { boxSamlKeys } from '../../saml/box-keys.js';
import { newSamlId } from '../../saml/names.js';
import { formPostPage, FORM_POST_SCRIPT_SOURCE } from '../../ui/form-post-page.js';
import type { LinkRefusal } from '../../people/upstream/linking.js';
import { UpstreamError, type UpstreamProfile } from '../../people/upstream/profile.js';
import type { Metrics } from '../../metrics.js';
import type { IdentityProvider } from '../../types.js';
import { directorySignInPage, providerFaultPage, type OfferedProvider } from '../../ui/upstream-pages.js';
import { words, type Text } from '../../ui/language.js';
import { messagePage, signInAgain, type WayOn } from '../../ui/pages.js';
import { browserPage } from '../browser-pages.js';
import { ACCOUNT_PATH, confirmPath, factorChange, holderOrSignIn, provenRecently } from '../account-page.js';
import { pageForm } from '../body.js';
import {
  appendCookie,
  browserFacts,
  cookieNames,
  cookieOptions,
  cookies,
  csrfToken,
  csrfValid,
  type BrowserServices,
} from '../browser-session.js';
import { hookWords, invalidForm, renderPage } from '../pages.js';
import { acrParam, goOn } from '../sign-in-steps.js';
import { safeReturnTo, type DirectorySignIn } from './sign-in.js';
import type { Logger } from '../../log.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  attempts: Attempts;
  metrics: Metrics;
  log: Logger;
}

export type UpstreamRouterServices = BrowserServices & FlowServices & AdmitServices & Needs;

type Body = Record<string, unknown>;
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The cookie binding a sign-in at a provider to the browser that began it: as long as the sign-in may take. */
const BINDING_SECONDS = 10 * 60;
const bindingCookie = (svc: BrowserServices): string => `${cookieNames(svc).step.replace(/_step$/, '')}_upstream`;

const offered = (p: IdentityProvider): OfferedProvider => ({ id: p.id, label: labelOf(p), directory: p.type === 'ldap' });

/** Why nobody was signed in, in words a person can act on. */
function refusalWords(why: LinkRefusal, p: IdentityProvider, profile: UpstreamProfile, message?: string): Text {
  const provider = labelOf(p);
  switch (why) {
    case 'hook-refused':
      // A Hook's words (personCreating), said to be its, as it wrote them for the person.
      return message !== undefined ? hookWords(message) : words('upstream.notCreated', { provider });
    case 'linked-to-another':
      return words('upstream.linkedToAnother', { provider });
    case 'linked-here-already':
      return words('upstream.linkedHereAlready', { provider });
    case 'email-taken':
      return profile.email
        ? words('upstream.emailTaken', { provider, email: profile.email })
        : words('upstream.emailTakenUnnamed', { provider });
    case 'no-email':
      return profile.unusableEmail
        ? words('upstream.unusableEmail', { provider, email: profile.unusableEmail })
        : words('upstream.noEmail', { provider });
    case 'not-created':
      return words('upstream.notCreated', { provider });
  }
}

/** The routes, and the directory's sign-in for the sign-in page's own password form (ldap.passwordForm). */
export function upstreamRouter(svc: UpstreamRouterServices): { router: Router; signInThroughDirectory: DirectorySignIn } {
  const router = new Router();
  const box = svc.config.box;
  const toAccount: WayOn = { href: ACCOUNT_PATH, label: words('wayOn.account') };
  /** A sign-in that ends here, with a way on: sign in again, unless the page says where else. */
  const problem = (res: Response, status: number, title: Text, message: Text, next: WayOn[] = [signInAgain()]): void =>
    renderPage(res, status, messagePage(box, title, message, true, next));
  const unknown = (res: Response): void => problem(res, 404, words('upstream.noSuch'), words('upstream.noSuchMessage'));

  /**
   * What a provider's failure shows; the reason is logged and audited, never shown (it may name the
   * provider's internals). A fault of the provider's set-up is logged as an error: an admin must act.
   */
  function failed(res: Response, p: IdentityProvider, err: unknown, address: string, returnTo = '/auth/signed-in'): void {
    if (!(err instanceof UpstreamError)) throw err;
    const said = { provider: p.id, failure: err.failure, reason: err.message };
    if (err.failure === 'misconfigured') svc.log.error(said, 'upstream provider misconfigured: nobody can sign in through it');
    else if (err.failure === 'unusable') svc.log.error(said, "upstream provider's answer unusable: nobody can sign in through it as set");
    else svc.log.warn(said, 'upstream sign-in failed');
    svc.audit.record({ event: 'upstream', action: 'refused', provider: p.id, reason: `${err.failure}: ${err.message}`, address });
    const label = labelOf(p);
    if (err.failure === 'misconfigured')
      return renderPage(res, 502, providerFaultPage({ box, provider: label, returnTo: safeReturnTo(returnTo) }));
    if (err.failure === 'unavailable')
      return problem(
        res,
        503,
        words('upstream.notAnswering', { provider: label }),
        words('upstream.notAnsweringMessage', { provider: label }),
      );
    if (err.failure === 'refused') return problem(res, 403, words('upstream.notSignedIn'), words('upstream.refused', { provider: label }));
    if (err.failure === 'unusable')
      return problem(res, 400, words('upstream.notSignedIn'), words('upstream.unusable', { provider: label }));
    problem(res, 400, words('upstream.notSignedIn'), words('upstream.notCompleted'));
  }

  /** The person the provider named: made or linked, then signed in (or the link done, from the account page). */
  async function arrive(req: Request, res: Response, p: IdentityProvider, profile: UpstreamProfile, begun: Begun): Promise<void> {
    let linkFor: number | undefined;
    if (begun.linkUser !== null) {
      // A link is for the person who began it, in this browser, still signed in as them.
      const holder = await holderOrSignIn(svc, req, res);
      if (!holder) return;
      if (holder.user.id !== begun.linkUser)
        return problem(res, 403, words('upstream.notLinkedTitle'), words('upstream.someoneElse'), [toAccount]);
      linkFor = holder.user.id;
    }
    const answer = await throughProvider(svc, p, profile, linkFor, svc.addressOf(req));
    if ('refused' in answer)
      return linkFor
        ? problem(res, 403, words('upstream.notLinkedTitle'), refusalWords(answer.refused, p, profile, answer.message), [toAccount])
        : problem(res, 403, words('upstream.notSignedIn'), refusalWords(answer.refused, p, profile, answer.message));
    if ('linked' in answer) return void res.redirect(303, `${ACCOUNT_PATH}?changed=provider-linked`);
    const target = { returnTo: safeReturnTo(begun.returnTo), acr: acrParam(begun.acr) };
    const went = await proceed(svc, browserFacts(svc, req), answer.proven, target);
    // A Hook refused the sign-in (signingIn): said here, where the provider's answer arrived, in its words.
    if (went.refused !== undefined) return problem(res, 403, words('upstream.notSignedIn'), hookWords(went.refused));
    goOn(svc, res, went, target);
  }

  /** The sign-in's way back, from a form or a query; a link from the account page: the person it is for. */
  async function begunFrom(req: Request, res: Response, fields: Body): Promise<Begun | undefined> {
    if (text(fields.link) !== '1') return { returnTo: safeReturnTo(fields.return_to), acr: acrParam(fields.acr) ?? null, linkUser: null };
    const holder = await holderOrSignIn(svc, req, res);
    if (!holder) return undefined;
    // A linked provider is one more way in: adding it is a credential change, after a recent proof.
    if (!provenRecently(holder)) return void res.redirect(303, confirmPath(ACCOUNT_PATH));
    return { returnTo: ACCOUNT_PATH, acr: null, linkUser: holder.user.id };
  }

  // The sign-in page's button (a form: its CSRF token is checked, so another site cannot start sign-ins in a browser).
  router.post(browserPage('/auth/upstream/:id/start'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const p = await enabledProvider(svc, req.params.id);
    if (!p) return unknown(res);
    const begun = await begunFrom(req, res, body);
    if (!begun) return;
    if (p.type === 'ldap') {
      const query = new URLSearchParams({
        return_to: begun.returnTo,
        ...(begun.acr ? { acr: begun.acr } : {}),
        ...(begun.linkUser !== null ? { link: '1' } : {}),
      });
      return res.redirect(303, `/auth/upstream/${encodeURIComponent(p.id)}?${query}`);
    }
    const address = svc.addressOf(req);
    try {
      const begin = await beginUpstream(svc, p, begun, address);
      if ('throttled' in begin) {
        const { retryAt } = begin.throttled;
        const minutes = minutesUntil(retryAt);
        const message = words(minutes === 1 ? 'upstream.tooManyBegunOne' : 'upstream.tooManyBegun', { minutes });
        return renderPage(res, 429, messagePage(box, words('upstream.tooMany'), message), { 'Retry-After': String(secondsUntil(retryAt)) });
      }
      appendCookie(res, `${bindingCookie(svc)}=${begin.binding}${cookieOptions(svc, BINDING_SECONDS)}`);
      res.redirect(303, begin.url.href);
    } catch (err) {
      failed(res, p, err, address, begun.returnTo);
    }
  });

  router.get(browserPage('/auth/upstream/:id/callback'), async (req, res) => {
    const id = req.params.id;
    const callback = new URL(req.originalUrl, svc.config.baseUrl);
    const binding = cookies(req)[bindingCookie(svc)];
    // The binding is used once, whatever comes of it.
    appendCookie(res, `${bindingCookie(svc)}=${cookieOptions(svc, 0)}`);
    const p = await enabledProvider(svc, id);
    if (!p || p.type === 'ldap' || p.type === 'saml') return unknown(res);
    let finished;
    try {
      finished = await finishUpstream(svc, id, callback, binding);
    } catch (err) {
      return failed(res, p, err, svc.addressOf(req));
    }
    await arrive(req, res, finished.provider, finished.profile, finished.begun);
  });

  // The box's SP metadata for a saml provider: what its administrator pastes into the identity
  // provider (the SP entity ID is this very URL). Marked a page: it is for people and IdPs to read, not the API's.
  router.get(browserPage('/auth/upstream/:id/saml/metadata'), async (req, res) => {
    const p = await enabledProvider(svc, req.params.id);
    if (!p || p.type !== 'saml') return unknown(res);
    res.type('application/samlmetadata+xml').send(spMetadata(svc.config.baseUrl, p, boxSamlKeys(svc.keyring), newSamlId()));
  });

  // The Assertion Consumer Service (HTTP-POST binding): the identity provider's Response, through the browser.
  router.post(browserPage('/auth/upstream/:id/saml/acs'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    const p = await enabledProvider(svc, req.params.id);
    if (!p || p.type !== 'saml') return unknown(res);
    const binding = cookies(req)[bindingCookie(svc)];
    // A POST from the identity provider's site carries no SameSite=Lax cookie: the browser posts
    // the same Response once more from the box's own page, which carries it (the binding holds).
    if (binding === undefined && text(body.bounced) !== '1') {
      const fields = { SAMLResponse: text(body.SAMLResponse), bounced: '1' };
      return renderPage(res, 200, formPostPage(box, req.originalUrl, fields), {}, { inlineScript: FORM_POST_SCRIPT_SOURCE });
    }
    // The binding is used once, whatever comes of it.
    appendCookie(res, `${bindingCookie(svc)}=${cookieOptions(svc, 0)}`);
    let finished;
    try {
      finished = await finishSamlUpstream(svc, p.id, text(body.SAMLResponse), binding);
    } catch (err) {
      return failed(res, p, err, svc.addressOf(req));
    }
    await arrive(req, res, finished.provider, finished.profile, finished.begun);
  });

  const directoryPage = (
    req: Request,
    res: Response,
    p: IdentityProvider,
    status: number,
    shown: { returnTo: string; acr?: string; link: boolean; username?: string; error?: Text },
  ): void => renderPage(res, status, directorySignInPage({ box, csrf: csrfToken(svc, req, res), provider: offered(p), ...shown }));

  router.get(browserPage('/auth/upstream/:id'), async (req, res) => {
    const p = await enabledProvider(svc, req.params.id);
    if (!p || p.type !== 'ldap') return unknown(res);
    const acr = acrParam(req.query.acr);
    directoryPage(req, res, p, 200, { returnTo: safeReturnTo(req.query.return_to), ...(acr ? { acr } : {}), link: req.query.link === '1' });
  });

  // A directory's password form: counted before it is checked, as the box's own (api/people/attempts.ts).
  router.post(browserPage('/auth/upstream/:id'), ...pageForm, async (req, res) => {
    const body = req.body as Body;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const p = await enabledProvider(svc, req.params.id);
    if (!p || p.type !== 'ldap') return unknown(res);
    const begun = await begunFrom(req, res, body);
    if (!begun) return;
    await signInThroughDirectory(req, res, p, text(body.username), text(body.password), begun);
  });

  /** A directory's check of a username and password (its own form, or the sign-in page's: ldap.passwordForm). */
  async function signInThroughDirectory(
    req: Request,
    res: Response,
    p: IdentityProvider,
    typed: string,
    password: string,
    begun: Begun,
  ): Promise<void> {
    const username = typed.trim();
    const shown = { returnTo: begun.returnTo, ...(begun.acr ? { acr: begun.acr } : {}), link: begun.linkUser !== null, username };
    const address = svc.addressOf(req);
    const answer = await signInAtDirectory(svc, p, { username, password, address });
    if ('failed' in answer) return failed(res, p, answer.failed, address, begun.returnTo);
    if ('throttled' in answer) {
      const minutes = minutesUntil(answer.throttled.retryAt);
      return directoryPage(req, res, p, 429, {
        ...shown,
        error: words(minutes === 1 ? 'signIn.throttledOne' : 'signIn.throttled', { minutes }),
      });
    }
    if ('refused' in answer) return directoryPage(req, res, p, 401, { ...shown, error: words('upstream.directoryWrong') });
    if ('unchecked' in answer) return failed(res, p, new Error(answer.unchecked), address);
    await arrive(req, res, p, answer.proven, begun);
  }

  router.post(browserPage('/auth/account/providers/unlink'), ...pageForm, async (req, res) => {
    const person = await factorChange(svc, req, res);
    if (!person) return;
    const provider = text((req.body as Body).provider);
    // The person's other browsers signed in through it end; the one they unlink it at stays theirs.
    const why = await unlink(svc, person.user.id, provider, { user: String(person.user.id) }, { keep: person.browser.sid });
    if (why === 'only-way-in') return problem(res, 409, words('upstream.notUnlinked'), words('upstream.onlyWayIn'));
    if (why === 'not-linked') return problem(res, 404, words('upstream.notUnlinked'), words('upstream.notLinkedHere'));
    res.redirect(303, `${ACCOUNT_PATH}?changed=provider-unlinked`);
  });

  return { router, signInThroughDirectory };
}
