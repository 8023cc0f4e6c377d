// The box's background upkeep (api/jobs/purge.ts) is done by one process at a time: the
// others skip their turn rather than wait, and delete nothing twice.
import type { Transaction } from '../db/pool.js';

/**
 * Runs `work` when no other process of the box is doing the upkeep, holding a session-level
 * advisory lock on `client` until it ends; else runs `busy`. `client` is held for the whole
 * run (withClient): a session lock is released with the connection it was taken on.
 */
export async function asTheOnlyUpkeep<T>(client: Transaction, work: () => Promise<T>, busy: () => Promise<T>): Promise<T> {
  const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext('boxauth.purge.' || current_schema())) AS ok");
  if (!rows[0]!.ok) return busy();
  try {
    return await work();
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext('boxauth.purge.' || current_schema()))");
  }
}
