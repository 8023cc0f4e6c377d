// A real Kubernetes control plane for tests: etcd + kube-apiserver started by
// scripts/kube-up.sh in a state dir and on ports of their own (so a developer's
// `make kube-up` is left alone), driven with the real kubectl and helm built by
// scripts/kube-build.sh (on first use; cached in ~/.cache/boxauth/kube).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { KubeConfig } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';
import { errorMessage } from '../../api/errors.js';
import { HttpKube } from '../../operator/kube.js';
import { podOf, VOLUME_SYNC_MS, type Pod } from '../../operator/run-box.js';
import { Box, eventually } from './box.js';
import { Cluster } from './cluster.js';
import { onFreePorts } from './ports.js';

export { eventually };

const CACHE = process.env.BOXAUTH_KUBE_CACHE ?? path.join(os.homedir(), '.cache', 'boxauth', 'kube');
export const KUBE_BIN = path.join(CACHE, 'bin');
/** kstatus and promtool, built by scripts/test-tools-build.sh (make test-tools). */
export const TOOLS_BIN = path.join(process.env.BOXAUTH_TOOLS_CACHE ?? path.join(os.homedir(), '.cache', 'boxauth', 'tools'), 'bin');

/**
 * The Client kubectl signs in as (docs/guides/kubectl-sign-in.md): the code flow back to 127.0.0.1 on any
 * port and the device flow, with refresh tokens, and the email and groups in the ID token, which is all
 * kube-apiserver reads. A REST body, and with generateSecret: false a Client resource's spec.
 */
export const KUBECTL_CLIENT = {
  grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
  description: 'kubectl on your machine',
  scope: ['openid', 'email', 'groups'],
  claims_in_id_token: true,
  auth: {
    authorization_code: { redirect_uri: 'http://127.0.0.1/callback', refresh_token: true, id_token_expiration: 600 },
    device_code: { refresh_token: true, id_token_expiration: 600 },
  },
};

/**
 * The environment that gives a node process (the operator, a box pod) cluster DNS on this machine: every
 * Service name resolves to 127.0.0.1 (test/support/cluster-dns.ts, preloaded).
 */
export function clusterDnsEnv(): Record<string, string> {
  return { NODE_OPTIONS: `--import=${projectPath('dist', 'test', 'support', 'cluster-dns.js')}` };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(
  file: string,
  args: string[],
  opts: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      {
        env: { ...process.env, ...opts.env },
        cwd: projectPath(),
        maxBuffer: 64 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 120_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
        if (err && code === -1) return reject(new Error(err.message, { cause: err }));
        resolve({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/**
 * The cluster of test/support/cluster.ts (etcd + kube-apiserver by
 * scripts/kube-up.sh on free ports, in a temporary state dir), with what the
 * operator's tests add: kubectl with stdin and exit codes, helm, Secrets,
 * ServiceAccount kubeconfigs, and Deployments run as a kubelet would.
 */
export class TestCluster {
  private constructor(private readonly cluster: Cluster) {}

  /** Starts one; kube-up.sh builds the binaries first when they are not cached (several minutes, once). */
  static async start(options: Parameters<typeof Cluster.start>[0] = {}): Promise<TestCluster> {
    return new TestCluster(await Cluster.start(options));
  }

  /** The API server's address. */
  get url(): string {
    return this.cluster.url;
  }

  get dir(): string {
    return this.cluster.dir;
  }

  get kubeconfig(): string {
    return this.cluster.kubeconfig;
  }

  /** kube-apiserver down and up again with the same flags (etcd keeps running). */
  restartApiserver(): Promise<void> {
    return this.cluster.restartApiserver();
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }

  kubectl(args: string[], input?: string, kubeconfig = this.kubeconfig): Promise<RunResult> {
    return run(path.join(KUBE_BIN, 'kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], { input });
  }

  /** kubectl that must succeed; its stdout. */
  async k(args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  }

  async json<T = any>(args: string[]): Promise<T> {
    return JSON.parse(await this.k([...args, '-o', 'json'])) as T;
  }

  async secretValue(namespace: string, name: string, key: string): Promise<string> {
    const secret = await this.json<{ data: Record<string, string> }>(['get', 'secret', '-n', namespace, name]);
    const raw = secret.data[key];
    if (raw === undefined) throw new Error(`Secret ${namespace}/${name} has no key ${key}`);
    return Buffer.from(raw, 'base64').toString('utf8');
  }

  helm(args: string[]): Promise<RunResult> {
    return run(path.join(KUBE_BIN, 'helm'), args, { env: { KUBECONFIG: this.kubeconfig } });
  }

  /** A kubeconfig for a ServiceAccount, with a token from `kubectl create token` (the TokenRequest API). */
  async serviceAccountKubeconfig(namespace: string, serviceAccount: string): Promise<string> {
    const token = (await this.k(['create', 'token', serviceAccount, '-n', namespace, '--duration=4h'])).trim();
    const admin = fs.readFileSync(this.kubeconfig, 'utf8');
    const ca = /certificate-authority-data: (\S+)/.exec(admin)?.[1];
    const file = path.join(this.dir, `${serviceAccount}.kubeconfig`);
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: test`,
        `  cluster:`,
        `    server: ${this.cluster.url}`,
        ca ? `    certificate-authority-data: ${ca}` : '    insecure-skip-tls-verify: true',
        'users:',
        `- name: ${serviceAccount}`,
        '  user:',
        `    token: ${token}`,
        'contexts:',
        '- name: test',
        '  context:',
        '    cluster: test',
        `    user: ${serviceAccount}`,
        `    namespace: ${namespace}`,
        'current-context: test',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    return file;
  }

  /** A client of the API server with the admin credentials (for reads that need no kubectl). */
  adminKube(): HttpKube {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    return new HttpKube(kc);
  }

  /**
   * Starts the first container of a Deployment as a kubelet would (see
   * operator/run-box.ts, which developers use for the same): its command from
   * the project root, its env resolved from the API server, its
   * ServiceAccount's token, the CA and the API server's URL, its Secret
   * volumes (kept up to date while it runs). Answers at 127.0.0.1 on the
   * container port, over HTTPS when its probes use it (through `dispatcher`,
   * which trusts its CA), with `env` besides what the pod has (e.g. clusterDnsEnv()), on `port` instead of the
   * container's when given. (Tests end long before the token.)
   */
  async runDeployment(
    namespace: string,
    name: string,
    { dispatcher, env: extraEnv = {}, port }: { dispatcher?: Dispatcher; env?: Record<string, string>; port?: number } = {},
  ): Promise<{ box: Box; env: Record<string, string> }> {
    const kube = this.adminKube();
    let pod: Pod;
    let box: Box;
    try {
      pod = await podOf(kube, namespace, name, fs.mkdtempSync(path.join(this.dir, `pod-${namespace}-${name}-`)));
      const { container, env } = pod;
      const command = [...(container.command ?? []), ...(container.args ?? [])];
      const scheme = container.readinessProbe?.httpGet?.scheme === 'HTTPS' ? 'https' : 'http';
      // Pods each have their own ports; here `port` stands in for the container's, which another process may hold.
      const ports: Record<string, string> = port === undefined ? {} : { BOXAUTH_PORT: String(port), BOXAUTH_HOST: '127.0.0.1' };
      box = await Box.runContainer(
        command,
        { ...env, ...extraEnv, ...ports },
        `${scheme}://127.0.0.1:${port ?? container.ports![0]!.containerPort}`,
        dispatcher,
      );
    } catch (err) {
      kube.close();
      throw err;
    }
    const { syncVolumes } = pod;
    const sync =
      syncVolumes &&
      setInterval(() => {
        syncVolumes().catch((err: unknown) => box.logs.push(`runDeployment: could not update the Secret volumes: ${errorMessage(err)}`));
      }, VOLUME_SYNC_MS);
    box.process!.once('exit', () => {
      clearInterval(sync);
      kube.close();
    });
    return { box, env: pod.env };
  }
}

/** The operator as a real process (node dist/operator/main.js), its JSON log lines kept. */
export class OperatorProcess {
  readonly logs: any[] = [];
  exited: Promise<number | null>;

  private constructor(
    readonly child: ChildProcess,
    readonly healthPort: number,
  ) {
    const collect = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        try {
          this.logs.push(JSON.parse(line));
        } catch {
          this.logs.push({ msg: line });
        }
      }
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** On a free health port: again on a new one when another process took it before the operator listened. */
  static start(kubeconfig: string, env: Record<string, string>): Promise<OperatorProcess> {
    return onFreePorts(1, ([healthPort]) => OperatorProcess.startOn(kubeconfig, env, healthPort));
  }

  private static async startOn(kubeconfig: string, env: Record<string, string>, healthPort: number): Promise<OperatorProcess> {
    const child = spawn(process.execPath, [projectPath('dist', 'operator', 'main.js')], {
      cwd: projectPath(),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        KUBECONFIG: kubeconfig,
        ...env,
        BOXAUTH_OPERATOR_HEALTH_PORT: String(healthPort),
        BOXAUTH_OPERATOR_HEALTH_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const op = new OperatorProcess(child, healthPort);
    const lastLogs = (): string =>
      op.logs
        .slice(-10)
        .map((l) => JSON.stringify(l))
        .join('\n');
    const ready = await eventually(
      "the operator's /healthz",
      async () => (child.exitCode !== null ? 'exited' : (await fetch(`http://127.0.0.1:${healthPort}/healthz`)).ok && 'ready'),
      30_000,
    ).catch((err: Error) => {
      child.kill('SIGKILL');
      throw new Error(`${err.message}\n${lastLogs()}`);
    });
    if (ready === 'exited') throw new Error(`operator exited with ${child.exitCode}:\n${lastLogs()}`);
    return op;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${this.healthPort}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  }

  hasLogged(msg: string): boolean {
    return this.logs.some((l) => l.msg === msg);
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }
}
