// The pool's connections: node-postgres' Client, connected to the host the locator
// names (./locator.ts), and held to two promises a request relies on.
//
// No statement waits more than a few seconds. A statement still running after
// statementTimeoutMs is canceled (PostgreSQL's CancelRequest, on a connection of its own,
// as libpq's PQcancel sends it); one still running a second later has its connection cut.
// Either way the request gets an error, answered 503, instead of a hang: a server that
// went silent, a lock held by a stuck transaction, a COMMIT waiting for a synchronous
// standby that is gone.
//
// A commit that is not known to be durable is never a success. PostgreSQL answers a COMMIT
// whose wait for the synchronous standby was canceled (by us, by statement_timeout, by an
// administrator) with success and a WARNING: "canceling wait for synchronous replication
// … The transaction has already committed locally, but might not have been replicated to
// the standby." A failover would lose it. So a statement during which that warning came
// fails with CommitUnconfirmed (503), though PostgreSQL said it succeeded.
import net from 'node:net';
import pg from 'pg';
import { spansMadeNow, statementSpan } from '../tracing.js';
import { cut, DatabaseUnreachable, unreachable, type HostLocator, type Located } from './locator.js';
import { statementText, summarizeStatement, type StatementSummary } from './statement-summary.js';

/** A COMMIT returned without its synchronous standby's confirmation: it may be lost by a failover. */
export class CommitUnconfirmed extends Error {}

/** How long after its cancel a statement that still runs has its connection cut. */
const CUT_AFTER_CANCEL_MS = 1000;

/** PostgreSQL's warning for a synchronous replication wait cut short (src/backend/replication/syncrep.c). */
export function isUnconfirmedCommit(notice: { message?: string; detail?: string }): boolean {
  return (
    /^canceling (the )?wait for synchronous replication/.test(notice.message ?? '') ||
    /might not have been replicated to the standby/.test(notice.detail ?? '')
  );
}

/** PostgreSQL's CancelRequest (protocol 3.0, 53.2.7): the statement running on connection `pid` stops. */
function sendCancel(located: Located, pid: number, secretKey: number, timeoutMs: number): void {
  const { host, port } = located.host;
  const socket = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host || 'localhost');
  socket.setTimeout(timeoutMs, () => socket.destroy());
  socket.on('error', () => undefined); // a server that cannot be reached to cancel is cut instead
  socket.on('connect', () => {
    const request = Buffer.alloc(16);
    request.writeInt32BE(16, 0);
    request.writeInt32BE(80877102, 4);
    request.writeInt32BE(pid, 8);
    request.writeInt32BE(secretKey, 12);
    socket.end(request);
  });
}

export interface LocatedClientOptions {
  /** 0: no deadline (migrations, the operator's provisioning). */
  statementTimeoutMs: number;
  /**
   * Whether statements the store names (`{ name, text }`: parsed once per connection) keep their names.
   * Not through a transaction pooler: PgBouncer before 1.21 (and later ones without max_prepared_statements)
   * sends each transaction to any server connection, where a statement prepared on another is unknown.
   */
  namedStatements: boolean;
  /** Connections shared with other pools (./pool.ts ConnectionBudget): a new one waits for a slot. */
  budget?: ConnectionBudget;
}

/**
 * At most `max` connections open at once across every pool given the budget (the operator's, one
 * pool per box: a thousand boxes looked at in turn must not open more connections than the
 * server allows). A connection that would be one more waits until another closes.
 */
export class ConnectionBudget {
  private taken = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  /** Connections open (or opening) now. */
  get open(): number {
    return this.taken;
  }

  /** Connections waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** A slot, once one is free; the function returned gives it back (again: nothing). */
  async take(): Promise<() => void> {
    if (this.taken < this.max) this.taken++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve)); // handed over with its count
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.taken--;
    };
  }
}

type QueryCallback = (err: Error | undefined, result?: unknown) => void;

/** The Client class a pg.Pool makes its connections with (pg.PoolConfig's `Client`). */
export function locatedClientClass(locator: HostLocator, options: LocatedClientOptions): typeof pg.Client {
  return class LocatedClient extends pg.Client {
    private located: Located | undefined;
    /** Warnings of unconfirmed commits so far on this connection. */
    private unconfirmed = 0;

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.on('notice', (notice) => {
        if (isUnconfirmedCommit(notice)) this.unconfirmed++;
      });
      // From the first moment: a connection that breaks before the pool listens (while it is checked,
      // below) emits 'error', and an 'error' nobody hears ends the process. It is heard by the
      // statement it breaks; here it only makes the locator look at the host.
      this.on('error', () => {
        if (this.located) locator.suspect(this.located);
      });
    }

    // pg-pool calls connect(callback); our own code awaits connect().
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
      const connecting = this.connectToLocated();
      if (!callback) return connecting;
      const done = callback as (err: Error | null, c?: pg.Client) => void;
      connecting.then(
        (client) => done(null, client),
        (err: Error) => done(err),
      );
      return undefined;
    }

    private async connectToLocated(): Promise<pg.Client> {
      const giveBack = await options.budget?.take();
      try {
        await this.connectInBudget();
      } catch (err) {
        giveBack?.();
        throw err;
      }
      if (giveBack) this.once('end', giveBack);
      return this;
    }

    private async connectInBudget(): Promise<void> {
      const located = await locator.find();
      if (located.host.host !== '') {
        this.host = located.host.host;
        this.port = located.host.port;
      }
      try {
        await super.connect();
      } catch (err) {
        locator.suspect(located);
        throw unreachable(located, err);
      }
      // Held (cut if the host is given up) and under the statement deadline from here, the check included.
      this.located = located;
      locator.hold(this, located);
      try {
        await locator.verify(this, located);
      } catch (err) {
        this.end().catch(() => undefined);
        throw err instanceof DatabaseUnreachable ? err : unreachable(located, err);
      }
    }

    // One wrapper for node-postgres' every form of query() (promise, callback, submittable): the
    // deadline, the check for an unconfirmed commit once the statement is over, and with traces on
    // the statement's span (any: pg.Client.query is a dozen overloads, passed through as they are).
    override query(...args: any[]): any {
      if (!options.namedStatements && typeof args[0] === 'object' && args[0] !== null && 'name' in args[0]) {
        const { name: _parsedOnce, ...unnamed } = args[0] as { name?: string };
        args[0] = unnamed;
      }
      const settle = this.watchStatement(spansMadeNow() ? summarizeStatement(statementText(args[0])) : undefined);
      const last: unknown = args[args.length - 1];
      if (typeof last === 'function') {
        const callback = last as QueryCallback;
        args[args.length - 1] = (err: Error | undefined, result: unknown) => {
          const failure = settle(err);
          if (failure) callback(failure);
          else callback(undefined, result);
        };
        return super.query(...(args as Parameters<pg.Client['query']>));
      }
      const result: unknown = super.query(...(args as Parameters<pg.Client['query']>));
      if (!(result instanceof Promise)) {
        settle(undefined); // a submittable (a cursor) keeps its own time
        return result;
      }
      return result.then(
        (value: unknown) => {
          const failure = settle(undefined);
          if (failure) throw failure;
          return value;
        },
        (err: Error) => {
          throw settle(err) ?? err;
        },
      );
    }

    /**
     * Starts the statement's deadline; the function returned ends it and says how the statement
     * ended: its own error, CommitUnconfirmed, or undefined for a success.
     */
    private watchStatement(summary: StatementSummary | undefined): (err: Error | undefined) => Error | undefined {
      const traced = summary && statementSpan(summary);
      const before = this.unconfirmed;
      const located = this.located;
      let cutTimer: NodeJS.Timeout | undefined;
      const deadline =
        located && options.statementTimeoutMs > 0
          ? setTimeout(() => {
              // Set by node-postgres from BackendKeyData; not in its typings.
              const { processID, secretKey } = this as unknown as { processID: number | null; secretKey: number | null };
              if (processID !== null && secretKey !== null) sendCancel(located, processID, secretKey, CUT_AFTER_CANCEL_MS);
              cutTimer = setTimeout(() => cut(this), CUT_AFTER_CANCEL_MS).unref();
            }, options.statementTimeoutMs).unref()
          : undefined;
      return (err) => {
        clearTimeout(deadline);
        clearTimeout(cutTimer);
        // A write refused as read-only: the server is no longer what we want (a standby, or fenced).
        if (located && (err as { code?: unknown } | undefined)?.code === '25006') locator.suspect(located);
        if (!err) locator.answered();
        const failure =
          err || this.unconfirmed === before
            ? err
            : new CommitUnconfirmed(
                'PostgreSQL committed without the confirmation of its synchronous standby (the wait was canceled): the write may not survive a failover',
              );
        traced?.end(failure);
        return failure;
      };
    }
  };
}
