// The PostgreSQL of `make bench` and `make bench-peers`: DATABASE_URL's server,
// else the embedded one in .boxauth/bench (durable commits, the defaults), with
// a fresh database per run or per target.
import fs from 'node:fs';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../api/db/embedded.js';
import { projectPath } from '../../api/paths.js';

export interface BenchServer {
  /** A URL of the server (any database on it). */
  url: string;
  /** The postmaster's pid when the server is the embedded one: its CPU is the database's. */
  postgresPid: number | undefined;
  stop(): Promise<void>;
}

export interface BenchServerOptions {
  /** The embedded server's directory under .boxauth/ (default `bench`). */
  name?: string;
  /**
   * At least this max_connections on the embedded server (set with ALTER SYSTEM, then a restart):
   * make bench-tenants opens a pool and a change feed per box, for hundreds of boxes.
   */
  maxConnections?: number;
}

export async function benchServer(log: (msg: string) => void, options: BenchServerOptions = {}): Promise<BenchServer> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, postgresPid: undefined, stop: async () => undefined };
  const dataDir = projectPath('.boxauth', options.name ?? 'bench');
  let server = await startEmbeddedPostgres(dataDir, log);
  if (options.maxConnections !== undefined && Number(await showSetting(server.url, 'max_connections')) < options.maxConnections) {
    await runSql(server.url, `ALTER SYSTEM SET max_connections = ${Math.floor(options.maxConnections)}`);
    await server.stop();
    server = await startEmbeddedPostgres(dataDir, log);
  }
  const pid = Number(fs.readFileSync(`${dataDir}/postgres/postmaster.pid`, 'utf8').split('\n')[0]);
  return { url: server.url, postgresPid: pid, stop: server.stop };
}

export async function showSetting(url: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name]!;
  } finally {
    await client.end();
  }
}

export async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A checkpoint before each row: no row then pays for one that the rows before it made due (WAL-
 * or time-triggered, their fsyncs stalled commits for seconds on a shared disk), and each starts
 * from the same state. Needs superuser or pg_checkpoint (the embedded server's user has it);
 * elsewhere the rows go without.
 */
export async function checkpoint(url: string): Promise<void> {
  await runSql(url, 'CHECKPOINT').catch(() => undefined);
}

/** Drops and creates `name` on the server; returns its URL. */
export async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
