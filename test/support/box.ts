// Starts real box API processes (`node dist/api/main.js`, as `make run` does) for
// tests, and talks to them over HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Dispatcher } from 'undici';
import { projectPath } from '../../api/paths.js';
import { createDatabase } from './postgres.js';
import { freePort, onFreePorts } from './ports.js';

export interface BoxOptions {
  /** Database to use; a fresh one is created when absent. `embedded` runs without DATABASE_URL. */
  databaseUrl?: string | 'embedded';
  env?: Record<string, string>;
  dataDir?: string;
  port?: number;
  /** Options for node itself (workers inherit them), e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Serve HTTPS with this certificate; requests trust the CA through `dispatcher` (test/support/tls.ts). */
  tls?: { certFile: string; keyFile: string; dispatcher: Dispatcher };
  /** A clock the test moves forward (`advanceClock`) instead of sleeping: see `faketimeEnv`. */
  movableClock?: boolean;
  /** The host name of its URL (default 127.0.0.1): two boxes a browser visits need two hosts, or their cookies meet. */
  hostname?: string;
  /** The project directory whose `dist/api/main.js` runs, from there: another release's build (scripts/release-build.sh); default this checkout. */
  root?: string;
  /**
   * Where its log goes, as production's collector takes it: stdout and stderr stay pipes, read
   * as they come and appended to this file whole, never split into lines (`logs` stays empty),
   * the file rotated to `<file>.1` every 64 MB.
   * A bench's box logs a line per request: kept in `logs`, the test's process split and kept
   * them at a cost that slowed its reading, and the box then waited on a full pipe.
   */
  logFile?: string;
}

/** Debian's libfaketime (make test installs it), wherever the architecture puts it. */
function libfaketime(): string {
  const lib = fs
    .readdirSync('/usr/lib')
    .map((dir) => path.join('/usr/lib', dir, 'faketime', 'libfaketime.so.1'))
    .find((file) => fs.existsSync(file));
  if (!lib) throw new Error("a movable clock needs Debian's libfaketime: apt-get install libfaketime (make test installs it)");
  return lib;
}

/**
 * The environment that gives a box process a wall clock the test moves: libfaketime
 * reads the offset from `file` at every reading of the time (FAKETIME_NO_CACHE), so
 * an expiry is reached by writing `+N` there rather than by waiting N seconds. The
 * monotonic clock (timers, the event loop) stays real. Only forward: what the box
 * wrote with its clock (expiry times, in PostgreSQL too) stays in the past of it.
 */
function faketimeEnv(file: string): Record<string, string> {
  fs.writeFileSync(file, '+0');
  return { LD_PRELOAD: libfaketime(), FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

/** Where a log file is rotated (to `<file>.1`, the one before dropped), as the kubelet rotates a container's: a bench logs gigabytes. */
const LOG_FILE_BYTES = 64 << 20;

/** `child`'s stdout and stderr, read as they come and appended whole to `file`, rotated past LOG_FILE_BYTES. */
export function collectInto(file: string, child: ChildProcess): void {
  let out = fs.createWriteStream(file, { flags: 'a' });
  let written = 0;
  const take = (chunk: Buffer): void => {
    out.write(chunk);
    written += chunk.length;
    if (written < LOG_FILE_BYTES) return;
    // The old stream's writes still land in the renamed file: its descriptor follows it.
    out.end();
    fs.renameSync(file, `${file}.1`);
    out = fs.createWriteStream(file, { flags: 'a' });
    written = 0;
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  child.once('close', () => out.end());
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Box {
  process: ChildProcess | undefined;
  readonly logs: string[] = [];
  /** How requests reach an HTTPS box (trusting its test CA). */
  dispatcher: Dispatcher | undefined;
  readonly rootSecret: string;
  /** How long its process may take to answer /readyz (an emulated architecture's, runContainer, takes minutes). */
  private readyWithinMs = 60_000;

  private constructor(
    readonly url: string,
    readonly port: number,
    readonly databaseUrl: string | undefined,
    readonly dataDir: string,
    readonly env: Record<string, string>,
    /** The command, run from `root`; the default is what `make run` runs. */
    private readonly command: string[] = [process.execPath, projectPath('dist', 'api', 'main.js')],
    private readonly root: string = projectPath(),
    private readonly logFile?: string,
  ) {
    this.rootSecret = env.BOXAUTH_ROOT_CLIENT_SECRET ?? '';
  }

  /**
   * Runs a container's command from the project root with exactly its
   * environment (plus PATH, which the image would give it), as a kubelet would;
   * `url` is where it will answer (an https one through `dispatcher`). Pods have a
   * network of their own, these processes share the host's: each gets metrics and gRPC ports of its own.
   */
  static async runContainer(
    command: string[],
    env: Record<string, string>,
    url: string,
    dispatcher?: Dispatcher,
    readyWithinMs = 60_000,
  ): Promise<Box> {
    // Again on new metrics and gRPC ports when another process took one first (the box names it;
    // the container's own port is its caller's).
    return onFreePorts(
      2,
      async ([metricsPort, grpcPort]) => {
        const withPorts = { ...env, BOXAUTH_METRICS_PORT: String(metricsPort), BOXAUTH_GRPC_PORT: String(grpcPort) };
        const box = new Box(url, Number(new URL(url).port), env.DATABASE_URL, env.BOXAUTH_DATA_DIR ?? '', withPorts, command);
        box.dispatcher = dispatcher;
        box.readyWithinMs = readyWithinMs;
        await box.launch();
        return box;
      },
      (err) => /\(BOXAUTH_(METRICS|GRPC)_PORT\) is in use/.test(String(err)),
    );
  }

  /**
   * A box this test did not start (a cluster's pods), answering at `url`, reached through `dispatcher`:
   * its requests and its root client, no process.
   */
  static remote(url: string, dispatcher: Dispatcher, rootSecret: string): Box {
    const box = new Box(url, Number(new URL(url).port), undefined, '', { BOXAUTH_ROOT_CLIENT_SECRET: rootSecret });
    box.dispatcher = dispatcher;
    return box;
  }

  static async start(options: BoxOptions = {}): Promise<Box> {
    const databaseUrl = options.databaseUrl === 'embedded' ? undefined : (options.databaseUrl ?? (await createDatabase()));
    const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-test-'));
    const rootSecret = `root-${randomBytes(12).toString('hex')}`;
    // The ports this call picks (not the caller's): another process may take one between freePort
    // and the box's listen (the suite runs beside other work, and boxes start in parallel). The
    // box says which port was taken; this starts it again on new ones.
    const oursPattern = [
      ...(options.port === undefined ? ['PORT'] : []),
      ...(options.env?.BOXAUTH_METRICS_PORT === undefined ? ['METRICS_PORT'] : []),
      ...(options.env?.BOXAUTH_GRPC_PORT === undefined ? ['GRPC_PORT'] : []),
    ];
    const takenPort = new RegExp(`\\(BOXAUTH_(${oursPattern.join('|') || '-'})\\) is in use`);
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await freePort());
      const url = `${options.tls ? 'https' : 'http'}://${options.hostname ?? '127.0.0.1'}:${port}`;
      const env: Record<string, string> = {
        BOXAUTH_PORT: String(port),
        BOXAUTH_METRICS_PORT: String(await freePort()),
        BOXAUTH_GRPC_PORT: String(await freePort()),
        BOXAUTH_HOST: '127.0.0.1',
        BOXAUTH_BASE_URL: url,
        ...(options.tls ? { BOXAUTH_TLS_CERT_FILE: options.tls.certFile, BOXAUTH_TLS_KEY_FILE: options.tls.keyFile } : {}),
        BOXAUTH_DATA_DIR: dataDir,
        BOXAUTH_ROOT_CLIENT_SECRET: rootSecret,
        BOXAUTH_LOG_LEVEL: 'info',
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        ...(options.movableClock ? faketimeEnv(path.join(dataDir, 'clock')) : {}),
        ...options.env,
      };
      const root = options.root ?? projectPath();
      const box = new Box(
        url,
        port,
        databaseUrl,
        dataDir,
        env,
        [process.execPath, ...(options.nodeArgs ?? []), path.join(root, 'dist', 'api', 'main.js')],
        root,
        options.logFile,
      );
      box.dispatcher = options.tls?.dispatcher;
      try {
        await box.launch();
        return box;
      } catch (err) {
        if (attempt === 3 || !takenPort.test(String(err))) throw err;
      }
    }
  }

  private clockOffset = 0;

  /** Moves the box's wall clock forward (a box started with `movableClock`); the test's own clock stays. */
  advanceClock(seconds: number): void {
    const file = this.env.FAKETIME_TIMESTAMP_FILE;
    if (!file) throw new Error('advanceClock needs a box started with { movableClock: true }');
    this.clockOffset += seconds;
    fs.writeFileSync(file, `+${this.clockOffset}`);
  }

  /**
   * Another process of this box, as a second replica is: its database, root credentials, issuer
   * URL and factor key (a cluster's replicas share the operator's Secret; a box refuses to start
   * with another key than the one its TOTP secrets are sealed with), and `env`; `root`: another release's (a rolling update).
   */
  startAnother(env: Record<string, string> = {}, options: Pick<BoxOptions, 'root'> = {}): Promise<Box> {
    const factorKey = this.env.BOXAUTH_FACTOR_KEY ?? fs.readFileSync(path.join(this.dataDir, 'factor-key'), 'utf8').trim();
    return Box.start({
      ...(this.databaseUrl ? { databaseUrl: this.databaseUrl } : {}),
      env: { BOXAUTH_ROOT_CLIENT_SECRET: this.rootSecret, BOXAUTH_BASE_URL: this.url, BOXAUTH_FACTOR_KEY: factorKey, ...env },
      ...options,
    });
  }

  /** (Re)starts the process with the same port, database and environment. */
  async launch(extraEnv: Record<string, string> = {}): Promise<void> {
    const [file, ...args] = this.command;
    const child = spawn(file!, args, {
      cwd: this.root,
      // MALLOC_MMAP_THRESHOLD_ as `make run` and the image set it
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MALLOC_MMAP_THRESHOLD_: '131072', ...this.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.process = child;
    if (this.logFile) {
      collectInto(this.logFile, child);
    } else {
      const collect = (chunk: Buffer): void => {
        this.logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        // tests look at far fewer lines than a long run logs
        if (this.logs.length > 50_000) this.logs.splice(0, this.logs.length - 50_000);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
    }
    const deadline = Date.now() + this.readyWithinMs;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`box exited with ${child.exitCode}:\n${this.lastLines()}`);
      try {
        // Bounded: a listener that takes the connection and never answers (another program on the port) must not hang the start.
        const signal = AbortSignal.timeout(Math.max(1000, deadline - Date.now()));
        const res = await fetch(`${this.url}/readyz`, { dispatcher: this.dispatcher, signal } as RequestInit);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGKILL');
    throw new Error(`box did not become ready:\n${this.lastLines()}`);
  }

  /**
   * Waits until a line of its log holds `text`. A box writes its log in batches a turn after the line
   * (api/log-batches.ts), so a line may reach the test after the answer of the request that logged it.
   */
  async logged(text: string, timeoutMs = 10_000): Promise<void> {
    await eventually(`"${text}" in the log`, async () => this.logs.some((l) => l.includes(text)), timeoutMs);
  }

  /** The end of its log, to say why it did not start. */
  private lastLines(): string {
    const lines =
      this.logFile && fs.existsSync(this.logFile) ? fs.readFileSync(this.logFile, 'utf8').split('\n').filter(Boolean) : this.logs;
    return lines.slice(-20).join('\n');
  }

  /**
   * Its `alg` signing key grows old (BOXAUTH_KEY_ROTATION_DAYS, 30) and the box starts again: it
   * signs with a new key of that algorithm from then on, and still publishes the old one.
   */
  async rotateSigningKey(alg: string): Promise<void> {
    const db = new pg.Client({ connectionString: this.databaseUrl });
    await db.connect();
    try {
      await db.query("UPDATE signing_keys SET created_at = now() - interval '40 days' WHERE alg = $1", [alg]);
    } finally {
      await db.end();
    }
    await this.stop();
    await this.launch();
  }

  /**
   * The `sub` every public client is given of person `userId` on a box of opaque subs (a new box:
   * api/credentials/subjects.ts), which the gate names them by for such a client's tokens.
   */
  async publicSubOf(userId: number | string): Promise<string> {
    const db = new pg.Client({ connectionString: this.databaseUrl });
    await db.connect();
    try {
      return (await db.query<{ subject: string }>('SELECT subject FROM users WHERE id = $1', [userId])).rows[0]!.subject;
    } finally {
      await db.end();
    }
  }

  /** Sends a signal and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    return exited;
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }

  /** The Prometheus exposition of the box (its metrics port). */
  async metrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.env.BOXAUTH_METRICS_PORT}/metrics`)).text();
  }

  /** A client_credentials token of the root client (allowed everything). */
  async rootToken(): Promise<string> {
    const res = await this.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', this.rootSecret) });
    if (res.status !== 200) throw new Error(`root token: ${res.status} ${res.text}`);
    return res.body.access_token as string;
  }

  async request<T = any>(
    method: string,
    urlPath: string,
    init: { headers?: Record<string, string>; body?: string } = {},
  ): Promise<JsonResponse<T>> {
    const res = await fetch(`${this.url}${urlPath}`, {
      method,
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
      dispatcher: this.dispatcher,
    } as RequestInit);
    const text = await res.text();
    let body: any = text;
    if ((res.headers.get('content-type') ?? '').includes('json')) body = text ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, body, text };
  }

  json<T = any>(
    method: string,
    urlPath: string,
    body?: unknown,
    token?: string,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse<T>> {
    return this.request<T>(method, urlPath, {
      headers: {
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  form<T = any>(urlPath: string, params: Record<string, string>, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
    return this.request<T>('POST', urlPath, {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(params).toString(),
    });
  }

  /** Registers a client (and, unless `policy: false`, an allow policy for it) through the API. */
  async addClient(
    id: string,
    client: Record<string, unknown>,
    opts: { policy?: boolean; secret?: string } = {},
  ): Promise<{ id: string; secret: string }> {
    const token = await this.rootToken();
    const secret = opts.secret ?? `secret-${randomBytes(8).toString('hex')}`;
    const res = await this.json('PUT', `/Client/${id}`, { grant_types: ['client_credentials'], secret, ...client }, token);
    if (res.status >= 300) throw new Error(`PUT /Client/${id}: ${res.status} ${res.text}`);
    if (opts.policy !== false) {
      const p = await this.json('PUT', `/AccessPolicy/${id}-allow`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, token);
      if (p.status >= 300) throw new Error(`PUT /AccessPolicy: ${p.status} ${p.text}`);
    }
    return { id, secret };
  }

  /**
   * An App whose people sign in at the box itself (its url the box's own origin, so that /.boxauth/*
   * reaches the box), with `wiki-sso` its first-party sign-in client.
   */
  async addAppAtBox(id = 'wiki'): Promise<void> {
    await this.addClient(
      'wiki-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${this.url}/.boxauth/callback` } },
      },
      { secret: 'wiki-sso-secret', policy: false },
    );
    const app = await this.json(
      'PUT',
      `/App/${id}`,
      { urls: [this.url], audience: 'https://wiki.example', signIn: { client: 'wiki-sso' } },
      await this.rootToken(),
    );
    if (app.status >= 300) throw new Error(`PUT /App/${id}: ${app.status} ${app.text}`);
  }
}

/**
 * A box for the suite this is called in (mocha hooks): started before its tests,
 * stopped after them. `use` gets it and a token of its root client, before any
 * `before` hook the suite registers later runs.
 */
export function boxForSuite(use: (box: Box, root: string) => void, options: BoxOptions = {}): void {
  let box: Box | undefined;
  before(async function () {
    box = await Box.start(options);
    use(box, await box.rootToken());
  });
  after(async function () {
    await box?.stop();
  });
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The value `probe` gives once it is neither undefined nor false (it may throw meanwhile); an error naming `what` after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
