// What a person is told by mail when a way of theirs to sign in changes (docs/security.md: every
// credential change tells the person): a factor added or removed, new recovery codes, every factor
// reset, a sign-in provider linked or unlinked, their password changed. Written to the outbox in
// the transaction of the change, so that the mail goes out if and only if the change commits; the
// words are made when it is sent (api/mail/kinds.ts).
import type { Config } from '../config.js';
import type { Queryable } from '../db/pool.js';
import { enqueueMail } from '../mail/kinds.js';
import type { FactorDetail } from '../store/mail-outbox.js';

/** A factor added or removed. */
export interface FactorNotice extends FactorDetail {
  change: 'added' | 'removed';
}

/** Mails `user` (to the address their record holds when it is sent) that `notice` happened, in `tx`; nothing where the box sends no mail. */
export async function tellOfFactorChange(
  svc: { config: Pick<Config, 'smtp'> },
  tx: Queryable,
  user: { id: number; email: string },
  notice: FactorNotice,
): Promise<void> {
  if (svc.config.smtp === undefined) return;
  await enqueueMail(tx, {
    kind: notice.change === 'added' ? 'factor-added' : 'factor-removed',
    address: user.email,
    userId: user.id,
    detail: JSON.stringify({ factor: notice.factor, ...(notice.name !== undefined ? { name: notice.name } : {}) } satisfies FactorDetail),
  });
}

/**
 * Mails `user` that their password was changed (by them, a reset, an administrator or their
 * directory), in `tx`; nothing where the box sends no mail. OWASP ASVS V2.2.3: notifications "after
 * updates to authentication details": one who did not change it learns of it, and where to reset it.
 */
export async function tellOfPasswordChange(
  svc: { config: Pick<Config, 'smtp'> },
  tx: Queryable,
  user: { id: number; email: string },
): Promise<void> {
  if (svc.config.smtp === undefined) return;
  await enqueueMail(tx, { kind: 'password-changed', address: user.email, userId: user.id });
}
