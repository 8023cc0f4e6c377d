// Mail waiting to be sent (migration 020). A row is written in the transaction of what it
// tells and holds no secret; api/mail/outbox.ts sends it after the page has answered.
import type { Queryable } from '../db/pool.js';

/**
 * What a mail says. `password-reset` goes to whoever holds `address` when it is sent (nobody: no
 * mail), so that asking for one does the same work whether or not the address has an account;
 * `verify-email` to `user` while `address` is still theirs and unverified; `already-registered`
 * tells the holder of an address that someone tried to sign up with it.
 */
export type MailKind = 'password-reset' | 'verify-email' | 'already-registered';

export interface MailRequest {
  kind: MailKind;
  address: string;
  userId?: number;
  /** The language of the page it was asked from (a BCP 47 tag), for the mail's template. */
  language?: string;
}

export async function enqueueMail(db: Queryable, mail: MailRequest): Promise<void> {
  await db.query('INSERT INTO mail_outbox (kind, address, user_id, language) VALUES ($1, $2, $3, $4)', [
    mail.kind,
    mail.address,
    mail.userId ?? null,
    mail.language ?? null,
  ]);
  // The outboxes of the box's processes hear of it at once (api/mail/outbox.ts listens).
  await db.query("SELECT pg_notify('boxauth_mail_' || current_schema(), '')");
}
