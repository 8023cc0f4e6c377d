// One embedded PostgreSQL for the whole test run (mocha global fixtures), and a
// fresh database per test suite so suites never see each other's records.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { reachableByServer, startEmbeddedPostgres, type EmbeddedDatabase } from '../../api/db/embedded.js';
import { projectPath } from '../../api/paths.js';

let server: EmbeddedDatabase | undefined;

/**
 * Where the test PostgreSQL keeps its data: .boxauth/test-postgres of the clone, unless the server (user
 * `postgres`, when the tests run as root) cannot reach it, as in a clone under root's 0700 home; then a
 * directory of the clone's own under the system's temporary directory.
 */
async function dataDirectory(): Promise<string> {
  const inClone = path.join(projectPath('.boxauth'), 'test-postgres');
  if (await reachableByServer(inClone)) return inClone;
  const id = createHash('sha256').update(projectPath()).digest('hex').slice(0, 12);
  return path.join(os.tmpdir(), `boxauth-test-postgres-${id}`);
}

export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) return; // a PostgreSQL given from outside
  server = await startEmbeddedPostgres(await dataDirectory(), () => undefined);
  process.env.TEST_DATABASE_URL = server.url;
}

export async function mochaGlobalTeardown(): Promise<void> {
  await server?.stop();
}

export function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run tests through mocha with test/support/postgres as a fixture');
  return url;
}

/** A new, empty database; returns its URL. */
export async function createDatabase(prefix = 't'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}
