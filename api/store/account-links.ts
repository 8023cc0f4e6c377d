// One-time links mailed to a person (migration 020): a password reset, an address to verify.
// Only a token's SHA-256 is kept. A link is used by deleting it (one DELETE: of two requests
// with one link, one gets the row); what using it means is api/people/links.ts's business.
import type { Queryable, Transaction } from '../db/pool.js';

/** A reset; an address to verify; a new address a person asked for, which becomes theirs when its link is followed. */
export type LinkPurpose = 'reset' | 'verify' | 'change';

/** How long each link may be used (issue 37: a reset link, 30 minutes), from the database's clock, which judges it. */
export const LINK_MINUTES: Record<LinkPurpose, number> = { reset: 30, verify: 24 * 60, change: 24 * 60 };

export interface AccountLink {
  userId: number;
  /** The address the link was sent to. */
  email: string;
}

export async function insertLink(
  db: Queryable,
  link: { tokenHash: Buffer; purpose: LinkPurpose; userId: number; email: string },
): Promise<void> {
  await db.query(
    'INSERT INTO account_links (token_hash, purpose, user_id, email, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(mins => $5))',
    [link.tokenHash, link.purpose, link.userId, link.email, LINK_MINUTES[link.purpose]],
  );
}

/** The link of `tokenHash` for `purpose`, if it is there and not expired; it is left as it is. */
export async function findLink(db: Queryable, tokenHash: Buffer, purpose: LinkPurpose): Promise<AccountLink | undefined> {
  const { rows } = await db.query<{ user_id: number; email: string }>(
    'SELECT user_id, email FROM account_links WHERE token_hash = $1 AND purpose = $2 AND expires_at > now()',
    [tokenHash, purpose],
  );
  return rows[0] && { userId: Number(rows[0].user_id), email: rows[0].email };
}

/** Uses the link up: deleted whether or not it was still valid; what it was, when it was valid. */
export async function takeLink(tx: Transaction, tokenHash: Buffer, purpose: LinkPurpose): Promise<AccountLink | undefined> {
  const { rows } = await tx.query<{ user_id: number; email: string; valid: boolean }>(
    'DELETE FROM account_links WHERE token_hash = $1 AND purpose = $2 RETURNING user_id, email, expires_at > now() AS valid',
    [tokenHash, purpose],
  );
  const r = rows[0];
  return r?.valid ? { userId: Number(r.user_id), email: r.email } : undefined;
}

/** Voids one link: made for a mail that was not sent after all (api/mail/outbox.ts). */
export async function deleteLink(db: Queryable, tokenHash: Buffer): Promise<void> {
  await db.query('DELETE FROM account_links WHERE token_hash = $1', [tokenHash]);
}

/** Voids the person's links (of one purpose, or all): a reset used, an address changed. */
export async function deleteLinksOfUser(db: Queryable, userId: number, purpose?: LinkPurpose): Promise<void> {
  await db.query('DELETE FROM account_links WHERE user_id = $1 AND ($2::text IS NULL OR purpose = $2)', [userId, purpose ?? null]);
}

export async function purgeLinks(db: Queryable): Promise<void> {
  await db.query('DELETE FROM account_links WHERE expires_at < now()');
}
