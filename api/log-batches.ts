// Where the buffered log lines (api/log.ts createRequestLogger) go: gathered, and written to
// stdout together by libuv's threads, off the event loop.
//
// pino's asynchronous destination writes at most 16 KiB at a time, one write a turn of the event
// loop: a worker deciding 7,500 requests a second logs 11 MB/s in turns of a few milliseconds,
// faster than that carries out, and the lines that waited held up to 86 MB of its heap (`make
// bench`, the forward-auth rows). Its synchronous writes kept up, but cost the event loop about
// 100 µs each, and a full pipe put it to sleep for 100 ms. Here each write takes every line that
// waits, so the writes keep up with whatever the pipe takes; and when the pipe takes less than the
// box logs, no more than MAX_WAITING_CHARS wait: what waits is then written at once, holding the
// box back until the pipe has taken it, as the lines written at once do. (That bound holds where a
// full pipe refuses a write, as the box's stdout did in `make bench`, made non-blocking by node; a
// pipe that blocks instead holds the thread, and the lines wait until the reader takes its write.)
import fs from 'node:fs';

/** What waits before a write is started (unless flushed). */
const BATCH_CHARS = 8 * 1024;
/** What may wait while the pipe is full; past it, the lines are written before the box goes on. */
const MAX_WAITING_CHARS = 4 * 1024 * 1024;
/** How long a write the pipe refused (full, non-blocking) waits before it is tried again. */
const RETRY_MS = 1;

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

  constructor(private readonly fd: number) {}

  /** pino's destination: one line, newline included. */
  write(line: string): boolean {
    if (this.closed) return true;
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
   * to finish (its lines are not written twice).
   */
  flushSync(): void {
    if (this.refused) {
      clearTimeout(this.refused.retry);
      const { rest } = this.refused;
      this.refused = undefined;
      this.writing = false;
      this.writeNow(rest);
    }
    if (this.waitingChars > 0) this.writeNow(this.take());
  }

  private take(): Buffer {
    const batch = Buffer.from(this.lines.join(''));
    this.lines = [];
    this.waitingChars = 0;
    return batch;
  }

  private next(): void {
    if (this.closed || this.waitingChars === 0) return;
    if (this.waitingChars >= MAX_WAITING_CHARS) this.writeNow(this.take());
    else this.writeLater(this.take(), 0);
  }

  private writeLater(batch: Buffer, from: number): void {
    this.writing = true;
    fs.write(this.fd, batch, from, batch.length - from, null, (err: WriteError, n: number) => {
      this.writing = false;
      if (err?.code === 'EAGAIN' && this.waitingChars >= MAX_WAITING_CHARS) {
        this.writeNow(batch.subarray(from));
        this.next();
      } else if (err?.code === 'EAGAIN') {
        this.writing = true;
        const retry = setTimeout(() => {
          this.refused = undefined;
          this.writeLater(batch, from);
        }, RETRY_MS);
        this.refused = { rest: batch.subarray(from), retry };
      } else if (err) {
        this.fail(err);
      } else if (from + n < batch.length) {
        this.writeLater(batch, from + n);
      } else if (this.waitingChars >= BATCH_CHARS) {
        this.next();
      }
    });
  }

  private writeNow(batch: Buffer): void {
    for (let from = 0; from < batch.length && !this.closed;) {
      try {
        from += fs.writeSync(this.fd, batch, from);
      } catch (err) {
        if ((err as WriteError)?.code === 'EAGAIN') Atomics.wait(pause, 0, 0, RETRY_MS);
        else this.fail(err as Error);
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
