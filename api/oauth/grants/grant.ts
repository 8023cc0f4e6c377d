// The contract every grant keeps. The token endpoint (../token-endpoint.ts) does
// for all of them, in this order, what a grant declares here: its required
// parameters are present, the client authenticates as the grant requires, and
// the client may use the grant. A handler then only decides what its own
// parameters mean and what to issue. Each grant declares beside it everything it
// does to the database, as one interface (`AuthorizationCodeStore`,
// `RefreshTokenStore`…, wired once to api/store/), so that its contract with the
// database reads in one type (fosite's handler/oauth2/storage.go does the same).
import { subjectFor, type SubjectSettings } from '../../credentials/subjects.js';
import { withTransaction, type Pool, type Transaction } from '../../db/pool.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Keyring } from '../../credentials/keyring.js';
import type { Policies } from '../../policy/evaluate.js';
import type { SessionWriter } from '../../store/session-writer.js';
import type { RefreshWriter } from '../../store/refresh-writer.js';
import type { RefreshReader } from '../../store/refresh-reader.js';
import type { RefreshHolders } from '../../cache/refresh-holders.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { TrustedIssuers } from '../../credentials/workload/issuers.js';
import type { VerifiedAssertions } from '../../credentials/workload/assertion.js';
import type { Audit } from '../../audit.js';
import type { RegisteredResources } from '../entitlements.js';
import type { PrincipalUser, Client, GrantType } from '../../types.js';
import type { AssertionSpending, AuthenticatedClient, ClientAuthentication } from '../client-auth.js';
import { OAuthError, invalidGrant, type EndpointErrorCode } from '../../credentials/errors.js';
import type { Params } from '../params.js';
import type { SessionRow } from '../../store/sessions.js';
import type { TokenResponse } from '../../credentials/tokens.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  /** What a person's `sub` is for each client (api/credentials/subjects.ts). */
  subjects: SubjectSettings;
  log: Logger;
  pool: Pool;
  keyring: Keyring;
  policies: Policies;
  sessionWriter: SessionWriter;
  refreshWriter: RefreshWriter;
  refreshReader: RefreshReader;
  refreshHolders: RefreshHolders;
  sessions: RecordCache<SessionRow>;
  issuers: TrustedIssuers;
  verifiedAssertions: VerifiedAssertions;
  audit: Audit;
  users: RecordCache<PrincipalUser>;
  /** The Apps of the box by audience: the resources a `resource` may name (../entitlements.ts). */
  apps: RegisteredResources;
}

/**
 * What grants may use: signing and storing tokens, the refresh token caches, and
 * closing sessions (a replayed code, a reused refresh token).
 */
export type GrantServices = Pick<
  Needs,
  | 'config'
  | 'subjects'
  | 'keyring'
  | 'pool'
  | 'log'
  | 'sessions'
  | 'audit'
  | 'sessionWriter'
  | 'refreshWriter'
  | 'refreshReader'
  | 'refreshHolders'
  | 'policies'
  | 'users'
  | 'issuers'
  | 'verifiedAssertions'
  | 'apps'
>;

export interface GrantContext {
  svc: GrantServices;
  params: Params;
  /** The client, authenticated as the grant's clientAuthentication says. */
  client: AuthenticatedClient;
  /**
   * The key of the request's DPoP proof, verified (../token-endpoint.ts): the access
   * token is bound to it, and so is a public client's refresh token (RFC 9449 §5).
   */
  dpop?: DpopBinding;
  /**
   * The x5t#S256 of the client certificate the access token is bound to (RFC 8705 §3): the one the
   * client authenticated with, or the one it presented when it asks for bound tokens (../certificate-auth.ts).
   */
  certificate?: string;
  /**
   * The client has credentials (a secret, ServiceAccounts), but the request named it by
   * client_id alone, as the refresh grant allows: nobody proved to be it.
   */
  unproven?: boolean;
  /** What the box's Hooks add to the access token and the ID token (../token-hooks.ts), asked before the grant's transaction. */
  hooked?: HookedClaims;
}

/** What the Hooks add to the tokens of one request: to the access token, to the ID token. */
export interface HookedClaims {
  access: Record<string, unknown>;
  id: Record<string, unknown>;
}

/** What a grant is about to issue, read without a lock before its transaction (Grant.prospect). */
export interface Prospect {
  userId: number | null;
  scope: string | null;
  audience: string | null;
  details: Record<string, unknown> | null;
}

export interface DpopBinding {
  jkt: string;
  /** Whether a refresh token issued now is bound too: the client is public. */
  bindsRefresh: boolean;
}

/** What a grant passes to mint() for the request's DPoP proof: the keys its tokens are bound to. */
/**
 * What a grant passes to mint() for the token's person: the `sub` its client sees of them
 * (api/credentials/subjects.ts). Nothing for a client's own token, or a person who is gone.
 */
export async function personSubject(
  svc: Pick<GrantServices, 'users' | 'subjects'>,
  client: Client,
  userId: number | null,
): Promise<{ personSub?: string }> {
  const person = userId === null ? undefined : await svc.users.get(String(userId));
  return person ? { personSub: subjectFor(svc.subjects, client, person) } : {};
}

export const dpopBound = (dpop: DpopBinding | undefined): { jkt?: string; refreshJkt?: string } =>
  dpop ? { jkt: dpop.jkt, ...(dpop.bindsRefresh ? { refreshJkt: dpop.jkt } : {}) } : {};

/** What a grant passes to mint() for the request's client certificate (RFC 8705 §3): the thumbprint its access token is bound to. */
export const certificateBound = (certificate: string | undefined): { x5t?: string } => (certificate ? { x5t: certificate } : {});

export interface Grant {
  /** The grant_type value. */
  type: GrantType;
  clientAuthentication: ClientAuthentication;
  /** Parameters without which the request is invalid_request, checked before the client is. */
  requiredParameters: readonly string[];
  /** Whether this client may use the grant at all (../grant-types.ts, as a rule); otherwise unauthorized_client. */
  permits(client: Client): boolean;
  /**
   * For a grant a client may use with client_id alone: the code or token it is
   * exchanged for (its name, as refusals say it) and whom that was issued to,
   * whatever became of it since. Until it proves to be the named client's, the
   * token endpoint says nothing of that client (token-endpoint.ts).
   */
  credential?: { name: string; issuedTo(svc: GrantServices, params: Params): Promise<string | undefined> };
  /**
   * `with-session`: the grant spends a private_key_jwt assertion's jti itself, in the statement that
   * writes the token's session (GrantContext.client.unspent); else it is spent before the grant runs.
   */
  assertionSpending?: AssertionSpending;
  /**
   * What the grant is about to issue (its person, scope, audience), read without a lock before its
   * transaction: what the box's Hooks are asked about (../token-hooks.ts). Undefined: the grant will
   * refuse (it says why). A grant without it is asked about as its client's own token.
   */
  prospect?(svc: GrantServices, params: Params, client: Client): Promise<Prospect | undefined>;
  /** The error a Hook's refusal is at this grant (access_denied unless its RFC names another). */
  hookRefusal?: EndpointErrorCode;
  /** false: the grant issues no ID token (token exchange), so no Hook of idTokenIssuing is asked. */
  issuesIdTokens?: boolean;
  handle(ctx: GrantContext): Promise<Issued>;
}

/** RFC 6749 §5.2 invalid_grant: the code or token is unknown, or "was issued to another client". */
export const notIssuedToClient = (name: string): OAuthError => invalidGrant(`${name} is unknown or was issued to another client`);

/** What a grant issued: the answer, and the session behind its access token (for the audit). */
export interface Issued {
  response: TokenResponse;
  session: SessionRow;
}

/**
 * Runs `work` in a transaction that commits even when the request is refused,
 * then throws the refusal. Some refusals revoke: a replayed authorization code or
 * refresh token closes the sessions obtained with it (RFC 6749 §4.1.2, §10.4), and
 * that must hold whatever the client is told, so `work` returns its refusal as a
 * value instead of throwing it (a throw would roll the revocation back).
 */
export async function commitThenRefuse<T>(pool: Pool, work: (tx: Transaction) => Promise<T | OAuthError>): Promise<T> {
  const outcome = await withTransaction(pool, work);
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}
