// The sessions holding refresh tokens, in memory, by the token's digest: a
// refresh then takes one statement (RefreshWriter's group commit) instead of a
// read and a statement. A holder is remembered when this process issues its
// refresh token, or reads it, and forgotten when the change feed says its
// session changed (closed, shortened, deleted) or the feed was lost. What is
// remembered is only ever used to say yes: the group commit applies a use only if
// the holder is still usable at commit, and any no (the copy says closed, used or
// expired) is asked again of the database, so a stale copy costs a retry, never a
// wrong answer.
//
// A holder costs about 1.7 KB of heap (its row, its digests, two keys): the bound
// keeps them to about 17 MB a process, of the 200 MB a worker may use (issue 69).
// Past it the oldest goes, and its first use reads the database, as after a restart.
import type { ChangeFeed } from '../db/notify.js';
import type { SessionRow } from '../store/sessions.js';

export class RefreshHolders {
  private readonly byToken = new Map<string, SessionRow>();
  private readonly tokenOf = new Map<string, string>();

  constructor(
    feed: ChangeFeed,
    private readonly maxEntries = 10_000,
  ) {
    feed.onChange('sessions', (change) => this.forget(change.id));
    feed.onReset(() => {
      this.byToken.clear();
      this.tokenOf.clear();
    });
  }

  get(tokenDigest: Buffer): SessionRow | undefined {
    return this.byToken.get(tokenDigest.toString('hex'));
  }

  /** Remembers a session that holds a refresh token (one just issued or read). */
  remember(session: SessionRow): void {
    if (!session.refreshTokenHash) return;
    const key = session.refreshTokenHash.toString('hex');
    if (this.byToken.size >= this.maxEntries) {
      const [oldest, row] = this.byToken.entries().next().value!;
      this.byToken.delete(oldest);
      this.tokenOf.delete(row.id);
    }
    this.forget(session.id);
    this.byToken.set(key, session);
    this.tokenOf.set(session.id, key);
  }

  forget(sessionId: string): void {
    const key = this.tokenOf.get(sessionId);
    if (key === undefined) return;
    this.tokenOf.delete(sessionId);
    this.byToken.delete(key);
  }
}
