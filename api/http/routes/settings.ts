// The box's effective configuration on its own API (GET /settings), behind its policies as every
// route is: what an administrator needs to know of how the box behaves (its issuer, lifetimes,
// registration, mail, what it trusts, what it keeps and for how long), read from the settings the
// process started with. It is an allow-list: each field below is named and copied on purpose, so a
// setting added to api/config.ts stays out of the answer until it is added here. No secret is one
// of them: not the root client's secret or the admin's password, not the factor key or the signing
// key, not DATABASE_URL's user or password, not the SMTP password (nor its user), not a trusted
// issuer's CA bundle (only whether there is one).
import { Request, RequestHandler, Response, Router } from '../router.js';
import { parseDatabaseUrl } from '../../database-url.js';
import type { Config, JwtAlg } from '../../config.js';
import { RETIRED_KEY_GRACE_MS, type Keyring } from '../../credentials/keyring.js';
import { DEVICE_CODE_LIFETIME_SECONDS } from '../../oauth/device.js';
import { DEFAULT_ID_TOKEN_SECONDS } from '../../oauth/openid.js';
import { PUSHED_REQUEST_SECONDS } from '../../oauth/par.js';
import { noticeSettings, writeNoticeSettings } from '../../notices/allow-list.js';
import type { Pool } from '../../db/pool.js';
import type { Audit } from '../../audit.js';
import { actorOf } from '../auth.js';
import { resourceBody } from '../body.js';
import { RECENT_PROOF_MINUTES } from '../../people/factors.js';
import { RECOVERY_CODE_COUNT } from '../../people/ways/recovery-codes.js';
import { strictTransportSecurity } from '../headers.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
  pool: Pool;
  audit: Audit;
}

/** GET /settings: every field is documented in docs/reference/rest-api.md#settings. */
export interface BoxSettings {
  box: string;
  issuer: string;
  https: { tls: boolean; strict_transport_security: string | null };
  signing: {
    access_token_alg: JwtAlg;
    id_token_algs: JwtAlg[];
    external_key: boolean;
    key_rotation_days: number;
    retired_key_published_hours_at_least: number;
  };
  tokens: {
    /** Access tokens live as their client says (auth.<grant>.access_token_expiration); null: they do not expire unless it says. */
    access_token_default_seconds: null;
    id_token_default_seconds: number;
    authorization_code_seconds: number;
    device_code_seconds: number;
    pushed_request_seconds: number;
    dpop_nonce: Config['dpopNonce'];
  };
  sessions: { browser_session_hours: number; closed_sessions_kept_hours: number };
  sign_in: {
    password_min_length: number;
    max_failures: number;
    window_seconds: number;
    client_auth_max_failures: number;
    client_auth_window_seconds: number;
    device_codes_per_address: number;
    upstream_starts_per_address: number;
  };
  second_factors: { recent_proof_minutes: number; recovery_codes: number };
  registration: {
    enabled: boolean;
    group: string;
    verify: Config['registrationVerify'];
    max_per_address: number;
    address_window_seconds: number;
    max_per_box: number;
    box_window_seconds: number;
  };
  mail: {
    configured: boolean;
    host: string | null;
    port: number | null;
    security: 'starttls' | 'tls' | null;
    from: string | null;
    custom_templates: boolean;
    max_per_recipient: number;
    reset_max_per_address: number;
    window_seconds: number;
  };
  trust: {
    trusted_proxies: string[];
    trusted_issuers: { issuer: string; jwks_uri: string | null; mode: 'jwks' | 'tokenreview'; ca_bundle: boolean }[];
    cluster_issuer: Config['clusterIssuer'];
  };
  gate: { grpc_port: number | null; decision_retention_hours: number; decision_max_rows: number };
  upkeep: { purge_interval_seconds: number };
  /** The outbox of notices; the ranges allowed at runtime are GET /settings/notices. */
  notices: {
    enabled: boolean;
    allowed_addresses_from_environment: string[];
    timeout_ms: number;
    sending_at_once: number;
    first_retry_seconds: number;
    longest_retry_seconds: number;
  };
  database: { embedded: boolean; hosts: string | null; database: string | null; pool_size: number; statement_timeout_ms: number };
  processes: { workers: number; log_level: string };
}

/** The SMTP server as a person names it: host, port and how it is secured; never its user or password. */
function mailServer(url: string): Pick<BoxSettings['mail'], 'host' | 'port' | 'security'> {
  const parsed = new URL(url);
  const tls = parsed.protocol === 'smtps:';
  return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : tls ? 465 : 587, security: tls ? 'tls' : 'starttls' };
}

/** Where the database is (hosts and database name), never who connects or with what password. */
function databasePlace(url: string | undefined): Pick<BoxSettings['database'], 'embedded' | 'hosts' | 'database'> {
  if (url === undefined) return { embedded: true, hosts: null, database: null };
  const parsed = parseDatabaseUrl(url);
  return { embedded: false, hosts: parsed.where || null, database: parsed.database || null };
}

/** The settings an administrator sees, from the process's configuration (pure; an allow-list). */
export function boxSettings(config: Config, idTokenAlgs: JwtAlg[], accessAlg: JwtAlg): BoxSettings {
  const smtp = config.smtp;
  return {
    box: config.box,
    issuer: config.baseUrl,
    https: { tls: config.tls !== undefined, strict_transport_security: strictTransportSecurity(config) ?? null },
    signing: {
      access_token_alg: accessAlg,
      id_token_algs: idTokenAlgs,
      external_key: config.signingKeyPem !== undefined,
      key_rotation_days: config.keyRotationDays,
      retired_key_published_hours_at_least: RETIRED_KEY_GRACE_MS / 3_600_000,
    },
    tokens: {
      access_token_default_seconds: null,
      id_token_default_seconds: DEFAULT_ID_TOKEN_SECONDS,
      authorization_code_seconds: config.authCodeTtlSeconds,
      device_code_seconds: DEVICE_CODE_LIFETIME_SECONDS,
      pushed_request_seconds: PUSHED_REQUEST_SECONDS,
      dpop_nonce: config.dpopNonce,
    },
    sessions: { browser_session_hours: config.browserSessionHours, closed_sessions_kept_hours: config.sessionRetentionHours },
    sign_in: {
      password_min_length: config.passwordMinLength,
      max_failures: config.signInMaxFailures,
      window_seconds: config.signInWindowSeconds,
      client_auth_max_failures: config.clientAuthMaxFailures,
      client_auth_window_seconds: config.clientAuthWindowSeconds,
      device_codes_per_address: config.deviceCodesPerAddress,
      upstream_starts_per_address: config.upstreamStartsPerAddress,
    },
    second_factors: { recent_proof_minutes: RECENT_PROOF_MINUTES, recovery_codes: RECOVERY_CODE_COUNT },
    registration: {
      enabled: config.registration,
      group: config.registrationGroup,
      verify: config.registrationVerify,
      max_per_address: config.signUpMaxPerAddress,
      address_window_seconds: config.signUpAddressWindowSeconds,
      max_per_box: config.signUpMaxPerBox,
      box_window_seconds: config.signUpBoxWindowSeconds,
    },
    mail: {
      configured: smtp !== undefined,
      ...(smtp ? mailServer(smtp.url) : { host: null, port: null, security: null }),
      from: smtp?.from ?? null,
      custom_templates: smtp?.templatesDir !== undefined,
      max_per_recipient: config.mailMaxPerRecipient,
      reset_max_per_address: config.resetMaxPerAddress,
      window_seconds: config.mailWindowSeconds,
    },
    trust: {
      trusted_proxies: config.trustedProxies.map(([address, prefix]) => `${address}/${prefix}`),
      trusted_issuers: config.trustedIssuers.map((i) => ({
        issuer: i.issuer,
        jwks_uri: i.jwksUri ?? null,
        mode: i.mode,
        ca_bundle: i.caBundle !== undefined,
      })),
      cluster_issuer: config.clusterIssuer,
    },
    gate: {
      grpc_port: config.grpcPort || null,
      decision_retention_hours: config.decisionRetentionHours,
      decision_max_rows: config.decisionMaxRows,
    },
    upkeep: { purge_interval_seconds: config.purgeIntervalSeconds },
    notices: {
      enabled: config.notices.enabled,
      allowed_addresses_from_environment: config.notices.allowedAddresses.map(([address, prefix]) => `${address}/${prefix}`),
      timeout_ms: config.notices.timeoutMs,
      sending_at_once: config.notices.sendingAtOnce,
      first_retry_seconds: config.notices.firstRetrySeconds,
      longest_retry_seconds: config.notices.longestRetrySeconds,
    },
    database: {
      ...databasePlace(config.databaseUrl),
      pool_size: config.dbPoolSize,
      statement_timeout_ms: config.dbStatementTimeoutMs,
    },
    processes: { workers: config.workers, log_level: config.logLevel },
  };
}

/** What GET /settings uses: the configuration, and the keyring's algorithms. */
export type SettingsRouterServices = Pick<Needs, 'config' | 'keyring' | 'pool' | 'audit'>;

export function settingsRouter(svc: SettingsRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  router.get('/settings', guard, (req: Request, res: Response) => {
    send(req, res, 200, boxSettings(svc.config, svc.keyring.algorithms, svc.keyring.active.alg));
  });
  // The ranges receivers of notices may be at although special-use (api/notices/allow-list.ts): the
  // one setting an administrator changes at runtime, for every process of the box at once.
  router.get('/settings/notices', guard, async (req: Request, res: Response) => {
    send(req, res, 200, await noticeSettings(svc.pool, svc.config));
  });
  router.put('/settings/notices', ...resourceBody, guard, async (req: Request, res: Response) => {
    send(req, res, 200, await writeNoticeSettings(svc, req.body, actorOf(req.principal!)));
  });
  return router;
}
