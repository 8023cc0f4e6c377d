// Signing keys of the box's JWTs (access tokens and ID tokens), one active per algorithm.
import type { JsonWebKey } from 'node:crypto';
import type { Queryable } from '../db/pool.js';
import { lockForTransaction } from './box-locks.js';

export interface KeyRow {
  id: string;
  alg: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  external: boolean;
  createdAt: Date;
  retiredAt: Date | null;
}

interface DbRow {
  id: string;
  alg: string;
  private_jwk: JsonWebKey;
  public_jwk: JsonWebKey;
  external: boolean;
  created_at: Date;
  retired_at: Date | null;
}

const fromDb = (r: DbRow): KeyRow => ({
  id: r.id,
  alg: r.alg,
  privateJwk: r.private_jwk,
  publicJwk: r.public_jwk,
  external: r.external,
  createdAt: r.created_at,
  retiredAt: r.retired_at,
});

/**
 * Serializes the rotation of the signing keys for the rest of `tx`: processes starting together
 * each read the keys and would otherwise each create one (api/credentials/keyring.ts ensureActive).
 */
export async function lockKeyRotation(tx: Queryable): Promise<void> {
  await lockForTransaction(tx, 'keys');
}

export async function listKeys(db: Queryable): Promise<KeyRow[]> {
  const { rows } = await db.query<DbRow>('SELECT * FROM signing_keys ORDER BY created_at DESC, id');
  return rows.map(fromDb);
}

export async function insertKey(db: Queryable, key: Omit<KeyRow, 'createdAt' | 'retiredAt'>): Promise<void> {
  await db.query(
    `INSERT INTO signing_keys (id, alg, private_jwk, public_jwk, external) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (id) DO UPDATE SET retired_at = NULL`,
    [key.id, key.alg, key.privateJwk, key.publicJwk, key.external],
  );
}

/** Every key of `alg` but `keep` stops signing; they stay published until their tokens are gone. Answers the keys retired. */
export async function retireOthers(db: Queryable, keep: string, alg: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'UPDATE signing_keys SET retired_at = now() WHERE id <> $1 AND alg = $2 AND retired_at IS NULL RETURNING id',
    [keep, alg],
  );
  return rows.map((r) => r.id).sort();
}

export async function deleteKeys(db: Queryable, ids: string[]): Promise<void> {
  if (ids.length) await db.query('DELETE FROM signing_keys WHERE id = ANY($1) AND retired_at IS NOT NULL', [ids]);
}
