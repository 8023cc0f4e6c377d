// Debian's PgBouncer (1.18 in bookworm; make test installs it when missing) in front of a
// PostgreSQL of the tests: its own process, on a free loopback port, transaction pooling by
// default (what a CloudNativePG `Pooler` runs), the role of the given URL authenticated with
// scram-sha-256 from an auth_file holding its password (PgBouncer then logs in to PostgreSQL with
// it). As root it runs as user `postgres` (PgBouncer refuses root), like the servers.
//
//   const bouncer = await PgBouncer.start({ server: db.primary.url() });
//   bouncer.url()                   // postgres://boxauth:…@127.0.0.1:<port>/boxauth, through PgBouncer
//   await bouncer.pointTo(db.standby.url())   // after a failover, as CloudNativePG's -rw service follows the primary
//   await bouncer.stop();           // by its pid
//
// Any database name is passed through to the same server (`* =` in [databases]). In transaction
// mode a client holds a server connection only for a transaction: what lives on a server
// connection beyond it does not follow the client. test/integration/replicated-postgres.test.ts
// shows the two a box meets, with PgBouncer 1.18:
// - a named prepared statement (`{ name, text }` in node-postgres) prepared by one client and then
//   by another fails with 42P05 `prepared statement "x" already exists` (or, on another server
//   connection, 26000 `… does not exist`); node-postgres' unnamed statements (parameters) work;
// - LISTEN is accepted, but the server connection that ran it goes back to the pool: a NOTIFY
//   arriving while it is idle is dropped (PgBouncer logs "got packet 'A' from server when not
//   linked"), and one arriving while another client holds it is handed to that client.
// So the box's change feed connects to PostgreSQL directly.
// With the server gone, a query on a connection already open waits up to query_wait_timeout (120 s
// unless `settings` says otherwise) and then fails with 08P01 `query_wait_timeout`; a new connection
// is refused at once ("server login has been failing, try again later (server_login_retry)").
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { postgresUserIds } from '../../api/db/embedded.js';
import { eventually } from './box.js';
import { stopChild } from './child.js';
import { onFreePorts } from './ports.js';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** The PostgreSQL behind it, as a single-host URL: its role and password are the ones clients use. */
  server: string;
  /** transaction (the default), session or statement. */
  poolMode?: 'transaction' | 'session' | 'statement';
  /** Server connections per database and role (default_pool_size; 20 unless told). */
  poolSize?: number;
  /** More of PgBouncer's settings, [pgbouncer] section (query_wait_timeout, server_reset_query…). */
  settings?: Record<string, string | number>;
}

type Settings = Required<Omit<PgBouncerOptions, 'server'>>;

interface Target {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

function target(url: string): Target {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)),
  };
}

const quoted = (value: string): string => `"${value.replaceAll('"', '""')}"`;

export class PgBouncer {
  private readonly logs: string[] = [];
  private stopped = false;
  /** Should the test process exit without stop(), PgBouncer and its files go with it. */
  private readonly onExit = (): void => {
    this.child.kill('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  };

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly settings: Settings,
    private server: Target,
    private readonly child: ChildProcess,
  ) {
    const collect = (chunk: Buffer): void => {
      this.logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (this.logs.length > 2000) this.logs.splice(0, this.logs.length - 1000); // a long bench logs every connection
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    process.on('exit', this.onExit);
  }

  /** On a free port: again on a new one when another process took it first ("Address already in use"). */
  static start(options: PgBouncerOptions): Promise<PgBouncer> {
    if (!fs.existsSync(PGBOUNCER)) return Promise.reject(new Error(`${PGBOUNCER} not found: install Debian's pgbouncer (make test does)`));
    return onFreePorts(1, ([port]) => PgBouncer.startOn(options, port));
  }

  private static async startOn(options: PgBouncerOptions, port: number): Promise<PgBouncer> {
    const ids = await postgresUserIds();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pgbouncer-'));
    if (ids) fs.chownSync(dir, ids.uid, ids.gid);
    const settings: Settings = {
      poolMode: options.poolMode ?? 'transaction',
      poolSize: options.poolSize ?? 20,
      settings: options.settings ?? {},
    };
    const server = target(options.server);
    const config = path.join(dir, 'pgbouncer.ini');
    fs.writeFileSync(path.join(dir, 'userlist.txt'), `${quoted(server.user)} ${quoted(server.password)}\n`, { mode: 0o600 });
    fs.writeFileSync(config, PgBouncer.config(dir, port, settings, server), { mode: 0o600 });
    if (ids) for (const file of ['userlist.txt', 'pgbouncer.ini']) fs.chownSync(path.join(dir, file), ids.uid, ids.gid);
    // In the foreground: this child is PgBouncer itself, stopped by its pid; it logs to stderr.
    const child = spawn(PGBOUNCER, [config], { ...(ids ?? {}), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const bouncer = new PgBouncer(port, dir, settings, server, child);
    try {
      const ready = await eventually(
        'pgbouncer answering',
        async () => (child.exitCode !== null ? 'exited' : (await bouncer.admin('SHOW VERSION')).length > 0 && 'ready'),
        20_000,
        50,
      );
      if (ready === 'exited') throw new Error(`pgbouncer exited with ${child.exitCode}`);
    } catch (err) {
      await bouncer.stop();
      throw new Error(`${(err as Error).message}\n${bouncer.logTail()}`, { cause: err });
    }
    return bouncer;
  }

  private static config(dir: string, port: number, settings: Settings, server: Target): string {
    return `[databases]
* = host=${server.host} port=${server.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
pidfile =
logfile =
auth_type = scram-sha-256
auth_file = ${path.join(dir, 'userlist.txt')}
admin_users = ${server.user}
pool_mode = ${settings.poolMode}
default_pool_size = ${settings.poolSize}
max_client_conn = 500
; a server that went away (a failover) is given up quickly rather than after the defaults' 15 s
server_connect_timeout = 3
server_login_retry = 1
${Object.entries(settings.settings)
  .map(([name, value]) => `${name} = ${value}\n`)
  .join('')}`;
  }

  /** postgres://<role>:…@127.0.0.1:<port>/<database>: through PgBouncer (the server URL's database unless told). */
  url(database = this.server.database): string {
    return `postgres://${encodeURIComponent(this.server.user)}:${encodeURIComponent(this.server.password)}@127.0.0.1:${this.port}/${database}`;
  }

  /** Sends PgBouncer to another server (a single-host URL of the same role): rewritten and reloaded (SIGHUP). */
  async pointTo(serverUrl: string): Promise<void> {
    const next = target(serverUrl);
    if (next.user !== this.server.user || next.password !== this.server.password) throw new Error('pointTo keeps the role of start()');
    this.server = next;
    fs.writeFileSync(path.join(this.dir, 'pgbouncer.ini'), PgBouncer.config(this.dir, this.port, this.settings, next));
    this.child.kill('SIGHUP');
    const wanted = String(next.port);
    await eventually(
      `pgbouncer pointing to port ${wanted}`,
      async () => (await this.admin('SHOW DATABASES')).some((row) => row.name === this.server.database && String(row.port) === wanted),
      10_000,
      50,
    );
  }

  /** A command of PgBouncer's admin console (SHOW POOLS, SHOW SERVERS…): its rows. */
  async admin(command: string): Promise<Record<string, unknown>[]> {
    // The console takes only the simple query protocol: what node-postgres sends for a query without parameters.
    const client = new pg.Client({ connectionString: this.url('pgbouncer'), connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(command)).rows as Record<string, unknown>[];
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  logTail(lines = 30): string {
    return this.logs.slice(-lines).join('\n');
  }

  /** Stops it by its pid (SIGTERM, SIGKILL after 5 s) and removes its files; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    process.off('exit', this.onExit);
    await stopChild(this.child);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
