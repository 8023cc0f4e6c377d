// WebAuthn challenges (migration 019): handed to one browser for one purpose, taken once.
// What is decided about them is api/people/'s; this file only reads and writes.
import type { Queryable } from '../db/pool.js';

export interface Challenge {
  challenge: string;
  /** SHA-256 of the browser id it was handed to. */
  browser: Buffer;
  purpose: 'register' | 'authenticate';
  userId: number | null;
  expiresAt: Date;
}

export async function createChallenge(db: Queryable, c: Challenge): Promise<void> {
  await db.query('INSERT INTO webauthn_challenges (challenge, browser, purpose, user_id, expires_at) VALUES ($1, $2, $3, $4, $5)', [
    c.challenge,
    c.browser,
    c.purpose,
    c.userId,
    c.expiresAt,
  ]);
}

/** Uses a challenge: it is deleted, and returned only to the browser it was handed to, for its purpose, before it expired. */
export async function takeChallenge(
  db: Queryable,
  challenge: string,
  browser: Buffer,
  purpose: Challenge['purpose'],
): Promise<Challenge | undefined> {
  const { rows } = await db.query<{
    challenge: string;
    browser: Buffer;
    purpose: Challenge['purpose'];
    user_id: string | null;
    expires_at: Date;
  }>('DELETE FROM webauthn_challenges WHERE challenge = $1 AND browser = $2 AND purpose = $3 RETURNING *', [challenge, browser, purpose]);
  const r = rows[0];
  return r && r.expires_at > new Date()
    ? {
        challenge: r.challenge,
        browser: r.browser,
        purpose: r.purpose,
        userId: r.user_id === null ? null : Number(r.user_id),
        expiresAt: r.expires_at,
      }
    : undefined;
}

/** Deletes expired challenges (the purge job). */
export async function purgeChallenges(db: Queryable): Promise<void> {
  await db.query('DELETE FROM webauthn_challenges WHERE expires_at < now()');
}
