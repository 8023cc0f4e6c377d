// OpenID Connect's endpoints: the UserInfo endpoint (Core §5.3), discovery
// (Discovery 1.0) and RP-initiated logout (RP-Initiated Logout 1.0).
import { ACR_LADDER } from '../../credentials/acr.js';
import { Request, Response, Router } from '../router.js';
import { ApiError } from '../../errors.js';
import {
  CLAIMS_SUPPORTED,
  idTokenHintClaims,
  OPENID,
  OPENID_SCOPES,
  requestedClaimsOf,
  personOfSession,
  userClaims,
} from '../../oauth/openid.js';
import { scopesOf } from '../../credentials/scopes.js';
import { resourceError } from '../../credentials/errors.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Keyring } from '../../credentials/keyring.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { Stored } from '../../store/resources.js';
import type { Client, PrincipalUser } from '../../types.js';
import { words } from '../../ui/language.js';
import { logoutPage, messagePage } from '../../ui/pages.js';
import { presentedCredential, principalOf, resourceRequest, type PrincipalServices } from '../auth.js';
import { pageForm } from '../body.js';
import { csrfToken, csrfValid, signedIn } from '../browser-session.js';
import { sendLogoutStep, signOutThroughApps, type SignOutServices } from '../saml-logout.js';
import { NO_STORE } from '../headers.js';
import { renderPage, signedInPerson } from '../pages.js';
import { shapedClaimsOfSession } from '../../oauth/shaped-claims.js';
import { userinfoHooked, withHooked, type TokenHookServices } from '../../oauth/token-hooks.js';
import { authorizationServerMetadata } from './oauth.js';
import { subjectFor, type SubjectSettings } from '../../credentials/subjects.js';
import { subjectOf } from '../../credentials/exchange/parties.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  keyring: Keyring;
  clients: RecordCache<Stored<Client>>;
  users: RecordCache<PrincipalUser>;
  subjects: SubjectSettings;
}

const LOGOUT_PARAMS = ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id'] as const;

/** The discovery document: what a relying party needs to know of the box (OpenID Connect Discovery 1.0 §3). */
export function openidConfiguration(svc: Pick<Needs, 'config' | 'keyring'>): Record<string, unknown> {
  const base = svc.config.baseUrl;
  return {
    ...authorizationServerMetadata(svc),
    userinfo_endpoint: `${base}/auth/userinfo`,
    end_session_endpoint: `${base}/auth/logout`,
    scopes_supported: OPENID_SCOPES,
    subject_types_supported: ['public', 'pairwise'],
    id_token_signing_alg_values_supported: svc.keyring.algorithms,
    // No userinfo_signing_alg_values_supported: UserInfo answers are never signed, and the list names JWS algorithms (FAPI 2.0 §5.4 checks them).
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: true,
    acr_values_supported: [...ACR_LADDER],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    frontchannel_logout_supported: false,
    // Back-Channel Logout 1.0 §2.1: the box sends logout tokens (api/oauth/backchannel-logout.ts), with sid.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
  };
}

/** What discovery, UserInfo (the token's principal) and logout (the browser session, the client asking) use. */
export type OpenidRouterServices = PrincipalServices &
  SignOutServices &
  Pick<Needs, 'clients' | 'keyring' | 'log' | 'users' | 'subjects'> &
  Pick<TokenHookServices, 'hooks'>;

export function openidRouter(svc: OpenidRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;
  const render = renderPage;

  router.get('/.well-known/openid-configuration', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(openidConfiguration(svc));
  });

  // UserInfo: the token in the Authorization header, the query or (POST) a form body (RFC 6750 §2).
  const userinfo = async (req: Request, res: Response): Promise<void> => {
    const fromBody = typeof req.body?.access_token === 'string' ? (req.body.access_token as string) : undefined;
    if (fromBody !== undefined && (req.headers.authorization || req.query.access_token !== undefined)) {
      throw new ApiError(400, 'invalid_request', 'send the access token once');
    }
    // A token in the body is a bearer token (RFC 6750 §2.2); a DPoP-bound one is refused as such.
    const presented = fromBody !== undefined ? { scheme: 'Bearer' as const, token: fromBody } : presentedCredential(req);
    const principal = await principalOf(svc, presented, resourceRequest(svc, req));
    const scopes = scopesOf(principal.session.scope);
    const user = scopes.includes(OPENID) ? await personOfSession(svc, principal.session) : undefined;
    if (!user) {
      throw resourceError('insufficient_scope', "the token must be a person's, issued with scope openid", {
        'WWW-Authenticate': 'Bearer realm="boxauth", error="insufficient_scope", scope="openid"',
      });
    }
    // Core §5.3.2: "The sub Claim in the UserInfo Response MUST be verified to exactly match the sub Claim in the ID Token":
    // the sub the token was issued with (api/credentials/tokens.ts personSub), made when its client's sector vouched for it.
    // Made anew from the client as it is now, a client whose writer names another party's sector_identifier_uri
    // after its token was issued would read that party's subs here (api/oauth/sector-identifier.ts is asked only at issuance).
    const sub = subjectOf(principal.session).sub;
    const claims = userClaims(sub, user, scopes, requestedClaimsOf(principal.session.details).userinfo);
    // The claims the token's client shapes (Client.claims) go in whatever the scope, as in its ID tokens.
    const shaped = await shapedClaimsOfSession(svc, principal.session);
    // What the box's Hooks add (api/oauth/token-hooks.ts), as shaped claims are: an admin's shaped claim of a name wins.
    const hooked = await userinfoHooked(svc, principal.session);
    res.set(NO_STORE).json({ ...claims, ...withHooked(hooked, shaped), sub: claims.sub });
  };
  router.get('/auth/userinfo', userinfo);
  router.post('/auth/userinfo', ...pageForm, userinfo);

  /**
   * RP-initiated logout. A post_logout_redirect_uri must be one the client
   * registered, to the letter, and the client is named by the id_token_hint (or
   * client_id); anything else is a page, never a redirect. The browser is signed
   * out at once when an unexpired hint shows that the relying party holds this
   * browser's session; otherwise its person is asked (a CSRF-protected form), so
   * that a link on another site cannot sign people out ("Logout requests without
   * a valid id_token_hint value are a potential means of denial of service;
   * therefore, OPs should obtain explicit confirmation from the End-User before
   * acting upon them", RP-Initiated Logout 1.0 §6). Either way only this
   * browser's session ends, with the token sessions started through it: an ID
   * token, which any app that was given it can present, never ends another
   * browser's session or the person's other grants.
   */
  /** The `sub` client `clientId` sees of person `userId` (api/credentials/subjects.ts): what its ID tokens say. */
  const subjectSeenBy = async (clientId: string | undefined, userId: number): Promise<string | undefined> => {
    const client = clientId === undefined ? undefined : await svc.clients.get(clientId);
    const person = await svc.users.get(String(userId));
    return client && person ? subjectFor(svc.subjects, client.resource, person) : undefined;
  };

  const logout = async (req: Request, res: Response): Promise<void> => {
    const source = (req.method === 'POST' ? req.body : req.query) as Record<string, unknown>;
    const params: Partial<Record<(typeof LOGOUT_PARAMS)[number], string>> = {};
    for (const name of LOGOUT_PARAMS) {
      const v = source[name];
      if (Array.isArray(v)) return render(res, 400, messagePage(box, words('logout.invalid'), words('logout.repeated', { name })));
      if (typeof v === 'string' && v !== '') params[name] = v;
    }
    const hint =
      params.id_token_hint === undefined ? undefined : idTokenHintClaims(params.id_token_hint, svc.config.baseUrl, svc.keyring.find);
    if (params.id_token_hint !== undefined && !hint) {
      return render(res, 400, messagePage(box, words('logout.invalid'), words('logout.foreignToken')));
    }
    const hintClient = typeof hint?.aud === 'string' ? hint.aud : undefined;
    if (params.client_id && hintClient && params.client_id !== hintClient) {
      return render(res, 400, messagePage(box, words('logout.invalid'), words('logout.mismatch')));
    }
    const clientId = params.client_id ?? hintClient;
    let returnTo: string | undefined;
    if (params.post_logout_redirect_uri !== undefined) {
      const client = clientId ? await svc.clients.get(clientId) : undefined;
      if (!client?.resource.post_logout_redirect_uris?.includes(params.post_logout_redirect_uri)) {
        svc.log.info(
          { event: 'logout_refused', client: clientId, reason: 'post_logout_redirect_uri not registered' },
          'logout request refused',
        );
        return render(res, 400, messagePage(box, words('logout.invalid'), words('logout.unregistered')));
      }
      const url = new URL(params.post_logout_redirect_uri);
      if (params.state !== undefined) url.searchParams.set('state', params.state);
      returnTo = url.toString();
    }

    const browser = await signedIn(svc, req);
    const confirmed = req.method === 'POST' && csrfValid(svc, req, source.csrf);
    // An expired hint is accepted as naming the client (§2), but proves nothing of this browser.
    const hintIsThisBrowser =
      hint !== undefined &&
      typeof hint.exp === 'number' &&
      hint.exp * 1000 > Date.now() &&
      browser !== undefined &&
      (hint.sid === browser.sid || (hint.sid === undefined && hint.sub === (await subjectSeenBy(hintClient, browser.userId))));
    if (!confirmed && !hintIsThisBrowser) {
      const user = browser && (await signedInPerson(svc, req))?.user;
      return render(res, 200, logoutPage({ box, csrf: csrfToken(svc, req, res), email: user?.email, params }));
    }
    // The SAML apps that hear of it only through this browser first, then returnTo (api/saml/logout-chains.ts).
    const step = browser && (await signOutThroughApps(svc, req, res, returnTo ? { to: 'place', url: returnTo } : { to: 'page' }));
    if (step) return sendLogoutStep(svc, res, step);
    if (returnTo) {
      res.set('Cache-Control', 'no-store').redirect(303, returnTo);
      return;
    }
    render(res, 200, messagePage(box, words('signedOut.title'), words('signedOut.closePage'), false));
  };
  router.get('/auth/logout', logout);
  router.post('/auth/logout', ...pageForm, logout);

  return router;
}
