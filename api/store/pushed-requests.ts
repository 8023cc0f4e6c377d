// Pushed authorization requests (RFC 9126; see migration 015). Keys are SHA-256
// hashes: of the request_uri, and of the browser that claimed it. Every read
// takes the time from the caller, so that expiry follows the process's clock
// as the rest of the authorization request does.
import type { Queryable } from '../db/pool.js';

export interface PushedRequestKey {
  requestHash: Buffer;
  clientId: string;
}

/** A pushed request as the browser that claimed it holds it. */
export interface PushedRequestClaim extends PushedRequestKey {
  browserHash: Buffer;
}

export async function createPushedRequest(
  db: Queryable,
  key: PushedRequestKey,
  params: Record<string, string>,
  expiresAt: Date,
): Promise<void> {
  await db.query('INSERT INTO pushed_requests (request_hash, client_id, params, expires_at) VALUES ($1, $2, $3, $4)', [
    key.requestHash,
    key.clientId,
    params,
    expiresAt,
  ]);
}

/**
 * The parameters of a live pushed request of this client, claimed for `browserHash`:
 * the first browser to bring it takes it, and its life becomes `claimedUntil` (the
 * time a person has to sign in and consent); another browser finds nothing.
 */
export async function claimPushedRequest(
  db: Queryable,
  { requestHash, clientId, browserHash }: PushedRequestClaim,
  now: Date,
  claimedUntil: Date,
): Promise<Record<string, string> | undefined> {
  const { rows } = await db.query<{ params: Record<string, string> }>(
    `UPDATE pushed_requests
        SET browser_hash = $3, expires_at = CASE WHEN browser_hash IS NULL THEN $5 ELSE expires_at END
      WHERE request_hash = $1 AND client_id = $2 AND expires_at > $4 AND (browser_hash IS NULL OR browser_hash = $3)
      RETURNING params`,
    [requestHash, clientId, browserHash, now, claimedUntil],
  );
  return rows[0]?.params;
}

/**
 * Deletes the pushed request that `browserHash` claimed; true for the one caller
 * that deleted it. Concurrent callers queue on the row, and all but the first
 * find it gone: this is what makes a request_uri good for one answer only.
 */
export async function consumePushedRequest(
  db: Queryable,
  { requestHash, clientId, browserHash }: PushedRequestClaim,
  now: Date,
): Promise<boolean> {
  const { rows } = await db.query(
    `DELETE FROM pushed_requests WHERE request_hash = $1 AND client_id = $2 AND browser_hash = $3 AND expires_at > $4
      RETURNING 1`,
    [requestHash, clientId, browserHash, now],
  );
  return rows.length === 1;
}

/** Expiry is the process's to decide; an hour's slack leaves it that, whatever the database's clock says. */
export async function purgePushedRequests(db: Queryable): Promise<void> {
  await db.query("DELETE FROM pushed_requests WHERE expires_at < now() - interval '1 hour'");
}
