// Box-wide settings: values made once and kept (keys, secrets), whichever replica made them first.
import type { Queryable } from '../db/pool.js';

export async function ensureSetting(db: Queryable, name: string, generate: () => string): Promise<string> {
  await db.query('INSERT INTO box_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, generate()]);
  return (await db.query<{ value: string }>('SELECT value FROM box_settings WHERE name = $1', [name])).rows[0]!.value;
}

/** Records `name` once; true for the caller that recorded it, false when it was there already. */
export async function claimSetting(db: Queryable, name: string, value: string): Promise<boolean> {
  const { rowCount } = await db.query('INSERT INTO box_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    value,
  ]);
  return rowCount === 1;
}
