// Resident memory of a process tree (a box primary and its workers), sampled
// from /proc while a scenario runs: the peak of each process.
import fs from 'node:fs';

function children(pid: number): number[] {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

function rssBytes(pid: number): number | undefined {
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
}
