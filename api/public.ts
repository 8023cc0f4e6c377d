// What operator/ may take of api/: the one module it imports (operator/README.md), so that the
// operator's whole contract with the box's code is this page. Nothing in api/ imports it. A new
// need of the operator is a line here, under what it is for.

// The base: the operator's configuration is read with the box's parsers, and logs and errors
// the box's way.
export {
  bool,
  BRANDING_VARIABLES,
  ConfigError,
  DEFAULT_GRPC_PORT,
  DEFAULT_METRICS_PORT,
  int,
  listenHost,
  LOG_LEVELS,
  matching,
  oneOf,
  PASSWORD_MIN_LENGTH,
  str,
  tracingOf,
} from './config.js';
export type { Env } from './config.js';
// Traces: a span per reconcile, exported as the box exports its own (./tracing.ts).
export { span, startTracing, stopTracing, type SpanNotes, type TracingConfig } from './tracing.js';
export { OPERATOR_CONFIG_VARIABLES, variablesHelp } from './config-reference.js';
export { ApiError, errorMessage, ValidationError } from './errors.js';
export { createLogger, redactUrl, type Logger } from './log.js';
export { freePort, listenOn, onFreePorts, PortUnavailable } from './listen.js';
export { projectPath } from './paths.js';
export { parseDatabaseUrl, rewriteDatabaseUrl } from './database-url.js';

// A box's database: the operator makes its schema and role, migrates it, and runs an embedded
// PostgreSQL where no database is given.
export { ConnectionBudget, createPool, withTransaction, type Pool, type Queryable } from './db/pool.js';
export { migrate } from './db/migrate.js';
export { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.js';

// The records a resource becomes, written as the box's REST API writes them, and the names the
// box keeps for itself.
export type { ResourceTable, Stored } from './store/resources.js';
export { clients } from './store/clients.js';
export { accessPolicies } from './store/policies.js';
export { apps } from './store/apps.js';
export { identityProviders } from './store/identity-providers.js';
export { webhooks } from './store/webhooks.js';
export { hooks } from './store/hooks.js';
export { ConstraintViolation } from './store/constraints.js';
export { isReserved, reservedRecords } from './reserved.js';

// The resources' schemas and types (crds/), and the checks a record must pass before it is
// written: a policy that compiles, an App whose audience is not the box's.
export { validateResource } from './schema/resources.js';
export type { AccessPolicySpec, AppSpec, BoxSpec, ClientSpec, IdentityProviderSpec, WebhookSpec, HookSpec } from './schema/crd-types.js';
export type { AccessPolicy, App, Client, Hook, IdentityProvider, Resources, Webhook } from './types.js';
export { checkPolicyCompiles } from './policy/engines.js';
export { checkClaimsCompile } from './policy/claims.js';
export { samlMetadataProblem } from './saml/service-providers.js';
// What the box last made of a SAML app's metadata at its URL: the Client's SamlMetadataReady condition.
export { samlMetadataStatus, type SamlMetadataStatus } from './store/saml-metadata-status.js';
export { boxAudienceClash } from './decision/apps.js';

// Secrets the operator makes, hashes or seals as the box would read them: a client's secret,
// a box's generated passwords (of the box's minimum length) and signing key, an IdentityProvider's or a Webhook's secret under the factor
// key; the ServiceAccounts a Client binds; a TLS pair the box will serve.
export { generatePassword, generateSecret, hashSecret, processGate, SecretVerifier } from './credentials/secrets.js';
export { generateKeyPair } from './credentials/jwt.js';
export { workloadSettings } from './credentials/workload/bindings.js';
export { hasClientKeys, hasOwnCredential, isSecretMethod } from './client-keys.js';
export { providerSecret, sealProviderSecret } from './people/upstream/secret.js';
export { hookSecret, sealHookSecret, sealWebhookSecret, secretProblem, webhookSecret } from './webhooks/signing.js';
// A Hook's checks beyond its schema: its match conditions compile, its CA bundle holds certificates.
export { conditionProblems } from './hooks/conditions.js';
export { caBundleProblem } from './hooks/ca-bundle.js';
export { administeredUrlProblem } from './notices/post.js';
export { checkPair } from './http/tls.js';

// The registry a host serves hosted boxes from (operator/controllers/host-manifests.ts writes it): its entries, and
// the host's own reading of a text, which the operator's rendering must pass.
export { parseRegistry, type RegistryEntry } from './host/registry.js';
