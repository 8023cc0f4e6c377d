// Every environment variable the operator reads, parsed once. A bad value stops
// start-up with a message naming the variable.
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../api/config.js';

export interface OperatorConfig {
  /** Where box schemas and roles are created; unset: the embedded PostgreSQL of `make run`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** host[:port] the box API pods reach PostgreSQL at; unset: the host of databaseUrl. */
  boxDatabaseHost: string | undefined;
  boxImage: string;
  boxImagePullPolicy: string;
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
  shutdownTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

/** The image tag of this build: the API and the operator ship in one image. */
/** The image `docker build -t boxauth:dev .` makes (the chart's default too); no release is published yet. */
export const DEFAULT_BOX_IMAGE = 'boxauth:dev';

export function loadOperatorConfig(env: Env = process.env): OperatorConfig {
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  const boxDatabaseHost = str(env, 'BOXAUTH_OPERATOR_BOX_DATABASE_HOST');
  if (boxDatabaseHost !== undefined && !/^[A-Za-z0-9.\-[\]:]+$/.test(boxDatabaseHost)) {
    throw new ConfigError(`BOXAUTH_OPERATOR_BOX_DATABASE_HOST must be host or host:port, got "${boxDatabaseHost}"`);
  }
  const leaseSeconds = int(env, 'BOXAUTH_OPERATOR_LEASE_SECONDS', 15, 2, 600);
  return {
    databaseUrl,
    dataDir: path.resolve(str(env, 'BOXAUTH_DATA_DIR') ?? '.boxauth'),
    boxDatabaseHost,
    boxImage: str(env, 'BOXAUTH_OPERATOR_BOX_IMAGE') ?? DEFAULT_BOX_IMAGE,
    boxImagePullPolicy: str(env, 'BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY') ?? 'IfNotPresent',
    namespace: str(env, 'BOXAUTH_OPERATOR_NAMESPACE') ?? str(env, 'POD_NAMESPACE'),
    leaseName: str(env, 'BOXAUTH_OPERATOR_LEASE_NAME') ?? 'boxauth-operator',
    identity: str(env, 'BOXAUTH_OPERATOR_ID') ?? str(env, 'POD_NAME') ?? `${os.hostname()}-${process.pid}`,
    leaseDurationMs: leaseSeconds * 1000,
    resyncMs: int(env, 'BOXAUTH_OPERATOR_RESYNC_SECONDS', 60, 1, 86_400) * 1000,
    relistMs: int(env, 'BOXAUTH_OPERATOR_RELIST_SECONDS', 600, 5, 86_400) * 1000,
    watchIdleMs: int(env, 'BOXAUTH_OPERATOR_WATCH_IDLE_SECONDS', 120, 2, 3600) * 1000,
    workers: int(env, 'BOXAUTH_OPERATOR_WORKERS', 4, 1, 64),
    healthPort: int(env, 'BOXAUTH_OPERATOR_HEALTH_PORT', 8081, 0, 65535),
    healthHost: str(env, 'BOXAUTH_OPERATOR_HEALTH_HOST') ?? '0.0.0.0',
    logLevel: str(env, 'BOXAUTH_LOG_LEVEL') ?? 'info',
    shutdownTimeoutMs: int(env, 'BOXAUTH_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
  };
}
