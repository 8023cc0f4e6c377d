// The authorization endpoint (GET and POST /auth/authorize) and the consent form
// (POST /auth/consent). Each gathers what the box knows — the request, who this
// browser is signed in as, what the person allowed before, the form's answer —
// asks api/oauth/interaction.ts what to ask the person, and carries it out: a page,
// or the answer to the client (a grant through api/oauth/authorization-response.ts) in the
// request's response mode: a redirect, or the page that posts it (api/oauth/response-mode.ts).
import { browserPage } from '../browser-pages.js';
import { waysAccepted, type AcceptedWaysServices } from '../accepted-ways.js';
import { Request, Response, Router } from '../router.js';
import { decideInteraction, type Interaction } from '../../oauth/interaction.js';
import {
  AUTHORIZE_PARAMS,
  errorAnswer,
  parseAuthorizationRequest,
  SIGN_IN_AFTER,
  type AuthorizationRequest,
  type AuthorizationRequestServices,
  type PageProblem,
  type PageProblemKind,
} from '../../oauth/authorization-request.js';
import { grantAuthorization, type AuthorizationResponseServices } from '../../oauth/authorization-response.js';
import type { ClientAnswer } from '../../oauth/response-mode.js';
import { formPostPage, FORM_POST_SCRIPT_SOURCE } from '../../ui/form-post-page.js';
import { scopesOf } from '../../credentials/scopes.js';
import { acrWantedOf } from '../../people/steps.js';
import { claimedPushedRequest, endPushedRequest, holdRequest } from '../../oauth/par.js';
import { consentOf, rememberConsent } from '../../oauth/consents.js';
import { agentShown } from '../../oauth/agents.js';
import { words, type MessageKey } from '../../ui/language.js';
import { consentPage, messagePage, type ConsentResource } from '../../ui/pages.js';
import { pageForm } from '../body.js';
import { browserId, csrfToken, csrfValid, type BrowserServices } from '../browser-session.js';
import { signedInAfterRequest, signInMarker, type FreshSignInServices } from '../fresh-sign-in.js';
import { invalidForm, renderPage, signedInPerson, signInForm, type SignedInPerson } from '../pages.js';
import { stepUp } from '../sign-in-steps.js';

/** What the authorization endpoint and the consent form use: the request, the browser's sign-in, the code. */
export type AuthorizationEndpointRouterServices = AuthorizationRequestServices &
  AuthorizationResponseServices &
  BrowserServices &
  FreshSignInServices &
  AcceptedWaysServices;

/** Each problem of a request as its page says it: a title and a sentence of the catalogue. */
const PROBLEM_WORDS: Record<PageProblemKind, [title: MessageKey, message: MessageKey]> = {
  repeated: ['authorize.invalidRequest', 'authorize.repeated'],
  noClient: ['appSignIn.linkInvalid', 'authorize.noClient'],
  unknown: ['appSignIn.linkInvalid', 'authorize.unknownClient'],
  requestObject: ['appSignIn.linkInvalid', 'authorize.requestObjectRefused'],
  notAdmitted: ['authorize.notAdmittedTitle', 'authorize.notAdmitted'],
  gone: ['appSignIn.linkInvalid', 'authorize.requestGone'],
};

export function authorizationEndpointRouter(svc: AuthorizationEndpointRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;

  const problemPage = (res: Response, problem: PageProblem): void => {
    const [title, message] = PROBLEM_WORDS[problem.problem];
    renderPage(res, problem.status, messagePage(box, words(title), words(message, problem.values)));
  };

  /** The answer to the client, every one of them: a redirect, or (form_post) a page that posts it, no-store like every page. */
  const answerClient = (res: Response, answer: ClientAnswer): void =>
    answer.via === 'redirect'
      ? res.redirect(302, answer.location)
      : renderPage(res, 200, formPostPage(box, answer.action, answer.fields), {}, { inlineScript: FORM_POST_SCRIPT_SOURCE });

  /** The request, or undefined when it was answered already (an error page, or an error back to the client). */
  async function parsed(req: Request, res: Response, raw: Record<string, unknown>): Promise<AuthorizationRequest | undefined> {
    // A pushed request (RFC 9126): its parameters, claimed for this browser (api/oauth/par.ts).
    const claimed = await claimedPushedRequest(svc, raw, () => browserId(svc, req, res), Date.now());
    if (claimed && 'kind' in claimed) {
      problemPage(res, claimed);
      return undefined;
    }
    const request = claimed ? await parseAuthorizationRequest(svc, claimed.raw, claimed.pushed) : await parseAuthorizationRequest(svc, raw);
    // A request object sent by value (RFC 9101) is read once, then held for this browser as a pushed request.
    if (!('kind' in request))
      return request.fromRequestObject ? holdRequest(svc, request, () => browserId(svc, req, res), Date.now()) : request;
    if (request.kind === 'page') problemPage(res, request);
    else answerClient(res, request.answer);
    return undefined;
  }

  const signedOut = (res: Response): void =>
    renderPage(res, 401, messagePage(box, words('signedOut.title'), words('signedOut.startAgain')));

  /** What api/oauth/interaction.ts decides for this browser and request. */
  async function decide(req: Request, request: AuthorizationRequest, person: SignedInPerson | undefined, answer?: 'allow' | 'deny') {
    const client = request.client.resource;
    return decideInteraction({
      request,
      signedIn: person && {
        userId: String(person.user.id),
        authTime: person.browser.authTime,
        amr: person.browser.amr,
        provider: person.browser.provider,
      },
      acrWanted: person && (await acrWantedOf(svc, person.user.id, request.params.acr_values, client.minimum_acr)),
      signedInSinceRequest: person !== undefined && signedInAfterRequest(svc, req, request, person.browser),
      consented: client.first_party ? 'first-party' : person && (await consentOf(svc, person.user.id, client.id, request.audience)),
      accepted: await waysAccepted(svc, client, request.audience),
      ...(answer ? { answer } : {}),
      now: Date.now(),
    });
  }

  /**
   * The resources (RFC 8707) the request's tokens will be for, as the consent page names them. RFC
   * 8707 §2.1: "The authorization server might use this data to inform the user about the resources
   * the client is going to access on their behalf". An App's audience is named by the App.
   */
  async function resourcesAskedFor(request: AuthorizationRequest): Promise<ConsentResource[]> {
    if (request.audience === undefined) return [];
    const app = await svc.apps.byAudience(request.audience);
    return [{ uri: request.audience, ...(app ? { app: { name: app.id, description: app.description } } : {}) }];
  }

  /** Carries the decision out. */
  async function act(
    req: Request,
    res: Response,
    request: AuthorizationRequest,
    person: SignedInPerson | undefined,
    decision: Interaction,
  ): Promise<void> {
    switch (decision.next) {
      case 'error': {
        // Another use of the same request_uri answered the client first: this one only sees the page.
        const gone = await endPushedRequest(svc, request.pushed, Date.now());
        if (gone) return problemPage(res, gone);
        return answerClient(res, errorAnswer(svc.config.baseUrl, request, decision.error, decision.description));
      }
      case 'signed-out':
        return signedOut(res);
      case 'sign-in': {
        // The way back to this request; when it waits for a sign-in made for it, with the proof (api/http/fresh-sign-in.ts).
        const params = decision.fresh
          ? { ...request.params, [SIGN_IN_AFTER]: signInMarker(svc, req, res, request, person?.browser) }
          : request.params;
        return signInForm(
          svc,
          req,
          res,
          200,
          `/auth/authorize?${new URLSearchParams(params)}`,
          request.loginHint ? { email: request.loginHint } : {},
          {
            accepted: await waysAccepted(svc, request.client.resource, request.audience),
            acr: request.params.acr_values,
          },
        );
      }
      case 'step-up':
        // A new sign-in with the missing factor, starting from what this browser's sign-in proved (api/http/sign-in-steps.ts).
        return stepUp(svc, req, res, person!, { returnTo: `/auth/authorize?${new URLSearchParams(request.params)}`, acr: decision.acr });
      case 'consent': {
        const client = request.client.resource;
        return renderPage(
          res,
          200,
          consentPage({
            box,
            csrf: csrfToken(svc, req, res),
            clientId: client.id,
            clientDescription: client.description,
            agent: agentShown(client),
            scope: request.scope,
            resources: await resourcesAskedFor(request),
            email: person!.user.email,
            params: request.params,
          }),
        );
      }
      case 'grant': {
        if (decision.remember)
          await rememberConsent(svc, person!.user.id, request.client.resource.id, scopesOf(request.scope), request.audience);
        const answer = await grantAuthorization(svc, request, person!.user, person!.browser);
        return 'via' in answer ? answerClient(res, answer) : problemPage(res, answer);
      }
    }
  }

  // OpenID Connect Core §3.1.2.1: "Authorization Servers MUST support the use of the HTTP GET
  // and POST methods", POST with the parameters as a form body.
  const authorizeEndpoint = async (req: Request, res: Response, raw: Record<string, unknown>): Promise<void> => {
    const request = await parsed(req, res, raw);
    if (!request) return;
    const person = await signedInPerson(svc, req);
    await act(req, res, request, person, await decide(req, request, person));
  };
  router.get('/auth/authorize', (req, res) => authorizeEndpoint(req, res, req.query));
  router.post('/auth/authorize', ...pageForm, (req, res) => authorizeEndpoint(req, res, req.body as Record<string, unknown>));

  router.post(browserPage('/auth/consent'), ...pageForm, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) return invalidForm(svc, res);
    const person = await signedInPerson(svc, req);
    if (!person) return signedOut(res);
    const request = await parsed(req, res, Object.fromEntries(AUTHORIZE_PARAMS.map((p) => [p, body[p]])));
    if (!request) return;
    await act(req, res, request, person, await decide(req, request, person, body.decision === 'allow' ? 'allow' : 'deny'));
  });

  return router;
}
