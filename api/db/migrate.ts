// Schema migrations: plain .sql files in api/db/migrations, applied in name order,
// each in its own transaction, under a lock of the box's table schema_migrations so that
// processes starting at once never race (the second waits, then finds nothing left to do).
// Not an advisory lock: any role of the database may take one, and another box's could
// take this box's and keep it (api/store/box-locks.ts says more); only the box's role may
// lock its table.
import { errorMessage } from '../errors.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { projectPath } from '../paths.js';
import { withClient } from './pool.js';

const MIGRATIONS_DIR = projectPath('api', 'db', 'migrations');

async function migrationFiles(): Promise<{ dir: string; names: string[] }> {
  const names = await fs.readdir(MIGRATIONS_DIR);
  return { dir: MIGRATIONS_DIR, names: names.filter((n) => n.endsWith('.sql')).sort() };
}

/** The table of applied migrations, made by whichever process comes first. */
async function ensureMigrationsTable(client: pg.PoolClient): Promise<void> {
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
  } catch (err) {
    // Two processes making it at once: the one that lost waited for the other's commit, and it is there.
    if (!['23505', '42P07'].includes((err as { code?: string }).code ?? '')) throw err;
  }
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(pool: pg.Pool): Promise<string[]> {
  const { dir, names } = await migrationFiles();
  return withClient(pool, async (client) => {
    await ensureMigrationsTable(client);
    const applied: string[] = [];
    for (;;) {
      await client.query('BEGIN');
      let name: string | undefined;
      try {
        // Reads are let through (a pod's /readyz asks what is applied); another migrating process waits.
        await client.query('LOCK TABLE schema_migrations IN EXCLUSIVE MODE');
        const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations');
        const done = new Set(rows.map((r) => r.name));
        name = names.find((n) => !done.has(n));
        if (name === undefined) {
          await client.query('COMMIT');
          return applied;
        }
        await client.query(await fs.readFile(path.join(dir, name), 'utf8'));
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        if (name === undefined) throw err;
        throw new Error(`migration ${name} failed: ${errorMessage(err)}`, { cause: err });
      }
      applied.push(name);
    }
  });
}

/** True when every migration file has been applied (for /readyz). */
export async function migrationsDone(pool: pg.Pool): Promise<boolean> {
  const { names } = await migrationFiles();
  const { rows } = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM schema_migrations WHERE name = ANY($1)', [
    names,
  ]);
  return rows[0]!.count === names.length;
}
