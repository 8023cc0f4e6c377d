// Every environment variable the operator reads, parsed once. A bad value stops
// start-up with a message naming the variable.
import os from 'node:os';
import path from 'node:path';
import {
  bool,
  ConfigError,
  type Env,
  int,
  listenHost,
  LOG_LEVELS,
  matching,
  oneOf,
  str,
  tracingOf,
  type TracingConfig,
} from '../api/public.js';
import { BOX_ISOLATIONS, type BoxIsolation } from './boxdb-names.js';

export interface OperatorConfig {
  /** Where box schemas and roles are created; unset: the embedded PostgreSQL of `make run`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** host[:port] the box API pods reach PostgreSQL at; unset: the host of databaseUrl. */
  boxDatabaseHost: string | undefined;
  /** host[:port] of a transaction pooler in front of it, where the box API pods send their queries; unset: none. */
  boxDatabasePoolerHost: string | undefined;
  /** Where a new box goes through an administrative URL: a database of its own, or a schema of the shared one. */
  boxIsolation: BoxIsolation;
  boxImage: string;
  boxImagePullPolicy: string;
  /** Boxes run boxImage only: a Box with another spec.image is refused. */
  pinBoxImage: boolean;
  /** The host's Deployment (hosted boxes, spec.serving: Hosted): its replicas ('auto': whoever scales it, an HPA) and its container's resources. */
  hostReplicas: number | 'auto';
  hostResources: Record<string, unknown>;
  /** Where the operator asks the host whether it answers for a box; unset: the host's Service, by its cluster name. */
  hostUrl: string | undefined;
  /**
   * The one ClusterRoleBinding of system:auth-delegator the chart makes, whose subjects the operator keeps: the
   * ServiceAccount of each box whose tokens the API server reviews. The operator may get and update it, and no other.
   */
  tokenReviewBinding: string;
  /** The namespace of the leader Lease; unset: the pod's (or the kubeconfig context's) namespace. */
  namespace: string | undefined;
  leaseName: string;
  identity: string;
  leaseDurationMs: number;
  resyncMs: number;
  relistMs: number;
  watchIdleMs: number;
  workers: number;
  healthPort: number;
  healthHost: string;
  logLevel: string;
  /** A span per reconcile over OTLP: the box's OTEL_* variables (api/config.ts tracingOf), service boxauth-operator. */
  tracing: TracingConfig;
  shutdownTimeoutMs: number;
}

/** The image `docker build -t boxauth:dev .` makes (the chart's default too); no release is published yet. */
export const DEFAULT_BOX_IMAGE = 'boxauth:dev';

/** What a container's imagePullPolicy may be. */
export const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The host pods' requests and limits unless BOXAUTH_HOST_RESOURCES says: an idle box costs the host a few MB. */
export const DEFAULT_HOST_RESOURCES = { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } };

/** A container's resources as JSON ({"requests": {...}, "limits": {...}}), as a Pod has them. */
function resources(env: Env, name: string, fallback: Record<string, unknown>): Record<string, unknown> {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const isMap = (v: unknown): boolean =>
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((q) => typeof q === 'string' || typeof q === 'number');
  const fields = parsed as Record<string, unknown> | undefined;
  if (
    !fields ||
    !isMap(fields.requests ?? {}) ||
    !isMap(fields.limits ?? {}) ||
    Object.keys(fields).some((k) => k !== 'requests' && k !== 'limits')
  )
    throw new ConfigError(`${name} must be a JSON object of requests and limits, as a container's resources, got "${raw}"`);
  return fields;
}

/** The host's replicas: 1 to 100, or `auto` (the operator sets none: an HPA scales the host). */
function hostReplicas(env: Env): number | 'auto' {
  const raw = str(env, 'BOXAUTH_HOST_REPLICAS');
  if (raw === 'auto') return 'auto';
  if (raw === undefined || /^\d+$/.test(raw)) return int(env, 'BOXAUTH_HOST_REPLICAS', 2, 1, 100);
  throw new ConfigError(`BOXAUTH_HOST_REPLICAS must be auto or an integer between 1 and 100, got "${raw}"`);
}

/** A host or host:port, or undefined when unset. */
function hostPort(env: Env, name: string): string | undefined {
  const value = str(env, name);
  if (value !== undefined && !/^[A-Za-z0-9.\-[\]:]+$/.test(value))
    throw new ConfigError(`${name} must be host or host:port, got "${value}"`);
  return value;
}

/** An http(s) URL without a path, or undefined when unset. */
function httpUrl(env: Env, name: string): string | undefined {
  const value = str(env, name);
  if (value !== undefined && !/^https?:\/\/[^\s/?#]+\/?$/.test(value))
    throw new ConfigError(`${name} must be http(s)://host[:port], got "${value}"`);
  return value?.replace(/\/$/, '');
}

export function loadOperatorConfig(env: Env = process.env): OperatorConfig {
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  const leaseSeconds = int(env, 'BOXAUTH_OPERATOR_LEASE_SECONDS', 15, 2, 600);
  return {
    databaseUrl,
    dataDir: path.resolve(str(env, 'BOXAUTH_DATA_DIR') ?? '.boxauth'),
    boxDatabaseHost: hostPort(env, 'BOXAUTH_OPERATOR_BOX_DATABASE_HOST'),
    boxDatabasePoolerHost: hostPort(env, 'BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST'),
    boxIsolation: oneOf(env, 'BOXAUTH_OPERATOR_BOX_ISOLATION', BOX_ISOLATIONS, 'Database'),
    boxImage: str(env, 'BOXAUTH_OPERATOR_BOX_IMAGE') ?? DEFAULT_BOX_IMAGE,
    boxImagePullPolicy: oneOf(env, 'BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY', PULL_POLICIES, 'IfNotPresent'),
    pinBoxImage: bool(env, 'BOXAUTH_OPERATOR_PIN_BOX_IMAGE', false),
    hostReplicas: hostReplicas(env),
    hostResources: resources(env, 'BOXAUTH_HOST_RESOURCES', DEFAULT_HOST_RESOURCES),
    hostUrl: httpUrl(env, 'BOXAUTH_OPERATOR_HOST_URL'),
    tokenReviewBinding: matching(
      env,
      'BOXAUTH_OPERATOR_TOKEN_REVIEW_BINDING',
      DNS_SUBDOMAIN,
      'a ClusterRoleBinding name (lower-case letters, digits, dashes and dots)',
      'boxauth-operator-token-review',
    ),
    namespace:
      str(env, 'BOXAUTH_OPERATOR_NAMESPACE') === undefined
        ? str(env, 'POD_NAMESPACE')
        : matching(env, 'BOXAUTH_OPERATOR_NAMESPACE', DNS_LABEL, 'a namespace name (lower-case letters, digits and dashes)', ''),
    leaseName: matching(
      env,
      'BOXAUTH_OPERATOR_LEASE_NAME',
      DNS_SUBDOMAIN,
      'a Lease name (lower-case letters, digits, dashes and dots)',
      'boxauth-operator',
    ),
    identity: str(env, 'BOXAUTH_OPERATOR_ID') ?? str(env, 'POD_NAME') ?? `${os.hostname()}-${process.pid}`,
    leaseDurationMs: leaseSeconds * 1000,
    resyncMs: int(env, 'BOXAUTH_OPERATOR_RESYNC_SECONDS', 60, 1, 86_400) * 1000,
    relistMs: int(env, 'BOXAUTH_OPERATOR_RELIST_SECONDS', 600, 5, 86_400) * 1000,
    watchIdleMs: int(env, 'BOXAUTH_OPERATOR_WATCH_IDLE_SECONDS', 120, 2, 3600) * 1000,
    workers: int(env, 'BOXAUTH_OPERATOR_WORKERS', 4, 1, 64),
    healthPort: int(env, 'BOXAUTH_OPERATOR_HEALTH_PORT', 8081, 0, 65535),
    healthHost: listenHost(env, 'BOXAUTH_OPERATOR_HEALTH_HOST'),
    logLevel: oneOf(env, 'BOXAUTH_LOG_LEVEL', LOG_LEVELS, 'info'),
    tracing: tracingOf(env, 'boxauth-operator'),
    shutdownTimeoutMs: int(env, 'BOXAUTH_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
  };
}
