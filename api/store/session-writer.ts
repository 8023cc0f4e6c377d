// Group commit for new sessions (see group-commit.ts): each token request waits
// until its session row is committed (durable) before the token is sent, but
// concurrent requests share one multi-row INSERT and its commit. One commit in
// flight per process: the next batch gathers everything that arrives meanwhile,
// and fewer, larger commits cost PostgreSQL less CPU per session (make bench).
import type { Pool } from '../db/pool.js';
import { rowMayCause } from './constraints.js';
import { GroupCommit } from './group-commit.js';
import type { SeenProof } from './dpop-proofs.js';
import { insertChildSessions, insertSessions, insertSessionsSpending, type SessionRow } from './sessions.js';

export class SessionWriter {
  private readonly commits: GroupCommit<SessionRow, void>;
  private readonly children: GroupCommit<SessionRow, boolean>;
  private readonly spending: GroupCommit<{ row: SessionRow; spend: SeenProof }, boolean>;

  constructor(pool: Pool, onBatch?: (size: number) => void, maxInFlight = 1, maxBatch = 500) {
    this.commits = new GroupCommit<SessionRow, void>(
      async (rows) => {
        await insertSessions(pool, rows);
        return rows.map(() => undefined);
      },
      { maxInFlight, maxBatch, isolate: rowMayCause, ...(onBatch ? { onBatch } : {}) },
    );
    this.children = new GroupCommit<SessionRow, boolean>(
      async (rows) => {
        const inserted = await insertChildSessions(pool, rows);
        return rows.map((r) => inserted.has(r.id));
      },
      { maxInFlight, maxBatch, isolate: rowMayCause, ...(onBatch ? { onBatch } : {}) },
    );
    this.spending = new GroupCommit<{ row: SessionRow; spend: SeenProof }, boolean>(
      (items) =>
        insertSessionsSpending(
          pool,
          items.map((i) => i.row),
          items.map((i) => i.spend),
        ),
      {
        maxInFlight,
        maxBatch,
        isolate: rowMayCause,
        ...(onBatch ? { onBatch } : {}),
        // Two copies of one jti in one statement would both read as new: the second waits for the next batch.
        key: (i) => i.spend.digest.toString('hex'),
      },
    );
  }

  insert(row: SessionRow): Promise<void> {
    return this.commits.submit(row);
  }

  /**
   * A session whose client authenticated with an assertion whose jti is spent in the same statement
   * (api/store/sessions.ts insertSessionsSpending): false, nothing inserted nor spent, when the jti was
   * already spent (a replay).
   */
  insertSpending(row: SessionRow, spend: SeenProof): Promise<boolean> {
    return this.spending.submit({ row, spend });
  }

  /** A session made from `row.parent` (api/store/sessions.ts insertChildSessions): false, nothing inserted, when the parent is closed. */
  insertChild(row: SessionRow): Promise<boolean> {
    return this.children.submit(row);
  }
}
