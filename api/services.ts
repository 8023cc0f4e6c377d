// Everything a request handler may use, built once per process by api/server.ts: the
// composition root's type. Modules below the root do not import it: each declares
// the narrow part it uses (its `Needs`), which this type satisfies.
import type { ServiceProviders } from './saml/service-providers.js';
import type { ProofLedger } from './store/dpop-proofs.js';
import type { Audit } from './audit.js';
import type { Config } from './config.js';
import type { SubjectSettings } from './credentials/subjects.js';
import type { ChangeFeed } from './db/notify.js';
import type { Pool } from './db/pool.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { ReadFence } from './cache/read-fence.js';
import type { RecordCache } from './cache/record-cache.js';
import type { RefreshHolders } from './cache/refresh-holders.js';
import type { Keyring } from './credentials/keyring.js';
import type { Argon2Gate, SecretVerifier } from './credentials/secrets.js';
import type { Policies } from './policy/evaluate.js';
import type { Stored } from './store/resources.js';
import type { RefreshWriter } from './store/refresh-writer.js';
import type { RefreshReader } from './store/refresh-reader.js';
import type { SessionWriter } from './store/session-writer.js';
import type { SessionRow } from './store/sessions.js';
import type { AccessPolicy, Client, PrincipalUser } from './types.js';
import type { WorkloadBindings } from './credentials/workload/bindings.js';
import type { TrustedIssuers } from './credentials/workload/issuers.js';
import type { VerifiedAssertions } from './credentials/workload/assertion.js';
import type { AddressOf } from './http/client-address.js';
import type { FailureThrottle } from './credentials/throttle.js';
import type { Attempts } from './people/attempts.js';
import type { AppDirectory } from './decision/apps.js';
import type { Decisions } from './decision/record.js';
import type { Dpop } from './credentials/dpop/check.js';
import type { ClientAssertions } from './oauth/client-assertion.js';
import type { ClientCertificates } from './credentials/client-certificate.js';
import type { SpiffeClientAuth } from './oauth/spiffe.js';
import type { HookCaller } from './hooks/caller.js';

export interface Services {
  config: Config;
  log: Logger;
  /** The access log: a line per request, with fixed fields only (api/log.ts). */
  requestLog: Logger;
  pool: Pool;
  feed: ChangeFeed;
  /** The box's Hooks, asked at sign-in and at every token (api/hooks/). */
  hooks: HookCaller;
  keyring: Keyring;
  metrics: Metrics;
  policies: Policies;
  /** The SAML apps (Client.saml) by entity ID, their metadata read (api/saml/service-providers.ts). */
  serviceProviders: ServiceProviders;
  /** The replay ledger AuthnRequests' IDs are spent in, once per app (api/saml/idp.ts spendSsoRequest). */
  samlRequests: Pick<ProofLedger, 'firstSeen'>;
  /** The box's way to the process's argon2 runs: its own queues, served in turn with other boxes' (a host's). */
  argon2: Argon2Gate;
  secrets: SecretVerifier;
  sessionWriter: SessionWriter;
  refreshWriter: RefreshWriter;
  refreshReader: RefreshReader;
  /** Clients by id. */
  clients: RecordCache<Stored<Client>>;
  /** The apps the box guards, by id and by host (the decision point, api/decision/). */
  apps: AppDirectory;
  /** The decision point's record of its decisions (audit lines, refused ones kept for `boxauth explain`). */
  decisions: Decisions;
  /** AccessPolicy records by id (GET /AccessPolicy/<id>; the policy engines keep their own index). */
  policyRecords: RecordCache<Stored<AccessPolicy>>;
  /** Sessions holding refresh tokens, by the token's digest (api/cache/refresh-holders.ts). */
  refreshHolders: RefreshHolders;
  /** Read-your-writes for what is served from these caches. */
  readFence: ReadFence;
  /** Sessions by session id (JWT `jti`) or by the hex SHA-256 of an opaque access token. */
  sessions: RecordCache<SessionRow>;
  /** The key of the browser forms' CSRF tokens (shared by all processes of the box). */
  csrfKey: Buffer;
  /** The key of device cookies, which count a known browser's asks apart from strangers' (api/people/devices.ts). */
  deviceKey: Buffer;
  /** Seals TOTP secrets at rest (api/credentials/sealing.ts; BOXAUTH_FACTOR_KEY). */
  factorKey: Buffer;
  /** What a person's `sub` is for each client (api/credentials/subjects.ts): the box's public kind, the pairwise key. */
  subjects: SubjectSettings;
  /** Issuers of workload tokens this box trusts. */
  issuers: TrustedIssuers;
  /** Workload tokens whose signature was verified (JWKS issuers only). */
  verifiedAssertions: VerifiedAssertions;
  /** Clients' own keys and the jti of their assertions (private_key_jwt). */
  clientAssertions: ClientAssertions;
  /** JWT-SVIDs of the trusted SPIFFE trust domains (auth.spiffe): their bundles, verified signatures, and jti. */
  spiffe: SpiffeClientAuth;
  /** Clients by the ServiceAccounts bound to them. */
  workloadBindings: WorkloadBindings;
  /** Audit events (api/audit.ts). */
  audit: Audit;
  /** Passwords, user codes and sign-ups, counted before they are checked (all processes of the box). */
  attempts: Attempts;
  /** Failed client authentication, per client id and per address. */
  clientThrottle: FailureThrottle;
  /** Device codes asked for, per address (POST /auth/device needs no secret for a public client). */
  deviceThrottle: FailureThrottle;
  /** The address a request comes from (X-Forwarded-For only through trusted proxies). */
  addressOf: AddressOf;
  /** Mutual TLS (RFC 8705): a request's client certificate, and the CAs tls_client_auth trusts. */
  clientCertificates: ClientCertificates;
  /** DPoP proofs checked (RFC 9449): the replay cache all processes share, and the nonces. */
  dpop: Dpop;
  /** Users (with their groups) by id, for the policies of user tokens. */
  users: RecordCache<PrincipalUser>;
  /** The ids of the people an AuthZEN subject's name names (api/store/users.ts peopleNamed). */
  peopleNamed: (name: string) => Promise<number[]>;
  /**
   * The id of the person a `sub` a client was given names, read as that client's
   * (api/credentials/presented-subjects.ts); none while its sector does not vouch for it.
   */
  subjectNamed: (client: Client, sub: string) => Promise<number | undefined>;
  /** Why the box may not make a pairwise client's subs of its sector_identifier_uri now; undefined: it may (api/oauth/sector-identifier.ts). */
  sectorRefusal: (client: Client) => Promise<string | undefined>;
}
