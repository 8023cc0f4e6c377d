// Debian's PgBouncer in front of the test PostgreSQL, as a CloudNativePG
// Pooler runs it: one fallback database entry (`*`), so a client's database
// goes to the server as it asked, and the server connections log in as the
// client's user (its password from the auth file: PgBouncer needs it to answer
// the server's SCRAM challenge). On a loopback port of its own, stopped by its pid.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopChild } from './child.js';
import { freePort } from './ports.js';

export const PGBOUNCER = '/usr/sbin/pgbouncer';
/** PgBouncer refuses to run as root: as root, it runs as nobody (its files readable to it). */
const NOBODY = 65534;

export class PgBouncer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** Starts one in front of `target` (a postgres:// URL: its host and port) for these users and passwords. */
  static async start(
    target: string,
    users: Record<string, string>,
    poolMode: 'transaction' | 'session' = 'transaction',
  ): Promise<PgBouncer> {
    if (!fs.existsSync(PGBOUNCER)) throw new Error(`${PGBOUNCER} is missing: apt-get install pgbouncer (make test installs it)`);
    const server = new URL(target);
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pgbouncer-'));
    fs.chmodSync(dir, 0o755);
    const quote = (s: string): string => `"${s.replaceAll('"', '""')}"`;
    fs.writeFileSync(
      path.join(dir, 'users.txt'),
      Object.entries(users)
        .map(([u, p]) => `${quote(u)} ${quote(p)}\n`)
        .join(''),
      { mode: 0o644 },
    );
    const config = [
      '[databases]',
      `* = host=${server.hostname} port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = scram-sha-256',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      `pool_mode = ${poolMode}`,
      'default_pool_size = 2',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), config, { mode: 0o644 });
    const asRoot = process.getuid?.() === 0;
    if (asRoot) fs.chownSync(dir, NOBODY, NOBODY); // its log and socket are written there
    const child = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const bouncer = new PgBouncer(child, dir, port);
    const deadline = Date.now() + 10_000;
    while (!bouncer.log().includes('process up')) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await bouncer.stop();
        throw new Error(`pgbouncer did not start on 127.0.0.1:${port} (exit ${child.exitCode}): ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return bouncer;
  }

  /** `url` (a user of the auth file) through this PgBouncer. */
  through(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  log(): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async stop(): Promise<void> {
    await stopChild(this.child);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
