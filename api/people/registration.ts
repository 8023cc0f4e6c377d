// People who sign up themselves (BOXAUTH_REGISTRATION). Where the box mails, the address is
// proven by a link (api/people/links.ts): before the first sign-in (`before-sign-in`, the
// default), or after it. Before it, a sign-up answers alike for a new address and a taken one —
// the holder of a taken one is told by mail that someone tried — so that the page tells nobody
// who has an account here (OWASP ASVS 2.x: no account enumeration at registration).
import type { Config } from '../config.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { ConstraintViolation } from '../store/constraints.js';
import { enqueueMail } from '../store/mail-outbox.js';
import { createUserIn, findUserByEmail, type UserRow } from '../store/users.js';

/** How a sign-up goes on: the address is proven before the first sign-in, after it, or not at all (no mail). */
export type Proof = 'before-sign-in' | 'after-sign-in' | 'none';

export function proofOf(config: Pick<Config, 'smtp' | 'registrationVerify'>): Proof {
  return config.smtp === undefined ? 'none' : config.registrationVerify;
}

/** What a sign-up did: an account made, or an address found taken (its holder told by mail where the proof comes first). */
export type SignUpResult = { made: UserRow } | { taken: true };

/**
 * Makes the account of a sign-up, with its verify mail in the same transaction (nothing
 * acknowledged is lost), in group `groupId`.
 */
export async function signUp(
  svc: { pool: Pool; config: Pick<Config, 'smtp' | 'registrationVerify'> },
  fields: { email: string; passwordHash: string; groupId: number; language: string | undefined },
): Promise<SignUpResult> {
  const proof = proofOf(svc.config);
  const language = fields.language ? { language: fields.language } : {};
  try {
    const made = await withTransaction(svc.pool, async (tx) => {
      const user = await createUserIn(tx, {
        email: fields.email,
        passwordHash: fields.passwordHash,
        data: null,
        groupIds: [fields.groupId],
        emailVerified: false,
        mustVerifyEmail: proof === 'before-sign-in',
      });
      if (proof !== 'none') await enqueueMail(tx, { kind: 'verify-email', address: user.email, userId: user.id, ...language });
      return user;
    });
    return { made };
  } catch (err) {
    if (!(err instanceof ConstraintViolation && err.field === 'email')) throw err;
    if (proof === 'before-sign-in') {
      const holder = await findUserByEmail(svc.pool, fields.email);
      if (holder) await enqueueMail(svc.pool, { kind: 'already-registered', address: holder.email, userId: holder.id, ...language });
    }
    return { taken: true };
  }
}
