// The rules of an authorization request whose client and redirect URI are known good (./authorize.ts
// reads those first): from here on, a problem travels back to the client in the redirect. One named
// check per rule, run in the order of AUTHORIZATION_REQUEST_CHECKS; the first refusal wins. That order
// is what clients (and the OpenID Foundation's conformance suite) see when two rules are broken at
// once: a new rule (FAPI, step-up) is a check added to the list, at the place its error should win.
import type { Stored } from '../store/resources.js';
import type { PushedRequestClaim } from '../store/pushed-requests.js';
import type { Client } from '../types.js';
import type { AuthorizeServices } from './authorize.js';
import { grantedAudience, grantedScope } from './entitlements.js';
import { OAuthError } from '../credentials/errors.js';
import { hasOpenid, idTokenHintClaims, parseClaimsParameter, type RequestedClaims } from './openid.js';
import { resourceParam, scopeParam } from './params.js';
import { isThumbprint } from '../credentials/dpop/proof.js';
import { isChallenge } from '../credentials/pkce.js';

export type ResponseType = 'code' | 'token' | 'id_token' | 'id_token token';
export const RESPONSE_TYPES: readonly ResponseType[] = ['code', 'token', 'id_token', 'id_token token'];

/** OpenID Connect's prompt values the box serves (Core §3.1.2.1); select_account is a sign-in again. */
export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: readonly Prompt[] = ['none', 'login', 'consent', 'select_account'];

/** A request whose client and redirect URI are known good. */
export interface AskedRequest {
  /** Its parameters, each given once and not empty. */
  params: Record<string, string>;
  client: Stored<Client>;
  /** The grant its response_type asks for; undefined for a response_type the box does not serve. */
  grant: 'authorization_code' | 'implicit' | undefined;
  /** Its response_type, or `code` for one the box does not serve (how an error is sent back). */
  responseType: ResponseType;
  /** The pushed request (RFC 9126) its parameters come from: being pushed now, or claimed by this browser. */
  pushed: PushedRequestClaim | 'being-pushed' | undefined;
}

/** What the checks read from a request's parameters, for the rules after them and for the request read. */
export interface Readings {
  scope: string | null;
  /** The audience the tokens will carry (RFC 8707 resource), or null. */
  audience: string | null;
  codeChallenge: string | undefined;
  prompt: Set<Prompt>;
  maxAge: number | undefined;
  claims: RequestedClaims | null;
  /** The user an id_token_hint names (its sub). */
  hintedUser: string | undefined;
}

/** A rule broken: the error and description sent back to the client. */
export interface Refusal {
  error: string;
  description: string;
}

type CheckServices = Pick<AuthorizeServices, 'config' | 'keyring'>;

/** One rule: a refusal, what it read, or nothing (a rule kept). `read` holds what the checks before it read. */
type Check = (asked: AskedRequest, read: Partial<Readings>, svc: CheckServices) => Refusal | Partial<Readings> | undefined;

const refuse = (error: string, description: string): Refusal => ({ error, description });

/** RFC 6749 §4.1.2.1: "unsupported_response_type: The authorization server does not support obtaining an authorization code using this method." */
const responseTypeIsServed: Check = ({ grant }) =>
  grant ? undefined : refuse('unsupported_response_type', `response_type must be one of: ${RESPONSE_TYPES.join(', ')}`);

/**
 * RFC 9126 §4: "Authorization server policy MAY dictate, either globally or on a per-client basis,
 * that PAR be the only means for a client to pass authorization request data. In this case, the
 * authorization server will refuse, using the invalid_request error code, to process any request to
 * the authorization endpoint that does not have a request_uri parameter with a value obtained from
 * the PAR endpoint."
 */
const pushedWhenRequired: Check = ({ client, pushed }) =>
  client.resource.require_pushed_authorization_requests && !pushed
    ? refuse('invalid_request', `client "${client.resource.id}" must push its authorization requests to /auth/par (RFC 9126)`)
    : undefined;

/** Core §6: an OP that does not take request objects answers request_not_supported (discovery says so too). */
const noRequestObject: Check = ({ params }) =>
  params.request === undefined
    ? undefined
    : refuse('request_not_supported', 'request objects are not supported: send the parameters of the request themselves');

/** Core §6: request_uri_not_supported — but the request_uri of a request pushed to the box (RFC 9126) is the box's own. */
const requestUriIsPushed: Check = ({ params, pushed }) =>
  params.request_uri === undefined || typeof pushed === 'object'
    ? undefined
    : refuse('request_uri_not_supported', 'request_uri is not supported: send the parameters of the request themselves');

/** RFC 6749 §4.1.2.1: "unauthorized_client: The client is not authorized to request an authorization code using this method." */
const grantIsAllowed: Check = ({ client, grant }) =>
  client.resource.grant_types.includes(grant!)
    ? undefined
    : refuse('unauthorized_client', `client "${client.resource.id}" may not use the ${grant} grant`);

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
function readOrRefuse(read: () => Partial<Readings>): Partial<Readings> | Refusal {
  try {
    return read();
  } catch (err) {
    if (err instanceof OAuthError) return refuse(err.code, err.message);
    throw err;
  }
}

/** RFC 6749 §4.1.2.1: "invalid_scope: The requested scope is invalid, unknown, or malformed" — or beyond the client's list. */
const scopeIsGranted: Check = ({ client, params }) =>
  readOrRefuse(() => ({ scope: grantedScope(client.resource, scopeParam(params.scope)) }));

/** RFC 8707 §2: `resource` names where the token will be used; it becomes the token's audience, or invalid_target. */
const resourceIsGranted: Check = ({ client, params }) =>
  readOrRefuse(() => ({ audience: grantedAudience(client.resource, resourceParam(params.resource)) }));

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
const idTokenHintIsOurs: Check = ({ params }, _read, svc) => {
  if (params.id_token_hint === undefined) return undefined;
  const hint = idTokenHintClaims(params.id_token_hint, svc.config.baseUrl, svc.keyring.find);
  return hint ? { hintedUser: hint.sub as string } : refuse('invalid_request', 'id_token_hint is not an ID token this box issued');
};

/** The rules, in the order their errors win. */
export const AUTHORIZATION_REQUEST_CHECKS: readonly Check[] = [
  responseTypeIsServed,
  pushedWhenRequired,
  noRequestObject,
  requestUriIsPushed,
  grantIsAllowed,
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
];

/** The first rule the request breaks, or what the checks read from it. */
export function checkAuthorizeRequest(asked: AskedRequest, svc: CheckServices): Refusal | Readings {
  const read: Partial<Readings> = {};
  for (const check of AUTHORIZATION_REQUEST_CHECKS) {
    const found = check(asked, read, svc);
    if (found && 'error' in found) return found;
    Object.assign(read, found);
  }
  return {
    scope: null,
    audience: null,
    codeChallenge: undefined,
    prompt: new Set(),
    maxAge: undefined,
    claims: null,
    hintedUser: undefined,
    ...read,
  };
}
