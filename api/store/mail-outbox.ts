// Mail waiting to be sent (migration 020). A row is written in the transaction of what it
// tells and holds no secret; api/mail/outbox.ts sends it after the page has answered.
//
// A process takes rows by moving their next_attempt_at a lease ahead (claimMail): the rows are
// its own until then, and a process that dies while sending leaves them to whoever claims them
// after the lease. `attempts`, counted up by each claim, says whose lease a row is under: a
// process whose lease ran out and was taken over changes the row no more (sentMail, retryMail).
import type { Queryable } from '../db/pool.js';
import { wake } from './box-channel.js';
import type { CredentialKind } from '../factor-kinds.js';

/**
 * What a `factor-added` or `factor-removed` mail is about (its `detail`): a passkey (by its name), the
 * authenticator app, recovery codes, every factor at once, or an identity at a sign-in provider
 * linked or unlinked (by the provider's label).
 */
export interface FactorDetail {
  factor: CredentialKind | 'every-factor' | 'provider';
  /** The factor's own name (a passkey's, as its person gave it; a provider's label). */
  name?: string;
}

/** The kind of notice the box's processes are woken with when a mail is enqueued (ChangeFeed.onNotice). */
export const MAIL_CHANNEL = 'mail';

export interface MailRequest {
  /**
   * Its kind, one of api/mail/kinds.ts, which declares what each says and to whom; kept here as
   * the text of the row (callers ask for a mail through that module, which types it).
   */
  kind: string;
  address: string;
  userId?: number;
  /** The language of the page it was asked from (a BCP 47 tag), for the mail's template. */
  language?: string;
  /** What the mail is about beyond its kind (which factor), as JSON; never a secret. */
  detail?: string;
}

export async function enqueueMail(db: Queryable, mail: MailRequest): Promise<void> {
  await db.query('INSERT INTO mail_outbox (kind, address, user_id, language, detail) VALUES ($1, $2, $3, $4, $5)', [
    mail.kind,
    mail.address,
    mail.userId ?? null,
    mail.language ?? null,
    mail.detail ?? null,
  ]);
  // The outboxes of the box's processes hear of it at once (api/mail/outbox.ts listens).
  await wake(db, MAIL_CHANNEL);
}

/** A mail taken from the outbox, its lease running. */
export interface ClaimedMail extends MailRequest {
  id: string;
  createdAt: Date;
  /** Attempts so far, this one counted: the lease's mark. */
  attempts: number;
}

interface OutboxRow {
  id: string;
  kind: string;
  address: string;
  user_id: string | null;
  language: string | null;
  detail: string | null;
  created_at: Date;
  attempts: number;
}

/** Up to `limit` mails that are due, leased to the caller for `leaseSeconds`; rows other processes hold are skipped. */
export async function claimMail(db: Queryable, limit: number, leaseSeconds: number): Promise<ClaimedMail[]> {
  const { rows } = await db.query<OutboxRow>(
    `UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => $2), attempts = attempts + 1
     WHERE id IN (SELECT id FROM mail_outbox WHERE next_attempt_at <= now() ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1)
     RETURNING id, kind, address, user_id, language, detail, created_at, attempts`,
    [limit, leaseSeconds],
  );
  return rows.map((r) => ({
    id: String(r.id),
    kind: r.kind,
    address: r.address,
    ...(r.user_id !== null ? { userId: Number(r.user_id) } : {}),
    ...(r.language !== null ? { language: r.language } : {}),
    ...(r.detail !== null ? { detail: r.detail } : {}),
    createdAt: r.created_at,
    attempts: r.attempts,
  }));
}

/** The mail is done with (sent, or nothing to send): gone, unless another process took it over. */
export async function sentMail(db: Queryable, mail: ClaimedMail): Promise<void> {
  await db.query('DELETE FROM mail_outbox WHERE id = $1 AND attempts = $2', [mail.id, mail.attempts]);
}

/** The attempt failed: tried again in `delaySeconds`, with why it failed (no secret in it). */
export async function retryMail(db: Queryable, mail: ClaimedMail, delaySeconds: number, error: string): Promise<void> {
  await db.query(
    'UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => $3), last_error = $4 WHERE id = $1 AND attempts = $2',
    [mail.id, mail.attempts, delaySeconds, error.slice(0, 1000)],
  );
}

/** Mails waiting, due or not (the outbox size metric). */
export async function countMail(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM mail_outbox');
  return Number(rows[0]!.n);
}
