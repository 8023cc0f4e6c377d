// Where the buffered log lines (api/log.ts createRequestLogger) go: gathered, and written to
// stdout together by libuv's threads, off the event loop.
//
// pino's asynchronous destination writes at most 16 KiB at a time, one write a turn of the event
// loop: a worker deciding 7,500 requests a second logs 11 MB/s in turns of a few milliseconds,
// faster than that carries out, and the lines that waited held up to 86 MB of its heap (`make
// bench`, the forward-auth rows). Its synchronous writes kept up, but cost the event loop about
// 100 µs each, and a full pipe put it to sleep for 100 ms. Here each write takes every line that
// waits, so the writes keep up with whatever the pipe takes.
//
// When the pipe takes less than the box logs — a log shipper that stalled, or never reads — at
// most MAX_WAITING_CHARS wait, and the lines past them are dropped and counted: the box never
// waits for its log's reader (issue 81: holding the box until the pipe took the 4 MB, as it did,
// let a stranger's GETs with 14 KB queries stop /healthz answering after 320 requests). Once the
// pipe takes lines again, a line says how many were dropped, and boxauth_log_lines_dropped_total
// counts them all along, so no line is lost without a count of it (an audit line included: the
// audit trail's own record is its table, written in the transaction of what it records). A
// line is lost uncounted only at exit, when the pipe takes nothing for EXIT_WAIT_MS.
import fs from 'node:fs';

/** What waits before a write is started (unless flushed). */
const BATCH_CHARS = 8 * 1024;
/** What may wait while the pipe is full; past it, lines are dropped and counted. */
const MAX_WAITING_CHARS = 4 * 1024 * 1024;
/** How long a write the pipe refused (full, non-blocking) waits before it is tried again: at first, and at most (doubling). */
const RETRY_MS = { first: 1, most: 100 };
/** How long the exit waits for a full pipe to take what waits. */
const EXIT_WAIT_MS = 1000;

/** Lines dropped by every destination of this process (the metric). */
let droppedInProcess = 0;
/** Log lines dropped since the process started because the log's reader took none (boxauth_log_lines_dropped_total). */
export const droppedLogLines = (): number => droppedInProcess;

const pause = new Int32Array(new SharedArrayBuffer(4));

type WriteError = NodeJS.ErrnoException | null | undefined;

export class LogBatches {
  private lines: string[] = [];
  private waitingChars = 0;
  /** A write is with a thread: nothing else may write until it is back (lines would interleave). */
  private writing = false;
  /** A write the pipe refused, waiting for its retry (not with a thread): what of it is still to go. */
  private refused: { rest: Buffer; retry: NodeJS.Timeout } | undefined;
  private closed = false;
  /** How long the next retry of a refused write waits. */
  private retryMs = RETRY_MS.first;
  /** Lines dropped since the pipe last took a write: said in a line once it does. */
  private dropped = 0;

  constructor(private readonly fd: number) {}

  /** pino's destination: one line, newline included. */
  write(line: string): boolean {
    if (this.closed) return true;
    if (this.waitingChars + line.length > MAX_WAITING_CHARS) {
      this.dropped += 1;
      droppedInProcess += 1;
      return true;
    }
    this.lines.push(line);
    this.waitingChars += line.length;
    if (!this.writing && this.waitingChars >= BATCH_CHARS) this.next();
    return true;
  }

  /** Starts writing what waits (the timer's flush). */
  flush(): void {
    if (!this.writing) this.next();
  }

  /**
   * Writes what waits, now (at exit): a write the pipe refused first, then the lines behind it. The
   * exit waits for no callback, so nothing may be left to one: the lines that waited behind a write
   * under way were lost at every exit that came while one was. A write with a thread is the thread's
   * to finish (its lines are not written twice), and may land after the lines written here: at
   * exit, keeping every line comes before keeping their order.
   */
  flushSync(): void {
    const until = performance.now() + EXIT_WAIT_MS;
    if (this.refused) {
      clearTimeout(this.refused.retry);
      const { rest } = this.refused;
      this.refused = undefined;
      this.writing = false;
      this.writeNow(rest, until);
    }
    if (this.waitingChars > 0) this.writeNow(this.take(), until);
  }

  private take(): Buffer {
    const batch = Buffer.from(this.lines.join(''));
    this.lines = [];
    this.waitingChars = 0;
    return batch;
  }

  private next(): void {
    if (this.closed || this.waitingChars === 0) return;
    this.writeLater(this.take(), 0);
  }

  private writeLater(batch: Buffer, from: number): void {
    this.writing = true;
    fs.write(this.fd, batch, from, batch.length - from, null, (err: WriteError, n: number) => {
      this.writing = false;
      if (err?.code === 'EAGAIN') {
        // The pipe is full: tried again later, less often the longer it stays full.
        this.writing = true;
        const retry = setTimeout(() => {
          this.refused = undefined;
          this.writeLater(batch, from);
        }, this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MS.most);
        this.refused = { rest: batch.subarray(from), retry };
        return;
      }
      if (err) return this.fail(err);
      this.retryMs = RETRY_MS.first;
      if (this.dropped > 0) this.sayDropped();
      if (from + n < batch.length) this.writeLater(batch, from + n);
      else if (this.waitingChars >= BATCH_CHARS) this.next();
    });
  }

  /** The line that says how many lines were dropped while the pipe took none, first of what waits. */
  private sayDropped(): void {
    const line = `${JSON.stringify({
      level: 'warn',
      time: new Date().toISOString(),
      pid: process.pid,
      droppedLines: this.dropped,
      msg: "log lines dropped: the log's reader took none while they waited (boxauth_log_lines_dropped_total)",
    })}\n`;
    this.dropped = 0;
    this.lines.unshift(line);
    this.waitingChars += line.length;
  }

  /** Writes `batch` before returning, waiting for a full pipe until `until` (performance.now()); what is left then is lost. */
  private writeNow(batch: Buffer, until: number): void {
    for (let from = 0; from < batch.length && !this.closed;) {
      try {
        from += fs.writeSync(this.fd, batch, from);
      } catch (err) {
        if ((err as WriteError)?.code !== 'EAGAIN') return this.fail(err as Error);
        if (performance.now() > until) return;
        Atomics.wait(pause, 0, 0, RETRY_MS.first);
      }
    }
  }

  /** The log's reader is gone (EPIPE): the lines have nowhere to go, and the box serves on. Anything else is a fault. */
  private fail(err: Error): void {
    this.closed = true;
    this.lines = [];
    this.waitingChars = 0;
    if ((err as WriteError)?.code !== 'EPIPE') throw err;
  }
}
