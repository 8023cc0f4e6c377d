// One measurement of `make bench` and `make bench-peers`: wrk's warm-up, then
// the measured load, while the target's process tree and PostgreSQL are
// metered (CPU time, peak RSS). Both commands take the load's shape from here,
// so their figures compare.
import os from 'node:os';
import { driveGrpc, type GrpcLoadOptions } from './grpc-load.js';
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
  /** The peak RSS of each of the target's processes, added up, MB. */
  rssTotalMb: number;
  /** CPU time per request, µs: the target's processes (`api`) and PostgreSQL's. */
  cpuUs: { api: number; postgres: number };
  /** Requests of the warm-up (which the measured figures leave out). */
  warmupRequests: number;
  /** How long the warm-up was, s, and each of its windows' rate (a steady warm-up's, below). */
  warmup?: Warmed;
}

/** A warm-up: its length, its requests, and the rate of each window it drove. */
export interface Warmed {
  seconds: number;
  requests: number;
  rates: number[];
}

/** Drives the target's load for `seconds`, unmeasured. */
type Window = (seconds: number) => Promise<LoadResult>;

/** How a target is warmed before it is measured. */
export type Warm = (window: Window) => Promise<Warmed>;

/** `make bench`'s: one window of BENCH_WARMUP_SECONDS (the box's code is the same from row to row). */
export const fixedWarmup: Warm = async (window) => {
  if (LOAD.warmupSeconds <= 0) return { seconds: 0, requests: 0, rates: [] };
  const r = await window(LOAD.warmupSeconds);
  return { seconds: LOAD.warmupSeconds, requests: r.requests, rates: [r.rps] };
};

/** A steady warm-up's window, how far above the best window before it a rate may still be rising, and its longest. */
export const STEADY = {
  windowSeconds: env('BENCH_STEADY_WINDOW_SECONDS', 5),
  tolerance: 0.05,
  maxSeconds: env('BENCH_STEADY_MAX_SECONDS', 120),
};

/**
 * `make bench-peers`': windows of STEADY.windowSeconds until the rate stops rising — a window no
 * more than STEADY.tolerance above the best before it — and at least two (at most
 * STEADY.maxSeconds). A JIT's target (Keycloak's HotSpot, V8) keeps compiling for tens of seconds
 * under load; a fixed 3 s measured Keycloak at less than half its warm rate.
 */
export const steadyWarmup: Warm = async (window) => {
  const rates: number[] = [];
  let requests = 0;
  for (;;) {
    const r = await window(STEADY.windowSeconds);
    requests += r.requests;
    const best = Math.max(0, ...rates);
    rates.push(r.rps);
    const steady = rates.length >= 2 && r.rps <= best * (1 + STEADY.tolerance);
    if (steady || rates.length * STEADY.windowSeconds >= STEADY.maxSeconds)
      return { seconds: rates.length * STEADY.windowSeconds, requests, rates };
  }
};

/** A row of a bench's table: a measurement, its ratio to its ceiling, and the targets it missed. */
export interface Row extends Measured {
  key: string;
  title: string;
  ratio?: number;
  /** make bench's token rows: the ratio to the row's durable ceiling (or the cc_jwt row), and which (`durableOf`). */
  durableRatio?: number;
  durableOf?: string;
  /** The goals the row was judged by; `targets` lists those it missed. */
  goals?: string[];
  targets: string[];
  /** Why the row could not be measured (its figures are then zero). */
  failed?: string;
}

/** A row whose measurement failed: zeros, and why. */
export function rowOfFailure(key: string, title: string, err: unknown): Row {
  const why = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  const zero = { requests: 0, seconds: 0, rps: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0, maxMs: 0, failures: 0 };
  return {
    key,
    title,
    ...zero,
    rssMb: 0,
    rssTotalMb: 0,
    cpuUs: { api: 0, postgres: 0 },
    warmupRequests: 0,
    targets: [`failed: ${why}`],
    failed: why,
  };
}

/** `rootPid`: the target's process (its children count too); `postgresPid`: see CpuMeter. */
export async function measure(
  url: string,
  rootPid: number,
  requests: BenchRequest[],
  postgresPid?: number,
  warm: Warm = fixedWarmup,
): Promise<Measured> {
  const load = { connections: LOAD.connections, threads: LOAD.threads };
  const warmup = await warm((seconds) => drive(url, requests, { ...load, seconds }));
  const rss = new RssSampler(rootPid);
  const cpu = new CpuMeter(rootPid, postgresPid);
  rss.start();
  cpu.start();
  const result = await drive(url, requests, { ...load, seconds: LOAD.seconds }).catch(stopping(rss));
  return { ...metered(result, cpu, rss), warmupRequests: warmup.requests, warmup };
}

/** For a load that failed: stops the RSS sampler (its timer would keep the bench from exiting) and rethrows. */
export function stopping(rss: RssSampler): (err: unknown) => never {
  return (err) => {
    rss.stop();
    throw err;
  };
}

function metered<T extends LoadResult>(result: T, cpu: CpuMeter, rss: RssSampler): T & Omit<Measured, keyof LoadResult | 'warmupRequests'> {
  const used = cpu.stop();
  const rssMb = rss.stop();
  const cpuUs = { api: (used.api * 1e6) / result.requests, postgres: (used.postgres * 1e6) / result.requests };
  return { ...result, rssMb, rssTotalMb: rss.totalMb(), cpuUs };
}

/**
 * The gRPC twin of measure(): test/extauthz at LOAD.connections concurrent checks on
 * two HTTP/2 connections per worker (a gateway keeps a few and multiplexes). With
 * `rate`, a fixed number of checks a second instead, and no warm-up of its own
 * (it follows a closed-loop run of the same target).
 */
export async function measureGrpc(
  addr: string,
  rootPid: number,
  requests: unknown[],
  postgresPid?: number,
  rate?: number,
  warm: Warm = fixedWarmup,
): Promise<Measured & { errors: number; denied: number; firstError?: string }> {
  const load: Omit<GrpcLoadOptions, 'seconds'> = { streams: LOAD.connections, conns: 2 * LOAD.workers, ...(rate ? { rate } : {}) };
  const warmup = rate ? undefined : await warm((seconds) => driveGrpc(addr, requests, { ...load, seconds }));
  const rss = new RssSampler(rootPid);
  const cpu = new CpuMeter(rootPid, postgresPid);
  rss.start();
  cpu.start();
  const result = await driveGrpc(addr, requests, { ...load, seconds: LOAD.seconds }).catch(stopping(rss));
  return { ...metered(result, cpu, rss), warmupRequests: warmup?.requests ?? 0, ...(warmup ? { warmup } : {}) };
}
