// Runs a box's API on this machine as a kubelet would run its pod: the
// container command of the Deployment the operator wrote, from the project
// root, with its environment resolved from the API server (values, Secrets,
// ConfigMaps, the downward API), and, unless the pod opts out
// (automountServiceAccountToken: false), what a kubelet mounts for its
// ServiceAccount: a token (TokenRequest, the API server's audience, renewed as
// the kubelet renews it), the cluster's CA and the API server's address, given
// through the BOXAUTH_KUBE_* overrides since /var/run/secrets is not ours to
// write. Secret volumes are written as a kubelet writes them, kept up to date
// as it keeps them, into a directory of our own: the env's paths under their
// mount paths point there instead. For clusters without a kubelet (`make kube-up`):
//   node dist/operator/run-box.js <namespace> [box]   (or: make box)
//
// A stand-in, kept because it starts a box in a second where a pod takes half a minute: the operator's
// tests (test/e2e/operator) and a developer's `make box` use it. What it does not prove is what
// `make e2e-pods` (test/pods, on the real kubelet of `make cluster-up`) does: the image and its user,
// the read-only root filesystem, the probes, the preStop pause, rolling updates, Services through
// kube-proxy and CoreDNS, and the kubelet's own projection and rotation of ServiceAccount tokens.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage, onFreePorts, projectPath } from '../api/public.js';
import { DEPLOYMENTS, HttpKube, isNotFound, resourcePath, SERVICE_ACCOUNTS, type KObject } from './kube.js';
import { secretValue, type SecretObject } from './secrets.js';

/** The kubelet's lifetime of a projected ServiceAccount token; it renews one at 80 % of that. */
const TOKEN_SECONDS = 3607;
export const TOKEN_RENEW_MS = Math.round(TOKEN_SECONDS * 0.8 * 1000);
/** A kubelet brings Secret volumes up to date within about a minute (its sync period and cache); one pod can be looked after sooner. */
export const VOLUME_SYNC_MS = 2000;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}

export interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  readinessProbe?: { httpGet?: { scheme?: 'HTTP' | 'HTTPS' } };
}

interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
}

type Deployment = KObject & { spec: { template: { spec: PodSpec } } };

export interface Pod {
  container: Container;
  env: Record<string, string>;
  /** Writes a fresh ServiceAccount token (a kubelet does so before the last one expires); absent when none is mounted. */
  renewToken?: () => Promise<void>;
  /** Writes the Secret volumes again whose Secrets changed (a kubelet does so in place); absent when none is mounted. */
  syncVolumes?: () => Promise<void>;
}

/**
 * Writes a Secret volume's files as the kubelet's AtomicWriter does: the values
 * in a new directory, `..data` swapped to it with one rename, and each key a
 * symlink through `..data`; a reader sees the old files or the new ones, never
 * a mix, and a file's inode changes with its contents (what api/http/tls.ts looks for).
 */
function writeSecretVolume(dir: string, secret: SecretObject): void {
  const version = fs.mkdtempSync(path.join(dir, '..v-'));
  const keys = Object.keys(secret.data ?? {});
  for (const key of keys) fs.writeFileSync(path.join(version, key), secretValue(secret, key)!, { mode: 0o644 });
  const data = path.join(dir, '..data');
  const previous = fs.existsSync(data) ? fs.readlinkSync(data) : undefined;
  fs.symlinkSync(path.basename(version), `${data}_tmp`);
  fs.renameSync(`${data}_tmp`, data);
  for (const entry of fs.readdirSync(dir)) if (!entry.startsWith('..') && !keys.includes(entry)) fs.unlinkSync(path.join(dir, entry));
  for (const key of keys) if (!fs.existsSync(path.join(dir, key))) fs.symlinkSync(path.join('..data', key), path.join(dir, key));
  if (previous) fs.rmSync(path.join(dir, previous), { recursive: true, force: true });
}

/**
 * The container's Secret volumes, written under `dir`: where each mount path's
 * files are, and how to bring them up to date.
 */
async function secretVolumes(
  kube: HttpKube,
  namespace: string,
  pod: PodSpec,
  container: Container,
  dir: string,
): Promise<{ paths: Map<string, string>; sync?: () => Promise<void> }> {
  const paths = new Map<string, string>();
  const written = new Map<string, { secretName: string; dir: string; version?: string }>();
  for (const mount of container.volumeMounts ?? []) {
    const secretName = pod.volumes?.find((v) => v.name === mount.name)?.secret?.secretName;
    if (!secretName) continue; // an emptyDir: this machine's directories serve
    const local = path.join(dir, 'volumes', mount.name);
    fs.mkdirSync(local, { recursive: true });
    paths.set(mount.mountPath, local);
    written.set(mount.name, { secretName, dir: local });
  }
  if (!written.size) return { paths };
  const sync = async (): Promise<void> => {
    for (const [volume, w] of written) {
      let secret: SecretObject;
      try {
        secret = await kube.request<SecretObject>('GET', `/api/v1/namespaces/${namespace}/secrets/${w.secretName}`);
      } catch (err) {
        // Files written before stay, as a kubelet keeps those of a Secret deleted since; without any, the pod does not start.
        if (!isNotFound(err) || w.version) throw err;
        throw new Error(`Secret ${namespace}/${w.secretName} (volume ${volume}) does not exist; a kubelet would not start the pod either`, {
          cause: err,
        });
      }
      if (secret.metadata.resourceVersion === w.version) continue;
      writeSecretVolume(w.dir, secret);
      w.version = secret.metadata.resourceVersion;
    }
  };
  await sync();
  return { paths, sync };
}

/**
 * The pod's ServiceAccount credentials, written into `dir`, as the env that
 * points the box at them (api/config.ts reads BOXAUTH_KUBE_*).
 */
async function serviceAccountCredentials(
  kube: HttpKube,
  namespace: string,
  serviceAccount: string,
  dir: string,
): Promise<{ env: Record<string, string>; renewToken: () => Promise<void> }> {
  const cluster = kube.config.getCurrentCluster()!;
  const tokenFile = path.join(dir, 'token');
  const caFile = path.join(dir, 'ca.crt');
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile
      ? fs.readFileSync(cluster.caFile, 'utf8')
      : '';
  fs.writeFileSync(caFile, ca, { mode: 0o644 });
  const renewToken = async (): Promise<void> => {
    let answer: { status: { token: string } };
    try {
      // No audiences: the API server's own, as for the token a kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount.
      answer = await kube.request('POST', resourcePath(SERVICE_ACCOUNTS, namespace, serviceAccount, 'token'), {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: TOKEN_SECONDS } },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      throw new Error(
        `ServiceAccount ${namespace}/${serviceAccount} (the pod's serviceAccountName) does not exist; a kubelet would not start the pod either`,
        { cause: err },
      );
    }
    fs.writeFileSync(`${tokenFile}.tmp`, answer.status.token, { mode: 0o600 });
    fs.renameSync(`${tokenFile}.tmp`, tokenFile); // the box re-reads the file: never a half-written one
  };
  await renewToken();
  return {
    env: { BOXAUTH_KUBE_API_URL: cluster.server, BOXAUTH_KUBE_TOKEN_FILE: tokenFile, BOXAUTH_KUBE_CA_FILE: caFile },
    renewToken,
  };
}

/**
 * The first container of the Deployment and its environment, every reference
 * resolved; with the pod's ServiceAccount credentials (written into `dir`)
 * unless the pod opts out of them.
 */
export async function podOf(kube: HttpKube, namespace: string, name: string, dir: string): Promise<Pod> {
  const deployment = await kube.get<Deployment>(DEPLOYMENTS, namespace, name);
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0]!;
  const env: Record<string, string> = {};
  const data = async (kind: 'secrets' | 'configmaps', ref: { name: string; key: string }): Promise<string> => {
    const obj = await kube.request<SecretObject>('GET', `/api/v1/namespaces/${namespace}/${kind}/${ref.name}`);
    const value = kind === 'secrets' ? secretValue(obj, ref.key) : obj.data?.[ref.key];
    if (value === undefined) throw new Error(`${kind} ${namespace}/${ref.name} has no key ${ref.key}`);
    return value;
  };
  const fields: Record<string, string> = { 'metadata.namespace': namespace, 'metadata.name': `${name}-local` };
  const volumes = await secretVolumes(kube, namespace, pod, container, dir);
  const local = (value: string): string => {
    for (const [mountPath, localDir] of volumes.paths) {
      if (value === mountPath || value.startsWith(`${mountPath}/`)) return localDir + value.slice(mountPath.length);
    }
    return value;
  };
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = local(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = await data('secrets', e.valueFrom.secretKeyRef);
    else if (e.valueFrom?.configMapKeyRef) env[e.name] = await data('configmaps', e.valueFrom.configMapKeyRef);
    else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
    else env[e.name] = '';
  }
  const syncVolumes = volumes.sync && { syncVolumes: volumes.sync };
  if (pod.automountServiceAccountToken === false) return { container, env, ...syncVolumes };
  const credentials = await serviceAccountCredentials(kube, namespace, pod.serviceAccountName ?? 'default', dir);
  return { container, env: { ...env, ...credentials.env }, renewToken: credentials.renewToken, ...syncVolumes };
}

async function main(): Promise<void> {
  const [namespace, box = 'auth'] = process.argv.slice(2);
  if (!namespace || namespace.startsWith('-')) {
    process.stderr.write('usage: node dist/operator/run-box.js <namespace> [box]   (the box of that namespace, default "auth")\n');
    process.exit(2);
  }
  const kube = HttpKube.fromEnvironment();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pod-'));
  const { container, env, renewToken, syncVolumes } = await podOf(kube, namespace, box, dir);
  const renewal =
    renewToken &&
    setInterval(() => {
      renewToken().catch((err: unknown) =>
        process.stderr.write(`run-box: could not renew the ServiceAccount token: ${errorMessage(err)}\n`),
      );
    }, TOKEN_RENEW_MS);
  const volumeSync =
    syncVolumes &&
    setInterval(() => {
      syncVolumes().catch((err: unknown) => process.stderr.write(`run-box: could not update the Secret volumes: ${errorMessage(err)}\n`));
    }, VOLUME_SYNC_MS);
  const stopped = (code: number): void => {
    clearInterval(renewal);
    clearInterval(volumeSync);
    kube.close();
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  };
  let child: ChildProcess | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => (child ? child.kill(signal) : stopped(1)));
  // Pods each have their own ports; boxes run here share the machine's, where the Deployment's metrics
  // port (9464) and gRPC decision port (9001) are make run's: free ones unless asked for (make box
  // METRICS_PORT=… GRPC_PORT=…), and new free ones when another process took one before the box listened.
  const picked = ['METRICS', 'GRPC'].filter((name) => !process.env[`BOXAUTH_${name}_PORT`]);
  const taken = new RegExp(`\\(BOXAUTH_(${picked.join('|') || '-'})_PORT\\) is in use`);
  try {
    child = await onFreePorts(
      2,
      ([metricsPort, grpcPort]) => {
        env.BOXAUTH_METRICS_PORT = process.env.BOXAUTH_METRICS_PORT || String(metricsPort);
        env.BOXAUTH_GRPC_PORT = process.env.BOXAUTH_GRPC_PORT || String(grpcPort);
        const [file, ...args] = [...(container.command ?? []), ...(container.args ?? [])];
        process.stderr.write(
          `run-box: ${namespace}/${box}: ${[file, ...args].join(' ')} (port ${env.BOXAUTH_PORT}, metrics on ${env.BOXAUTH_METRICS_PORT}, ` +
            `gRPC decisions on ${env.BOXAUTH_GRPC_PORT}, ` +
            `base URL ${env.BOXAUTH_BASE_URL}` +
            `${renewToken ? `, ServiceAccount token in ${dir}` : ''})\n`,
        );
        return serving(file!, args, env, (started) => {
          child = started;
        });
      },
      (err) => err instanceof BoxStopped && taken.test(err.output),
    );
  } catch (err) {
    process.stderr.write(`run-box: ${errorMessage(err)}\n`);
    stopped(err instanceof BoxStopped ? err.code : 1);
  }
  child!.on('exit', (code, signal) => stopped(code ?? (signal ? 1 : 0)));
}

/** What a box (api/main.ts) or a host of boxes says once it serves. */
const SERVING = /^boxauth: (box ".*" is serving at|host of \d+ boxes)/m;

/** A box that stopped before it served: what it wrote to stderr, its exit code. */
class BoxStopped extends Error {
  constructor(
    readonly output: string,
    readonly code: number,
  ) {
    super(`the box stopped before it served (exit code ${code})`);
  }
}

/**
 * The box's process, once it says it serves (SERVING); its stderr goes on to ours. BoxStopped when it
 * stops before. `started` learns of the process at once (a signal to run-box stops it).
 */
function serving(file: string, args: string[], env: Record<string, string>, started: (child: ChildProcess) => void): Promise<ChildProcess> {
  // PATH is the one thing the image gives besides the container's env.
  const child = spawn(file, args, {
    cwd: projectPath(),
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['inherit', 'inherit', 'pipe'],
  });
  started(child);
  child.stderr.pipe(process.stderr);
  return new Promise((resolve, reject) => {
    let output = '';
    const read = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (!SERVING.test(output)) return;
      child.stderr.off('data', read);
      child.off('exit', exited);
      resolve(child);
    };
    const exited = (code: number | null): void => reject(new BoxStopped(output, code ?? 1));
    child.stderr.on('data', read);
    child.once('exit', exited);
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`run-box: ${errorMessage(err)}\n`);
    process.exit(1);
  });
}
