// Resident memory of a process tree (a box primary and its workers), sampled
// from /proc while a scenario runs: the peak of each process.
import fs from 'node:fs';

/** The direct children of `pid` (its workers). */
export function children(pid: number): number[] {
  try {
    return fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export class RssSampler {
  private peaks = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly rootPid: number) {}

  start(intervalMs = 100): void {
    this.peaks.clear();
    const sample = (): void => {
      for (const pid of [this.rootPid, ...children(this.rootPid)]) {
        const rss = rssBytes(pid);
        if (rss !== undefined) this.peaks.set(pid, Math.max(this.peaks.get(pid) ?? 0, rss));
      }
    };
    sample();
    this.timer = setInterval(sample, intervalMs);
  }

  /** Stops sampling; returns the highest peak of any one process, in MB. */
  stop(): number {
    clearInterval(this.timer);
    return Math.max(0, ...this.peaks.values()) / (1024 * 1024);
  }

  /** The peaks of all the tree's processes added up, in MB: what a box of several workers holds, to set beside a one-process peer. */
  totalMb(): number {
    return [...this.peaks.values()].reduce((a, b) => a + b, 0) / (1024 * 1024);
  }
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function postgresPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

export interface CpuUse {
  /** CPU seconds of the measured process tree (a box's primary and workers, a peer) and of PostgreSQL's. */
  api: number;
  postgres: number;
}

/** CPU time used by the box and its database between start() and stop(). */
export class CpuMeter {
  private before = new Map<number, number>();

  /**
   * `postgresPid`: the postmaster of the bench's own server, whose backends are
   * its children; without it every PostgreSQL on the machine counts (other
   * servers' work too, on a machine shared with tests).
   */
  constructor(
    private readonly rootPid: number,
    private readonly postgresPid?: number,
  ) {}

  private snapshot(): { api: Map<number, number>; postgres: Map<number, number> } {
    const read = (pids: number[]): Map<number, number> => new Map(pids.map((pid) => [pid, cpuSeconds(pid)]));
    const postgres = this.postgresPid === undefined ? postgresPids() : [this.postgresPid, ...children(this.postgresPid)];
    return { api: read([this.rootPid, ...children(this.rootPid)]), postgres: read(postgres) };
  }

  start(): void {
    const s = this.snapshot();
    this.before = new Map([...s.api, ...s.postgres]);
  }

  stop(): CpuUse {
    const s = this.snapshot();
    const used = (m: Map<number, number>): number => [...m].reduce((sum, [pid, t]) => sum + t - (this.before.get(pid) ?? 0), 0);
    return { api: used(s.api), postgres: used(s.postgres) };
  }
}
