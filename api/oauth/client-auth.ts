// Client authentication at the token, introspection and revocation endpoints:
// HTTP Basic, client_id/client_secret in the (form or JSON) body, or a client
// assertion (RFC 7523): signed by the client's own keys (private_key_jwt,
// ./client-assertion.ts) or a workload's token. One method per request (RFC 6749 §2.3).
import { percentDecode, textProblem } from '../input.js';
import { hasClientKeys } from '../client-keys.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import { type SecretVerifier, dummyHash } from '../credentials/secrets.js';
import type { RecordCache } from '../cache/record-cache.js';
import { type FailureThrottle, addressKey, clientKey } from '../credentials/throttle.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';
import { OAuthError, invalidRequest } from '../credentials/errors.js';
import { LIMITS, type Params } from './params.js';
import {
  authenticateWorkload,
  JWT_BEARER,
  type FederatedIdentity,
  type WorkloadIdentity,
  type WorkloadServices,
} from '../credentials/workload/assertion.js';
import { WorkloadError } from '../credentials/workload/issuers.js';
import { AssertionRefused, assertionNames, REPLAYED, type ClientAssertions } from './client-assertion.js';
import type { SeenProof } from '../store/dpop-proofs.js';
import { type CertificateMethod, isCertificateMethod, type PresentedCertificate } from '../credentials/client-certificate.js';
import { certificateAuthentication, type CertificateAuthServices } from './certificate-auth.js';
import { JWT_SPIFFE, type SpiffeClientAuth, type SpiffeIdentity } from './spiffe.js';
import { fapi2AuthMethodRefusal } from './fapi2.js';
import { span } from '../tracing.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  secrets: SecretVerifier;
  clients: RecordCache<Stored<Client>>;
  clientThrottle: FailureThrottle;
  clientAssertions: ClientAssertions;
  spiffe: SpiffeClientAuth;
}

/** What client authentication needs. */
export type ClientAuthServices = Pick<Needs, 'clientAssertions' | 'clientThrottle' | 'clients' | 'log' | 'secrets' | 'spiffe'> &
  WorkloadServices &
  CertificateAuthServices;

/** What the OAuth endpoints know of a request besides its parameters. */
export interface OAuthRequest {
  authorization: string | undefined;
  /** Where it came from (api/http/client-address.ts), for throttling. */
  address: string;
  /** The request as its client addressed it (its method, and the box's URL of the endpoint), which a DPoP proof names. */
  method?: string;
  url?: string;
  /** The DPoP header(s) (RFC 9449 §4.1), as many as were sent. */
  dpop?: readonly string[] | undefined;
  /** The client certificate of the request (mutual TLS, RFC 8705), read when needed: ApiError 400 for a forwarded one not believed. */
  certificate?: () => PresentedCertificate | undefined;
}

export interface PresentedClient {
  clientId: string | undefined;
  secret: string | undefined;
  basic: boolean;
  address: string;
  /** A workload's token presented as client_assertion (RFC 7523). */
  assertion?: string;
  /** The request's client certificate (RFC 8705), read when needed. */
  certificate?: (() => PresentedCertificate | undefined) | undefined;
  /** The assertion is a JWT-SVID (client_assertion_type jwt-spiffe, ./spiffe.ts). */
  spiffe?: boolean;
}

/**
 * How a client proved who it is: RFC 7591's token_endpoint_auth_method names (§2, and RFC 8705 §2's
 * for certificates), or `workload` for a trusted issuer's token (RFC 7523 §2.2 with a third party's
 * assertion), `federated` for another issuer's subject bound to the client (auth.workload.federated: CI, another
 * cluster), `spiffe_jwt` for a SPIFFE JWT-SVID (client_assertion_type jwt-spiffe,
 * draft-ietf-oauth-spiffe-client-auth-02), `box` for the box's own exchange on an app's behalf (app sign-in). Audit records and
 * decision records name it, so a person can tell which credential was used.
 */
export type ClientAuthMethod =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'private_key_jwt'
  | 'tls_client_auth'
  | 'self_signed_tls_client_auth'
  | 'workload'
  | 'federated'
  | 'spiffe_jwt'
  | 'none'
  | 'box';

/**
 * A client as it authenticated: how, which workload presented its token (a ServiceAccount, another
 * issuer's subject, or a SPIFFE ID), and `certificate`: the x5t#S256 of the certificate it authenticated
 * with (RFC 8705 §2), which its access tokens are bound to.
 */
export type AuthenticatedClient = Stored<Client> & {
  method: ClientAuthMethod;
  workload?: WorkloadIdentity;
  federated?: FederatedIdentity;
  spiffe?: SpiffeIdentity;
  certificate?: string;
  /** Only when authenticateClient was asked to leave it so: the assertion's jti, not spent yet (UnspentAssertion). */
  unspent?: UnspentAssertion;
};

/**
 * A private_key_jwt assertion accepted but for replay, its jti left for the statement that writes the
 * token's session to spend (api/store/session-writer.ts insertSpending): one round trip, not two. A
 * grant given one must spend it so before it answers, and answer `replayed()` when the jti was spent
 * already.
 */
export interface UnspentAssertion {
  proof: SeenProof;
  /** The refusal of a replay, logged and counted against the address as any refused assertion. */
  replayed(): OAuthError;
}

/**
 * When a private_key_jwt assertion's jti is spent: `now`, in the replay ledger before authenticateClient
 * returns (the default: introspection, revocation, every grant that does not spend it itself), or
 * `with-session`, left to the grant (AuthenticatedClient.unspent).
 */
export type AssertionSpending = 'now' | 'with-session';

/**
 * How a client must prove who it is (a grant declares it; introspection and
 * revocation require it):
 * - required: its secret, or a workload's token (client_credentials);
 * - if-confidential: a client with credentials (a secret, or ServiceAccounts bound
 *   in auth.workload) must present them; one without (a public client) is
 *   identified by client_id and proves itself otherwise (PKCE);
 * - optional: client_id alone identifies it (the spec's refresh form);
 *   credentials, when sent, are verified all the same.
 */
export type ClientAuthentication = 'required' | 'if-confidential' | 'optional';

function formDecode(s: string): string {
  const decoded = percentDecode(s, true);
  if (decoded === undefined) throw invalidRequest('malformed Basic credentials: bad percent-encoding');
  return decoded;
}

export function presentedClient(request: OAuthRequest, params: Params): PresentedClient {
  return { ...presentedCredentials(request, params), certificate: request.certificate };
}

function presentedCredentials({ authorization, address }: OAuthRequest, params: Params): PresentedClient {
  if (params.client_assertion_type !== undefined || params.client_assertion !== undefined) {
    if (params.client_assertion_type !== JWT_BEARER && params.client_assertion_type !== JWT_SPIFFE) {
      throw new OAuthError('invalid_client', `client_assertion_type must be ${JWT_BEARER} (or ${JWT_SPIFFE} for a JWT-SVID)`);
    }
    if (!params.client_assertion) throw invalidRequest('client_assertion is required with client_assertion_type');
    if ((authorization && /^basic /i.test(authorization)) || params.client_secret !== undefined) {
      throw invalidRequest('use one client authentication method: a client assertion, Basic, or client_secret, not several');
    }
    return {
      clientId: params.client_id,
      secret: undefined,
      basic: false,
      address,
      assertion: params.client_assertion,
      ...(params.client_assertion_type === JWT_SPIFFE ? { spiffe: true } : {}),
    };
  }
  if (authorization && /^basic /i.test(authorization)) {
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1)
      throw new OAuthError('invalid_client', 'malformed Basic credentials: expected base64(client_id:client_secret)', {
        basicAuthUsed: true,
      });
    // RFC 6749 §2.3.1: both parts are form-encoded before base64.
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    const problem = textProblem(clientId, LIMITS.value) ?? textProblem(secret, LIMITS.value);
    if (problem) throw invalidRequest(`malformed Basic credentials: a part ${problem}`);
    if (params.client_secret !== undefined)
      throw invalidRequest('use one client authentication method: Basic or client_secret in the body, not both');
    if (params.client_id !== undefined && params.client_id !== clientId)
      throw invalidRequest('client_id in the body differs from the Basic credentials');
    return { clientId, secret, basic: true, address };
  }
  return { clientId: params.client_id, secret: params.client_secret, basic: false, address };
}

const FAILED = 'client authentication failed: unknown client or wrong secret';
const NO_KEYS_FAILED = 'client authentication failed: unknown client, or one without keys (jwks or jwks_uri) to verify its assertion';
const NAMED_ONLY_FAILED =
  'client_id alone is not enough here: the client is unknown, must authenticate with its secret, or may not use this grant';

/** Whether the request names its client by client_id alone: no secret, no assertion. */
export const namedOnly = (p: PresentedClient): p is PresentedClient & { clientId: string } =>
  p.clientId !== undefined && p.secret === undefined && p.assertion === undefined;

/**
 * What `attempt` finds (undefined: nothing), as one attempt of the request's
 * address against the client throttle (throttle.ts): counted before it runs,
 * given back when it finds something; an address over its limit gets 429 and no attempt.
 */
export async function addressAttempt<T>(
  svc: ClientAuthServices,
  address: string,
  attempt: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const keys = [addressKey(address)];
  svc.clientThrottle.reserve(keys);
  let found: T | undefined;
  try {
    found = await attempt();
  } catch (err) {
    svc.clientThrottle.release(keys); // not decided: not a failure
    throw err;
  }
  if (found !== undefined) svc.clientThrottle.release(keys);
  return found;
}

/**
 * Whether a client has credentials to present: a secret, ServiceAccounts whose
 * tokens authenticate it (auth.workload), or keys of its own (jwks, jwks_uri:
 * private_key_jwt). Such a client is never public: named by client_id alone it
 * would be anyone who knows its id.
 */
export function confidential(client: Stored<Client>): boolean {
  // A client that declares none is public whatever it holds: its keys, if any, sign only its request objects.
  if (client.resource.token_endpoint_auth_method === 'none') return false;
  return Boolean(
    client.secretHash ||
    client.resource.auth?.workload ||
    client.resource.auth?.spiffe ||
    hasClientKeys(client.resource) ||
    client.resource.token_endpoint_auth_method,
  );
}

/**
 * The client whose own keys must verify `assertion` (private_key_jwt), when the assertion is of a
 * client: its iss is the client's id — the client_id sent, or, without one, a client with keys
 * named by both iss and sub (OpenID Connect Core §9: both are the client_id). Else undefined: the
 * assertion is a workload's token, whose iss is an issuer the box trusts and whose sub is never its
 * iss, so that path costs no lookup more than it did.
 */
async function ownKeysClient(
  svc: ClientAuthServices,
  assertion: string,
  clientId: string | undefined,
): Promise<Stored<Client> | undefined> {
  const { iss, sub } = assertionNames(assertion);
  if (iss === undefined || (clientId === undefined ? sub !== iss : iss !== clientId)) return undefined;
  const client = await svc.clients.get(iss);
  if (clientId !== undefined) {
    // An unknown client and one without keys get one answer: an assertion anyone can make, signed by
    // nobody's key, must not tell which clients exist (as client_id alone does not: NAMED_ONLY_FAILED).
    if (!client || !hasClientKeys(client.resource)) throw new AssertionRefused(NO_KEYS_FAILED);
    return client;
  }
  return client && hasClientKeys(client.resource) ? client : undefined;
}

/**
 * The client a JWT-SVID authenticates (./spiffe.ts). A refused one is a failed
 * attempt of its address, as a refused private_key_jwt assertion is: a stranger may not probe SPIFFE
 * IDs and client ids, nor spend the box's signature checks and its ledger, without end.
 */
async function spiffeClient(
  svc: ClientAuthServices,
  svid: string,
  presented: PresentedClient,
  fail: (description: string) => OAuthError,
): Promise<AuthenticatedClient> {
  const attempt = [addressKey(presented.address)];
  svc.clientThrottle.reserve(attempt);
  try {
    const { client, identity } = await svc.spiffe.authenticate(svc, svid, presented.clientId);
    svc.clientThrottle.release(attempt);
    return { ...client, method: 'spiffe_jwt', spiffe: identity };
  } catch (err) {
    if (!(err instanceof WorkloadError)) {
      svc.clientThrottle.release(attempt); // not decided: not a failure
      throw err;
    }
    // The rule that failed, never the SVID, goes to the log; with why a bundle could not be fetched, which the requester is not told.
    svc.log.info(
      {
        event: 'spiffe_auth_refused',
        client: presented.clientId,
        reason: err.message,
        ...(err.cause ? { detail: errorMessage(err.cause) } : {}),
      },
      'JWT-SVID refused',
    );
    throw fail(err.message);
  }
}

/**
 * The client, authenticated as `mode` says; invalid_client otherwise. `permits`:
 * what a client named by client_id alone must be allowed (the grant it asks for),
 * so that a refusal for it is the refusal of an unknown client.
 */
export async function authenticateClient(
  svc: ClientAuthServices,
  presented: PresentedClient,
  mode: ClientAuthentication,
  permits: (client: Client) => boolean = () => true,
  spending: AssertionSpending = 'now',
): Promise<AuthenticatedClient> {
  return span('client authentication', { 'oauth.client_id': presented.clientId ?? '' }, async (notes) => {
    const client = await authenticatedClient(svc, presented, mode, permits, spending);
    notes.setAttributes({ 'oauth.client_id': client.resource.id, 'boxauth.client_auth.method': client.method });
    return client;
  });
}

async function authenticatedClient(
  svc: ClientAuthServices,
  presented: PresentedClient,
  mode: ClientAuthentication,
  permits: (client: Client) => boolean,
  spending: AssertionSpending,
): Promise<AuthenticatedClient> {
  const client = await authenticatedSomehow(svc, presented, mode, permits, spending);
  // A client that declared how it authenticates, or a fapi2 one (./fapi2.ts), is refused any other way.
  const refusal = declaredMethodRefusal(client.resource, client.method) ?? fapi2AuthMethodRefusal(client.resource, client.method);
  // RFC 6749 §5.2: the 401 names the scheme the client used in the Authorization header, and may name the
  // one it must use: Basic, for a client_secret_basic client that sent its secret some other way.
  const basic = presented.basic || client.resource.token_endpoint_auth_method === 'client_secret_basic';
  if (refusal) throw new OAuthError('invalid_client', refusal, { basicAuthUsed: basic });
  return client;
}

/** What a client that declared its token_endpoint_auth_method sends instead of what it sent. */
const DECLARED_WAYS: Record<Exclude<NonNullable<Client['token_endpoint_auth_method']>, CertificateMethod>, string> = {
  client_secret_basic: 'send its client_id and secret in HTTP Basic (RFC 6749 2.3.1), never in the body',
  client_secret_post: 'send client_id and client_secret in the body, never in HTTP Basic',
  none: 'it is a public client: send client_id alone, with no secret or assertion (its codes are proven with PKCE)',
  private_key_jwt: 'send a client assertion signed with one of its keys',
};

/**
 * Why a client that declared its token_endpoint_auth_method (RFC 7591 §2) is refused when it
 * authenticated as `method`, another way than that one: its secret in the body when it declared
 * HTTP Basic, or the reverse, client_id alone when it has a secret, a secret or an assertion when it
 * is public, anything but its assertion when it declared private_key_jwt. RFC 8705's methods are not
 * held so (a certificate is one more way in for such a client; a fapi2 one is held by the profile:
 * ./fapi2.ts). Undefined: it may, or it declared nothing (every way the box takes, as before).
 */
export function declaredMethodRefusal(client: Client, method: ClientAuthMethod): string | undefined {
  const declared = client.token_endpoint_auth_method;
  if (declared === undefined || isCertificateMethod(declared) || declared === method) return undefined;
  return `client "${client.id}" authenticates with ${declared} only (its token_endpoint_auth_method): ${DECLARED_WAYS[declared]}`;
}

async function authenticatedSomehow(
  svc: ClientAuthServices,
  presented: PresentedClient,
  mode: ClientAuthentication,
  permits: (client: Client) => boolean,
  spending: AssertionSpending,
): Promise<AuthenticatedClient> {
  const fail = (description: string): OAuthError => new OAuthError('invalid_client', description, { basicAuthUsed: presented.basic });
  if (presented.assertion !== undefined && presented.spiffe) return spiffeClient(svc, presented.assertion, presented, fail);
  if (presented.assertion !== undefined) {
    // A refused assertion of a client's own keys is a failed attempt of its address, as a wrong secret
    // is (throttle.ts): else a stranger could probe client ids, and spend the box's signature checks and
    // its ledger, without end. Given back when the assertion is accepted, or is a workload's token.
    const attempt = [addressKey(presented.address)];
    // The rule that failed, never the assertion, goes to the log.
    const refused = (err: AssertionRefused): OAuthError => {
      svc.log.info(
        {
          event: 'client_assertion_refused',
          client: presented.clientId,
          reason: err.message,
          ...(err.detail ? { detail: err.detail } : {}),
        },
        'client assertion refused',
      );
      return fail(err.message);
    };
    svc.clientThrottle.reserve(attempt);
    try {
      const own = await ownKeysClient(svc, presented.assertion, presented.clientId);
      if (own) {
        if (spending === 'now') await svc.clientAssertions.authenticate(own.resource, presented.assertion);
        const proof = spending === 'now' ? undefined : await svc.clientAssertions.accept(own.resource, presented.assertion);
        svc.clientThrottle.release(attempt);
        if (!proof) return { ...own, method: 'private_key_jwt' };
        const replayed = (): OAuthError => {
          try {
            svc.clientThrottle.reserve(attempt); // a failed attempt after all, as a replay spent in the ledger is
          } catch {
            // over its limit already: the replay is refused all the same
          }
          return refused(new AssertionRefused(REPLAYED));
        };
        return { ...own, method: 'private_key_jwt', unspent: { proof, replayed } };
      }
      svc.clientThrottle.release(attempt);
    } catch (err) {
      if (!(err instanceof AssertionRefused)) {
        svc.clientThrottle.release(attempt); // not decided: not a failure
        throw err;
      }
      throw refused(err);
    }
    try {
      const { client, identity, federated } = await authenticateWorkload(svc, presented.assertion, presented.clientId);
      return federated ? { ...client, method: 'federated', federated } : { ...client, method: 'workload', workload: identity };
    } catch (err) {
      if (!(err instanceof WorkloadError)) throw err;
      // The reason, never the token, goes to the log: a person debugging a refused pod needs it.
      svc.log.info({ event: 'workload_auth_refused', client: presented.clientId, reason: err.message }, 'workload token refused');
      throw fail(err.message);
    }
  }
  if (!presented.clientId) throw fail('client authentication required: send HTTP Basic credentials or client_id and client_secret');
  const clientId = presented.clientId;
  if (presented.secret === undefined) {
    const certified = await certificateAuthentication(svc, presented);
    if (certified) return certified;
    if (mode === 'required') throw fail('client authentication required: send the client secret (HTTP Basic or client_secret)');
    // client_id alone authenticates nobody (RFC 6749 §3.2.1: a public client may name
    // itself so). Whether the client exists, has a secret, or may use the grant is
    // not told: each is one answer, and a failed attempt of the address, so that
    // guessing ids meets the throttle as guessing secrets does.
    const usable = await addressAttempt(svc, presented.address, async () => {
      const client = await svc.clients.get(clientId);
      return client && !(mode === 'if-confidential' && confidential(client)) && permits(client.resource) ? client : undefined;
    });
    if (!usable) throw fail(NAMED_ONLY_FAILED);
    return { ...usable, method: 'none' };
  }
  // An unknown client is checked too (against a dummy hash), so that the time of
  // the answer does not tell which client ids exist; every check is throttled (throttle.ts).
  const client = await svc.clients.get(clientId);
  const keys = [clientKey(clientId), addressKey(presented.address)];
  const ok = await svc.secrets.verify(clientId, client?.secretHash ?? (await dummyHash()), presented.secret, {
    guard: { reserve: () => svc.clientThrottle.reserve(keys), release: () => svc.clientThrottle.release(keys) },
  });
  if (!ok || !client?.secretHash) throw fail(FAILED);
  return { ...client, method: presented.basic ? 'client_secret_basic' : 'client_secret_post' };
}
