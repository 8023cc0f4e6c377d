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

const DATA_DIR = projectPath('.boxauth', 'bench');

export async function benchServer(log: (msg: string) => void): Promise<BenchServer> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, postgresPid: undefined, stop: async () => undefined };
  const server = await startEmbeddedPostgres(DATA_DIR, log);
  const pid = Number(fs.readFileSync(`${DATA_DIR}/postgres/postmaster.pid`, 'utf8').split('\n')[0]);
  return { url: server.url, postgresPid: pid, stop: server.stop };
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
