// The chains of a sign-out through a browser to SAML apps with only an HTTP-Redirect
// SingleLogoutService (see migration 037; what they mean: api/saml/logout-chains.ts). Keys are
// SHA-256 hashes: of the handle RelayState carries, and of the browser the chain is for. Every
// read takes the time from the caller, as the rest of a sign-out does.
import type { Queryable } from '../db/pool.js';

/** A chain as it is kept: what the module that walks it wrote, opaque here. */
export interface LogoutChainRow<Hop, Finish> {
  hops: Hop[];
  /** The hop whose answer is awaited; hops.length: the chain is over. */
  position: number;
  /** An app was not told, or did not say Success. */
  partial: boolean;
  finish: Finish;
}

export interface LogoutChainKey {
  handleHash: Buffer;
  browserHash: Buffer;
}

export async function createLogoutChain<Hop, Finish>(
  db: Queryable,
  key: LogoutChainKey,
  chain: Omit<LogoutChainRow<Hop, Finish>, 'position'>,
  expiresAt: Date,
): Promise<void> {
  await db.query(
    'INSERT INTO saml_logout_chains (handle_hash, browser_hash, hops, partial, finish, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [key.handleHash, key.browserHash, JSON.stringify(chain.hops), chain.partial, JSON.stringify(chain.finish), expiresAt],
  );
}

/** The live chain of this handle for this browser; another browser, or a handle guessed, finds nothing. */
export async function logoutChainOf<Hop, Finish>(
  db: Queryable,
  key: LogoutChainKey,
  now: Date,
): Promise<LogoutChainRow<Hop, Finish> | undefined> {
  const { rows } = await db.query<LogoutChainRow<Hop, Finish>>(
    `SELECT hops, position, partial, finish FROM saml_logout_chains
      WHERE handle_hash = $1 AND browser_hash = $2 AND expires_at > $3`,
    [key.handleHash, key.browserHash, now],
  );
  return rows[0];
}

/**
 * Moves the chain on from the hop at `from` (`failed`: that hop counts as partial); the chain as
 * it is now for the one caller that moved it, undefined for every other: concurrent callers queue
 * on the row and find the position moved, so one answer moves a chain once.
 */
export async function moveLogoutChainOn<Hop, Finish>(
  db: Queryable,
  key: LogoutChainKey,
  from: number,
  failed: boolean,
  now: Date,
): Promise<LogoutChainRow<Hop, Finish> | undefined> {
  const { rows } = await db.query<LogoutChainRow<Hop, Finish>>(
    `UPDATE saml_logout_chains SET position = position + 1, partial = partial OR $4
      WHERE handle_hash = $1 AND browser_hash = $2 AND position = $3 AND position < jsonb_array_length(hops) AND expires_at > $5
      RETURNING hops, position, partial, finish`,
    [key.handleHash, key.browserHash, from, failed, now],
  );
  return rows[0];
}

/** Expiry is the process's to decide; an hour's slack leaves it that, whatever the database's clock says. */
export async function purgeLogoutChains(db: Queryable): Promise<void> {
  await db.query("DELETE FROM saml_logout_chains WHERE expires_at < now() - interval '1 hour'");
}
