// Sign-ins half made (migration 019): the first factor proven, the second (or an enrolment)
// not yet. What is decided about them is api/people/'s; this file only reads and writes.
import type { Queryable } from '../db/pool.js';

export interface SignInStep {
  userId: number;
  amr: string[];
  /** A step-up: the browser session (sid) it replaces once the missing factor is proven. */
  replaces: string | null;
  /** Its factor is proven; only a page is left (the recovery codes of an enrolment): it may go on without another proof. */
  ready: boolean;
  /** The IdentityProvider the first factor was proven at; null: the box's own. */
  provider: string | null;
  /** When its last proof was given (a step-up's begins as its session's): enrolling in a step-up needs it recent. */
  proofAt: Date;
  /** A factor was enrolled in it rather than given: what it signs in did not prove it. */
  enrolled: boolean;
  expiresAt: Date;
}

interface StepRow {
  user_id: string;
  amr: string[];
  replaces: string | null;
  ready: boolean;
  provider: string | null;
  proof_at: Date;
  enrolled: boolean;
  expires_at: Date;
}

// A step of the release before has no proof_at: its creation stands for it.
const STEP_COLUMNS = 'user_id, amr, replaces, ready, provider, COALESCE(proof_at, created_at) AS proof_at, enrolled, expires_at';

const stepOf = (r: StepRow): SignInStep => ({
  userId: Number(r.user_id),
  amr: r.amr,
  replaces: r.replaces,
  ready: r.ready,
  provider: r.provider,
  proofAt: r.proof_at,
  enrolled: r.enrolled,
  expiresAt: r.expires_at,
});

export async function createSignInStep(db: Queryable, idHash: Buffer, step: SignInStep): Promise<void> {
  await db.query(
    `INSERT INTO sign_in_steps (id_hash, user_id, amr, replaces, ready, expires_at, provider, proof_at, enrolled)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [idHash, step.userId, step.amr, step.replaces, step.ready, step.expiresAt, step.provider, step.proofAt, step.enrolled],
  );
}

export async function findSignInStep(db: Queryable, idHash: Buffer): Promise<SignInStep | undefined> {
  const { rows } = await db.query<StepRow>(`SELECT ${STEP_COLUMNS} FROM sign_in_steps WHERE id_hash = $1 AND expires_at > now()`, [idHash]);
  return rows[0] && stepOf(rows[0]);
}

/** Ends a step, returning it when it was still there and valid: of two requests finishing one step, one gets it. */
export async function takeSignInStep(db: Queryable, idHash: Buffer): Promise<SignInStep | undefined> {
  const { rows } = await db.query<StepRow>(`DELETE FROM sign_in_steps WHERE id_hash = $1 RETURNING ${STEP_COLUMNS}`, [idHash]);
  const r = rows[0];
  return r && r.expires_at > new Date() ? stepOf(r) : undefined;
}

export async function deleteSignInStepsOfUser(db: Queryable, userId: number): Promise<void> {
  await db.query('DELETE FROM sign_in_steps WHERE user_id = $1', [userId]);
}

/** Ends the step-ups of browser session `sid` (it was signed out). */
export async function deleteSignInStepsReplacing(db: Queryable, sid: string): Promise<void> {
  await db.query('DELETE FROM sign_in_steps WHERE replaces = $1', [sid]);
}

/**
 * Ends the steps of `userId` through `provider`: sign-ins there half done, and step-ups of browsers
 * signed in there, but those of `keep` (a sid). A sign-in's step replaces nothing (NULL).
 */
export async function deleteSignInStepsThrough(db: Queryable, userId: number, provider: string, keep?: string): Promise<void> {
  await db.query('DELETE FROM sign_in_steps WHERE user_id = $1 AND provider = $2 AND (replaces IS NULL OR replaces IS DISTINCT FROM $3)', [
    userId,
    provider,
    keep ?? null,
  ]);
}

/** Deletes expired sign-in steps (the purge job). */
export async function purgeSignInSteps(db: Queryable): Promise<void> {
  await db.query('DELETE FROM sign_in_steps WHERE expires_at < now()');
}
