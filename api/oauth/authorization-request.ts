// The authorization request (GET and POST /auth/authorize, and a request pushed to /auth/par): the
// authorization code (response_type=code) and implicit (token, id_token, "id_token token") requests,
// with OpenID Connect's parameters, read and checked. One named check per rule, run in the order of
// AUTHORIZATION_REQUEST_CHECKS; the first refusal wins. The client and its redirect URI come first:
// until both are known good a refusal is a page of the box and nothing is ever redirected; after, a
// refusal travels back to the client in the redirect. That order is what clients (and the OpenID
// Foundation's conformance suite) see when two rules are broken at once: a new rule (FAPI, step-up)
// is a check added to the list, at the place its error should win (node-oidc-provider's
// lib/actions/authorization/ keeps its checks so, client and redirect URI in the same list).
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { errorFields } from '../errors.js';
import type { Keyring } from '../credentials/keyring.js';
import type { SubjectSettings } from '../credentials/subjects.js';
import { personOfSubject } from '../credentials/presented-subjects.js';
import type { Pool } from '../db/pool.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Stored } from '../store/resources.js';
import type { PushedRequestClaim } from '../store/pushed-requests.js';
import type { Client } from '../types.js';
import { grantedScope, registeredResource, type RegisteredResources } from './entitlements.js';
import { isRedirectErrorCode, OAuthError, type EndpointErrorCode, type RedirectErrorCode } from '../credentials/errors.js';
import { listedInGrantTypes, notListedInGrantTypes } from './grant-types.js';
import { hasOpenid, idTokenHintClaims, parseClaimsParameter, type RequestedClaims } from './openid.js';
import { resourceParam, scopeParam, severalResources } from './params.js';
import { isThumbprint } from '../credentials/dpop/proof.js';
import { isChallenge } from '../credentials/pkce.js';
import { registeredRedirectUris } from './client-metadata.js';
import { agentRefusal, agentShown, clientNamed, type AgentServices } from './agents.js';
import { sectorRefusal } from './sector-identifier.js';
import type { ClientAssertions } from './client-assertion.js';
import {
  readRequestObject,
  REPLAYED_OBJECT,
  spendRequestObject,
  type RequestObjectRead,
  type RequestObjectRefusal,
} from './request-object.js';
import { answerTo, responseModeOf, responseModeProblem, type ClientAnswer, type ResponseMode } from './response-mode.js';
import { fapi2AuthorizationRefusal, mustPush } from './fapi2.js';

export { registeredRedirectUris };

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  keyring: Keyring;
  clients: RecordCache<Stored<Client>>;
  /** The Apps of the box by audience: the resources a `resource` may name (./entitlements.ts). */
  apps: RegisteredResources;
  /** The keys of clients, and the replay ledger, that request objects are checked with (./request-object.ts). */
  clientAssertions: ClientAssertions;
  pool: Pool;
  subjects: SubjectSettings;
}

/**
 * What reading an authorization request needs: its client (an agent's fetched and admitted:
 * ./agents.ts), the box's address and keys (id_token_hint), the Apps (resource), the log of refusals.
 */
export type AuthorizationRequestServices = Pick<
  Needs,
  'apps' | 'clientAssertions' | 'clients' | 'config' | 'keyring' | 'log' | 'pool' | 'subjects'
> &
  AgentServices;

export type ResponseType = 'code' | 'token' | 'id_token' | 'id_token token';
export const RESPONSE_TYPES: readonly ResponseType[] = ['code', 'token', 'id_token', 'id_token token'];

/** OpenID Connect's prompt values the box serves (Core §3.1.2.1); select_account is a sign-in again. */
export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: readonly Prompt[] = ['none', 'login', 'consent', 'select_account'];

export interface AuthorizationRequest {
  responseType: ResponseType;
  /** How the answer travels back to the client (./response-mode.ts). */
  responseMode: ResponseMode;
  client: Stored<Client>;
  redirectUri: string;
  state: string | undefined;
  scope: string | undefined;
  codeChallenge: string | undefined;
  nonce: string | undefined;
  /** Claims asked for by name (the claims parameter, Core §5.5), or null. */
  claims: RequestedClaims | null;
  /** The audience the tokens will carry (RFC 8707 resource), when asked for. */
  audience?: string | undefined;
  /** The DPoP key the code is bound to (RFC 9449 §10: dpop_jkt), when named. */
  dpopJkt?: string | undefined;
  prompt: ReadonlySet<Prompt>;
  /** Seconds since sign-in beyond which the person signs in again. */
  maxAge: number | undefined;
  /** An email to offer on the sign-in page. */
  loginHint: string | undefined;
  /** The person an id_token_hint names (their row id; NOBODY when its sub is none this client's subs name). */
  hintedUser: string | undefined;
  /** The request's parameters, to carry through sign-in and consent (of a pushed request: client_id and request_uri). */
  params: Record<string, string>;
  /** The pushed request (RFC 9126) the parameters came from, claimed by this browser (./par.ts). */
  pushed?: PushedRequestClaim;
  /** Its parameters were read from a request object sent by value now: to be held for the browser (./par.ts holdRequest). */
  fromRequestObject?: boolean;
}

/**
 * What a page of the box tells the person of a problem (api/http/routes/authorization-endpoint.ts
 * says it in their language): a parameter repeated, no client named, a client or redirect URI the
 * box does not know, a request object refused, an agent no policy admits, a pushed request gone.
 */
export type PageProblemKind = 'repeated' | 'noClient' | 'unknown' | 'requestObject' | 'notAdmitted' | 'gone';

/** A problem shown on a page of the box: until the client and its redirect URI are known good, nothing is redirected. */
export interface PageProblem {
  kind: 'page';
  status: number;
  problem: PageProblemKind;
  /** What the page's sentence names: the parameter (`name`), the request object's refusal (`reason`), the agent's host (`host`). */
  values?: Record<string, string>;
  /** The problem in English, as a client answered in the page's stead is told it (a push: ./par.ts). */
  message: string;
}

/** The codes the request's checks answer: in the redirect, or at PAR (../credentials/errors.ts). */
export type RequestErrorCode = RedirectErrorCode & EndpointErrorCode;

/** A problem sent back to the client in the redirect. */
export interface RedirectProblem {
  kind: 'redirect';
  answer: ClientAnswer;
  /** What the redirect says, for an answer that is not a redirect (a pushed request's: ./par.ts). */
  error: RequestErrorCode;
  description: string;
}

/** The way back from the sign-in page proves a sign-in made for the request with this (api/http/fresh-sign-in.ts). */
export const SIGN_IN_AFTER = 'sign_in_after';

export const AUTHORIZE_PARAMS = [
  'response_type',
  'response_mode',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'prompt',
  'max_age',
  'login_hint',
  'id_token_hint',
  'claims',
  'acr_values',
  'resource',
  'dpop_jkt',
  'request',
  'request_uri',
  SIGN_IN_AFTER,
];

/** The parameters a request object (RFC 9101) may carry: all but another object, and the box's own marker. */
const OBJECT_PARAMS = AUTHORIZE_PARAMS.filter((p) => p !== 'request' && p !== 'request_uri' && p !== SIGN_IN_AFTER);

/**
 * The request in `raw`, or the problem with it. `pushed`: the parameters are those
 * of a pushed request (RFC 9126), being pushed now or claimed by this browser (./par.ts).
 */
export async function parseAuthorizationRequest(
  svc: AuthorizationRequestServices,
  raw: Record<string, unknown>,
  pushed?: PushedRequestClaim | 'being-pushed',
): Promise<AuthorizationRequest | PageProblem | RedirectProblem> {
  const presented: Presented = { raw, pushed, params: {} };
  for (const check of AUTHORIZATION_REQUEST_CHECKS.onAPage) {
    const found = await check(presented, svc);
    if (found && 'kind' in found) return found;
    Object.assign(presented, found);
  }
  const asked = knownGood(presented);
  const read: Partial<Readings> = {};
  for (const check of AUTHORIZATION_REQUEST_CHECKS.inTheRedirect) {
    const found = await check(asked, read, svc);
    if (found && 'error' in found) return inTheRedirect(svc.config.baseUrl, asked, found);
    Object.assign(read, found);
  }
  return requestOf(asked, read);
}

/** A request as presented, before its client and redirect URI are known good: what the checks on a page found so far. */
interface Presented {
  raw: Record<string, unknown>;
  pushed: PushedRequestClaim | 'being-pushed' | undefined;
  /** Its parameters, each given once and not empty (eachParameterOnce reads them). */
  params: Record<string, string>;
  /** It named several resources (RFC 8707), which resourceIsGranted refuses in the redirect. */
  severalResources?: boolean;
  client?: Stored<Client>;
  redirectUri?: string;
  /** The request object (RFC 9101) sent by value its parameters were read from, or why it was refused. */
  object?: RequestObjectRead | RequestObjectRefusal;
}

/** A request whose client and redirect URI are known good. */
interface AskedRequest {
  /** Its parameters, each given once and not empty. */
  params: Record<string, string>;
  /** It named several resources (RFC 8707). */
  severalResources: boolean;
  client: Stored<Client>;
  redirectUri: string;
  /** The grant its response_type asks for; undefined for a response_type the box does not serve. */
  grant: 'authorization_code' | 'implicit' | undefined;
  /** Its response_type, or `code` for one the box does not serve (how an error is sent back). */
  responseType: ResponseType;
  /** Its response_mode when the box serves it for this response_type, else the response_type's default (./response-mode.ts). */
  responseMode: ResponseMode;
  /** The pushed request (RFC 9126) its parameters come from: being pushed now, or claimed by this browser. */
  pushed: PushedRequestClaim | 'being-pushed' | undefined;
  /** The request object sent by value its parameters were read from (its signature verified), or why it was refused. */
  object: RequestObjectRead | RequestObjectRefusal | undefined;
}

/** What the checks read from a request's parameters, for the rules after them and for the request read. */
interface Readings {
  scope: string | null;
  /** The audience the tokens will carry (RFC 8707 resource), or null. */
  audience: string | null;
  codeChallenge: string | undefined;
  prompt: Set<Prompt>;
  maxAge: number | undefined;
  claims: RequestedClaims | null;
  /** The person an id_token_hint names (their row id, or NOBODY). */
  hintedUser: string | undefined;
}

/** A rule broken after the redirect URI is known good: the error and description sent back to the client. */
interface Refusal {
  error: RequestErrorCode;
  description: string;
}

/** One rule before the redirect URI is known good: a page, what it found, or nothing (a rule kept). */
type PageCheck = (
  presented: Presented,
  svc: AuthorizationRequestServices,
) => PageProblem | Partial<Presented> | undefined | Promise<PageProblem | Partial<Presented> | undefined>;

/** One rule after: a refusal, what it read, or nothing (a rule kept). `read` holds what the checks before it read. */
type Check = (
  asked: AskedRequest,
  read: Partial<Readings>,
  svc: AuthorizationRequestServices,
) => Refusal | Partial<Readings> | undefined | Promise<Refusal | Partial<Readings> | undefined>;

const refuse = (error: RequestErrorCode, description: string): Refusal => ({ error, description });

/** An OAuthError of ./params.ts, ./entitlements.ts or ./grant-types.ts as the refusal sent back; one the redirect cannot carry is a bug. */
function refusalOf(err: OAuthError): Refusal {
  if (!isRedirectErrorCode(err.code)) throw err;
  return refuse(err.code, err.message);
}

/**
 * RFC 6749 §3.1: "Request and response parameters MUST NOT be included more than once." But
 * `resource`, which RFC 8707 §2 lets a client repeat: the box takes one (./params.ts
 * severalResources says why), and says so in the redirect, as invalid_target.
 */
const eachParameterOnce: PageCheck = ({ raw }) => {
  const params: Record<string, string> = {};
  let severalResources = false;
  for (const name of AUTHORIZE_PARAMS) {
    const v = raw[name];
    if (name === 'resource' && Array.isArray(v)) {
      severalResources = true;
      continue;
    }
    if (Array.isArray(v))
      return {
        kind: 'page',
        status: 400,
        problem: 'repeated',
        values: { name },
        message: `The parameter ${name} was given more than once.`,
      };
    if (typeof v === 'string' && v !== '') params[name] = v;
  }
  return { params, severalResources };
};

/** RFC 6749 §4.1.1: "client_id REQUIRED." */
const clientIsNamed: PageCheck = ({ params }) =>
  params.client_id
    ? undefined
    : { kind: 'page', status: 400, problem: 'noClient', message: 'The request names no client (client_id is missing).' };

/**
 * RFC 6749 §4.1.2.1: "if the client identifier is missing or invalid", the person is told, and
 * nothing is redirected. A client_id that is a URL names a Client ID Metadata Document, fetched
 * when the box has no fresh copy (./agents.ts).
 */
const clientIsKnown: PageCheck = async ({ params }, svc) => {
  const found = params.client_id ? await clientNamed(svc, params.client_id) : undefined;
  return found && 'client' in found
    ? { client: found.client }
    : unknownClientOrRedirect(svc, params.client_id, found?.why ?? 'unknown client');
};

/**
 * RFC 6749 §4.1.2.1: "If the request fails due to a missing, invalid, or mismatching redirection URI
 * [...] the authorization server SHOULD inform the resource owner of the error and MUST NOT
 * automatically redirect the user-agent to the invalid redirection URI."
 */
const redirectUriIsRegistered: PageCheck = ({ client, params }, svc) => {
  if (!client) return unknownClientOrRedirect(svc, params.client_id, 'unknown client');
  const trusted = trustedRedirectUri(client.resource, grantOf(params.response_type), params.redirect_uri);
  return 'why' in trusted ? unknownClientOrRedirect(svc, params.client_id, trusted.why) : { redirectUri: trusted.uri };
};

/**
 * RFC 9101 §6.3: "The authorization server MUST only use the parameters in the Request Object even
 * if the same parameter is provided in the query parameter": an object sent by value replaces the
 * parameters, but client_id, which must name the client that signed it (./request-object.ts). One
 * that is unsigned or not signed with that client's keys is a page: its redirect_uri is nobody's
 * word, and the parameters outside it do not count. A signed one refused for its claims (expired,
 * another audience) goes back to its redirect URI once that is known good (requestObjectIsTaken).
 * A pushed request's object was read at PAR; a request_uri beside it is refused in the redirect.
 */
const requestObjectIsSigned: PageCheck = async ({ client, params, pushed }, svc) => {
  if (params.request === undefined || pushed !== undefined || params.request_uri !== undefined || !client) return undefined;
  const object = await readRequestObject(svc, client.resource, params.request, OBJECT_PARAMS, Date.now());
  // Nothing outside counts, a resource repeated there neither (eachParameterOnce noted it).
  if (!('problem' in object) || object.signed)
    return { params: object.params ?? { client_id: client.resource.id }, object, severalResources: false };
  svc.log.info({ event: 'authorize_refused', client: params.client_id, reason: object.problem }, 'authorization request refused');
  return {
    kind: 'page',
    status: 400,
    problem: 'requestObject',
    values: { reason: object.problem },
    message: `The application's request object is refused: ${object.problem}.`,
  };
};

/**
 * An agent's client (a metadata document's, a dynamic registration's) is admitted by the box's
 * AccessPolicies for what it asks now, at each request: deny by default (./agents.ts). Until a
 * policy admits it, its redirect URI is not one the box sends anyone to, so the refusal is a page.
 */
const agentIsAdmitted: PageCheck = async ({ client, params }, svc) => {
  if (!client?.resource.registration) return undefined;
  const refusal = await agentRefusal(svc, client.resource, {
    scope: params.scope,
    resource: params.resource === undefined ? [] : [params.resource],
    uri: '/auth/authorize',
  });
  if (!refusal) return undefined;
  svc.log.info({ event: 'authorize_refused', client: params.client_id, reason: refusal }, 'authorization request refused');
  return {
    kind: 'page',
    status: 403,
    problem: 'notAdmitted',
    values: { host: hostOfClient(client.resource) },
    message: `This box does not let the application at ${hostOfClient(client.resource)} sign you in. If you expected it to, ask an administrator.`,
  };
};

/**
 * A pairwise client that names a sector_identifier_uri is given its sector's subs only once the
 * document there lists its redirect URIs (OpenID Connect Registration §5; ./sector-identifier.ts):
 * else any writer of a Client could take another relying party's subs.
 */
const sectorIsVerified: Check = async ({ client }, _read, svc) => {
  const refusal = await sectorRefusal(svc, client.resource);
  return refusal === undefined ? undefined : refuse('invalid_request', refusal);
};

/** RFC 6749 §4.1.2.1: "unsupported_response_type: The authorization server does not support obtaining an authorization code using this method." */
const responseTypeIsServed: Check = ({ grant }) =>
  grant ? undefined : refuse('unsupported_response_type', `response_type must be one of: ${RESPONSE_TYPES.join(', ')}`);

/**
 * Multiple Response Type Encoding Practices §2.1: "response_mode OPTIONAL. Informs the
 * Authorization Server of the mechanism to be used for returning parameters from the Authorization
 * Endpoint." One the box does not serve is refused in the response_type's default mode.
 */
const responseModeIsServed: Check = ({ params, responseType, redirectUri }) => {
  const problem = responseModeProblem(responseType, params.response_mode, redirectUri);
  return problem === undefined ? undefined : refuse('invalid_request', problem);
};

/**
 * RFC 9126 §4: "Authorization server policy MAY dictate, either globally or on a per-client basis,
 * that PAR be the only means for a client to pass authorization request data. In this case, the
 * authorization server will refuse, using the invalid_request error code, to process any request to
 * the authorization endpoint that does not have a request_uri parameter with a value obtained from
 * the PAR endpoint."
 */
const pushedWhenRequired: Check = ({ client, pushed }) =>
  mustPush(client.resource) && !pushed
    ? refuse('invalid_request', `client "${client.resource.id}" must push its authorization requests to /auth/par (RFC 9126)`)
    : undefined;

/**
 * RFC 9101 §10.5: "require_signed_request_object ... Indicates where authorization request
 * needs to be protected as Request Object and provided through either request or request_uri
 * parameter". A pushed request of such a client was read from its object at PAR (./par.ts).
 */
const signedWhenRequired: Check = ({ client, object, pushed }) =>
  client.resource.require_signed_request_object && !object && pushed === undefined
    ? refuse('invalid_request', `client "${client.resource.id}" must send its authorization requests as signed request objects (RFC 9101)`)
    : undefined;

/**
 * RFC 9101 §6.3: invalid_request_object for an object refused for its claims, or taken before: its
 * jti (or the object itself) is spent here, once in the box (./request-object.ts).
 */
const requestObjectIsTaken: Check = async ({ object }, _read, svc) => {
  if (!object) return undefined;
  if ('problem' in object) return refuse('invalid_request_object', object.problem);
  return (await spendRequestObject(svc, object)) ? undefined : refuse('invalid_request_object', REPLAYED_OBJECT);
};

/** A request object beside a request_uri: one or the other (RFC 9101 §5). */
const oneRequestObject: Check = ({ params }) =>
  params.request === undefined ? undefined : refuse('invalid_request', 'send a request object or a request_uri, not both');

/** The FAPI 2.0 Security Profile's rules of a fapi2 client's request (./fapi2.ts). */
const fapi2Rules: Check = ({ client, params }) => fapi2AuthorizationRefusal(client.resource, params);

/** Core §6: request_uri_not_supported — but the request_uri of a request pushed to the box (RFC 9126) is the box's own. */
const requestUriIsPushed: Check = ({ params, pushed }) =>
  params.request_uri === undefined || typeof pushed === 'object'
    ? undefined
    : refuse('request_uri_not_supported', 'request_uri is not supported: send the parameters of the request themselves');

/** RFC 6749 §4.1.2.1: "unauthorized_client: The client is not authorized to request an authorization code using this method." */
const grantIsListed: Check = ({ client, grant }) =>
  listedInGrantTypes(grant!)(client.resource) ? undefined : refusalOf(notListedInGrantTypes(client.resource, grant!));

/** DPoP (RFC 9449): a token from the authorization endpoint can be bound to no key, and this client's must all be. */
const boundTokensComeFromCode: Check = ({ client, grant, params }) =>
  grant === 'implicit' && params.response_type !== 'id_token' && client.resource.dpop_bound_access_tokens === true
    ? refuse(
        'unauthorized_client',
        `client "${client.resource.id}" must bind its tokens with DPoP (dpop_bound_access_tokens): use the code flow`,
      )
    : undefined;

/**
 * RFC 9449 §10: dpop_jkt binds the authorization code to the client's DPoP key ("the JWK SHA-256
 * Thumbprint [RFC7638] of the proof-of-possession public key"); tokens from the authorization
 * endpoint itself are bound to nothing.
 */
const dpopJktBindsACode: Check = ({ grant, params, responseType }) => {
  if (params.dpop_jkt === undefined) return undefined;
  if (grant !== 'authorization_code')
    return refuse('invalid_request', `dpop_jkt binds an authorization code; response_type=${responseType} issues none`);
  if (!isThumbprint(params.dpop_jkt))
    return refuse('invalid_request', "dpop_jkt must be a key's JWK SHA-256 thumbprint (43 base64url characters)");
  return undefined;
};

/**
 * RFC 7636 §4.4.1: "If the server supporting PKCE does not support the requested transformation, the
 * authorization endpoint MUST return the authorization error response with "error" value set to
 * "invalid_request"." The box supports S256 only (§4.2: "If the client is capable of using "S256", it
 * MUST use "S256"").
 */
const challengeMethodIsS256: Check = ({ grant, params }) =>
  grant === 'authorization_code' && params.code_challenge_method !== undefined && params.code_challenge_method !== 'S256'
    ? refuse('invalid_request', 'code_challenge_method must be S256')
    : undefined;

/** RFC 7636 §4.2: "code_challenge = BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))". */
const challengeIsSha256: Check = ({ grant, params }) => {
  if (grant !== 'authorization_code' || params.code_challenge === undefined) return undefined;
  if (!isChallenge(params.code_challenge)) return refuse('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
  return { codeChallenge: params.code_challenge };
};

/**
 * RFC 7636 §4.4.1: "If the server requires Proof Key for Code Exchange (PKCE) by OAuth public clients
 * and the client does not send the "code_challenge" in the request, the authorization endpoint MUST
 * return the authorization error response with the "error" value set to "invalid_request"."
 */
const publicClientUsesPkce: Check = ({ client, grant, params }) =>
  grant === 'authorization_code' && params.code_challenge === undefined && !client.secretHash
    ? refuse('invalid_request', 'a client without a secret must use PKCE: send code_challenge and code_challenge_method=S256')
    : undefined;

/** A reading of ./params.ts or ./entitlements.ts, whose OAuthError is the refusal. */
async function readOrRefuse(read: () => Partial<Readings> | Promise<Partial<Readings>>): Promise<Partial<Readings> | Refusal> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof OAuthError) return refusalOf(err);
    throw err;
  }
}

/** RFC 6749 §4.1.2.1: "invalid_scope: The requested scope is invalid, unknown, or malformed" — or beyond the client's list. */
const scopeIsGranted: Check = ({ client, params }) =>
  readOrRefuse(() => ({ scope: grantedScope(client.resource, scopeParam(params.scope)) }));

/**
 * RFC 8707 §2.1: `resource` "indicates the identity of the protected resource(s) to which access is
 * being requested"; in the code flow "the requested resource is applicable to the full
 * authorization grant". It must be a registered resource this client may ask for
 * (./entitlements.ts registeredResource), one per request; it becomes the audience of every token
 * of the grant, or invalid_target.
 */
const resourceIsGranted: Check = ({ client, params, severalResources: several }, _read, svc) =>
  readOrRefuse(async () => {
    if (several) throw severalResources();
    const resource = resourceParam(params.resource);
    return { audience: resource === null ? null : await registeredResource(svc, client.resource, resource) };
  });

/**
 * An ID token is asked for in an OpenID request (Core §3.1.2.1: "If the openid scope value is not
 * present, the behavior is entirely unspecified"), and with a nonce (Core §3.2.2.1: "nonce
 * REQUIRED").
 */
const idTokenIsOpenid: Check = ({ params, responseType }, { scope }) => {
  if (!responseType.startsWith('id_token')) return undefined;
  if (!hasOpenid(scope)) return refuse('invalid_request', `response_type=${responseType} needs scope openid`);
  if (!params.nonce) return refuse('invalid_request', `response_type=${responseType} needs a nonce (OpenID Connect Core §3.2.2.1)`);
  return undefined;
};

/** Core §3.1.2.1: prompt's values; "If this parameter contains none with any other value, an error is returned." */
const promptIsServed: Check = ({ params }) => {
  const prompt = new Set((params.prompt ?? '').split(' ').filter(Boolean)) as Set<Prompt>;
  const unknownPrompt = [...prompt].find((p) => !PROMPTS.includes(p));
  if (unknownPrompt) return refuse('invalid_request', `prompt "${unknownPrompt}" is not supported (${PROMPTS.join(', ')})`);
  if (prompt.has('none') && prompt.size > 1) return refuse('invalid_request', 'prompt=none cannot be combined with other values');
  return { prompt };
};

/** Core §3.1.2.1: "max_age: Maximum Authentication Age. Specifies the allowable elapsed time in seconds". */
const maxAgeIsSeconds: Check = ({ params }) => {
  if (params.max_age === undefined) return undefined;
  if (!/^\d{1,10}$/.test(params.max_age)) return refuse('invalid_request', 'max_age must be a number of seconds');
  return { maxAge: Number(params.max_age) };
};

/** Core §5.5: the claims parameter, a JSON object naming claims of the userinfo answer and the ID token. */
const claimsAreReadable: Check = ({ params }) => {
  if (params.claims === undefined) return undefined;
  const claims = parseClaimsParameter(params.claims);
  return typeof claims === 'string' ? refuse('invalid_request', claims) : { claims };
};

/** Core §3.1.2.1: "id_token_hint: ID Token previously issued by the Authorization Server". */
const idTokenHintIsOurs: Check = async ({ params, client }, _read, svc) => {
  if (params.id_token_hint === undefined) return undefined;
  const hint = idTokenHintClaims(params.id_token_hint, svc.config.baseUrl, svc.keyring.find);
  if (!hint) return refuse('invalid_request', 'id_token_hint is not an ID token this box issued');
  // Its sub as this client's subs are made (api/credentials/subjects.ts): another client's pairwise sub is nobody here.
  const person = await personOfSubject(svc, client.resource, hint.sub as string);
  return { hintedUser: person === undefined ? NOBODY : String(person) };
};

/** The hintedUser of a hint whose sub names nobody: no signed-in person is them (api/credentials/sign-in.ts mustSignIn). */
const NOBODY = 'nobody';

/**
 * The rules, in the order their errors win. Until the client and its redirect URI are known good, a
 * refusal is a page of the box (`onAPage`; RFC 6749 §4.1.2.1 above); after, "the authorization server
 * informs the client by adding the following parameters to the query component of the redirection
 * URI" (`inTheRedirect`; the fragment for the implicit kinds, or the mode the request asked for:
 * ./response-mode.ts).
 */
export const AUTHORIZATION_REQUEST_CHECKS: { readonly onAPage: readonly PageCheck[]; readonly inTheRedirect: readonly Check[] } = {
  onAPage: [eachParameterOnce, clientIsNamed, clientIsKnown, requestObjectIsSigned, redirectUriIsRegistered, agentIsAdmitted],
  inTheRedirect: [
    requestObjectIsTaken,
    responseTypeIsServed,
    responseModeIsServed,
    pushedWhenRequired,
    signedWhenRequired,
    fapi2Rules,
    requestUriIsPushed,
    oneRequestObject,
    grantIsListed,
    sectorIsVerified,
    boundTokensComeFromCode,
    dpopJktBindsACode,
    challengeMethodIsS256,
    challengeIsSha256,
    publicClientUsesPkce,
    scopeIsGranted,
    resourceIsGranted,
    idTokenIsOpenid,
    promptIsServed,
    maxAgeIsSeconds,
    claimsAreReadable,
    idTokenHintIsOurs,
  ],
};

/** The request the checks on a page let through: its client and redirect URI, and what its response_type asks. */
function knownGood({ params, pushed, client, redirectUri, object, severalResources = false }: Presented): AskedRequest {
  // The checks on a page end with redirectUriIsRegistered, which finds both or refuses.
  if (!client || redirectUri === undefined) throw new Error('an authorization request passed the checks without a client or redirect URI');
  const grant = grantOf(params.response_type);
  const responseType = (grant ? params.response_type : 'code') as ResponseType;
  return {
    params,
    severalResources,
    pushed,
    object,
    client,
    redirectUri,
    grant,
    responseType,
    responseMode: responseModeOf(responseType, params.response_mode, redirectUri),
  };
}

function grantOf(responseType: string | undefined): 'implicit' | 'authorization_code' | undefined {
  if (responseType === 'code') return 'authorization_code';
  return RESPONSE_TYPES.includes(responseType as ResponseType) ? 'implicit' : undefined;
}

/** A refusal on its way back to the client, from the box whose address is `issuer`. */
function inTheRedirect(issuer: string, asked: AskedRequest, { error, description }: Refusal): RedirectProblem {
  return {
    kind: 'redirect',
    answer: answerTo(issuer, asked, { ...errorFields(error, description), state: asked.params.state }),
    error,
    description,
  };
}

/** The request read: what was asked, and what the checks read of it. */
function requestOf(
  { params, client, redirectUri, responseType, responseMode, pushed, object }: AskedRequest,
  read: Partial<Readings>,
): AuthorizationRequest {
  const checked: Readings = {
    scope: null,
    audience: null,
    codeChallenge: undefined,
    prompt: new Set(),
    maxAge: undefined,
    claims: null,
    hintedUser: undefined,
    ...read,
  };
  return {
    responseType,
    responseMode,
    client,
    redirectUri,
    state: params.state,
    scope: checked.scope ?? undefined,
    codeChallenge: checked.codeChallenge,
    nonce: params.nonce,
    claims: checked.claims,
    audience: checked.audience ?? undefined,
    dpopJkt: params.dpop_jkt,
    prompt: checked.prompt,
    maxAge: checked.maxAge,
    loginHint: params.login_hint,
    hintedUser: checked.hintedUser,
    ...(typeof pushed === 'object'
      ? {
          // The way back from sign-in and consent names the pushed request, never its parameters: what
          // the client pushed cannot be changed on the way, nor a client that must push be bypassed.
          params: {
            client_id: params.client_id!,
            request_uri: params.request_uri!,
            ...(params[SIGN_IN_AFTER] ? { [SIGN_IN_AFTER]: params[SIGN_IN_AFTER] } : {}),
          },
          pushed,
        }
      : { params, ...(object ? { fromRequestObject: true } : {}) }),
  };
}

/** What a person is told of an agent: the host its client_id names (draft §8.5), or the host it comes back to. */
const hostOfClient = (client: Client): string => agentShown(client)?.host || client.id;

/**
 * An unknown client and a redirect URI it did not register get the same page, which names
 * neither: the page must not tell a stranger which client ids exist. The log says which.
 */
function unknownClientOrRedirect(svc: Pick<Needs, 'log'>, clientId: string | undefined, why: string): PageProblem {
  svc.log.info({ event: 'authorize_refused', client: clientId, reason: why }, 'authorization request refused');
  return {
    kind: 'page',
    status: 400,
    problem: 'unknown',
    message:
      'The application sent you here with a client or a redirect URI that this box does not know. ' +
      'Go back to the application; if it keeps happening, tell its developers.',
  };
}

/**
 * The redirect URI, one configured for the grant (redirectMatches), or why there is none. RFC 6749
 * §3.1.2.3: "If multiple redirection URIs have been registered, [...] the client MUST include a
 * redirection URI with the authorization request"; with one registered, it may be left out. For a
 * response_type the box does not serve, any URI the client registered may carry that error back.
 */
function trustedRedirectUri(
  client: Client,
  grant: AskedRequest['grant'],
  requested: string | undefined,
): { uri: string } | { why: string } {
  const registered = grant ? registeredRedirectUris(client.auth?.[grant]) : [];
  const candidates = registered.length
    ? registered
    : [...registeredRedirectUris(client.auth?.authorization_code), ...registeredRedirectUris(client.auth?.implicit)];
  if (!candidates.length) return { why: grant ? `no auth.${grant}.redirect_uri` : 'redirect URI not registered' };
  if (requested === undefined)
    return registered.length === 1 ? { uri: registered[0]! } : { why: 'no redirect_uri, and the client registered several' };
  return candidates.some((u) => redirectMatches(u, requested))
    ? { uri: requested }
    : { why: 'redirect URI differs from the registered ones' };
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/**
 * Whether a requested redirect URI is the registered one: to the letter, except
 * that for a loopback address over http the port may differ (RFC 8252 §7.3: a
 * native app such as kubectl's sign-in listens on whatever port is free).
 */
export function redirectMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(requested);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' &&
    b.protocol === 'http:' &&
    LOOPBACK.has(a.hostname) &&
    b.hostname === a.hostname &&
    b.pathname === a.pathname &&
    b.search === a.search &&
    // nothing else in the request may differ, however it is spelled (user info, fragment, encodings)
    requested === `http://${b.host}${b.pathname}${b.search}`
  );
}

/** The answer that sends the request back to the client of the box `issuer` with an error (access_denied, login_required, consent_required…). */
export function errorAnswer(issuer: string, req: AuthorizationRequest, error: RedirectErrorCode, description: string): ClientAnswer {
  return answerTo(issuer, req, { ...errorFields(error, description), state: req.state });
}
