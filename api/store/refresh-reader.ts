// Group reads of refresh token holders (see group-commit.ts, whose batching it
// shares): a refresh whose holder this process does not remember (RefreshHolders
// keeps 10,000; a refresh token is used once an hour, often in another process)
// reads it from the database, and concurrent reads share one statement instead of
// a round trip each. A read is a read: it waits for no commit, and a batch starts
// only after each of its reads was asked for, so it sees every commit acknowledged
// before (a rotated token's new holder, used at once).
import type { Pool } from '../db/pool.js';
import { GroupCommit } from './group-commit.js';
import { findByRefreshTokens, type SessionRow } from './sessions.js';

export class RefreshReader {
  private readonly reads: GroupCommit<Buffer, SessionRow | undefined>;

  constructor(pool: Pool, maxInFlight = 2, maxBatch = 500) {
    // No read of a batch can fail it (a digest is always a valid bytea): a failed batch is the database's.
    this.reads = new GroupCommit((hashes) => findByRefreshTokens(pool, hashes), { maxInFlight, maxBatch, isolate: () => false });
  }

  /** The session holding the refresh token of digest `hash`, read without a lock. */
  find(hash: Buffer): Promise<SessionRow | undefined> {
    return this.reads.submit(hash);
  }
}
