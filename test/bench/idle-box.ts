// What one idle box costs (issue 82): `node dist/api/main.js` started as the README says, on a
// fresh database of a PostgreSQL server, left alone past the pool's idle timeout; its resident
// memory, its peak, its V8 heap and the database connections it holds. Then once more after one
// client-credentials token, and as long idle again. `make bench-tenants` calls idleBox(); alone:
//
//   DATABASE_URL=postgres://… node dist/test/bench/idle-box.js [--idle-seconds 60] [--env NAME=VALUE]… [--json]
//
// (without DATABASE_URL it starts the embedded PostgreSQL of the benches, in .boxauth/bench).
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { Box, sleep } from '../support/box.js';
import { benchServer, freshDatabase } from './database.js';
import { textTable } from './table.js';

export interface IdleBoxOptions {
  /** A URL of the PostgreSQL server: the box gets a fresh database on it. */
  serverUrl: string;
  /** How long the box stays idle before each reading: past the pool's idle timeout (30 s) and the start's garbage; 60 s by default. */
  idleSeconds?: number;
  /** More of the box's environment (BOXAUTH_GRPC_PORT=0, MALLOC_ARENA_MAX, …). */
  env?: Record<string, string>;
  /** Options for node itself. */
  nodeArgs?: string[];
  /** The name of the fresh database (dropped first when it exists, and when done); one of its own by default. */
  database?: string;
}

export interface IdleFigures {
  /** Resident memory of the box's process, MB (VmRSS). */
  rssMB: number;
  /** The highest it has been since the process started, MB (VmHWM): the start's peak, or the token's. */
  peakMB: number;
  /** Connections of the box to its database (pg_stat_activity). */
  connections: number;
  /** The V8 heap in use, MB (nodejs_heap_size_used_bytes). */
  heapMB: number;
}

export interface IdleBox extends IdleFigures {
  /** As long idle again after one client-credentials token (the first request pays for what it loads). */
  afterToken: IdleFigures;
}

const MB = 1024 * 1024;

function statusKb(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

async function connections(serverUrl: string, database: string): Promise<number> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [database]);
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

async function heapMB(box: Box): Promise<number> {
  const m = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(await box.metrics());
  return m ? Number(m[1]) / MB : NaN;
}

async function figures(box: Box, serverUrl: string, database: string): Promise<IdleFigures> {
  const pid = box.process!.pid!;
  // The heap first: serving /metrics allocates, and RSS is read after it as a scrape leaves it.
  const heap = await heapMB(box);
  return {
    rssMB: statusKb(pid, 'VmRSS') / 1024,
    peakMB: statusKb(pid, 'VmHWM') / 1024,
    connections: await connections(serverUrl, database),
    heapMB: heap,
  };
}

let runs = 0;

export async function idleBox(options: IdleBoxOptions): Promise<IdleBox> {
  const idleMs = (options.idleSeconds ?? 60) * 1000;
  const name = options.database ?? `boxauth_idle_${process.pid}_${++runs}`;
  const databaseUrl = await freshDatabase(options.serverUrl, name);
  const box = await Box.start({ databaseUrl, env: options.env, nodeArgs: options.nodeArgs });
  try {
    await sleep(idleMs);
    const idle = await figures(box, options.serverUrl, name);
    await box.rootToken();
    await sleep(idleMs);
    return { ...idle, afterToken: await figures(box, options.serverUrl, name) };
  } finally {
    await box.stop();
    await dropDatabase(options.serverUrl, name);
  }
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

function row(title: string, f: IdleFigures): string[] {
  return [title, f.rssMB.toFixed(1), f.peakMB.toFixed(1), f.heapMB.toFixed(1), String(f.connections)];
}

async function main(): Promise<void> {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const server = await benchServer((msg) => process.stderr.write(`idle-box: ${msg}\n`));
  try {
    const idleSeconds = arg('--idle-seconds') === undefined ? undefined : Number(arg('--idle-seconds'));
    // --env NAME=VALUE, repeated: more of the box's environment (BOXAUTH_GRPC_PORT=0, MALLOC_ARENA_MAX=2).
    const env = Object.fromEntries(
      process.argv.flatMap((a, i) => (process.argv[i - 1] === '--env' ? [[a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]] : [])),
    );
    const result = await idleBox({ serverUrl: server.url, idleSeconds, env });
    if (process.argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return;
    }
    const head = ['one idle box (node dist/api/main.js)', 'RSS MB', 'peak MB', 'heap MB', 'DB connections'];
    process.stdout.write(`${textTable(head, [row('idle after start', result), row('idle after one token', result.afterToken)], [0])}\n`);
  } finally {
    await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
