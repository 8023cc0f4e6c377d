// The decision rows at a fixed rate (`make bench`, decision-bench.ts): a door, or its bare
// ceiling, sent BENCH_DECISION_RATE requests a second on a fixed schedule by test/extauthz
// (`load -rate` over gRPC, `http -rate` over HTTP: wrk has no fixed rate), each latency counted
// from when its request was due, so that a server falling behind shows it. Where the machine
// has cores to spare, the load generator runs pinned apart from the server (taskset): on
// BENCH_LOAD_CPUS, by default the last core of a machine of 4 or more; the server's processes
// on the others while they are measured. A 2-core machine has no core to spare: pinned apart,
// the server would have half the machine; so there both share both cores unless BENCH_LOAD_CPUS
// says otherwise (BENCH_LOAD_CPUS=1: one core each).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { driveGrpc, driveHttp } from './grpc-load.js';
import type { BenchRequest, LoadResult } from './load.js';
import { LOAD, type Measured } from './measure.js';
import { children, CpuMeter, RssSampler } from './process-stats.js';

const CORES = os.availableParallelism();

/** The CPUs of the load generator, and of the server, as taskset names them; undefined: not pinned. */
export const PINNING: { load: string; server: string } | undefined = ((): { load: string; server: string } | undefined => {
  const load = process.env.BENCH_LOAD_CPUS ?? (CORES >= 4 ? String(CORES - 1) : '');
  if (!load) return undefined;
  const taken = new Set(cpuList(load));
  const server = [...Array(CORES).keys()].filter((cpu) => !taken.has(cpu));
  if (!server.length) throw new Error(`BENCH_LOAD_CPUS=${load} leaves no CPU for the server`);
  return { load, server: server.join(',') };
})();

/** `0-2,5` → [0, 1, 2, 5]. */
function cpuList(list: string): number[] {
  return list.split(',').flatMap((part) => {
    const [from, to] = part.split('-').map(Number);
    return to === undefined ? [from!] : [...Array(to - from! + 1).keys()].map((i) => from! + i);
  });
}

/** What the rows say of where the load ran. */
export function pinningNote(): string {
  return PINNING
    ? `load generator on CPU ${PINNING.load}, server on ${PINNING.server}`
    : `load generator and server share the ${CORES} cores (no core to spare: BENCH_LOAD_CPUS pins them apart)`;
}

/** Pins every thread of `pid` and of its children to `cpus`. */
function pin(pid: number, cpus: string): void {
  for (const p of [pid, ...children(pid)]) execFileSync('taskset', ['-a', '-p', '-c', cpus, String(p)], { stdio: 'ignore' });
}

/** A door's requests as the fixed-rate load sends them. */
export type RateTarget = { door: 'grpc'; addr: string; requests: unknown[] } | { door: 'http'; url: string; requests: BenchRequest[] };

/** `target` at `rate` requests a second for LOAD.seconds, its process tree (`rootPid`) metered as measure.ts meters it. */
export async function measureAtRate(target: RateTarget, rootPid: number, rate: number, postgresPid?: number): Promise<Measured> {
  if (PINNING) pin(rootPid, PINNING.server);
  const rss = new RssSampler(rootPid);
  const cpu = new CpuMeter(rootPid, postgresPid);
  rss.start();
  cpu.start();
  let result: LoadResult;
  try {
    const opts = { streams: LOAD.connections, seconds: LOAD.seconds, rate, ...(PINNING ? { cpus: PINNING.load } : {}) };
    result =
      target.door === 'grpc'
        ? await driveGrpc(target.addr, target.requests, { ...opts, conns: 2 * LOAD.workers })
        : await driveHttp(target.url, target.requests, opts);
  } finally {
    if (PINNING) pin(rootPid, `0-${CORES - 1}`);
  }
  const used = cpu.stop();
  return {
    ...result,
    rssMb: rss.stop(),
    rssTotalMb: rss.totalMb(),
    cpuUs: { api: (used.api * 1e6) / result.requests, postgres: (used.postgres * 1e6) / result.requests },
    warmupRequests: 0,
  };
}
