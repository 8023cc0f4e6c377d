// Drives one scenario with wrk (Debian's package) from its own process: a fixed
// number of connections for a fixed time, round-robin over prepared requests.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectPath } from '../../api/paths.js';

const run = promisify(execFile);

export interface BenchRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  /** One line; `{n}` is replaced by a string unique to the request within all runs. */
  body?: string;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers with a status of 400 or more, plus connections that failed or timed out. */
  failures: number;
}

export interface LoadOptions {
  connections: number;
  seconds: number;
  threads: number;
  /** Each request sent by one thread only (requests good once): the list is shared out among the threads. */
  shareOut?: boolean;
}

function requestFile(requests: BenchRequest[]): string {
  const blocks = requests.map((r) => {
    if (r.body?.includes('\n')) throw new Error('bench request bodies must be one line');
    const headers = Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`);
    return [`${r.method} ${r.path}`, ...headers, '', r.body ?? ''].join('\n');
  });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-bench-')), 'requests.txt');
  fs.writeFileSync(file, `${blocks.join('\n%%\n')}\n%%\n`);
  return file;
}

export async function wrkAvailable(): Promise<boolean> {
  try {
    await run('wrk', ['--version']);
    return true;
  } catch (err) {
    // wrk prints its version and exits 1
    return (err as { code?: unknown }).code === 1;
  }
}

export async function drive(baseUrl: string, requests: BenchRequest[], opts: LoadOptions): Promise<LoadResult> {
  const file = requestFile(requests);
  try {
    const { stdout, stderr } = await run(
      'wrk',
      [
        `-t${opts.threads}`,
        `-c${opts.connections}`,
        `-d${opts.seconds}s`,
        '--timeout',
        '10s',
        '-s',
        projectPath('test', 'bench', 'requests.lua'),
        baseUrl,
        '--',
        file,
        `${Date.now().toString(36)}r`,
        ...(opts.shareOut ? [String(opts.threads)] : []),
      ],
      { maxBuffer: 1 << 20 },
    );
    const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
    if (!line) throw new Error(`wrk printed no result:\n${stdout}\n${stderr}`);
    const r = JSON.parse(line.slice('BENCH_RESULT '.length)) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      requests: r.requests!,
      seconds,
      rps: r.requests! / seconds,
      p50Ms: r.p50_us! / 1000,
      p90Ms: r.p90_us! / 1000,
      p99Ms: r.p99_us! / 1000,
      maxMs: r.max_us! / 1000,
      failures: r.errors_status! + r.errors_connect! + r.errors_read! + r.errors_write! + r.errors_timeout!,
    };
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}
