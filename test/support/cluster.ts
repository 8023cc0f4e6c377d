// A real etcd + kube-apiserver for tests (scripts/kube-up.sh), on free ports in a
// temporary state dir, so it never clashes with a developer's `make kube-up`; started again
// on new ports (and a new dir) when another process took one first.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectPath } from '../../api/paths.js';
import { onFreePorts } from './ports.js';

const run = promisify(execFile);

export class Cluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  get kubeconfig(): string {
    return path.join(this.dir, 'kubeconfig');
  }

  /** The API server's self-signed serving certificate: the CA to trust. */
  get caFile(): string {
    return path.join(this.dir, 'certs', 'apiserver.crt');
  }

  /** `authConfig`: an AuthenticationConfiguration file for kube-apiserver (BOXAUTH_KUBE_AUTH_CONFIG). */
  static start(options: { authConfig?: string } = {}): Promise<Cluster> {
    return onFreePorts(3, async ([port, etcd, peer]) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-kube-'));
      const env = {
        ...process.env,
        BOXAUTH_KUBE_DIR: dir,
        BOXAUTH_KUBE_PORT: String(port),
        BOXAUTH_ETCD_PORT: String(etcd),
        BOXAUTH_ETCD_PEER_PORT: String(peer),
        ...(options.authConfig ? { BOXAUTH_KUBE_AUTH_CONFIG: options.authConfig } : {}),
      };
      const cluster = new Cluster(dir, port, env);
      try {
        await cluster.up();
      } catch (err) {
        await cluster.stop(); // kube-up.sh stops what it started; this removes the dir
        throw err;
      }
      return cluster;
    });
  }

  private async up(...args: string[]): Promise<void> {
    try {
      await run(projectPath('scripts', 'kube-up.sh'), args, { env: this.env, maxBuffer: 16 * 1024 * 1024 });
    } catch (err) {
      throw new Error(`kube-up.sh ${args.join(' ')} failed: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`);
    }
  }

  restartApiserver(): Promise<void> {
    return this.up('--restart-apiserver');
  }

  /** A new service-account signing key; the old public key stays published. */
  rotateSigningKey(): Promise<void> {
    return this.up('--rotate-sa-key');
  }

  async kubectl(...args: string[]): Promise<string> {
    // The kubectl of the cluster's own release when kube-build.sh made one, else the machine's.
    const built = path.join(process.env.BOXAUTH_KUBE_CACHE ?? path.join(os.homedir(), '.cache', 'boxauth', 'kube'), 'bin', 'kubectl');
    const kubectl = fs.existsSync(built) ? built : 'kubectl';
    try {
      const { stdout } = await run(kubectl, ['--kubeconfig', this.kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      throw new Error(`kubectl ${args.join(' ')}: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`);
    }
  }

  /** Applies a manifest given as text. */
  async apply(manifest: string): Promise<void> {
    const file = path.join(this.dir, `manifest-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
    fs.writeFileSync(file, manifest);
    await this.kubectl('apply', '-f', file);
  }

  async stop(): Promise<void> {
    await run(projectPath('scripts', 'kube-down.sh'), ['--wipe'], { env: this.env }).catch(() => undefined);
  }
}
