// Group commit for new sessions. Each token request waits until its session row
// is committed (durable) before the token is sent, but concurrent requests share
// commits: while one INSERT is in flight, newly arriving rows queue up and go
// together in the next one. Under load a commit carries many sessions; alone,
// a request waits for just its own.
import type { Pool } from '../db/pool.js';
import { insertSessions, type SessionRow } from './sessions.js';

interface Pending {
  row: SessionRow;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class SessionWriter {
  private queue: Pending[] = [];
  private inFlight = 0;

  constructor(
    private readonly pool: Pool,
    /** Commits running at once; more lets PostgreSQL overlap their fsyncs. */
    private readonly maxInFlight = 2,
    private readonly maxBatch = 500,
  ) {}

  insert(row: SessionRow): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      insertSessions(this.pool, batch.map((p) => p.row)).then(
        () => batch.forEach((p) => p.resolve()),
        (err: Error) => batch.forEach((p) => p.reject(err)),
      ).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }
}
