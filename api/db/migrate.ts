// Schema migrations: plain .sql files in api/db/migrations, applied in name order,
// each in its own transaction, under an advisory lock so that processes starting
// at once never race (the second waits, then finds nothing left to do).
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

/** Applies pending migrations; returns the names applied. */
export async function migrate(pool: pg.Pool): Promise<string[]> {
  const { dir, names } = await migrationFiles();
  return withClient(pool, async (client) => {
    // The lock is per schema: boxes sharing one database migrate independently.
    await client.query("SELECT pg_advisory_lock(hashtext('boxauth.migrate.' || current_schema()))");
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations');
      const done = new Set(rows.map((r) => r.name));
      const applied: string[] = [];
      for (const name of names) {
        if (done.has(name)) continue;
        const sql = await fs.readFile(path.join(dir, name), 'utf8');
        await client.query('BEGIN');
        try {
          await client.query(sql);
          await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new Error(`migration ${name} failed: ${errorMessage(err)}`, { cause: err });
        }
        applied.push(name);
      }
      return applied;
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('boxauth.migrate.' || current_schema()))");
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
