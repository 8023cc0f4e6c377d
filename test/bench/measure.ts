// One measurement of `make bench` and `make bench-peers`: wrk's warm-up, then
// the measured load, while the target's process tree and PostgreSQL are
// metered (CPU time, peak RSS). Both commands take the load's shape from here,
// so their figures compare.
import os from 'node:os';
import { drive, type BenchRequest, type LoadResult } from './load.js';
import { CpuMeter, RssSampler } from './process-stats.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

export const LOAD = {
  workers: env('BENCH_WORKERS', os.availableParallelism()),
  connections: env('BENCH_CONNECTIONS', 32),
  seconds: env('BENCH_SECONDS', 10),
  warmupSeconds: env('BENCH_WARMUP_SECONDS', 3),
  threads: 2,
};

export interface Measured extends LoadResult {
  /** The highest RSS of any one process of the target, MB. */
  rssMb: number;
  /** CPU time per request, µs: the target's processes (`api`) and PostgreSQL's. */
  cpuUs: { api: number; postgres: number };
  /** Requests of the warm-up (which the measured figures leave out). */
  warmupRequests: number;
}

/** `rootPid`: the target's process (its children count too); `postgresPid`: see CpuMeter. */
export async function measure(url: string, rootPid: number, requests: BenchRequest[], postgresPid?: number): Promise<Measured> {
  const load = { connections: LOAD.connections, threads: LOAD.threads };
  const warmup = LOAD.warmupSeconds > 0 ? await drive(url, requests, { ...load, seconds: LOAD.warmupSeconds }) : undefined;
  const rss = new RssSampler(rootPid);
  const cpu = new CpuMeter(rootPid, postgresPid);
  rss.start();
  cpu.start();
  const result = await drive(url, requests, { ...load, seconds: LOAD.seconds });
  const used = cpu.stop();
  const rssMb = rss.stop();
  const cpuUs = { api: (used.api * 1e6) / result.requests, postgres: (used.postgres * 1e6) / result.requests };
  return { ...result, rssMb, cpuUs, warmupRequests: warmup?.requests ?? 0 };
}
