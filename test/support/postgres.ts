// One embedded PostgreSQL for the whole test run (mocha global fixtures), and a
// fresh database per test suite so suites never see each other's records.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../api/db/embedded.js';
import { projectPath } from '../../api/paths.js';

let server: EmbeddedDatabase | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) return; // a PostgreSQL given from outside
  server = await startEmbeddedPostgres(path.join(projectPath('.boxauth'), 'test-postgres'), () => undefined);
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
