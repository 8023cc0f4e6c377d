// Every environment variable the API reads, parsed and defaulted in one place.
// A bad value stops start-up with a message naming the variable: a typo in a
// deployment should fail loudly, not fall back to a default silently.
import { DatabaseUrlError, parseDatabaseUrl, type DatabaseUrl } from './database-url.js';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import addressparser from 'nodemailer/lib/addressparser';
import { brandingProblems, type Branding } from './branding.js';
import { invisibleProblem } from './input.js';
import { parseCidr } from './outbound.js';
import { TRACE_SAMPLERS, type TracingConfig } from './tracing.js';

export type JwtAlg = 'ES256' | 'RS256' | 'EdDSA';
export const JWT_ALGS: readonly JwtAlg[] = ['ES256', 'RS256', 'EdDSA'];

/** Where a box serves GET /metrics unless BOXAUTH_METRICS_PORT says otherwise (the operator's box pods name it `metrics`). */
export const DEFAULT_METRICS_PORT = 9464;

/** Where the decision point serves Envoy's gRPC ext_authz unless BOXAUTH_GRPC_PORT says otherwise (the box pods name it `grpc-authz`). */
export const DEFAULT_GRPC_PORT = 9001;

/**
 * The fewest characters a new password may have (BOXAUTH_PASSWORD_MIN_LENGTH, Box.spec.passwordMinLength):
 * never below NIST SP 800-63B §5.1.1.2's 8, and at most 64, the length NIST says a box must accept.
 */
export const PASSWORD_MIN_LENGTH = { default: 8, least: 8, most: 64 } as const;

/** An issuer of workload tokens the box trusts (Box.spec.trustedIssuers). */
export interface TrustedIssuer {
  issuer: string;
  /** Where its keys are; found through OIDC discovery when absent. */
  jwksUri?: string;
  /** jwks: verify signatures with the issuer's keys; tokenreview: ask this cluster's API server. */
  mode: 'jwks' | 'tokenreview';
  /** PEM certificates to trust for its HTTPS endpoints (a private CA). */
  caBundle?: string;
  /** Special-use addresses its documents may be fetched from (api/outbound.ts), as [address, prefix]. */
  allowedAddresses: [string, number][];
}

/**
 * A SPIFFE trust domain whose JWT-SVIDs authenticate Clients (Box.spec.spiffeTrustDomains;
 * draft-ietf-oauth-spiffe-client-auth-02, api/oauth/spiffe.ts): its keys are read
 * from its SPIFFE bundle endpoint (SPIFFE Trust Domain and Bundle §5), under the https_web profile.
 */
export interface SpiffeTrustDomain {
  /** The trust domain's name, as in spiffe://<name>/... */
  trustDomain: string;
  /** Its bundle endpoint (https_web): a JWK Set with spiffe_sequence and spiffe_refresh_hint. */
  bundleEndpointUrl: string;
  /** PEM certificates to trust for the bundle endpoint (a private CA); the system's roots when unset. */
  caBundle?: string;
  /** Special-use addresses (RFC 6890: loopback, private, link-local) the endpoint may be at, as [address, prefix]: none by default. */
  allowedAddresses: [address: string, prefix: number][];
}

/** How the box reaches the Kubernetes API of the cluster it runs in. */
export interface KubeAccess {
  apiUrl: string | undefined;
  tokenFile: string;
  caFile: string;
}

export interface Config {
  port: number;
  host: string;
  /** Where GET /metrics is served (not the API port). */
  metricsPort: number;
  /** Where Envoy's gRPC ext_authz (envoy.service.auth.v3.Authorization) is served; 0: not served. */
  grpcPort: number;
  /** The most of a request's body the decision point reads, when a gateway sends it (api/decision/jsonrpc.ts); a longer one is refused. */
  gateBodyBytes: number;
  baseUrl: string;
  box: string;
  databaseUrl: string | undefined;
  /** Where the change feed (LISTEN), the upkeep (a lease held by its connection) and migrations connect: PostgreSQL itself, never a transaction pooler. */
  databaseDirectUrl: string | undefined;
  /** The deadline of a database connection, and of each check of the host in use (api/db/locator.ts). */
  dbConnectTimeoutMs: number;
  /** The longest one statement of a request may run before it is canceled and the request answered 503. */
  dbStatementTimeoutMs: number;
  /** Whether statements are prepared once per connection (named); not through a transaction pooler by default. */
  dbNamedStatements: boolean;
  /** While the database is unreachable, what the caches held when it was lost may answer for this long. */
  outageMemorySeconds: number;
  dataDir: string;
  rootClientId: string;
  rootClientSecret: string | undefined;
  adminEmail: string;
  adminPassword: string | undefined;
  /** The fewest characters of a new password (api/schema/password-policy.ts). */
  passwordMinLength: number;
  /** What the pages and mails show of the company (api/branding.ts, BOXAUTH_BRAND_*). */
  branding: Branding;
  registration: boolean;
  registrationGroup: string;
  jwtAlg: JwtAlg;
  /** An externally managed signing key (PEM, PKCS#8), e.g. from a Kubernetes Secret. */
  signingKeyPem: string | undefined;
  /** The key TOTP secrets are sealed with (api/credentials/sealing.ts); unset: $BOXAUTH_DATA_DIR/factor-key, made once. */
  factorKey: Buffer | undefined;
  keyRotationDays: number;
  workers: number;
  /** Set: this process is a host of many boxes (api/host/), not a box; BOXAUTH_HOSTED_BOXES and BOXAUTH_HOST_*. */
  hosted: HostedSettings | undefined;
  logLevel: string;
  dbPoolSize: number;
  sessionRetentionHours: number;
  /** Refused decisions of the decision point are kept this long for `boxauth explain`. */
  decisionRetentionHours: number;
  /** …and at most this many of them: the purge job deletes the oldest beyond. */
  decisionMaxRows: number;
  /** One allowed decision in this many has its audit line (1: every one); every refusal has its own. */
  allowedDecisionSample: number;
  /** The audit trail (GET /AuditEvent) keeps events this many days… */
  auditRetentionDays: number;
  /** …and at most this many of them: the purge job deletes the oldest beyond. */
  auditMaxRows: number;
  purgeIntervalSeconds: number;
  shutdownTimeoutMs: number;
  /** On SIGTERM, how long the server goes on accepting before it stops listening (BOXAUTH_SHUTDOWN_DELAY_MS). */
  shutdownDelayMs: number;
  authCodeTtlSeconds: number;
  browserSessionHours: number;
  signInMaxFailures: number;
  signInWindowSeconds: number;
  /** Failed client authentications per client id (and 4× that per address) in a window, before 429. */
  clientAuthMaxFailures: number;
  clientAuthWindowSeconds: number;
  /** Device codes (POST /auth/device) one address may ask for in a device code's lifetime, per process, before 429. */
  deviceCodesPerAddress: number;
  /** Sign-ins at an upstream provider one address may begin while a begun one waits (10 minutes), box-wide, before 429. */
  upstreamStartsPerAddress: number;
  /** argon2 runs that may wait per process and kind (sign-in, write, client secret) before 503. */
  argon2MaxWaiting: number;
  /**
   * Self sign-ups (POST /auth/sign-up) per address and box-wide in their windows,
   * counted in the database (all processes of the box), before 429.
   */
  signUpMaxPerAddress: number;
  signUpAddressWindowSeconds: number;
  signUpMaxPerBox: number;
  signUpBoxWindowSeconds: number;
  /** Sign-up hashes that may wait per process, behind every other argon2 run, before 503. */
  signUpMaxWaiting: number;
  /**
   * When a person who signed up proves their address: `before-sign-in` (sign-up answers alike
   * for a new and a taken address, and the account opens with the link) or `after-sign-in`
   * (signed in at once, the link mailed). Before only with mail configured.
   */
  registrationVerify: 'before-sign-in' | 'after-sign-in';
  /** Mails one address may be sent per window (resets asked for it, verification links sent again). */
  mailMaxPerRecipient: number;
  /** Password resets one network address may ask for per window, whatever the email addresses. */
  resetMaxPerAddress: number;
  mailWindowSeconds: number;
  /** HTTPS: the PEM certificate (chain) and key, reloaded when they change; undefined: plain HTTP. */
  tls: { certFile: string; keyFile: string } | undefined;
  /** Strict-Transport-Security, sent when the base URL is https: for how long, and whether subdomains too. */
  hsts: { maxAgeSeconds: number; includeSubDomains: boolean };
  /** Traces over OTLP: the standard OTEL_* variables (api/tracing.ts); off by default. */
  tracing: TracingConfig;
  /** Proxies whose X-Forwarded-For is believed, as [address, prefix length] (none by default). */
  trustedProxies: [address: string, prefix: number][];
  /** Mutual TLS (RFC 8705): where client certificates come from, and the CAs tls_client_auth trusts. */
  clientCertificates: ClientCertificateConfig;
  trustedIssuers: TrustedIssuer[];
  /** SPIFFE trust domains whose JWT-SVIDs authenticate Clients bound to their SPIFFE IDs (auth.spiffe). */
  spiffeTrustDomains: SpiffeTrustDomain[];
  /** auto: trust this cluster's service-account issuer when running in a cluster; off; or tokenreview. */
  clusterIssuer: 'auto' | 'off' | 'tokenreview';
  /** DPoP proofs (RFC 9449) must carry a nonce of the box's (DPoP-Nonce), or need none. */
  dpopNonce: 'required' | 'off';
  /**
   * What a public `sub` is (BOXAUTH_PUBLIC_SUBJECTS; api/credentials/subjects.ts): the person's row id
   * (`sequential`) or their opaque id (`opaque`). Unset: what migration 036 recorded for this box.
   */
  publicSubjects?: 'sequential' | 'opaque';
  /** Client ID Metadata Documents (api/oauth/agents.ts): how they are fetched and how long one stands. */
  clientMetadata: {
    /** Special-use ranges (RFC 6890) or the box's own addresses the box may fetch a document from all the same, as [address, prefix]. */
    allowedAddresses: [address: string, prefix: number][];
    timeoutMs: number;
    minCacheSeconds: number;
    maxCacheSeconds: number;
  };
  /** The outbox of notices (api/notices/): back-channel logout tokens, Shared Signals events, webhooks. */
  notices: NoticeConfig;
  /** Dynamic client registration (RFC 7591, POST /auth/register): off unless turned on. */
  dynamicRegistration: {
    enabled: boolean;
    /** Registrations one network address may make per hour, counted in the database. */
    perAddressPerHour: number;
    /** A registered client that no person has used this long is removed by the upkeep (api/jobs/purge.ts). */
    unusedHours: number;
  };
  kube: KubeAccess;
  /** Where the box's mail goes (api/mail/); undefined: no mail is configured, and the pages say to ask an administrator. */
  smtp: SmtpConfig | undefined;
}

/** BOXAUTH_SMTP_*, BOXAUTH_MAIL_*: the SMTP server the box sends its mail through. */
export interface SmtpConfig {
  /** smtp:// (STARTTLS, required except to a loopback host) or smtps:// (TLS from the start), without its password. */
  url: string;
  /** The From mailbox, as `name <address>` or `address`. */
  from: string;
  /** The SMTP password (BOXAUTH_SMTP_PASSWORD, else the URL's): never logged. */
  password?: string;
  /** Per-box templates overriding the built-in ones (api/mail/templates.ts). */
  templatesDir?: string;
  /** How long a claimed mail stays another process's before a process that died sending it is taken over. */
  leaseSeconds: number;
  /**
   * What sign-in codes by email the box offers (BOXAUTH_SMTP_SIGN_IN_CODES; offersSignInCodes below).
   * Off by default in the release that brought them: a pod of the release before counts no such
   * factor, so they are offered only once none serves (docs/operations/upgrades.md, "A new kind").
   * Codes already set up work either way.
   */
  signInCodes: SignInCodes;
}

/**
 * What BOXAUTH_SMTP_SIGN_IN_CODES may say: `off`; `second-factor`, people may set up codes by
 * email as their second factor; `first-step`, that and, for people without a password, a code
 * instead of one (api/people/ways/email-first-step.ts). `true` and `false`, which the setting said
 * before it was a list (never released), are read as `second-factor` and `off`.
 */
export const SIGN_IN_CODES = ['off', 'second-factor', 'first-step'] as const;
export type SignInCodes = (typeof SIGN_IN_CODES)[number];

/** Whether the box offers sign-in codes by email to set up: it sends mail, and the setting is not `off`. */
export const offersSignInCodes = (smtp: SmtpConfig | undefined): boolean => smtp !== undefined && smtp.signInCodes !== 'off';

/** BOXAUTH_SMTP_SIGN_IN_CODES, with `true` and `false` read as they were meant before it became a list. */
function signInCodesOf(env: Env): SignInCodes {
  const alias = { true: 'second-factor', false: 'off' } as const;
  const raw = str(env, 'BOXAUTH_SMTP_SIGN_IN_CODES')?.toLowerCase();
  if (raw === 'true' || raw === 'false') return alias[raw];
  return oneOf(env, 'BOXAUTH_SMTP_SIGN_IN_CODES', SIGN_IN_CODES, 'off');
}

export class ConfigError extends Error {}

/** The environment, or a map standing for it. The helpers below are the operator's too (operator/config.ts). */
export type Env = Record<string, string | undefined>;

export function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

export function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** BOXAUTH_TLS_CERT_FILE and BOXAUTH_TLS_KEY_FILE: both or neither. */
function tlsFiles(env: Env): Config['tls'] {
  const certFile = str(env, 'BOXAUTH_TLS_CERT_FILE');
  const keyFile = str(env, 'BOXAUTH_TLS_KEY_FILE');
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile)
    throw new ConfigError('BOXAUTH_TLS_CERT_FILE and BOXAUTH_TLS_KEY_FILE go together: set both for HTTPS, or neither');
  for (const [name, file] of [
    ['BOXAUTH_TLS_CERT_FILE', certFile],
    ['BOXAUTH_TLS_KEY_FILE', keyFile],
  ] as const) {
    if (!fs.existsSync(file)) throw new ConfigError(`${name}: ${file} does not exist`);
  }
  return { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) };
}

/** Mutual TLS (RFC 8705, docs/guides/workloads-without-secrets.md#mutual-tls). */
export interface ClientCertificateConfig {
  /** BOXAUTH_CLIENT_CA_FILE: a PEM bundle of the CAs whose certificates tls_client_auth accepts (read at start). */
  caFile: string | undefined;
  /** BOXAUTH_TLS_CLIENT_CERTIFICATES=request: the box's own TLS asks every client for a certificate (none is required). */
  request: boolean;
  /** BOXAUTH_CLIENT_CERT_HEADER: the header (lower-case) a trusted proxy forwards the certificate in. */
  header: string | undefined;
}

function clientCertificates(env: Env, tls: Config['tls'], proxies: Config['trustedProxies']): ClientCertificateConfig {
  const caFile = str(env, 'BOXAUTH_CLIENT_CA_FILE');
  if (caFile && !fs.existsSync(caFile)) throw new ConfigError(`BOXAUTH_CLIENT_CA_FILE: ${caFile} does not exist`);
  const asked = str(env, 'BOXAUTH_TLS_CLIENT_CERTIFICATES') ?? 'off';
  if (asked !== 'off' && asked !== 'request')
    throw new ConfigError(`BOXAUTH_TLS_CLIENT_CERTIFICATES must be off or request, got "${asked}"`);
  if (asked === 'request' && !tls)
    throw new ConfigError(
      'BOXAUTH_TLS_CLIENT_CERTIFICATES=request asks for certificates in the TLS the box serves: set BOXAUTH_TLS_CERT_FILE too',
    );
  const header = str(env, 'BOXAUTH_CLIENT_CERT_HEADER')?.toLowerCase();
  if (header !== undefined && !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(header))
    throw new ConfigError(`BOXAUTH_CLIENT_CERT_HEADER must be a header name, got "${header}"`);
  // A forwarded certificate is believed only from a proxy: without one named, the header would be anyone's.
  if (header !== undefined && !proxies.length)
    throw new ConfigError('BOXAUTH_CLIENT_CERT_HEADER is believed only from BOXAUTH_TRUSTED_PROXIES: name the proxies that set it');
  return { caFile: caFile && path.resolve(caFile), request: asked === 'request', header };
}

/** BOXAUTH_TRUSTED_PROXIES: addresses or CIDRs, separated by commas or spaces. */
function trustedProxies(env: Env): Config['trustedProxies'] {
  return cidrList(env, 'BOXAUTH_TRUSTED_PROXIES');
}

/** The outbox of notices (api/notices/, docs/operations/notices.md). */
export interface NoticeConfig {
  /** Whether audit events become events of the outbox, and this process dispatches and sends notices. */
  enabled: boolean;
  /** Special-use ranges (RFC 6890) or the box's own addresses a receiver may be at all the same, as [address, prefix]; more at runtime (PUT /settings/notices). */
  allowedAddresses: [address: string, prefix: number][];
  /** The deadline of one attempt, connection to answer. */
  timeoutMs: number;
  /** Notices one process sends at once (each to another destination). */
  sendingAtOnce: number;
  /** The wait after a first failed attempt, doubling after each until `longestRetrySeconds`. */
  firstRetrySeconds: number;
  longestRetrySeconds: number;
}

/** A list of addresses or CIDRs, separated by commas or spaces, as [address, prefix]. */
function cidrList(env: Env, name: string): [address: string, prefix: number][] {
  const raw = str(env, name);
  if (!raw) return [];
  return raw
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const cidr = parseCidr(entry);
      if (!cidr) throw new ConfigError(`${name}: "${entry}" is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8)`);
      return cidr;
    });
}

/**
 * The OpenTelemetry SDK's standard variables, as the box reads them: off (`none`) unless
 * OTEL_TRACES_EXPORTER says `otlp` (and OTEL_SDK_DISABLED does not say true); OTLP over HTTP.
 * `service`: the service.name without OTEL_SERVICE_NAME (the operator's is its own).
 */
export function tracingOf(env: Env, service = 'boxauth'): TracingConfig {
  const disabled = bool(env, 'OTEL_SDK_DISABLED', false);
  const exporter = oneOf(env, 'OTEL_TRACES_EXPORTER', ['none', 'otlp'] as const, 'none');
  const base = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') ?? 'http://localhost:4318';
  const endpoint = str(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? `${base.replace(/\/+$/, '')}/v1/traces`;
  if (!/^https?:\/\/[^/?#]+(\/[^?#]*)?$/.test(endpoint)) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) must be an http(s) URL, got "${endpoint}"`);
  }
  const ratioRaw = str(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = ratioRaw === undefined ? 1 : Number(ratioRaw);
  if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${ratioRaw}"`);
  return {
    exporter: disabled ? 'none' : exporter,
    endpoint,
    sampler: oneOf(env, 'OTEL_TRACES_SAMPLER', TRACE_SAMPLERS, 'parentbased_always_on'),
    ratio,
    serviceName: str(env, 'OTEL_SERVICE_NAME') ?? service,
  };
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** A value of a fixed list, named in the message when it is not one. */
export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** A value that must match `pattern`, described by `what` when it does not. */
/** BOXAUTH_FACTOR_KEY: 32 random bytes in base64 (`openssl rand -base64 32`). Never echoed: it is a secret. */
function factorKeyOf(env: Env): Buffer | undefined {
  const raw = str(env, 'BOXAUTH_FACTOR_KEY');
  if (raw === undefined) return undefined;
  const key = Buffer.from(raw.trim(), 'base64');
  if (key.length !== 32) throw new ConfigError('BOXAUTH_FACTOR_KEY must be 32 bytes in base64 (make one with: openssl rand -base64 32)');
  return key;
}

/** BOXAUTH_REGISTRATION_VERIFY: a proven address before the first sign-in is the default where the box can mail one. */
function registrationVerifyOf(env: Env): Config['registrationVerify'] {
  const mail = str(env, 'BOXAUTH_SMTP_URL') !== undefined;
  const verify = oneOf(
    env,
    'BOXAUTH_REGISTRATION_VERIFY',
    ['before-sign-in', 'after-sign-in'] as const,
    mail ? 'before-sign-in' : 'after-sign-in',
  );
  if (verify === 'before-sign-in' && !mail)
    throw new ConfigError('BOXAUTH_REGISTRATION_VERIFY=before-sign-in needs mail: set BOXAUTH_SMTP_URL (docs/guides/email.md)');
  return verify;
}

export function matching(env: Env, name: string, pattern: RegExp, what: string, fallback: string): string {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!pattern.test(raw)) throw new ConfigError(`${name} must be ${what}, got "${raw}"`);
  return raw;
}

/** A name a person reads (an email, a group name): refused when it hides a character, as the API refuses it. */
function visibleName(name: string, value: string): string {
  const problem = invisibleProblem(value);
  if (problem) throw new ConfigError(`${name} ${problem}`);
  return value;
}

/** An IP address to listen on, or a host name that resolves to one (BOXAUTH_HOST, BOXAUTH_OPERATOR_HEALTH_HOST). */
export function listenHost(env: Env, name: string): string {
  const raw = str(env, name) ?? '0.0.0.0';
  if (net.isIP(raw) || /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(raw)) return raw;
  throw new ConfigError(`${name} must be an IP address or a host name to listen on (e.g. 0.0.0.0, 127.0.0.1, ::), got "${raw}"`);
}

function clusterIssuer(env: Env): Config['clusterIssuer'] {
  const raw = str(env, 'BOXAUTH_CLUSTER_ISSUER') ?? 'auto';
  if (raw !== 'auto' && raw !== 'off' && raw !== 'tokenreview')
    throw new ConfigError(`BOXAUTH_CLUSTER_ISSUER must be auto, off or tokenreview, got "${raw}"`);
  return raw;
}

function trustedIssuers(env: Env): TrustedIssuer[] {
  const raw = str(env, 'BOXAUTH_TRUSTED_ISSUERS');
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(
      'BOXAUTH_TRUSTED_ISSUERS must be a JSON array of {"issuer", "jwksUri"?, "mode"?, "caBundle"?, "allowedAddresses"?}',
    );
  }
  if (!Array.isArray(parsed)) throw new ConfigError('BOXAUTH_TRUSTED_ISSUERS must be a JSON array');
  return parsed.map((entry, i) => {
    const e = entry as Record<string, unknown>;
    const where = `BOXAUTH_TRUSTED_ISSUERS[${i}]`;
    if (typeof e?.issuer !== 'string' || !/^https:\/\/\S+$/.test(e.issuer)) throw new ConfigError(`${where}.issuer must be an https URL`);
    if (e.jwksUri !== undefined && (typeof e.jwksUri !== 'string' || !/^https:\/\/\S+$/.test(e.jwksUri)))
      throw new ConfigError(`${where}.jwksUri must be an https URL`);
    const mode = e.mode ?? 'jwks';
    if (mode !== 'jwks' && mode !== 'tokenreview') throw new ConfigError(`${where}.mode must be jwks or tokenreview`);
    if (e.caBundle !== undefined && typeof e.caBundle !== 'string') throw new ConfigError(`${where}.caBundle must be PEM text`);
    const allowed = e.allowedAddresses ?? [];
    if (!Array.isArray(allowed)) throw new ConfigError(`${where}.allowedAddresses must be a list of addresses or CIDRs`);
    const allowedAddresses = allowed.map((a: unknown) => {
      const cidr = typeof a === 'string' ? parseCidr(a) : undefined;
      if (!cidr) throw new ConfigError(`${where}.allowedAddresses: ${JSON.stringify(a)} is not an address or a CIDR`);
      return cidr;
    });
    return {
      issuer: e.issuer,
      mode,
      ...(e.jwksUri ? { jwksUri: e.jwksUri } : {}),
      ...(e.caBundle ? { caBundle: e.caBundle } : {}),
      allowedAddresses,
    };
  });
}

/** A SPIFFE trust domain name (SPIFFE-ID §2.1: lowercase letters, digits, dots, dashes and underscores). */
export const TRUST_DOMAIN = /^[a-z0-9._-]{1,255}$/;

function spiffeTrustDomains(env: Env): SpiffeTrustDomain[] {
  const name = 'BOXAUTH_SPIFFE_TRUST_DOMAINS';
  const raw = str(env, name);
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON array of {"trustDomain", "bundleEndpointUrl", "caBundle"?, "allowedAddresses"?}`);
  }
  if (!Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON array`);
  const seen = new Set<string>();
  return parsed.map((entry, i) => {
    const e = entry as Record<string, unknown>;
    const where = `${name}[${i}]`;
    if (typeof e?.trustDomain !== 'string' || !TRUST_DOMAIN.test(e.trustDomain))
      throw new ConfigError(`${where}.trustDomain must be a trust domain name (lowercase letters, digits, ".", "-", "_")`);
    if (seen.has(e.trustDomain)) throw new ConfigError(`${where}.trustDomain ${e.trustDomain} is declared twice`);
    seen.add(e.trustDomain);
    if (typeof e.bundleEndpointUrl !== 'string' || !/^https:\/\/[^#\s]+$/.test(e.bundleEndpointUrl))
      throw new ConfigError(`${where}.bundleEndpointUrl must be an https URL (the https_web profile)`);
    if (e.caBundle !== undefined && typeof e.caBundle !== 'string') throw new ConfigError(`${where}.caBundle must be PEM text`);
    const allowed = e.allowedAddresses ?? [];
    if (!Array.isArray(allowed)) throw new ConfigError(`${where}.allowedAddresses must be an array of addresses or CIDRs`);
    const allowedAddresses = allowed.map((a) => {
      const cidr = typeof a === 'string' ? parseCidr(a) : undefined;
      if (!cidr) throw new ConfigError(`${where}.allowedAddresses: ${JSON.stringify(a)} is not an address or a CIDR`);
      return cidr;
    });
    return {
      trustDomain: e.trustDomain,
      bundleEndpointUrl: e.bundleEndpointUrl,
      allowedAddresses,
      ...(e.caBundle ? { caBundle: e.caBundle } : {}),
    };
  });
}

/**
 * BOXAUTH_SMTP_URL and its companions. A URL that does not parse is not echoed: it may hold a
 * password. A parsed one is named without it.
 */
/** The environment variable of each field of the branding, in the order the reference lists them. */
export const BRANDING_VARIABLES: Record<keyof Branding, string> = {
  displayName: 'BOXAUTH_BRAND_NAME',
  logoUrl: 'BOXAUTH_BRAND_LOGO_URL',
  primaryColor: 'BOXAUTH_BRAND_PRIMARY_COLOR',
  backgroundColor: 'BOXAUTH_BRAND_BACKGROUND_COLOR',
  supportUrl: 'BOXAUTH_BRAND_SUPPORT_URL',
};

/** The branding, every value checked (api/branding.ts): the first bad one stops start-up, named. */
function brandingOf(env: Env): Branding {
  const value = (field: keyof Branding): string | undefined => env[BRANDING_VARIABLES[field]] || undefined;
  const branding: Branding = {
    displayName: value('displayName'),
    logoUrl: value('logoUrl'),
    primaryColor: value('primaryColor'),
    backgroundColor: value('backgroundColor'),
    supportUrl: value('supportUrl'),
  };
  const problems = brandingProblems(branding);
  for (const field of Object.keys(BRANDING_VARIABLES) as (keyof Branding)[]) {
    if (problems[field]) throw new ConfigError(`${BRANDING_VARIABLES[field]} ${problems[field]}`);
  }
  return branding;
}

function smtpOf(env: Env): SmtpConfig | undefined {
  const raw = str(env, 'BOXAUTH_SMTP_URL');
  const fromRaw = str(env, 'BOXAUTH_SMTP_FROM');
  if (raw === undefined) {
    const needing = ['BOXAUTH_SMTP_FROM', 'BOXAUTH_SMTP_PASSWORD', 'BOXAUTH_MAIL_TEMPLATES', 'BOXAUTH_SMTP_SIGN_IN_CODES'];
    if (needing.some((name) => str(env, name) !== undefined))
      throw new ConfigError(
        'BOXAUTH_SMTP_FROM, BOXAUTH_SMTP_PASSWORD, BOXAUTH_MAIL_TEMPLATES and BOXAUTH_SMTP_SIGN_IN_CODES need BOXAUTH_SMTP_URL',
      );
    return undefined;
  }
  const shape = 'smtp://[user[:password]@]host[:port] (STARTTLS) or smtps://[user[:password]@]host[:port] (TLS)';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`BOXAUTH_SMTP_URL must be ${shape}`);
  }
  const urlPassword = decodeURIComponent(url.password);
  url.password = '';
  const shown = url.href.replace(/\/$/, '');
  if (
    (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') ||
    !url.hostname ||
    (url.pathname !== '' && url.pathname !== '/') ||
    url.search ||
    url.hash
  )
    throw new ConfigError(`BOXAUTH_SMTP_URL must be ${shape}, got "${shown}"`);
  const password = str(env, 'BOXAUTH_SMTP_PASSWORD') ?? (urlPassword || undefined);
  if (password !== undefined && !url.username) throw new ConfigError(`BOXAUTH_SMTP_URL names no user for its password: ${shape}`);
  if (fromRaw === undefined)
    throw new ConfigError(
      'BOXAUTH_SMTP_FROM is needed with BOXAUTH_SMTP_URL: the mailbox the box sends from, e.g. boxauth <no-reply@example.com>',
    );
  const templatesDir = str(env, 'BOXAUTH_MAIL_TEMPLATES');
  if (templatesDir !== undefined && !fs.statSync(templatesDir, { throwIfNoEntry: false })?.isDirectory())
    throw new ConfigError(`BOXAUTH_MAIL_TEMPLATES: ${templatesDir} is not a directory`);
  return {
    url: shown,
    from: mailbox('BOXAUTH_SMTP_FROM', fromRaw),
    ...(password !== undefined ? { password } : {}),
    ...(templatesDir !== undefined ? { templatesDir: path.resolve(templatesDir) } : {}),
    leaseSeconds: int(env, 'BOXAUTH_MAIL_LEASE_SECONDS', 300, 4, 86400),
    signInCodes: signInCodesOf(env),
  };
}

/** One mailbox (`name <address>` or `address`) and nothing a header could be split at. */
function mailbox(name: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new ConfigError(`${name} must be one line`);
  const parsed = addressparser(value, { flatten: true });
  if (parsed.length !== 1 || !/^[^\s@]+@[^\s@]+$/.test(parsed[0]!.address))
    throw new ConfigError(`${name} must be one mailbox, e.g. boxauth <no-reply@example.com>, got "${value}"`);
  return visibleName(name, value);
}

/**
 * A database URL boxauth can write through: a postgres:// URL, several hosts in libpq's form allowed
 * (api/database-url.ts), whose target_session_attrs does not ask for a server that refuses writes.
 */
function writableDatabaseUrl(env: Env, name: string): string | undefined {
  const url = str(env, name);
  if (url === undefined) return undefined;
  let parsed: DatabaseUrl;
  try {
    parsed = parseDatabaseUrl(url, name);
  } catch (err) {
    if (err instanceof DatabaseUrlError) throw new ConfigError(err.message);
    throw err;
  }
  if (!['read-write', 'primary', 'any'].includes(parsed.targetSessionAttrs)) {
    throw new ConfigError(
      `${name}: boxauth writes to its database, so target_session_attrs must be read-write (the default), primary or any, got "${parsed.targetSessionAttrs}"`,
    );
  }
  return url;
}

export interface HostedSettings {
  /** The registry of the boxes this host serves: a JSON file, read again when it changes (api/host/registry.ts). */
  boxesFile: string;
  /** A box without a request for this long is closed: its pools, change feed and caches let go. */
  idleSeconds: number;
  /** Requests of one box in flight at once; more wait in the box's own line. */
  boxConcurrency: number;
  /** Requests of one box waiting at most; more are answered 503 at once. */
  boxQueue: number;
  /** Boxes prepared (migrated, keys and bootstrap records made) at once. */
  prepareConcurrency: number;
}

function hostedSettings(env: Env): HostedSettings | undefined {
  const boxesFile = str(env, 'BOXAUTH_HOSTED_BOXES');
  if (boxesFile === undefined) return undefined;
  return {
    boxesFile,
    idleSeconds: int(env, 'BOXAUTH_HOST_IDLE_SECONDS', 60, 1, 86_400),
    boxConcurrency: int(env, 'BOXAUTH_HOST_BOX_CONCURRENCY', 32, 1, 10_000),
    boxQueue: int(env, 'BOXAUTH_HOST_BOX_QUEUE', 256, 0, 100_000),
    prepareConcurrency: int(env, 'BOXAUTH_HOST_PREPARE_CONCURRENCY', 2, 1, 64),
  };
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'BOXAUTH_PORT', 8080, 0, 65535);
  const tls = tlsFiles(env);
  const baseUrl = (str(env, 'BOXAUTH_BASE_URL') ?? `${tls ? 'https' : 'http'}://localhost:${port}`).replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new ConfigError(`BOXAUTH_BASE_URL must be an absolute http(s) URL, got "${baseUrl}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`BOXAUTH_BASE_URL must use http or https, got "${baseUrl}"`);
  }
  const jwtAlg = (str(env, 'BOXAUTH_JWT_ALG') ?? 'ES256') as JwtAlg;
  if (!JWT_ALGS.includes(jwtAlg)) {
    throw new ConfigError(`BOXAUTH_JWT_ALG must be one of ${JWT_ALGS.join(', ')}, got "${jwtAlg}"`);
  }
  const databaseUrl = writableDatabaseUrl(env, 'DATABASE_URL');
  const databaseDirectUrl = writableDatabaseUrl(env, 'BOXAUTH_DATABASE_DIRECT_URL');
  if (databaseDirectUrl !== undefined && databaseUrl === undefined) {
    throw new ConfigError('BOXAUTH_DATABASE_DIRECT_URL needs DATABASE_URL: it is the direct way to the same database');
  }
  const workersRaw = str(env, 'BOXAUTH_WORKERS');
  const workers = workersRaw === 'auto' ? os.availableParallelism() : int(env, 'BOXAUTH_WORKERS', 1, 1, 256);
  return {
    port,
    host: listenHost(env, 'BOXAUTH_HOST'),
    metricsPort: int(env, 'BOXAUTH_METRICS_PORT', DEFAULT_METRICS_PORT, 1, 65535),
    grpcPort: int(env, 'BOXAUTH_GRPC_PORT', DEFAULT_GRPC_PORT, 0, 65535),
    gateBodyBytes: int(env, 'BOXAUTH_GATE_BODY_BYTES', 64 * 1024, 1024, 512 * 1024),
    baseUrl,
    box: matching(
      env,
      'BOXAUTH_BOX',
      /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$/,
      'a name of lower-case letters, digits, dashes and dots (in a cluster: namespace/name)',
      'default',
    ),
    databaseUrl,
    databaseDirectUrl,
    dbConnectTimeoutMs: int(env, 'BOXAUTH_DATABASE_CONNECT_TIMEOUT_MS', 3000, 100, 60_000),
    dbStatementTimeoutMs: int(env, 'BOXAUTH_DATABASE_STATEMENT_TIMEOUT_MS', 5000, 0, 600_000),
    dbNamedStatements: bool(env, 'BOXAUTH_DATABASE_PREPARED_STATEMENTS', databaseDirectUrl === undefined),
    outageMemorySeconds: int(env, 'BOXAUTH_OUTAGE_MEMORY_SECONDS', 60, 0, 86400),
    dataDir: path.resolve(str(env, 'BOXAUTH_DATA_DIR') ?? '.boxauth'),
    rootClientId: str(env, 'BOXAUTH_ROOT_CLIENT_ID') ?? 'root',
    rootClientSecret: str(env, 'BOXAUTH_ROOT_CLIENT_SECRET'),
    adminEmail: visibleName(
      'BOXAUTH_ADMIN_EMAIL',
      matching(env, 'BOXAUTH_ADMIN_EMAIL', /^[^\s@]+@[^\s@]+$/, 'an email address', 'admin@localhost'),
    ),
    adminPassword: str(env, 'BOXAUTH_ADMIN_PASSWORD'),
    passwordMinLength: int(
      env,
      'BOXAUTH_PASSWORD_MIN_LENGTH',
      PASSWORD_MIN_LENGTH.default,
      PASSWORD_MIN_LENGTH.least,
      PASSWORD_MIN_LENGTH.most,
    ),
    branding: brandingOf(env),
    registration: bool(env, 'BOXAUTH_REGISTRATION', false),
    registrationGroup: visibleName(
      'BOXAUTH_REGISTRATION_GROUP',
      matching(
        env,
        'BOXAUTH_REGISTRATION_GROUP',
        /^\S(.{0,198}\S)?$/,
        'a group name (1 to 200 characters, no space at either end)',
        'users',
      ),
    ),
    jwtAlg,
    signingKeyPem: str(env, 'BOXAUTH_SIGNING_KEY'),
    factorKey: factorKeyOf(env),
    keyRotationDays: int(env, 'BOXAUTH_KEY_ROTATION_DAYS', 30, 0, 3650),
    workers,
    hosted: hostedSettings(env),
    logLevel: oneOf(env, 'BOXAUTH_LOG_LEVEL', LOG_LEVELS, 'info'),
    dbPoolSize: int(env, 'BOXAUTH_DB_POOL_SIZE', 10, 1, 500),
    sessionRetentionHours: int(env, 'BOXAUTH_SESSION_RETENTION_HOURS', 24, 0, 24 * 3650),
    decisionRetentionHours: int(env, 'BOXAUTH_DECISION_RETENTION_HOURS', 24, 0, 24 * 365),
    decisionMaxRows: int(env, 'BOXAUTH_DECISION_MAX_ROWS', 100_000, 1, 100_000_000),
    allowedDecisionSample: int(env, 'BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE', 1, 1, 1_000_000),
    auditRetentionDays: int(env, 'BOXAUTH_AUDIT_RETENTION_DAYS', 90, 0, 3650),
    auditMaxRows: int(env, 'BOXAUTH_AUDIT_MAX_ROWS', 1_000_000, 1, 1_000_000_000),
    purgeIntervalSeconds: int(env, 'BOXAUTH_PURGE_INTERVAL_SECONDS', 300, 1, 86400),
    shutdownTimeoutMs: int(env, 'BOXAUTH_SHUTDOWN_TIMEOUT_MS', 10000, 0, 600000),
    shutdownDelayMs: int(env, 'BOXAUTH_SHUTDOWN_DELAY_MS', 0, 0, 60000),
    authCodeTtlSeconds: int(env, 'BOXAUTH_AUTH_CODE_TTL_SECONDS', 60, 1, 600),
    browserSessionHours: int(env, 'BOXAUTH_BROWSER_SESSION_HOURS', 12, 1, 24 * 90),
    signInMaxFailures: int(env, 'BOXAUTH_SIGN_IN_MAX_FAILURES', 5, 1, 1000),
    signInWindowSeconds: int(env, 'BOXAUTH_SIGN_IN_WINDOW_SECONDS', 900, 1, 86400),
    clientAuthMaxFailures: int(env, 'BOXAUTH_CLIENT_AUTH_MAX_FAILURES', 10, 1, 100000),
    clientAuthWindowSeconds: int(env, 'BOXAUTH_CLIENT_AUTH_WINDOW_SECONDS', 60, 1, 86400),
    deviceCodesPerAddress: int(env, 'BOXAUTH_DEVICE_CODES_PER_ADDRESS', 30, 1, 100000),
    upstreamStartsPerAddress: int(env, 'BOXAUTH_UPSTREAM_STARTS_PER_ADDRESS', 100, 1, 100000),
    argon2MaxWaiting: int(env, 'BOXAUTH_ARGON2_MAX_WAITING', 32, 0, 10000),
    signUpMaxPerAddress: int(env, 'BOXAUTH_SIGN_UP_MAX_PER_ADDRESS', 10, 1, 1_000_000),
    signUpAddressWindowSeconds: int(env, 'BOXAUTH_SIGN_UP_ADDRESS_WINDOW_SECONDS', 3600, 1, 7 * 86400),
    signUpMaxPerBox: int(env, 'BOXAUTH_SIGN_UP_MAX_PER_BOX', 100, 1, 1_000_000),
    signUpBoxWindowSeconds: int(env, 'BOXAUTH_SIGN_UP_BOX_WINDOW_SECONDS', 600, 1, 7 * 86400),
    signUpMaxWaiting: int(env, 'BOXAUTH_SIGN_UP_MAX_WAITING', 4, 0, 10000),
    registrationVerify: registrationVerifyOf(env),
    mailMaxPerRecipient: int(env, 'BOXAUTH_MAIL_MAX_PER_RECIPIENT', 5, 1, 1_000_000),
    resetMaxPerAddress: int(env, 'BOXAUTH_RESET_MAX_PER_ADDRESS', 20, 1, 1_000_000),
    mailWindowSeconds: int(env, 'BOXAUTH_MAIL_WINDOW_SECONDS', 3600, 1, 7 * 86400),
    trustedProxies: trustedProxies(env),
    clientCertificates: clientCertificates(env, tls, trustedProxies(env)),
    tls,
    tracing: tracingOf(env),
    hsts: {
      maxAgeSeconds: int(env, 'BOXAUTH_HSTS_MAX_AGE', 365 * 24 * 3600, 0, 2 * 365 * 24 * 3600),
      includeSubDomains: bool(env, 'BOXAUTH_HSTS_INCLUDE_SUBDOMAINS', false),
    },
    trustedIssuers: trustedIssuers(env),
    spiffeTrustDomains: spiffeTrustDomains(env),
    clusterIssuer: clusterIssuer(env),
    dpopNonce: oneOf(env, 'BOXAUTH_DPOP_NONCE', ['required', 'off'] as const, 'off'),
    ...(str(env, 'BOXAUTH_PUBLIC_SUBJECTS') !== undefined
      ? { publicSubjects: oneOf(env, 'BOXAUTH_PUBLIC_SUBJECTS', ['sequential', 'opaque'] as const, 'opaque') }
      : {}),
    clientMetadata: {
      allowedAddresses: cidrList(env, 'BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES'),
      timeoutMs: int(env, 'BOXAUTH_CLIENT_METADATA_TIMEOUT_MS', 3000, 100, 30_000),
      minCacheSeconds: int(env, 'BOXAUTH_CLIENT_METADATA_MIN_CACHE_SECONDS', 60, 0, 86400),
      maxCacheSeconds: int(env, 'BOXAUTH_CLIENT_METADATA_MAX_CACHE_SECONDS', 86400, 0, 7 * 86400),
    },
    notices: {
      enabled: bool(env, 'BOXAUTH_NOTICES', true),
      allowedAddresses: cidrList(env, 'BOXAUTH_NOTICE_ALLOWED_ADDRESSES'),
      timeoutMs: int(env, 'BOXAUTH_NOTICE_TIMEOUT_MS', 10_000, 100, 120_000),
      sendingAtOnce: int(env, 'BOXAUTH_NOTICE_SENDING_AT_ONCE', 16, 1, 1000),
      firstRetrySeconds: int(env, 'BOXAUTH_NOTICE_FIRST_RETRY_SECONDS', 5, 1, 3600),
      longestRetrySeconds: int(env, 'BOXAUTH_NOTICE_LONGEST_RETRY_SECONDS', 900, 1, 86400),
    },
    dynamicRegistration: {
      enabled: bool(env, 'BOXAUTH_DYNAMIC_REGISTRATION', false),
      perAddressPerHour: int(env, 'BOXAUTH_DYNAMIC_REGISTRATION_PER_ADDRESS', 10, 1, 100_000),
      unusedHours: int(env, 'BOXAUTH_DYNAMIC_REGISTRATION_UNUSED_HOURS', 24, 1, 24 * 365),
    },
    kube: {
      apiUrl:
        str(env, 'BOXAUTH_KUBE_API_URL') ??
        (env.KUBERNETES_SERVICE_HOST
          ? `https://${env.KUBERNETES_SERVICE_HOST.includes(':') ? `[${env.KUBERNETES_SERVICE_HOST}]` : env.KUBERNETES_SERVICE_HOST}:${env.KUBERNETES_SERVICE_PORT ?? '443'}`
          : undefined),
      tokenFile: str(env, 'BOXAUTH_KUBE_TOKEN_FILE') ?? '/var/run/secrets/kubernetes.io/serviceaccount/token',
      caFile: str(env, 'BOXAUTH_KUBE_CA_FILE') ?? '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    },
    smtp: smtpOf(env),
  };
}
