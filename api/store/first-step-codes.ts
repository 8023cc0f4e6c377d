// Codes by email as the first step of a sign-in (migration 035): one per person, the last mailed.
// What is decided about them is api/people/'s; this file only reads and writes.
import type { Queryable } from '../db/pool.js';

/** A code by email as the first step of a sign-in (migration 035): the one just mailed to `userId`, replacing the one before. */
export async function putFirstStepCode(db: Queryable, userId: number, hash: Buffer, expiresAt: Date, codeFor: Buffer): Promise<void> {
  await db.query(
    `INSERT INTO first_step_codes (user_id, code_hash, code_for, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id) DO UPDATE SET code_hash = $2, code_for = $3, expires_at = $4`,
    [userId, hash, codeFor, expiresAt],
  );
}

/**
 * Takes `userId`'s first-step code: only the one mailed last, for the browser `codeFor`, unexpired
 * at `now`. One DELETE: of two requests with one code, one wins.
 */
export async function takeFirstStepCode(db: Queryable, userId: number, hash: Buffer, codeFor: Buffer, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    'DELETE FROM first_step_codes WHERE user_id = $1 AND code_hash = $2 AND code_for = $3 AND expires_at > $4',
    [userId, hash, codeFor, now],
  );
  return rowCount === 1;
}
