// Group commit for refresh token uses (see group-commit.ts): concurrent uses
// share one statement that updates the holders and inserts the new sessions
// (applyRefreshes), so each request waits for a shared commit instead of a
// transaction of its own. A use whose holder changed since it was read comes
// back not applied, and the caller decides it under a lock instead.
import type { Pool } from '../db/pool.js';
import { rowMayCause } from './constraints.js';
import { GroupCommit } from './group-commit.js';
import { applyRefreshes, type Refresh } from './sessions.js';

export class RefreshWriter {
  private readonly commits: GroupCommit<Refresh, boolean>;

  constructor(pool: Pool, onBatch?: (size: number) => void, maxInFlight = 2, maxBatch = 500) {
    this.commits = new GroupCommit(
      async (refreshes) => {
        try {
          const applied = await applyRefreshes(pool, refreshes);
          return refreshes.map((r) => applied.has(r.session.parent!));
        } catch (err) {
          // A deadlock with a transaction closing sessions (their locks are not
          // taken in id order): nothing was applied, so each use is decided again.
          if ((err as { code?: string }).code === '40P01') return refreshes.map(() => false);
          throw err;
        }
      },
      {
        maxInFlight,
        maxBatch,
        isolate: rowMayCause,
        ...(onBatch ? { onBatch } : {}),
        // The statement applies one use per holder: a second one waits for the next batch.
        key: (r) => r.session.parent!,
      },
    );
  }

  /** Resolves once committed: true if applied, false if the holder is no longer usable as read. */
  apply(refresh: Refresh): Promise<boolean> {
    return this.commits.submit(refresh);
  }
}
