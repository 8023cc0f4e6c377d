// How a box process ends: on SIGTERM or SIGINT, and on a fault nothing handled.
//
// A fault nothing handled is an exception no code caught or a rejection no code awaited. Every
// known source has its handler (each database connection listens for its errors from the moment
// it connects, api/db/pool.ts; background work catches what it awaits), so one that reaches this
// point is a bug, and after it the process is in a state no one reasoned about: a lock held, a
// counter not given back, a batch never settled. Going on serving from there is not safe, and
// dying on the spot (Node's default) cuts every request in flight and leaves the embedded
// PostgreSQL to a later start. So a fault is logged with its stack and the process stops as
// SIGTERM stops it — no new requests, the ones in flight finish, the database is closed — then
// exits 1, for its supervisor (Kubernetes, or the primary of a box's workers) to start it afresh.
// A fault while already stopping is logged and the stop goes on; a stop that does not end in
// time after a fault is cut short.
import type { Logger } from './log.js';

export type Fault = 'uncaughtException' | 'unhandledRejection';

export interface ShutdownOptions {
  /** After a fault, how long the stop may take before the process exits anyway. */
  faultDeadlineMs: number;
  exit?: (code: number) => void;
  /** Runs `fn` after `ms` without keeping the process alive for it. */
  later?: (fn: () => void, ms: number) => void;
  /** Where signals and faults are heard: the process. */
  events?: Pick<NodeJS.EventEmitter, 'on'>;
}

export class Shutdown {
  private stop: (() => Promise<void>) | undefined;
  private stopping = false;
  private faulted = false;
  private readonly exit: (code: number) => void;
  private readonly later: (fn: () => void, ms: number) => void;
  private readonly events: Pick<NodeJS.EventEmitter, 'on'>;

  constructor(
    private readonly log: Logger,
    private readonly options: ShutdownOptions,
  ) {
    this.exit = options.exit ?? ((code) => process.exit(code));
    this.later = options.later ?? ((fn, ms) => setTimeout(fn, ms).unref());
    this.events = options.events ?? process;
  }

  /** Listens for the faults of this process (from its start: a fault during start-up ends it at once, with its stack). */
  install(): this {
    this.events.on('uncaughtException', (err: unknown) => this.fault('uncaughtException', err));
    this.events.on('unhandledRejection', (reason: unknown) => this.fault('unhandledRejection', reason));
    return this;
  }

  /** What stopping means once the process serves; from then on SIGTERM and SIGINT stop it so. */
  serving(stop: () => Promise<void>): void {
    this.stop = stop;
    this.events.on('SIGTERM', () => this.signal('SIGTERM'));
    this.events.on('SIGINT', () => this.signal('SIGINT'));
  }

  private signal(signal: string): void {
    if (this.stopping) return;
    this.log.info({ signal }, 'stopping: draining requests in flight');
    this.begin();
  }

  private fault(kind: Fault, err: unknown): void {
    this.faulted = true;
    const error = err instanceof Error ? err : new Error(`a rejection with a value that is not an Error: ${String(err)}`);
    if (this.stopping) {
      this.log.fatal({ err: error, fault: kind }, 'a fault nothing handled while stopping; the stop goes on');
      return;
    }
    this.log.fatal({ err: error, fault: kind }, 'a fault nothing handled: stopping, to be started afresh');
    this.later(() => {
      this.log.fatal({ deadlineMs: this.options.faultDeadlineMs }, 'the stop after a fault did not end in time; exiting');
      this.exit(1);
    }, this.options.faultDeadlineMs);
    this.begin();
  }

  private begin(): void {
    this.stopping = true;
    const stop = this.stop ?? (async () => undefined);
    stop().then(
      () => this.exit(this.faulted ? 1 : 0),
      (err: unknown) => {
        this.log.error({ err }, 'stop failed');
        this.exit(1);
      },
    );
  }
}
