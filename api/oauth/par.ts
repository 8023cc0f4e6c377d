// Pushed authorization requests (RFC 9126). A client posts the parameters of an
// authorization request to POST /auth/par, authenticated as at the token
// endpoint; they are checked there as /auth/authorize would check them, so that
// a mistake comes back to the client, not through a person's browser. The
// answer is a request_uri; the browser then brings only client_id and
// request_uri to /auth/authorize.
//
// When the request_uri is used up: the first browser to bring it to
// /auth/authorize claims it (the request is then this browser's, for the time a
// person takes to sign in and consent), and it is deleted when the answer goes
// back to the client: in the transaction that issues the code or token
// (./authorization-response.ts), or with the error that ends the request. Between the two,
// the way back from the sign-in page and the consent form carry client_id and
// request_uri, never the parameters, so they cannot be changed on the way. One
// request_uri thus yields one answer, in one browser; a reload before the
// answer works (RFC 9126 §4: "MAY allow for duplicate requests due to a user
// reloading/refreshing their user agent"). Of uses at once, the one that deletes
// it answers the client; every other is shown the page of a used request_uri,
// never a second redirect (pushedRequestGone below says why).
import type { Logger } from '../log.js';
import type { Pool } from '../db/pool.js';
import { type Dpop, keyOfProof } from '../credentials/dpop/check.js';
import { dpopAlgRefusal } from './fapi2.js';
import { claimPushedRequest, consumePushedRequest, createPushedRequest, type PushedRequestClaim } from '../store/pushed-requests.js';
import { authenticateClient, presentedClient, type ClientAuthServices, type OAuthRequest } from './client-auth.js';
import {
  AUTHORIZE_PARAMS,
  parseAuthorizationRequest,
  SIGN_IN_AFTER,
  type AuthorizationRequest,
  type AuthorizationRequestServices,
  type PageProblem,
} from './authorization-request.js';
import { readRequestObject, REPLAYED_OBJECT, spendRequestObject } from './request-object.js';
import { invalidRequest, OAuthError } from '../credentials/errors.js';
import { tokenParams } from './params.js';
import { clientNamed } from './agents.js';
import { isClientIdUrl } from './client-metadata.js';
import { newOpaqueToken, tokenHash } from '../credentials/tokens.js';
import type { Client } from '../types.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  pool: Pool;
  dpop: Dpop;
}

/** What the PAR endpoint uses: client authentication, the authorization request's checks, the store. */
export type ParServices = ClientAuthServices & AuthorizationRequestServices & Pick<Needs, 'dpop' | 'pool'>;

/** RFC 9126 §2.2: "The format of the request_uri value is at the discretion of the authorization server"; this is the one it shows. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/**
 * How long a request_uri waits for its browser. RFC 9126 §2.2: "The request URI lifetime is at the
 * discretion of the authorization server but will typically be relatively short (e.g., between 5
 * and 600 seconds)." A client redirects the browser at once.
 */
export const PUSHED_REQUEST_SECONDS = 60;

/** How long a claimed request waits for its person to sign in and consent. */
export const CLAIMED_REQUEST_SECONDS = 600;

/** The answer of RFC 9126 §2.2, sent with 201. */
export interface PushedResponse {
  request_uri: string;
  expires_in: number;
}

/** The authorization request's parameters in a push: those of /auth/authorize, but request_uri and the box's own marker. */
const PUSHABLE = AUTHORIZE_PARAMS.filter((p) => p !== 'request_uri' && p !== SIGN_IN_AFTER);

/** POST /auth/par. */
export async function pushAuthorizationRequest(svc: ParServices, request: OAuthRequest, body: unknown): Promise<PushedResponse> {
  const params = tokenParams(body);
  // RFC 9126 §2.1: "The rules for client authentication as defined in [RFC6749] for token endpoint
  // requests [...] apply for the PAR endpoint as well"; a public client names itself (and uses PKCE).
  // A client_id that is a URL names a Client ID Metadata Document: the client it describes is
  // fetched (or found fresh) first, so that it is a client the authentication below knows.
  if (params.client_id !== undefined && isClientIdUrl(params.client_id)) await clientNamed(svc, params.client_id);
  const client = await authenticateClient(svc, presentedClient(request, params), 'if-confidential');
  // RFC 9126 §2.1: "The request_uri authorization request parameter is one exception, and it MUST NOT be provided."
  if (params.request_uri !== undefined) throw invalidRequest('request_uri must not be sent in a pushed authorization request');
  // RFC 9126 §3: with a request object, "the authorization server MUST only use the parameters in the
  // request object" (./request-object.ts; its jti spent now); what is stored is what it says.
  const source = params.request === undefined ? params : await pushedRequestObject(svc, client.resource, params.request);
  if (source === params && client.resource.require_signed_request_object)
    throw invalidRequest(`client "${client.resource.id}" must push its authorization requests as signed request objects (RFC 9101)`);
  const pushed: Record<string, string> = {};
  for (const name of PUSHABLE) if (source[name] !== undefined && source[name] !== '' && name !== 'request') pushed[name] = source[name];
  // RFC 9449 §10.1: a DPoP proof sent with the push binds the code as dpop_jkt would; "If both
  // mechanisms are used at the same time, the authorization server MUST reject the request if the
  // JWK Thumbprint in dpop_jkt does not match the public key in the DPoP header."
  const jkt = await keyOfProof(svc.dpop, request);
  // FAPI 2.0 §5.4.1's algorithms hold for the proof a push is bound to, as for the token request's.
  const algRefusal = dpopAlgRefusal(client.resource, request.dpop);
  if (algRefusal) throw algRefusal;
  if (jkt !== undefined) {
    if (pushed.dpop_jkt !== undefined && pushed.dpop_jkt !== jkt) {
      throw invalidRequest("dpop_jkt is not the thumbprint of the DPoP proof's key: send one key, or leave dpop_jkt out");
    }
    pushed.dpop_jkt = jkt;
  }
  // client_id is required of an authorization request; authenticated by Basic, the client has named itself.
  pushed.client_id = client.resource.id;
  const checked = await parseAuthorizationRequest(svc, pushed, 'being-pushed');
  if ('kind' in checked) {
    // RFC 9126 §2.3: errors as at the token endpoint, "using the appropriate error code from therein
    // or from Section 4.1.2.1 of [RFC6749]". A page problem here is the redirect URI's.
    if (checked.kind === 'page') {
      // RFC 6749 §5.2: "unauthorized_client: The authenticated client is not authorized to use this
      // authorization grant type" — an agent's client no policy admits (./agents.ts).
      if (checked.status === 403) throw new OAuthError('unauthorized_client', checked.message);
      throw invalidRequest('redirect_uri is missing or is not one registered for this client (it must match to the letter)');
    }
    throw new OAuthError(checked.error, checked.description);
  }
  const requestUri = `${REQUEST_URI_PREFIX}${newOpaqueToken()}`;
  await createPushedRequest(
    svc.pool,
    { requestHash: tokenHash(requestUri), clientId: client.resource.id },
    pushed,
    new Date(Date.now() + PUSHED_REQUEST_SECONDS * 1000),
  );
  return { request_uri: requestUri, expires_in: PUSHED_REQUEST_SECONDS };
}

/** The parameters of a request object pushed by `client`, taken once; invalid_request_object when refused. */
async function pushedRequestObject(svc: ParServices, client: Client, token: string): Promise<Record<string, string>> {
  const object = await readRequestObject(svc, client, token, PUSHABLE, Date.now());
  if ('problem' in object) throw new OAuthError('invalid_request_object', object.problem);
  if (!(await spendRequestObject(svc, object))) throw new OAuthError('invalid_request_object', REPLAYED_OBJECT);
  return object.params;
}

/**
 * A request read from a request object sent by value to /auth/authorize (./request-object.ts), held
 * as a pushed request claimed by this browser at once: the way back from sign-in and consent then
 * carries client_id and request_uri, never the parameters the client signed, and the object is
 * never read again (its jti is spent): one object, one answer, as with a request pushed.
 */
export async function holdRequest(
  svc: Pick<Needs, 'pool'>,
  request: AuthorizationRequest,
  browserId: () => string,
  now: number,
): Promise<AuthorizationRequest> {
  const requestUri = `${REQUEST_URI_PREFIX}${newOpaqueToken()}`;
  const key = { requestHash: tokenHash(requestUri), clientId: request.client.resource.id };
  await createPushedRequest(svc.pool, key, request.params, new Date(now + PUSHED_REQUEST_SECONDS * 1000));
  const pushed: PushedRequestClaim = { ...key, browserHash: tokenHash(browserId()) };
  if (!(await claimPushedRequest(svc.pool, pushed, new Date(now), new Date(now + CLAIMED_REQUEST_SECONDS * 1000))))
    throw new Error('a request held for its browser could not be claimed by it');
  return { ...request, params: { client_id: key.clientId, request_uri: requestUri }, pushed, fromRequestObject: false };
}

/**
 * What a browser is shown for a pushed request's request_uri that is unknown, expired, used up,
 * another client's or claimed by another browser — and by every loser of many uses at once.
 * RFC 9126 §4: "Authorization servers SHOULD treat request_uri values as one-time use", and "An
 * expired request_uri MUST be rejected as invalid". Nothing is redirected: the request is gone, and
 * its one answer went (or goes) back to the client once, from the use that ended it; a
 * second answer with the same state could make the client drop the flow the first one completed.
 */
export function pushedRequestGone(svc: Pick<Needs, 'log'>, clientId: string | undefined, reason: string): PageProblem {
  svc.log.info({ event: 'authorize_refused', client: clientId, reason }, 'authorization request refused');
  return {
    kind: 'page',
    status: 400,
    problem: 'gone',
    message:
      'The sign-in link has expired, was used already, or was opened in another browser. Go back to the application and start again.',
  };
}

/**
 * The parameters of the pushed request an authorization request names, claimed
 * for the browser `browserId()` names; undefined when it names none (a request_uri
 * of another kind is not ours: ./authorization-request.ts refuses it as before). RFC 9101 §5,
 * which RFC 9126 §4 builds on: the server "MUST only use the parameters in the
 * Request Object even if the same parameter is provided in the query parameter";
 * only the box's own sign-in marker comes from the query.
 */
export async function claimedPushedRequest(
  svc: Pick<Needs, 'log' | 'pool'>,
  raw: Record<string, unknown>,
  browserId: () => string,
  now: number,
): Promise<{ raw: Record<string, string>; pushed: PushedRequestClaim } | PageProblem | undefined> {
  const { request_uri: requestUri, client_id: clientId } = raw;
  if (typeof requestUri !== 'string' || !requestUri.startsWith(REQUEST_URI_PREFIX)) return undefined;
  // Nothing is redirected: with the request unknown, so is where to.
  const invalid = (reason: string): PageProblem => pushedRequestGone(svc, typeof clientId === 'string' ? clientId : undefined, reason);
  if (typeof clientId !== 'string') return invalid('request_uri without client_id');
  const pushed: PushedRequestClaim = { requestHash: tokenHash(requestUri), clientId, browserHash: tokenHash(browserId()) };
  const params = await claimPushedRequest(svc.pool, pushed, new Date(now), new Date(now + CLAIMED_REQUEST_SECONDS * 1000));
  if (!params) return invalid('request_uri unknown, expired, used, of another client or claimed by another browser');
  const marker = raw[SIGN_IN_AFTER];
  return { raw: { ...params, request_uri: requestUri, ...(typeof marker === 'string' ? { [SIGN_IN_AFTER]: marker } : {}) }, pushed };
}

/**
 * Ends a pushed request whose answer goes back to the client without a code (an error, a denial):
 * undefined when the answer may go, the page of pushedRequestGone when another use of the
 * request_uri ended it first (and answered the client).
 */
export async function endPushedRequest(
  svc: Pick<Needs, 'log' | 'pool'>,
  pushed: PushedRequestClaim | undefined,
  now: number,
): Promise<PageProblem | undefined> {
  if (!pushed || (await consumePushedRequest(svc.pool, pushed, new Date(now)))) return undefined;
  return pushedRequestGone(svc, pushed.clientId, 'request_uri answered by another use');
}
