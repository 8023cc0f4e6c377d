// A person's recovery codes (migration 019), kept as their SHA-256; each is used once.
// What is decided about them is api/people/'s; this file only reads and writes.
import type { Queryable, Transaction } from '../db/pool.js';

/** Replaces a person's recovery codes with these (their SHA-256). */
export async function replaceRecoveryCodes(db: Transaction, userId: number, hashes: Buffer[]): Promise<void> {
  await db.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId]);
  await db.query('INSERT INTO recovery_codes (user_id, code_hash) SELECT $1, unnest($2::bytea[])', [userId, hashes]);
}

/** How many of a person's recovery codes are left unused. */
export async function recoveryCodesLeft(db: Queryable, userId: number): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL', [
    userId,
  ]);
  return Number(rows[0]!.n);
}

/** Uses a recovery code: true for the one caller that marked it used (a code is accepted once, even by requests at once). */
export async function useRecoveryCode(db: Queryable, userId: number, hash: Buffer): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE recovery_codes SET used_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL',
    [userId, hash],
  );
  return rowCount === 1;
}
