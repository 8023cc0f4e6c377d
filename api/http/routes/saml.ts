// The box as a SAML 2.0 identity provider for its SAML apps (Client.saml; docs/guides/saml-apps.md):
// GET /auth/saml/metadata (the IdP metadata, signed), GET and POST /auth/saml/sso (an SP's AuthnRequest by
// HTTP-Redirect or HTTP-POST, and GET /auth/saml/sso?sp=<entity ID>, a sign-in the box starts for an app
// that allows it), POST /auth/saml/consent, GET /auth/saml/slo (an app's LogoutRequest, HTTP-Redirect, and an app's
// LogoutResponse in a sign-out's way through the apps: api/saml/logout-chains.ts). Each gathers what the box knows and asks api/saml/idp.ts what
// to do: a refusal on the box's page (never a redirect: until the request is checked, the box knows
// no place it may send anyone), the sign-in page (the box's own, coming back here), a step-up, the
// consent page, or the Response posted to the app's consumer service (api/ui/form-post-page.ts).
//
// The request, once checked, travels through the sign-in as `resume`: its facts under an HMAC of
// the box's CSRF key bound to this browser, so that nothing of it changes on the way and another
// browser cannot use it; it stands for an hour, as the sign-in marker of /auth/authorize does.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Request, Response, Router } from '../router.js';
import type { Audit } from '../../audit.js';
import type { AddressOf } from '../client-address.js';
import type { RecordCache } from '../../cache/record-cache.js';
import { acrOf } from '../../credentials/acr.js';
import type { Keyring } from '../../credentials/keyring.js';
import { subjectFor, type SubjectSettings } from '../../credentials/subjects.js';
import { consentOf, rememberConsent } from '../../oauth/consents.js';
import { shapedClaimsFor } from '../../oauth/shaped-claims.js';
import { assertionHooked } from '../../oauth/token-hooks.js';
import { acrWantedOf } from '../../people/steps.js';
import type { Policies } from '../../policy/evaluate.js';
import { requestUser } from '../../policy/requests.js';
import {
  decideSso,
  readLogoutRequest,
  readSsoRequest,
  samlResponse,
  samlStatusResponse,
  spendSsoRequest,
  unsolicitedRequest,
  attributeValues,
  type SloRequest,
  type SsoMessage,
  type SsoRequest,
  type SsoRequestLedger,
} from '../../saml/idp.js';
import { boxSamlKey } from '../../saml/box-keys.js';
import { idpMetadata } from '../../saml/idp-metadata.js';
import { answeredHop, logoutAnswerUrl } from '../../saml/logout-chains.js';
import { endSamlSignIn, recordSamlSignIn } from '../../saml/sign-ins.js';
import { SpUnavailable, type ServiceProvider, type ServiceProviders } from '../../saml/service-providers.js';
import { SamlRefusal } from '../../saml/xml.js';
import type { Stored } from '../../store/resources.js';
import type { Client, PrincipalUser } from '../../types.js';
import { formPostPage, FORM_POST_SCRIPT_SOURCE } from '../../ui/form-post-page.js';
import { words, type Text } from '../../ui/language.js';
import { consentPage, messagePage } from '../../ui/pages.js';
import type { Logger } from '../../log.js';
import { pageForm } from '../body.js';
import { browserPage } from '../browser-pages.js';
import { browserId, csrfToken, csrfValid, presentedBrowserId } from '../browser-session.js';
import { sendLogoutStep, signOutThroughApps, type SignOutServices } from '../saml-logout.js';
import { hookWords, renderPage, signedInPerson, signInForm, type SignedInPerson } from '../pages.js';
import { stepUp } from '../sign-in-steps.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  keyring: Keyring;
  samlRequests: SsoRequestLedger;
  clients: RecordCache<Stored<Client>>;
  /** The SAML apps by entity ID, their metadata read (api/saml/service-providers.ts). */
  serviceProviders: ServiceProviders;
  policies: Policies;
  users: RecordCache<PrincipalUser>;
  subjects: SubjectSettings;
  audit: Audit;
  log: Logger;
  addressOf: AddressOf;
}

export type SamlRouterServices = SignOutServices & Needs;

/** How long a checked request waits for its sign-in. */
const RESUME_SECONDS = 3600;
/** How long the hop from an app's POST to this box's own GET may take (a redirect the browser follows at once). */
const HOP_SECONDS = 120;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The query string as the browser sent it: what an HTTP-Redirect binding signature covers (Bindings §3.4.4.1). */
const rawQueryOf = (req: Request): string => (req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '');

/** A message of the HTTP-Redirect binding, with the query string as the browser sent it. */
function redirectMessage(req: Request): SsoMessage {
  const query = req.query;
  return {
    binding: 'redirect',
    samlRequest: str(query.SAMLRequest) ?? '',
    relayState: str(query.RelayState),
    rawQuery: rawQueryOf(req),
    redirectSigned: query.Signature !== undefined,
  };
}

/** The request a held token's payload carries. */
const heldIn = (payload: string): { r: SsoRequest; t: number; s: string | null } =>
  JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { r: SsoRequest; t: number; s: string | null };

/**
 * The app and the class of sign-in a way back to /auth/saml/sso holds, for the sign-in page to offer only the ways
 * the app accepts; its MAC is not checked here: what is shown decides nothing (the way back checks it).
 */
export function samlSignInOf(returnTo: string): { clientId: string; acr: string | undefined } | undefined {
  const token = new URLSearchParams(returnTo.slice(returnTo.indexOf('?') + 1)).get('resume');
  try {
    const held = token ? heldIn(token.split('.')[0]!).r : undefined;
    return held && typeof held.clientId === 'string' ? { clientId: held.clientId, acr: held.acr } : undefined;
  } catch {
    return undefined;
  }
}

/** What a refused SAML message is told (a SamlRefusal's reason, an app's metadata out of reach); undefined: not a refusal. */
const refusalOf = (err: unknown): string | undefined =>
  err instanceof SamlRefusal ? err.reason : err instanceof SpUnavailable ? err.message : undefined;

export function samlRouter(svc: SamlRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;
  const issuer = svc.config.baseUrl;

  const refusalPage = (res: Response, status: number, reason: Text): void =>
    renderPage(res, status, messagePage(box, words('saml.cannotGoOn'), reason));

  /** The MAC of a checked request for this browser: what keeps it whole through the sign-in. */
  const mac = (browser: string, payload: string): string =>
    createHmac('sha256', svc.csrfKey)
      .update(JSON.stringify(['saml-sso', browser, payload]))
      .digest('base64url');

  /**
   * `request`, held: for the way back from the sign-in, bound to this browser (`browser`) with the sign-in
   * it had when the request came (ForceAuthn); or, `browser` '', for the one hop from an app's POST to
   * this box's own GET, which nothing of the browser reaches (below).
   */
  function hold(browser: string, request: SsoRequest, signedInBefore: string | null): string {
    const payload = Buffer.from(JSON.stringify({ r: request, t: Math.floor(Date.now() / 1000), s: signedInBefore })).toString('base64url');
    return `${payload}.${mac(browser, payload)}`;
  }

  const resumeToken = (req: Request, res: Response, request: SsoRequest, person: SignedInPerson | undefined): string =>
    hold(browserId(svc, req, res), request, person ? person.browser.authTime.toISOString() : '');

  /** Whether `presented` is the MAC of `payload` for `browser`. */
  const macValid = (browser: string, payload: string, presented: string): boolean => {
    const expected = Buffer.from(mac(browser, payload));
    return expected.length === Buffer.byteLength(presented) && timingSafeEqual(expected, Buffer.from(presented));
  };

  /**
   * The request a `resume` holds, when it is this browser's (or the hop's, younger than HOP_SECONDS)
   * and not too old; and the sign-in seen when it came (null: the hop's, to be seen now).
   */
  function resumed(req: Request, token: unknown): { request: SsoRequest; signedInBefore: string | null } | undefined {
    const [payload, presented] = (str(token) ?? '').split('.');
    if (!payload || !presented) return undefined;
    const browser = presentedBrowserId(svc, req);
    const bound = browser !== undefined && macValid(browser, payload, presented);
    if (!bound && !macValid('', payload, presented)) return undefined;
    const held = heldIn(payload);
    if (Date.now() / 1000 - held.t > (bound ? RESUME_SECONDS : HOP_SECONDS)) return undefined;
    // A hop's token says nothing of a sign-in: only a token bound to a browser carries one.
    return { request: held.r, signedInBefore: bound ? held.s : null };
  }

  /** The app of a checked request as it is now: a client removed or no longer SAML meanwhile signs nobody in. */
  async function providerOf(request: SsoRequest): Promise<ServiceProvider | undefined> {
    const client = (await svc.clients.get(request.clientId))?.resource;
    return client?.saml ? svc.serviceProviders.of(client) : undefined;
  }

  /** What the assertion says of `person` to `sp`: the NameID its Client asks for, its shaped claims, email and groups. */
  async function assertionFacts(sp: ServiceProvider, person: SignedInPerson) {
    const client = sp.client;
    const user = person.user;
    const format = client.saml?.nameIdFormat ?? 'persistent';
    let value: string;
    if (format === 'emailAddress') {
      if (!user.emailVerified) return undefined;
      value = user.email;
    } else {
      // persistent: an opaque identifier of the person for this app alone (SAML Core §8.3.7), the pairwise sub of its sector.
      value = subjectFor(svc.subjects, { ...client, subject_type: format === 'persistent' ? 'pairwise' : 'public' }, user);
    }
    const details = { sid: person.browser.sid, amr: person.browser.amr, auth_time: Math.floor(person.browser.authTime.getTime() / 1000) };
    const shaped = await shapedClaimsFor(svc, client, { userId: user.id, scope: null, audience: null, details });
    const attributes: Record<string, string[]> = Object.fromEntries(Object.entries(shaped).map(([name, v]) => [name, attributeValues(v)]));
    if (user.emailVerified) attributes.email ??= [user.email];
    attributes.groups ??= user.groups.map((g) => g.name);
    return {
      nameId: { format, value },
      sessionIndex: person.browser.sid,
      authnInstant: person.browser.authTime,
      acr: acrOf(person.browser.amr),
      attributes,
    };
  }

  /** The Response posted to the app's consumer service, by the page that posts itself. */
  const postResponse = (res: Response, request: SsoRequest, xml: string): void =>
    renderPage(
      res,
      200,
      formPostPage(box, request.acsUrl, {
        SAMLResponse: Buffer.from(xml, 'utf8').toString('base64'),
        ...(request.relayState !== undefined ? { RelayState: request.relayState } : {}),
      }),
      {},
      { inlineScript: FORM_POST_SCRIPT_SOURCE },
    );

  /** Decides what `request` needs for this browser now, and carries it out. */
  async function proceed(req: Request, res: Response, request: SsoRequest, signedInBefore: string | undefined, answer?: 'allow' | 'deny') {
    const sp = await providerOf(request);
    if (!sp) return refusalPage(res, 400, words('saml.noApp'));
    const client = sp.client;
    const person = await signedInPerson(svc, req);
    const principal = person && (await svc.users.get(String(person.user.id)));
    const admitted =
      principal &&
      (
        await svc.policies.decideSamlSignIn(client.id, {
          'request-method': 'sign-in',
          uri: 'saml:sign-in',
          params: {},
          'query-string': '',
          client: { ...client },
          user: requestUser(principal),
          scope: null,
        })
      ).allowed;
    const decision = decideSso({
      request,
      signedIn: person && {
        userId: String(person.user.id),
        authTime: person.browser.authTime,
        amr: person.browser.amr,
        provider: person.browser.provider,
      },
      signedInSinceRequest:
        person !== undefined && signedInBefore !== undefined && person.browser.authTime.toISOString() !== signedInBefore,
      accepted: client.identityProviders,
      acrWanted: person && (await acrWantedOf(svc, person.user.id, request.acr, client.minimum_acr)),
      admitted,
      consented:
        client.first_party === true || (person !== undefined && (await consentOf(svc, person.user.id, client.id, null)) !== undefined),
      ...(answer ? { answer } : {}),
      now: Date.now(),
    });
    const returnTo = (): string => `/auth/saml/sso?resume=${resumeToken(req, res, request, person)}`;
    const key = boxSamlKey(svc.keyring);
    switch (decision.next) {
      case 'signed-out':
        return renderPage(res, 401, messagePage(box, words('signedOut.title'), words('signedOut.startAgain')));
      case 'sign-in':
        return signInForm(svc, req, res, 200, returnTo(), {}, { accepted: client.identityProviders, acr: request.acr });
      case 'step-up':
        return stepUp(svc, req, res, person!, { returnTo: returnTo(), acr: decision.acr });
      case 'consent':
        return renderPage(
          res,
          200,
          consentPage({
            box,
            csrf: csrfToken(svc, req, res),
            clientId: client.id,
            ...(client.description ? { clientDescription: client.description } : {}),
            email: person!.user.email,
            params: { resume: resumeToken(req, res, request, person) },
            action: '/auth/saml/consent',
          }),
        );
      case 'denied':
        svc.audit.record({ event: 'token_refused', client: client.id, grant: 'saml', error: 'access_denied', address: svc.addressOf(req) });
        return refusalPage(res, 403, words('saml.notAdmitted', { client: client.id }));
      case 'status':
        return postResponse(res, request, samlStatusResponse(issuer, request, decision.status, decision.message, key, Date.now()));
      case 'assertion': {
        if (decision.remember) await rememberConsent(svc, person!.user.id, client.id, [], null);
        const facts = await assertionFacts(sp, person!);
        if (!facts) return refusalPage(res, 403, words('saml.emailUnproven'));
        // The box's Hooks of samlAssertionIssuing (api/oauth/token-hooks.ts): attributes to add, never over the box's own.
        const hooked = await assertionHooked(svc, client.id, person!.user.id, person!.browser.amr);
        if ('refused' in hooked) return refusalPage(res, hooked.failed ? 503 : 403, hookWords(hooked.refused));
        for (const [name, value] of Object.entries(hooked.claims)) facts.attributes[name] ??= attributeValues(value);
        const xml = await samlResponse(issuer, sp, request, facts, key, Date.now());
        // Kept with the box session, so that its close reaches the app (api/saml/logout-notices.ts); a sign-out meanwhile gives it nothing.
        const kept = await recordSamlSignIn(svc, {
          clientId: client.id,
          userId: person!.user.id,
          sid: person!.browser.sid,
          nameId: facts.nameId,
          until: person!.browser.expiresAt,
        });
        if (!kept) return renderPage(res, 401, messagePage(box, words('signedOut.title'), words('signedOut.startAgain')));
        svc.audit.record({
          event: 'token_issued',
          client: client.id,
          grant: 'saml',
          session: person!.browser.sid,
          user: String(person!.user.id),
        });
        return postResponse(res, request, xml);
      }
    }
  }

  /**
   * A request checked, then carried on; a refusal of it on the box's page. One sent by HTTP-POST comes from
   * the app's page, another site: the browser sends the box's cookies (SameSite=Lax) with none of it, so
   * the request, checked, goes on by a redirect to this box's own GET, which a browser sends them with.
   */
  async function handle(req: Request, res: Response, read: () => Promise<SsoRequest>, hop = false): Promise<void> {
    let request: SsoRequest;
    try {
      request = await read();
    } catch (err) {
      const reason = refusalOf(err);
      if (reason === undefined) throw err;
      svc.log.info({ event: 'saml_request_refused', reason }, 'SAML request refused');
      return refusalPage(res, 400, words('saml.requestRefused', { reason }));
    }
    if (hop) return res.redirect(303, `/auth/saml/sso?resume=${hold('', request, null)}`);
    return proceedSeen(req, res, request);
  }

  /** Carries a request on from the sign-in this browser has as it comes (ForceAuthn: not one made for it). */
  async function proceedSeen(req: Request, res: Response, request: SsoRequest): Promise<void> {
    const person = await signedInPerson(svc, req);
    return proceed(req, res, request, request.forceAuthn ? (person?.browser.authTime.toISOString() ?? '') : undefined);
  }

  /** An AuthnRequest read and checked, its ID spent: the first time it comes, and never again. */
  async function checkedSsoRequest(message: SsoMessage): Promise<SsoRequest> {
    const request = await readSsoRequest(message, svc.serviceProviders, issuer, Date.now());
    await spendSsoRequest(svc.samlRequests, request, Date.now());
    return request;
  }

  router.get('/auth/saml/metadata', (_req, res) => {
    res.type('application/samlmetadata+xml').set('Cache-Control', 'max-age=300').send(idpMetadata(svc.keyring, issuer));
  });

  router.get(browserPage('/auth/saml/sso'), async (req, res) => {
    const query = req.query;
    if (query.resume !== undefined) {
      const held = resumed(req, query.resume);
      if (!held) return refusalPage(res, 400, words('saml.tooOld'));
      if (held.signedInBefore === null) return proceedSeen(req, res, held.request);
      return proceed(req, res, held.request, held.request.forceAuthn ? held.signedInBefore : undefined);
    }
    if (query.sp !== undefined) {
      const entityId = str(query.sp) ?? '';
      return handle(req, res, async () => unsolicitedRequest(await svc.serviceProviders.byEntityId(entityId), str(query.RelayState)));
    }
    const message = redirectMessage(req);
    return handle(req, res, () => checkedSsoRequest(message));
  });

  router.post(browserPage('/auth/saml/sso'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const message: SsoMessage = { binding: 'post', samlRequest: str(body.SAMLRequest) ?? '', relayState: str(body.RelayState) };
    return handle(req, res, () => checkedSsoRequest(message), true);
  });

  // Single Logout (Profiles §4.4), HTTP-Redirect: an app signs the person out of the box too. The box's session of
  // this browser ends when it is the one the request names (its SessionIndex, the sid the assertion carried, and
  // the NameID the app was given); the browser then visits the other apps that hear of it only through it
  // (api/saml/logout-chains.ts), and the answer goes back to the app's SingleLogoutService at the end, signed.
  // Those apps' LogoutResponses come here too, each moving its chain on.
  router.get(browserPage('/auth/saml/slo'), async (req, res) => {
    if (req.query.SAMLResponse !== undefined) {
      const answer = { samlResponse: str(req.query.SAMLResponse) ?? '', relayState: str(req.query.RelayState), rawQuery: rawQueryOf(req) };
      return sendLogoutStep(svc, res, await answeredHop(svc, answer, presentedBrowserId(svc, req)));
    }
    const message = redirectMessage(req);
    let slo: SloRequest;
    try {
      slo = await readLogoutRequest(message, svc.serviceProviders, issuer, Date.now());
    } catch (err) {
      const reason = refusalOf(err);
      if (reason === undefined) throw err;
      svc.log.info({ event: 'saml_request_refused', reason }, 'SAML logout refused');
      return refusalPage(res, 400, words('saml.logoutRefused', { reason }));
    }
    const person = await signedInPerson(svc, req);
    const facts = person && (await assertionFacts(slo.sp, person));
    const named =
      person !== undefined &&
      facts?.nameId.value === slo.nameId &&
      (slo.sessionIndexes.length === 0 || slo.sessionIndexes.includes(person.browser.sid));
    // Only a session the app took part in (Profiles §4.4.4.1: the session participant's own): an app given
    // people's addresses as NameIDs knows anyone's, and could otherwise end any signed-in person's box
    // session - and, through it, every other app's - by sending their browser here.
    const participant = named && (await endSamlSignIn(svc, slo.sp.client.id, person.browser.sid));
    if (participant) {
      // What the chain's end needs of the request, and no more: its row holds no copy of the app's record.
      const answer = {
        requestId: slo.requestId,
        logoutUrl: slo.logoutUrl,
        ...(slo.relayState !== undefined ? { relayState: slo.relayState } : {}),
      };
      const step = await signOutThroughApps(svc, req, res, { to: 'app', answer });
      if (step) return sendLogoutStep(svc, res, step);
    }
    // Signed out already (or never here) is a logout done; a browser signed in as someone else, or in a
    // session the app never took part in, is left as it is.
    res.redirect(302, logoutAnswerUrl(svc, slo, person !== undefined && !participant));
  });

  router.post(browserPage('/auth/saml/consent'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return renderPage(res, 403, messagePage(box, words('form.expired'), words('form.expiredMessage')));
    const held = resumed(req, body.resume);
    // The consent page holds a request bound to this browser, never the hop's.
    if (!held || held.signedInBefore === null) return refusalPage(res, 400, words('saml.tooOld'));
    return proceed(
      req,
      res,
      held.request,
      held.request.forceAuthn ? held.signedInBefore : undefined,
      body.decision === 'allow' ? 'allow' : 'deny',
    );
  });

  return router;
}
