// The one-node cluster with real pods of scripts/cluster-up.sh (a kubelet, containerd, kube-proxy and
// CoreDNS inside a network namespace the script makes), for the journeys that only pods show. It has a
// state dir and host port of its own, so a developer's `make cluster-up` cluster is not touched; only
// one such cluster runs on a machine at a time (the kubelet's kubepods cgroups).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { KUBE_BIN, run, type RunResult } from './kube.js';
import { onFreePorts } from './ports.js';

/** The node's address inside the cluster's network namespace (scripts/cluster-lib.sh, BOXAUTH_CLUSTER_NET 10.213). */
export const NODE_IP = '10.213.0.1';
const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

interface ClusterOptions {
  dir: string;
  images: string[];
  binaries?: Record<string, string>;
  authConfig?: string;
  wipe?: boolean;
}

export class PodCluster {
  private postgres?: ChildProcess;

  private constructor(
    readonly dir: string,
    readonly kubeconfig: string,
    /** The scripts' environment for this cluster (BOXAUTH_CLUSTER_DIR, _PORT, _NET), e.g. for scripts/cluster-exec.sh. */
    readonly env: Record<string, string>,
  ) {}

  /**
   * cluster-up.sh from an empty state dir (`wipe`, the default; else with what the last cluster-down
   * left there), importing these OCI archives into containerd; `authConfig`: the API server's
   * AuthenticationConfiguration file (BOXAUTH_CLUSTER_AUTH_CONFIG); `binaries`: image names, each to the static
   * program that is its one file and entrypoint (CLUSTER_BINARY_IMAGES).
   */
  static start(options: ClusterOptions & { port?: number }): Promise<PodCluster> {
    const { port } = options;
    // No port given: a free one, and a new one when another process took it before nsforward listened.
    return port === undefined ? onFreePorts(1, ([free]) => PodCluster.startOn(options, free)) : PodCluster.startOn(options, port);
  }

  private static async startOn(options: ClusterOptions, port: number): Promise<PodCluster> {
    const env = {
      BOXAUTH_CLUSTER_DIR: options.dir,
      BOXAUTH_CLUSTER_PORT: String(port),
      BOXAUTH_CLUSTER_NET: NODE_IP.split('.').slice(0, 2).join('.'),
    };
    if (options.wipe !== false) await run(projectPath('scripts', 'cluster-down.sh'), ['--wipe'], { env, timeoutMs: 120_000 });
    const r = await run(projectPath('scripts', 'cluster-up.sh'), [], {
      env: {
        ...env,
        CLUSTER_IMAGES: options.images.join(' '),
        CLUSTER_BINARY_IMAGES: Object.entries(options.binaries ?? {})
          .map(([name, binary]) => `${name}=${binary}`)
          .join(' '),
        BOXAUTH_CLUSTER_AUTH_CONFIG: options.authConfig ?? '',
      },
      timeoutMs: 60 * 60_000, // the node's binaries are built the first time (scripts/kube-build.sh --node)
    });
    const exported = /^export KUBECONFIG=(.+)$/m.exec(r.stdout);
    if (r.code !== 0 || !exported) throw new Error(`cluster-up.sh failed (${r.code}): ${r.stderr.slice(-4000)}`);
    return new PodCluster(options.dir, exported[1]!, env);
  }

  kubectl(args: string[], input?: string): Promise<RunResult> {
    return run(path.join(KUBE_BIN, 'kubectl'), args, { env: { KUBECONFIG: this.kubeconfig }, input, timeoutMs: 180_000 });
  }

  /** kubectl's stdout; throws with its stderr when it fails. */
  async k(args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  async json<T = any>(args: string[]): Promise<T> {
    return JSON.parse(await this.k([...args, '-o', 'json'])) as T;
  }

  /** A command inside the cluster's network namespace (scripts/cluster-exec.sh), where pod and Service addresses are. */
  exec(args: string[]): Promise<RunResult> {
    return run(projectPath('scripts', 'cluster-exec.sh'), args, { env: this.env });
  }

  /**
   * `target` (an address inside the namespace, e.g. a Service's) published on a free port of the host's
   * loopback by the cluster's nsforward, as cluster-up.sh publishes the API server, until `close`.
   */
  forward(target: string): Promise<{ port: number; close: () => Promise<void> }> {
    return onFreePorts(1, ([port]) => this.forwardOn(target, port));
  }

  private async forwardOn(target: string, port: number): Promise<{ port: number; close: () => Promise<void> }> {
    const child = spawn(path.join(KUBE_BIN, 'nsforward'), [`127.0.0.1:${port}`, path.join(this.dir, 'ns', 'net'), target], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const close = async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    };
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`nsforward exited (${child.exitCode}): ${stderr}`);
      const listening = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.end();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
      if (listening) return { port, close };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await close();
    throw new Error(`nsforward did not listen on 127.0.0.1:${port}: ${stderr}`);
  }

  /**
   * Debian's PostgreSQL 15 inside the namespace, listening on the node's address, which the pods reach
   * (trust authentication: nothing outside the namespace can connect). Returns its superuser URL.
   */
  async startPostgres(): Promise<string> {
    const data = path.join(this.dir, 'postgres');
    fs.rmSync(data, { recursive: true, force: true });
    fs.mkdirSync(data, { mode: 0o700 });
    fs.chownSync(data, postgresUid(), postgresUid('g'));
    const asPostgres = ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups'];
    const init = await run('setpriv', [...asPostgres.slice(1), `${POSTGRES_BIN}/initdb`, '-D', data, '-U', 'postgres', '--auth=trust']);
    if (init.code !== 0) throw new Error(`initdb: ${init.stderr}`);
    fs.appendFileSync(path.join(data, 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n');
    this.postgres = spawn(
      projectPath('scripts', 'cluster-exec.sh'),
      [...asPostgres, `${POSTGRES_BIN}/postgres`, '-D', data, '-c', `listen_addresses=${NODE_IP}`, '-c', `unix_socket_directories=${data}`],
      { env: { ...process.env, ...this.env }, stdio: ['ignore', 'ignore', fs.openSync(path.join(this.dir, 'postgres.log'), 'a')] },
    );
    for (let i = 0; i < 120; i++) {
      const ready = await this.exec([`${POSTGRES_BIN}/pg_isready`, '-h', NODE_IP, '-p', '5432']);
      if (ready.code === 0) return `postgres://postgres@${NODE_IP}:5432/postgres`;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`PostgreSQL did not start: ${fs.readFileSync(path.join(this.dir, 'postgres.log'), 'utf8')}`);
  }

  /** Stops PostgreSQL, then cluster-down.sh (--wipe unless `keepLogs`; with `args` besides). */
  async stop(keepLogs = false, args: string[] = []): Promise<void> {
    if (this.postgres && this.postgres.exitCode === null) {
      const exited = new Promise((resolve) => this.postgres!.once('exit', resolve));
      this.postgres.kill('SIGINT'); // fast shutdown
      await exited;
    }
    const r = await run(projectPath('scripts', 'cluster-down.sh'), [...(keepLogs ? [] : ['--wipe']), ...args], {
      env: this.env,
      timeoutMs: 180_000,
    });
    if (r.code !== 0) throw new Error(`cluster-down.sh failed: ${r.stderr}`);
  }
}

function postgresUid(kind: 'u' | 'g' = 'u'): number {
  const line = fs
    .readFileSync(kind === 'u' ? '/etc/passwd' : '/etc/group', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no user postgres (apt-get install postgresql-15)');
  return Number(line.split(':')[2]);
}
