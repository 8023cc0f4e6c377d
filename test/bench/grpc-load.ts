// Drives a gRPC ext_authz server with test/extauthz (Envoy's own protos, built by
// `make test-tools`) from its own process, as load.ts drives HTTP with wrk: a
// fixed number of concurrent checks for a fixed time, round robin over prepared
// CheckRequests (closed loop: the throughput the server reaches), or with `rate`
// a fixed number a second (open loop: the latency at that throughput). An HTTP
// door at a fixed rate too (driveHttp), on the same schedule.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TOOLS_BIN } from '../support/kube.js';
import type { BenchRequest, LoadResult } from './load.js';

const run = promisify(execFile);
export const EXTAUTHZ = path.join(TOOLS_BIN, 'extauthz');

export interface GrpcLoadOptions {
  /** Checks in flight at most (extauthz's streams). */
  streams: number;
  /** HTTP/2 connections the streams share (a gateway keeps a few, not one per request). */
  conns: number;
  seconds: number;
  /** Checks a second on a fixed schedule; absent: as fast as answered. */
  rate?: number;
  /** The CPUs extauthz runs on (taskset's list); absent: any. */
  cpus?: string;
}

export interface GrpcLoadResult extends LoadResult {
  allowed: number;
  denied: number;
  errors: number;
  firstError?: string;
}

interface Summary {
  checks: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  allowed: number;
  denied: number;
  errors: number;
  firstError?: string;
}

export function extauthzAvailable(): boolean {
  return fs.existsSync(EXTAUTHZ);
}

/** `requests`: CheckRequests as protojson objects. Every check is expected to be allowed: a denial counts as a failure. */
export function driveGrpc(addr: string, requests: unknown[], opts: GrpcLoadOptions): Promise<GrpcLoadResult> {
  return runExtauthz(['load', '-addr', addr, '-conns', String(opts.conns)], requests, opts);
}

/**
 * The same for an HTTP door (`extauthz http`): `requests` sent over `streams` keep-alive connections,
 * a status under 300 allowed. `make bench` drives its closed loops with wrk (load.ts); this is for a
 * fixed rate, which wrk has not.
 */
export function driveHttp(url: string, requests: BenchRequest[], opts: Omit<GrpcLoadOptions, 'conns'>): Promise<GrpcLoadResult> {
  return runExtauthz(['http', '-url', url], requests, opts);
}

async function runExtauthz(command: string[], requests: unknown[], opts: Omit<GrpcLoadOptions, 'conns'>): Promise<GrpcLoadResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-bench-grpc-'));
  const file = path.join(dir, 'requests.ndjson');
  fs.writeFileSync(file, `${requests.map((r) => JSON.stringify(r)).join('\n')}\n`);
  try {
    const args = [...command, '-requests', file, '-c', String(opts.streams), '-d', `${opts.seconds}s`];
    if (opts.rate) args.push('-rate', String(opts.rate));
    const { stdout } = opts.cpus
      ? await run('taskset', ['-c', opts.cpus, EXTAUTHZ, ...args], { maxBuffer: 1 << 20 })
      : await run(EXTAUTHZ, args, { maxBuffer: 1 << 20 });
    const s = JSON.parse(stdout.trim().split('\n').pop()!) as Summary;
    return {
      requests: s.checks,
      seconds: s.seconds,
      rps: s.perSecond,
      p50Ms: s.p50Ms,
      p90Ms: s.p90Ms,
      p99Ms: s.p99Ms,
      maxMs: s.maxMs,
      failures: s.denied + s.errors,
      allowed: s.allowed,
      denied: s.denied,
      errors: s.errors,
      ...(s.firstError ? { firstError: s.firstError } : {}),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One check through `extauthz check`: the CheckResponse (protojson), or the gRPC error, as it prints them. */
export function checkOnce(addr: string, request: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(EXTAUTHZ, ['check', '-addr', addr, '-timeout', '2s'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    // 'close', not 'exit': the process may exit before its stdout is read to the end.
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`extauthz: ${err}`));
      try {
        resolve(JSON.parse(out.trim()) as Record<string, unknown>);
      } catch {
        reject(new Error(`extauthz check printed no answer: ${out.slice(0, 200)} ${err.slice(0, 200)}`));
      }
    });
    child.stdin.end(`${JSON.stringify(request)}\n`);
  });
}
