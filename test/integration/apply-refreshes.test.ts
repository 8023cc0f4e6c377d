// The statement of a group-committed refresh (applyRefreshes), against a real PostgreSQL, with
// the transactions interleaved by hand: what it applies when a close, or another use of the same
// token, commits while it waits. It relies on its UPDATE's own row lock and on PostgreSQL checking
// the UPDATE's WHERE again on the newest version of a row it waited for (READ COMMITTED).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../api/db/migrate.js';
import { createPool, withTransaction, type Pool, type Transaction } from '../../api/db/pool.js';
import {
  applyRefreshes,
  closeGrants,
  findById,
  insertChildSessions,
  insertSessions,
  newSessionId,
  type Refresh,
  type SessionRow,
} from '../../api/store/sessions.js';
import { createDatabase } from '../support/postgres.js';
import { sessionRow } from '../support/session-row.js';

/** Until `client`'s backend waits for a lock. */
async function waitsForLock(watcher: pg.Client, client: pg.Client): Promise<void> {
  const pid = (client as unknown as { processID: number }).processID;
  for (let i = 0; i < 500; i++) {
    const { rowCount } = await watcher.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid]);
    if (rowCount) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the statement never waited for a lock');
}

describe('applyRefreshes: what a group-committed refresh applies', function () {
  let pool: Pool;
  let url: string;
  let user: pg.Client;
  let other: pg.Client;
  let watcher: pg.Client;
  const tx = (c: pg.Client) => c as unknown as Transaction;

  before(async function () {
    url = await createDatabase();
    pool = createPool(url, 4);
    await migrate(pool);
  });
  after(async function () {
    await pool?.end();
  });
  beforeEach(async function () {
    user = new pg.Client({ connectionString: url });
    other = new pg.Client({ connectionString: url });
    watcher = new pg.Client({ connectionString: url });
    await Promise.all([user.connect(), other.connect(), watcher.connect()]);
  });
  afterEach(async function () {
    await Promise.all([user, other, watcher].map((c) => c.end()));
  });

  /** A holder of a refresh token, stored. */
  async function holder(): Promise<SessionRow> {
    const id = newSessionId();
    const row = sessionRow({ id, family: id, accessTokenHash: randomBytes(32), refreshTokenHash: randomBytes(32) });
    await insertSessions(pool, [row]);
    return row;
  }

  /** A use of `of`'s token: the session it yields (the holder's family, as mint() gives it). */
  function use(of: SessionRow, rotate = false, fields: Partial<SessionRow> = {}): Refresh {
    const id = newSessionId();
    const session = sessionRow({ id, type: 'refresh_token', parent: of.id, family: of.family, refreshTokenHash: null, ...fields });
    return { session, rotate, refreshTokenExp: rotate ? null : new Date(Date.now() + 86_400_000) };
  }

  it('applies a batch of one, and one of more rows than the plan assumes, in any order', async function () {
    const one = await holder();
    const uses = [use(one)];
    expect([...(await applyRefreshes(pool, uses))]).to.deep.equal([one.id]);
    const many = await Promise.all(Array.from({ length: 13 }, () => holder()));
    const manyUses = many.map((h) => use(h)).reverse();
    expect([...(await applyRefreshes(pool, manyUses))]).to.have.members(many.map((h) => h.id));
    for (const u of [...uses, ...manyUses]) expect((await findById(pool, u.session.id))?.parent).to.equal(u.session.parent);
  });

  it("a use whose new session names another grant than its holder's is not applied: the lock taken is always the holder's", async function () {
    // The statement locks the grants the new rows name; a row naming another would slip past a close of its holder's.
    const [h, stranger] = [await holder(), await holder()];
    const wrong = use(h, false, { family: stranger.family });
    expect([...(await applyRefreshes(pool, [wrong]))]).to.deep.equal([]);
    expect(await findById(pool, wrong.session.id)).to.equal(undefined);
    expect((await findById(pool, h.id))!.refreshTokenExp).to.equal(null); // the holder untouched too
    expect([...(await applyRefreshes(pool, [use(h)]))]).to.deep.equal([h.id]);
  });

  it('a close that commits while the refresh waits for its grant wins: nothing is applied', async function () {
    const h = await holder();
    await user.query('BEGIN');
    expect((await closeGrants(tx(user), { family: h.family })).map((s) => s.id)).to.deep.equal([h.id]);
    const refreshing = applyRefreshes(other, [use(h)]);
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect([...(await refreshing)]).to.deep.equal([]);
    const after = await findById(pool, h.id);
    expect(after!.active).to.equal(false);
    expect(after!.refreshTokenExp).to.equal(null);
  });

  it('a rotated token used by two batches at once is applied once: the second, waiting for the holder, finds it spent', async function () {
    const h = await holder();
    const [first, second] = [use(h, true), use(h, true)];
    await user.query('BEGIN');
    expect([...(await applyRefreshes(tx(user), [first]))]).to.deep.equal([h.id]);
    const racing = applyRefreshes(other, [second]);
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect([...(await racing)]).to.deep.equal([]);
    expect(await findById(pool, second.session.id)).to.equal(undefined);
    expect((await findById(pool, first.session.id))?.parent).to.equal(h.id);
    expect((await findById(pool, h.id))!.refreshUsedAt).to.not.equal(null);
  });

  it('a holder closed by a commit while the refresh waits for its row (not its grant) is left alone', async function () {
    // A transaction that locked the holder's row without its grant's lock (as no close does, but an
    // update of the row by anything else would), closes it and commits while the refresh waits.
    const h = await holder();
    await user.query('BEGIN');
    await user.query('UPDATE sessions SET active = false, "end" = now() WHERE id = $1', [h.id]);
    const refreshing = applyRefreshes(other, [use(h)]);
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect([...(await refreshing)]).to.deep.equal([]);
  });

  /** A session exchanged from `parent` (RFC 8693) holding a refresh token of its own: its family is its parent's. */
  async function exchanged(parent: SessionRow): Promise<SessionRow> {
    const id = newSessionId();
    const row = sessionRow({
      id,
      type: 'token_exchange',
      clientId: 'other-app',
      parent: parent.id,
      family: parent.family,
      refreshTokenHash: randomBytes(32),
    });
    expect([...(await insertChildSessions(pool, [row]))]).to.deep.equal([id]);
    return row;
  }

  it('a close that waits for a refresh in flight ends the session the refresh made', async function () {
    // The other order of the race: the refresh holds its grant first and commits, the close then sees its new session.
    const h = await holder();
    const refresh = use(h);
    await user.query('BEGIN');
    expect([...(await applyRefreshes(tx(user), [refresh]))]).to.deep.equal([h.id]);
    await other.query('BEGIN');
    const closing = closeGrants(tx(other), { tree: h.id });
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect((await closing).map((s) => s.id)).to.have.members([h.id, refresh.session.id]);
    await other.query('COMMIT');
    expect((await findById(pool, refresh.session.id))!.active).to.equal(false);
  });

  it("an exchanged session's refresh is held by its parent's grant: a close of the parent beats it, or ends what it made", async function () {
    // The exchanged session's family is its parent's, so the lock its refresh takes (keyed by the new row's family) is the one a close of the parent takes.
    const h = await holder();
    const child = await exchanged(h);
    await user.query('BEGIN');
    expect((await closeGrants(tx(user), { tree: h.id })).map((s) => s.id)).to.have.members([h.id, child.id]);
    const losing = use(child);
    const refreshing = applyRefreshes(other, [losing]);
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect([...(await refreshing)]).to.deep.equal([]);
    expect(await findById(pool, losing.session.id)).to.equal(undefined);

    const h2 = await holder();
    const child2 = await exchanged(h2);
    const winning = use(child2);
    await user.query('BEGIN');
    expect([...(await applyRefreshes(tx(user), [winning]))]).to.deep.equal([child2.id]);
    await other.query('BEGIN');
    const closing = closeGrants(tx(other), { tree: h2.id });
    await waitsForLock(watcher, other);
    await user.query('COMMIT');
    expect((await closing).map((s) => s.id)).to.have.members([h2.id, child2.id, winning.session.id]);
    await other.query('COMMIT');
  });

  it('a batch of refreshes of many grants racing closes of them: each use is applied and closed, or refused; none lost, none doubled', async function () {
    // Batches of several grants at once (as RefreshWriter sends them) against closes of single grants, in parallel:
    // whatever a batch applied was ended by the close, unless the close came first and the batch applied nothing of that grant.
    for (let round = 0; round < 5; round++) {
      const holders = await Promise.all(Array.from({ length: 24 }, () => holder()));
      const uses = holders.map((h) => use(h, true));
      const batches = [uses.slice(0, 8), uses.slice(8, 16), uses.slice(16)].map((batch) => [...batch].reverse());
      const deadlocked = (err: Error & { code?: string }): Promise<Set<string>> =>
        err.code === '40P01' ? Promise.resolve(new Set()) : Promise.reject(err); // RefreshWriter decides such uses again
      const [applied] = await Promise.all([
        Promise.all(batches.map((batch) => applyRefreshes(pool, batch).catch(deadlocked))),
        Promise.all(holders.map((h) => withTransaction(pool, (t) => closeGrants(t, { tree: h.id })))),
      ]);
      const appliedHolders = new Set(applied.flatMap((set) => [...set]));
      for (const u of uses) {
        const made = await findById(pool, u.session.id);
        const holderNow = (await findById(pool, u.session.parent!))!;
        expect(holderNow.active, 'every grant closed').to.equal(false);
        if (appliedHolders.has(u.session.parent!)) {
          expect(made?.active, 'an applied use made its session, and the close ended it').to.equal(false);
          expect(holderNow.refreshUsedAt).to.not.equal(null);
        } else {
          expect(made, 'a refused use made nothing').to.equal(undefined);
          expect(holderNow.refreshUsedAt).to.equal(null);
        }
      }
    }
  });
});
