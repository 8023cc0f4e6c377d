// The replay cache of a box, in PostgreSQL so that every process of the box shares it
// (docs/architecture.md §10): DPoP proofs (RFC 9449 §11.1) and the jti of client assertions
// (private_key_jwt, api/oauth/client-assertion.ts) and the IDs of SAML Assertions from upstream
// identity providers (api/people/upstream/saml-sp.ts), each a digest of its own prefix. A digest is
// inserted if absent; present means the proof was seen, wherever it was. Concurrent checks share one statement and
// its commit (group commit): under load one round trip answers many proofs.
import type { Pool, Queryable } from '../db/pool.js';
import { rowMayCause } from './constraints.js';
import { GroupCommit } from './group-commit.js';

export interface SeenProof {
  /** SHA-256 of the key's thumbprint and the proof's jti (api/credentials/dpop/check.ts). */
  digest: Buffer;
  /** When no proof with this jti could be accepted any more: the row may go. */
  expiresAt: Date;
}

/** Records the proofs; returns, per proof, whether it is new (false: seen before, a replay). */
export async function recordProofs(db: Queryable, proofs: SeenProof[]): Promise<boolean[]> {
  const { rows } = await db.query<{ digest: Buffer }>({
    name: 'record-dpop-proofs',
    text: `INSERT INTO dpop_proofs (digest, expires_at) SELECT * FROM unnest($1::bytea[], $2::timestamptz[])
       ON CONFLICT (digest) DO NOTHING RETURNING digest`,
    values: [proofs.map((p) => p.digest), proofs.map((p) => p.expiresAt)],
  });
  const inserted = new Set(rows.map((r) => r.digest.toString('hex')));
  return proofs.map((p) => inserted.has(p.digest.toString('hex')));
}

/**
 * Deletes the proofs whose window has passed, a batch at a time. The window is the
 * checking process's clock's (api/credentials/dpop/check.ts); a minute's slack keeps a proof
 * remembered while a process whose clock runs behind the database's could still take it.
 */
export async function purgeProofs(db: Queryable, batch = 5000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM dpop_proofs WHERE digest IN (SELECT digest FROM dpop_proofs WHERE expires_at < now() - interval '1 minute' LIMIT $1)`,
    [batch],
  );
  return rowCount ?? 0;
}

/** The replay cache as the checks use it: one submission per proof, group-committed. */
export class ProofLedger {
  private readonly commits: GroupCommit<SeenProof, boolean>;

  constructor(pool: Pool, onBatch?: (size: number) => void, maxInFlight = 2, maxBatch = 500) {
    this.commits = new GroupCommit((proofs) => recordProofs(pool, proofs), {
      maxInFlight,
      maxBatch,
      isolate: rowMayCause,
      ...(onBatch ? { onBatch } : {}),
      // Two copies of one proof in one statement would both read as new: the second waits for the next batch.
      key: (p) => p.digest.toString('hex'),
    });
  }

  /** Resolves once committed: true the first time a proof is seen in the box, false after. */
  firstSeen(proof: SeenProof): Promise<boolean> {
    return this.commits.submit(proof);
  }
}
