// The box's locks: rows of its own table box_locks (migration 039), locked for a transaction.
// Not PostgreSQL's advisory locks: any role of the database may take one, and pg_locks shows every
// role the key of each one held, so another box's role could take this box's and keep them
// (every record write, key rotation, upkeep or refresh of the box waiting behind it). No other
// role may lock a row of the box's table, whatever it knows of its keys.
//
// A kind of lock taken for many things (a grant, an address) has SLOTS rows, a power of two, and
// a thing takes the slot of its hash: two things in one slot wait for each other, which is rare
// and short; a statement that takes several slots of a kind takes them in slot order.
import type { Queryable, Transaction } from '../db/pool.js';

/** The rows of each kind of lock, as migration 039 made them. */
export const SLOTS = {
  records: 1,
  keys: 1,
  email_key: 1,
  notice_events: 1,
  upkeep: 1,
  grant: 4096,
  register: 64,
  upstream: 64,
  ssf_stream: 64,
} as const;

export type LockKind = keyof typeof SLOTS;

/** The slot of `key` (SQL text) among the rows of `kind`. */
export const slotOf = (kind: LockKind, key: string): string => `(hashtext(${key}) & ${SLOTS[kind] - 1})`;

/** Locks `kind` (of `key`, for kinds of many slots) for the rest of `tx`, waiting for whoever holds it. */
export async function lockForTransaction(tx: Queryable, kind: LockKind, key = ''): Promise<void> {
  const { rowCount } = await tx.query(`SELECT FROM box_locks WHERE kind = $1 AND slot = ${slotOf(kind, '$2')} FOR UPDATE`, [kind, key]);
  if (rowCount !== 1) throw new Error(`the box has no lock ${kind}: its migrations are not all applied`);
}

/** Locks `kind` for the rest of `tx` if no other transaction holds it; false when one does. */
export async function tryLockForTransaction(tx: Transaction, kind: LockKind): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT FROM box_locks WHERE kind = $1 AND slot = 0 FOR UPDATE SKIP LOCKED', [kind]);
  return rowCount === 1;
}

/**
 * SQL that locks the grants of the families (SQL of a uuid[]; nulls are none), in slot order, for
 * the rest of the transaction (api/store/sessions.ts). Its value is the rows locked.
 *
 * Exclusively, refreshes too, though two refreshes of a grant need not wait for each other: a row
 * locked FOR SHARE is shared with every later FOR SHARE at once, even while a FOR UPDATE waits for
 * it, so a grant refreshed without pause (a thief's loop) would keep its close waiting for ever;
 * lockers FOR UPDATE that wait queue in turn. Refreshes of one slot take turns: one grant's, or two
 * grants' in a slot (with GRANT slots, a few batches in a hundred under load), for a statement each.
 */
export const grantLocks = (families: string): string =>
  `(SELECT count(*) FROM (SELECT FROM box_locks WHERE kind = 'grant' AND slot IN (
     SELECT ${slotOf('grant', 'f::text')} FROM unnest(${families}) f WHERE f IS NOT NULL)
   ORDER BY slot FOR UPDATE) locked)`;

/**
 * The upkeep's lease (api/store/upkeep.ts), held by a connection across its statements rather than
 * by a transaction: taken when no live connection holds it (its holder's backend gone, or the pid
 * given to another since), and given back by the holder. A connection that dies gives it back.
 */
export async function takeLease(db: Queryable, kind: LockKind): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE box_locks SET holder_pid = pg_backend_pid(),
       holder_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())
     WHERE kind = $1 AND slot = 0 AND (holder_pid IS NULL OR holder_pid = pg_backend_pid() OR NOT EXISTS (
       SELECT FROM pg_stat_activity a WHERE a.pid = box_locks.holder_pid AND a.backend_start = box_locks.holder_start))`,
    [kind],
  );
  return rowCount === 1;
}

export async function giveLeaseBack(db: Queryable, kind: LockKind): Promise<void> {
  await db.query(
    'UPDATE box_locks SET holder_pid = NULL, holder_start = NULL WHERE kind = $1 AND slot = 0 AND holder_pid = pg_backend_pid()',
    [kind],
  );
}
