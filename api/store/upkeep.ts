// The box's background upkeep (api/jobs/purge.ts) is done by one process at a time: the
// others skip their turn rather than wait, and delete nothing twice.
import type { Transaction } from '../db/pool.js';
import { giveLeaseBack, takeLease } from './box-locks.js';

/**
 * Runs `work` when no other process of the box is doing the upkeep, holding the box's upkeep lease
 * (./box-locks.ts) on `client` until it ends; else runs `busy`. `client` is held for the whole
 * run (withClient): the lease is given back with the connection it was taken on.
 */
export async function asTheOnlyUpkeep<T>(client: Transaction, work: () => Promise<T>, busy: () => Promise<T>): Promise<T> {
  if (!(await takeLease(client, 'upkeep'))) return busy();
  try {
    return await work();
  } finally {
    await giveLeaseBack(client, 'upkeep');
  }
}
