// The request objects policies test, one type per kind of question (docs/concepts/access-control.md,
// docs/guides/guard-your-apps.md, docs/guides/tokens-between-services.md). Their builders live where
// the question is asked (api/http/auth.ts, api/oauth/introspection.ts, api/decision/request.ts,
// api/oauth/grants/token-exchange.ts); the engines' entry (./evaluate.ts) takes each kind by its
// type, so the compiler refuses a request of one kind handed to the question of another.
//
// `kind` is the compiler's only: it is never set, so the objects policies see are unchanged (a
// json-schema policy with additionalProperties: false would refuse a field they did not expect).
import type { PrincipalUser } from '../types.js';

declare const kind: unique symbol;

/** An identity of the person at an upstream provider: the provider's id and the person's subject there. */
export interface RequestIdentity {
  provider: string;
  subject: string;
}

/**
 * A person as every request object names them: the box's API's, an app's, a token exchange's.
 * Who can write each field is in docs/concepts/access-control.md ("What a policy knows about a
 * person"): a rule must read only what its subject cannot write.
 */
export interface RequestUser {
  id: string;
  email: string;
  /** Whether the box vouches for `email`: a rule on the address (an email domain) must require it. */
  email_verified: boolean;
  /** Their groups' names. */
  groups: string[];
  /** The person's data (users.data: the JSON an administrator keeps for them); {} when none. */
  data: Record<string, unknown>;
  /** Their SCIM attributes as the SCIM door shows them (userName, externalId, name, displayName…); {} for a person no directory wrote. */
  scim: Record<string, unknown>;
  /** Their identities at upstream providers, linked by a sign-in there. */
  identities: RequestIdentity[];
}

/**
 * A person as an App's policies see them (AppRequest.user): what a token for the App carries of
 * them — the upstream JWT's `sub`, `email`, `email_verified` and `groups` — and the claims the App
 * shapes of them (App.claims, ./claims.ts appPerson). Never their data, SCIM attributes or upstream
 * identities: an App's policies are written by the App's team (docs/concepts/access-control.md,
 * "Delegating records"), and what they read they can spell out one guess at a time (issue 63).
 * What the App may see of a person beyond this, an administrator shapes into its claims.
 */
export interface AppPerson {
  id: string;
  email: string;
  /** Whether the box vouches for `email`. */
  email_verified: boolean;
  /** Their groups' names. */
  groups: string[];
  /** The claims the App shapes of them, by name; {} when it shapes none (or none has a value for them). */
  claims: Record<string, unknown>;
}

/** The person of a request object, as every builder of one writes it. */
export const requestUser = (user: PrincipalUser): RequestUser => ({
  id: user.id,
  email: user.email,
  email_verified: user.emailVerified,
  groups: user.groups.map((g) => g.name),
  data: user.data,
  scim: user.scim,
  identities: user.identities,
});

/** RFC 8693 §4.1: "act" names the current actor; a prior actor is nested in it, least recent deepest. */
export interface Act {
  sub: string;
  iss?: string;
  client_id?: string;
  act?: Act;
}

/** A checked subject or actor token, as policies see it. */
export interface Party {
  /**
   * box: an access token of this box; serviceaccount: a Kubernetes ServiceAccount token; jwt: another trusted issuer's JWT;
   * txn: a Txn-Token of this box (a replacement's subject_token; its claims in `claims`).
   */
  kind: 'box' | 'serviceaccount' | 'jwt' | 'txn';
  iss: string;
  sub: string;
  /** A box token's client. */
  client_id?: string;
  /** A box token's person. */
  user?: RequestUser;
  aud: string | string[] | null;
  scope: string | null;
  /** The delegation the token already records. */
  act?: Act;
  /** A ServiceAccount token's. */
  namespace?: string;
  serviceAccount?: string;
  /** A JWT's claims as its issuer signed them (a CI job's repository, branch…). */
  claims?: Record<string, unknown>;
}

/** A request on the box's own API, as its policies see it (the routes of api/http/, and introspection). */
export interface BoxApiRequest {
  readonly [kind]?: 'box-api';
  'request-method': string;
  uri: string;
  params: Record<string, unknown>;
  'query-string': string;
  client: Record<string, unknown> | null;
  user: RequestUser | null;
  scope: string | null;
  /** On writes: the record written, each secret it writes as `true`, never its value (api/http/written-secrets.ts). */
  body?: unknown;
}

/** What a client's policies see of a token exchange (RFC 8693): the box API's shape, and the exchange. */
export interface ExchangeRequest extends Omit<BoxApiRequest, typeof kind> {
  readonly [kind]?: 'exchange';
  'request-method': 'post';
  uri: '/auth/token';
  params: { grant_type: string };
  'query-string': '';
  client: Record<string, unknown>;
  /** Always null: the subject's person is exchange.subject.user, so that API policies about people never decide an exchange. */
  user: null;
  scope: string | null;
  exchange: {
    subject: Party;
    actor: Party | null;
    /** True with an actor token (delegation), false without (impersonation). */
    delegation: boolean;
    audience: string | null;
    scope: string[];
    requested_token_type: string;
    /** The act the new token would carry. */
    act?: Act;
    /** A Transaction Token request (requested_token_type urn:ietf:params:oauth:token-type:txn_token): what it asks the token to assert. */
    txn?: TxnAsked;
  };
}

/**
 * What a Txn-Token request asks (draft-ietf-oauth-transaction-tokens-10 §11.1), as the requesting
 * client's policies see it: the `request_context` and `request_details` parameters as sent (the
 * token's `rctx` and `tctx`), and whether it replaces a Txn-Token (its subject_token is one).
 */
export interface TxnAsked {
  request_context: Record<string, unknown>;
  request_details: Record<string, unknown>;
  replacing: boolean;
}

/** A Txn-Token received with a request at an app's gate (its `Txn-Token` header, verified): its claims. */
export interface TxnSeen {
  txn: string;
  sub: string;
  scope: string[];
  tctx: Record<string, unknown>;
  rctx: Record<string, unknown>;
  /** The requesting workloads, the first requester first. */
  req_wl: string[];
  iat: number;
  exp: number;
}

/**
 * What the box's policies see of a client that named itself (docs/guides/agents.md): one that a
 * Client ID Metadata Document describes (asked at each of its authorization requests, so that a
 * policy changed takes effect at once), or one asking to be registered (RFC 7591, POST
 * /auth/register) and then at each of its authorization requests. The box API's shape, with no
 * client, person or scope of a token: only `registration` says anything.
 */
export interface RegistrationRequest extends Omit<BoxApiRequest, typeof kind> {
  readonly [kind]?: 'registration';
  'request-method': 'post';
  /** /auth/authorize (an authorization request, or one pushed to /auth/par), /auth/register, or /auth/token (a refresh). */
  uri: '/auth/authorize' | '/auth/register' | '/auth/token';
  params: Record<string, never>;
  'query-string': '';
  client: null;
  user: null;
  scope: null;
  registration: {
    /** metadata-document: its client_id is the URL of its document; dynamic: registered through /auth/register. */
    kind: 'metadata-document' | 'dynamic';
    /** The client_id: the document's URL, or the id the box gives a registration. */
    client_id: string;
    /** The client_id URL's host (host[:port], lower case); a dynamic client's, the one host all its redirect URIs name, '' when they name several. */
    host: string;
    redirect_uris: string[];
    client_name: string | null;
    /** The scopes asked for now (an authorization request's scope; a registration's scope); [] when none. */
    scope: string[];
    /** The resources asked for now (RFC 8707 resource), [] when none. */
    resource: string[];
  };
}

/**
 * Whether a Shared Signals receiver may have a person's events (api/ssf/): asked when the receiver
 * adds the person to a stream, and again for each event about them (docs/guides/sign-out-everywhere.md).
 * The box API's shape, with no person or scope of a token (`user` is the caller's, and the receiver
 * calls as no person): `client` is the receiver's record, `ssf` says the rest.
 */
export interface SsfRequest extends Omit<BoxApiRequest, typeof kind> {
  readonly [kind]?: 'ssf';
  /**
   * Neither an HTTP method nor a path: a policy written for the box's API (`{"uri": "#^/ssf/"}` for
   * the stream management API, a method) never matches this question by accident.
   */
  'request-method': 'receive';
  uri: 'ssf:events';
  params: Record<string, never>;
  'query-string': '';
  client: Record<string, unknown>;
  user: null;
  scope: null;
  ssf: {
    /** The receiver: the client whose stream it is. */
    receiver: string;
    stream: string;
    /** The person the events are about. */
    subject: RequestUser;
  };
}

/**
 * What an app's policies see of a request at its gate: the request as its gateway read it and
 * who is calling, from the credential the box checked (api/decision/request.ts).
 */
export interface AppRequest {
  readonly [kind]?: 'app';
  app: string;
  /** Lower case (get, post…); for an AuthZEN evaluation, its action's name. */
  'request-method': string;
  /** host[:port], lower case. */
  host: string;
  /** Decoded once; never ambiguous (api/decision/path.ts refuses what would be). */
  path: string;
  query: Record<string, string | string[]>;
  /** The headers named in the App's policyHeaders, lower case; no others. */
  headers: Record<string, string>;
  /** The caller's person as the App may see them (AppPerson); null without one. */
  user: AppPerson | null;
  /** The client the token was issued to; null without a token. */
  client: string | null;
  scope: string | null;
  audience: string | null;
  /** Whom the token is about: its issuer (the box's URL, or the issuer of an exchanged token's subject) and `sub`; null without a token. */
  subject: { iss: string; sub: string } | null;
  /** A delegated token's actors (RFC 8693 `act`, the current one first); null when nobody acts for the subject. */
  act: Act | null;
  /** What the person's sign-in behind the token proved (RFC 8176: pwd, otp, hwk, swk, user, mfa); null without one. */
  amr: string[] | null;
  /** Its class, on the box's ladder (urn:boxauth:acr:password, urn:boxauth:acr:mfa, phr); null without one. */
  acr: string | null;
  /**
   * The JSON-RPC call of the request's body (an MCP client's POST), read by api/decision/jsonrpc.ts:
   * its method and, for `tools/call`, its tool; each call of a batch is its own request object.
   * Null when the request carries no JSON-RPC (no body, or one the gateway did not send).
   */
  jsonrpc: { method: string; tool: string | null } | null;
  /** The request's Txn-Token (its `Txn-Token` header, verified against the box's keys); null without one. */
  txn: TxnSeen | null;
}

/** An AuthZEN evaluation at an app (api/http/routes/authzen.ts): an app's request, with the evaluation's resource and context as sent. */
export interface AuthzenRequest extends Omit<AppRequest, typeof kind> {
  readonly [kind]?: 'authzen';
  resource: Record<string, unknown>;
  context?: Record<string, unknown>;
}

/** Any request object a policy may be asked about (`boxauth explain`'s why, the engines' test). */
export type PolicyObject = BoxApiRequest | ExchangeRequest | RegistrationRequest | SsfRequest | AppRequest | AuthzenRequest;
