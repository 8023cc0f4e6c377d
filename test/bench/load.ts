// Drives one scenario with wrk (Debian's package) from its own process: a fixed
// number of connections for a fixed time, round-robin over prepared requests, or
// (shareOut) each request once, streamed from a file per wrk thread. A wrk that
// has not finished a while after its time is killed and its row fails (RowFailed).
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
  /** Answers of less than 400 per second: a refused request (a replayed DPoP proof, a timeout) is no throughput. */
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
  /**
   * Each request sent by one thread only (requests good once): the list is shared out among the
   * threads, each reading its share from a file of its own as it sends (./requests.lua).
   */
  shareOut?: boolean;
}

/** How long past its time a wrk may take (loading its requests, the last answers) before it is killed. */
const DEADLINE_SLACK_SECONDS = Number(process.env.BENCH_ROW_DEADLINE_SLACK ?? 60);

/** A row that could not be measured (its wrk overran its deadline, or printed no result): the run goes on. */
export class RowFailed extends Error {}

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

/**
 * The requests as wrk sends them (HTTP/1.1, Host and Content-Length set), thread i of `threads` getting
 * requests i, i + threads, …, in `<prefix>.<i>`: each a line of its length in bytes, then the request.
 * wrk reads one at a time (a table of 80,000 pre-signed DPoP proofs kept wrk's Lua busy for minutes).
 */
function streamedFiles(baseUrl: string, requests: BenchRequest[], threads: number): string {
  const host = new URL(baseUrl).host;
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-bench-')), 'requests');
  const files = Array.from({ length: threads }, (_, i) => fs.openSync(`${prefix}.${i}`, 'w'));
  const pending: string[][] = files.map(() => []);
  const flush = (i: number): void => {
    fs.writeSync(files[i]!, pending[i]!.join(''));
    pending[i] = [];
  };
  requests.forEach((r, n) => {
    if (r.body?.includes('{n}')) throw new Error('a request sent once needs no {n}: it is unique already');
    const body = r.body ?? '';
    const headers = { Host: host, ...r.headers, ...(r.body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}) };
    const head = `${r.method} ${r.path} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`;
    const raw = head + body;
    pending[n % threads]!.push(`${Buffer.byteLength(raw)}\n${raw}`);
    if (pending[n % threads]!.length >= 1000) flush(n % threads);
  });
  files.forEach((fd, i) => {
    flush(i);
    fs.closeSync(fd);
  });
  return prefix;
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
  const file = opts.shareOut ? streamedFiles(baseUrl, requests, opts.threads) : requestFile(requests);
  const deadline = opts.seconds + 10 + DEADLINE_SLACK_SECONDS; // 10: wrk's --timeout for the last answers
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
        ...(opts.shareOut ? ['streamed'] : []),
      ],
      { maxBuffer: 1 << 20, timeout: deadline * 1000, killSignal: 'SIGKILL' },
    ).catch((err: Error & { killed?: boolean }) => {
      throw err.killed ? new RowFailed(`wrk did not finish within ${deadline} s (killed)`) : err;
    });
    const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
    if (!line) throw new RowFailed(`wrk printed no result:\n${stdout}\n${stderr}`);
    const r = JSON.parse(line.slice('BENCH_RESULT '.length)) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      requests: r.requests!,
      seconds,
      rps: (r.requests! - r.errors_status!) / seconds,
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
