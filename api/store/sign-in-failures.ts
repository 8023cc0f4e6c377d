// Throttling of sign-ins, sign-ups and typed device codes (keys by purpose).
import type { Queryable } from '../db/pool.js';

/**
 * Counts a sign-in attempt for each key, atomically, before its password is
 * checked, and returns each key's count in the current window (a window older
 * than `windowSeconds` starts again) and when that window ends. Parallel attempts
 * each see a count of their own, so no more of them are checked than the limit.
 */
export async function countAttempt(
  db: Queryable,
  keys: string[],
  windowSeconds: number,
): Promise<Map<string, { attempts: number; retryAt: Date }>> {
  const { rows } = await db.query<{ key: string; failures: number; retry_at: Date }>(
    // Rows are locked in key order, as in uncountAttempt: two attempts never wait on each other crosswise.
    `INSERT INTO sign_in_failures (key, failures, window_start) SELECT k, 1, now() FROM unnest($1::text[]) AS k ORDER BY k
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN sign_in_failures.window_start > now() - make_interval(secs => $2) THEN sign_in_failures.failures + 1 ELSE 1 END,
       window_start = CASE WHEN sign_in_failures.window_start > now() - make_interval(secs => $2) THEN sign_in_failures.window_start ELSE now() END
     RETURNING key, failures, window_start + make_interval(secs => $2) AS retry_at`,
    [keys, windowSeconds],
  );
  return new Map(rows.map((r) => [r.key, { attempts: r.failures, retryAt: r.retry_at }]));
}

/** Gives back attempts that were not failures (the password was right, or was never checked). */
export async function uncountAttempt(db: Queryable, keys: string[]): Promise<void> {
  await db.query(
    `UPDATE sign_in_failures f SET failures = greatest(f.failures - 1, 0)
     FROM (SELECT key FROM sign_in_failures WHERE key = ANY($1) ORDER BY key FOR UPDATE) locked WHERE f.key = locked.key`,
    [keys],
  );
}

export async function clearFailures(db: Queryable, key: string): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE key = $1', [key]);
}

/** Deletes throttling windows that ended more than `windowSeconds` ago. */
export async function purgeFailures(db: Queryable, windowSeconds: number): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE window_start < now() - make_interval(secs => $1)', [windowSeconds]);
}
