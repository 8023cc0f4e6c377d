// One box of a host. Prepared once when it appears in the registry (or its
// variables change): migrations, signing key, root client and admin, as a box
// process does at its start. Opened on its first request: its own pools (as its
// own database role), change feed, keyring, caches, metrics and listener — what
// a box process holds (api/server.ts openBox). Closed when it idles, and all of
// that let go: an idle box costs the host its entry and nothing in PostgreSQL.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadConfig, type Config, type Env } from '../config.js';
import { errorMessage } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { openBox, prepareBox, type OpenBox, type OpenOptions } from '../server.js';
import { whenOver } from '../response-over.js';
import { BoxLine } from './box-line.js';
import { Argon2Gate, SecretVerifier } from '../credentials/secrets.js';
import type { RegistryEntry } from './registry.js';

/** Clients whose secret a hosted box remembers across its closes. */
const REMEMBERED_SECRETS = 100;

export type BoxState = 'preparing' | 'ready' | 'failed';

/** What a hosted box needs of its host. */
export interface HostParts {
  log: Logger;
  /** Runs `fn` (the box's preparation) in a place among the boxes being prepared at once. */
  preparing<T>(box: HostedBox, fn: () => Promise<T>): Promise<T>;
  /** Moves the box ahead of the others waiting to be prepared: a request waits for it. */
  hurry(box: HostedBox): void;
  opened(box: HostedBox, ms: number): void;
  closed(box: HostedBox): void;
  refused(box: HostedBox, why: 'line full' | 'not ready'): void;
  lineLimit: number;
  lineQueue: number;
}

export class HostedBox {
  readonly config: Config;
  readonly log: Logger;
  state: BoxState = 'preparing';
  /** Why it is 'failed': for the log and the host's /readyz of the box, never for a stranger. */
  fault: string | undefined;
  private opening: Promise<OpenBox> | undefined;
  private inFlight = 0;
  private lastRequest = 0;
  private readonly line: BoxLine;
  /** Survive its closes (api/server.ts OpenOptions): its argon2 queues, and the secrets they passed (a box's clients, not its load). */
  private argon2: Argon2Gate | undefined;
  private secrets: SecretVerifier | undefined;
  /** Survives its closes too (OpenOptions.databaseHosts): its next open connects where the last one did. */
  private readonly databaseHosts: NonNullable<OpenOptions['databaseHosts']> = new Map();
  /** Settles when it is prepared, or the first time it could not be. */
  readonly whenPrepared: Promise<void>;
  private prepared!: () => void;

  constructor(
    readonly entry: RegistryEntry,
    env: Env,
    private readonly host: HostParts,
  ) {
    this.line = new BoxLine(host.lineLimit, host.lineQueue);
    let config: Config | undefined;
    let fault: unknown;
    try {
      config = loadConfig(env);
      if (!config.databaseUrl) throw new Error('DATABASE_URL is not set: a hosted box needs a database of its own');
    } catch (err) {
      fault = err;
    }
    // Its own lines, at its own level, named by its box, as its dedicated process's are.
    this.log = createLogger(config?.logLevel ?? 'info', { box: entry.box });
    if (fault !== undefined) this.fail(fault);
    this.config = config!;
    this.whenPrepared = new Promise((resolve) => (this.prepared = resolve));
    if (this.state === 'failed') this.prepared();
    else void this.prepare();
  }

  private fail(err: unknown): void {
    this.state = 'failed';
    this.fault = errorMessage(err);
    this.log.error({ why: this.fault }, 'hosted box cannot be served');
  }

  /**
   * Prepares it, as a box process does at its start; a failure (its database down, out of
   * connections) is tried again, 1 s after the first, twice as long after each, at most a minute.
   */
  private async prepare(): Promise<void> {
    for (let waitMs = 1000; !this.retired; waitMs = Math.min(waitMs * 2, 60_000)) {
      try {
        await this.host.preparing(this, () => prepareBox(this.config, this.log));
        this.state = 'ready';
        this.fault = undefined;
        this.prepared();
        return;
      } catch (err) {
        this.fail(err);
        this.prepared(); // requests are answered 503 meanwhile, not held
      }
      await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
    }
  }

  /** Taken out of the registry: no more preparing. */
  private retired = false;

  /** Whether it is open (holds connections and caches). */
  get isOpen(): boolean {
    return this.opening !== undefined;
  }

  /** Serves one request of the box, in its line. */
  serve(req: IncomingMessage, res: ServerResponse): void {
    const place = this.line.enter();
    if (place === 'full') {
      this.host.refused(this, 'line full');
      return busy(res, 'too many requests of this box are waiting');
    }
    this.inFlight++;
    whenOver(res, () => {
      this.inFlight--;
      this.lastRequest = performance.now();
      this.line.leave();
    });
    void (async () => {
      await place;
      if (this.state === 'preparing') this.host.hurry(this);
      await this.whenPrepared;
      if (this.state !== 'ready') {
        this.host.refused(this, 'not ready');
        return busy(res, this.state === 'preparing' ? 'this box is being prepared' : 'this box cannot be served now');
      }
      const open = await this.open();
      open.listener(req, res);
    })().catch((err: unknown) => {
      this.log.error({ err: errorMessage(err) }, 'hosted box could not be opened');
      this.opening = undefined; // the next request tries again
      busy(res, 'this box cannot be served now');
    });
  }

  private open(): Promise<OpenBox> {
    if (!this.opening) {
      const started = performance.now();
      this.argon2 ??= new Argon2Gate({ maxWaiting: this.config.argon2MaxWaiting, signUpMaxWaiting: this.config.signUpMaxWaiting });
      this.secrets ??= new SecretVerifier(this.argon2, REMEMBERED_SECRETS);
      this.opening = openBox(this.config, this.config.databaseUrl!, this.log, {
        draining: () => false,
        hosted: true,
        argon2: this.argon2,
        secrets: this.secrets,
        databaseHosts: this.databaseHosts,
      });
      this.opening.then(
        () => this.host.opened(this, performance.now() - started),
        () => undefined,
      );
    }
    return this.opening;
  }

  /** Closes it when it is open, has no request in flight and had none for `idleMs`. */
  async closeIfIdle(idleMs: number, now = performance.now()): Promise<void> {
    if (!this.opening || this.inFlight > 0 || now - this.lastRequest < idleMs) return;
    await this.close();
  }

  /** Taken out of the registry (or replaced by a changed entry): closed, and never prepared again. */
  async retire(): Promise<void> {
    this.retired = true;
    await this.close();
  }

  /** Lets go of its connections and caches (after the requests in flight, up to `timeoutMs`). */
  async close(timeoutMs = 10_000): Promise<void> {
    const opening = this.opening;
    if (!opening) return;
    this.opening = undefined; // a request from now on opens it afresh
    const deadline = performance.now() + timeoutMs;
    while (this.inFlight > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const open = await opening.catch(() => undefined);
    await open?.close(timeoutMs);
    this.host.closed(this);
  }

  /** The metrics of the box while it is open. */
  async metricsJson(): Promise<unknown[] | undefined> {
    const open = await this.opening?.catch(() => undefined);
    return open?.metrics.registry.getMetricsAsJSON();
  }
}

function busy(res: ServerResponse, why: string): void {
  if (res.headersSent) return void res.destroy();
  res
    .writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1', 'Cache-Control': 'no-store' })
    .end(JSON.stringify({ error: 'temporarily_unavailable', error_description: why }));
}
