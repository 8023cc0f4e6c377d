// The group commit against a real PostgreSQL: rows PostgreSQL refuses (a NUL byte in a text
// column) sent at once with honest ones fail alone; every honest row is committed.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { migrate } from '../../api/db/migrate.js';
import { createPool, type Pool } from '../../api/db/pool.js';
import { rowMayCause } from '../../api/store/constraints.js';
import { RefreshWriter } from '../../api/store/refresh-writer.js';
import { SessionWriter } from '../../api/store/session-writer.js';
import { findById, insertSessions, newSessionId, type SessionRow } from '../../api/store/sessions.js';
import { createDatabase } from '../support/postgres.js';
import { sessionRow } from '../support/session-row.js';

function row(fields: Partial<SessionRow> = {}): SessionRow {
  return sessionRow({ id: newSessionId(), clientId: 'c', accessTokenHash: randomBytes(32), refreshTokenHash: randomBytes(32), ...fields });
}

/** Honest and hostile items mixed, one hostile every `every`. */
function mixed<T>(honest: T[], hostile: T[], every: number): T[] {
  const out: T[] = [];
  honest.forEach((h, i) => {
    out.push(h);
    if (i % every === every - 1 && hostile.length) out.push(hostile.shift()!);
  });
  return [...out, ...hostile];
}

describe('group commit: a row the database refuses fails only its own request', function () {
  let pool: Pool;

  before(async function () {
    pool = createPool(await createDatabase(), 10);
    await migrate(pool);
  });
  after(async function () {
    await pool?.end();
  });

  it('SessionWriter: 200 honest inserts and 20 hostile ones at once; every honest one commits', async function () {
    const writer = new SessionWriter(pool);
    const honest = Array.from({ length: 200 }, () => row({ audience: 'https://api.example' }));
    const hostile = Array.from({ length: 20 }, () => row({ audience: 'https://api.example\u0000' }));
    const hostileIds = new Set(hostile.map((r) => r.id));
    const rows = mixed(honest, [...hostile], 10);
    const outcomes = await Promise.allSettled(rows.map((r) => writer.insert(r)));
    const failed = rows.filter((_, i) => outcomes[i]!.status === 'rejected');
    expect(
      failed.filter((r) => !hostileIds.has(r.id)),
      'honest failures',
    ).to.have.length(0);
    expect(failed.map((r) => r.id).sort()).to.deep.equal([...hostileIds].sort());
    for (const r of honest) expect((await findById(pool, r.id))?.audience, r.id).to.equal('https://api.example');
    for (const r of hostile) expect(await findById(pool, r.id)).to.equal(undefined);
  });

  it('SessionWriter.insertSpending: one jti in 20 sessions at once, queued behind other writes, from two writers: one session written', async function () {
    // A private_key_jwt assertion's jti, spent in the statement of its token's session (client_credentials):
    // the 20 copies queue while each writer's first batch is in flight, and so share the next batch.
    const writers = [new SessionWriter(pool), new SessionWriter(pool)];
    const expiresAt = new Date(Date.now() + 60_000);
    const spend = { digest: randomBytes(32), expiresAt };
    const first = writers.map((w) => w.insertSpending(row(), { digest: randomBytes(32), expiresAt }));
    const copies = Array.from({ length: 20 }, () => row());
    const results = await Promise.all(copies.map((r, i) => writers[i % 2]!.insertSpending(r, spend)));
    expect(await Promise.all(first)).to.deep.equal([true, true]);
    expect(results.filter((r) => r)).to.have.length(1);
    const written = await Promise.all(copies.map((r) => findById(pool, r.id)));
    expect(written.map(Boolean)).to.deep.equal(results);
  });

  it('SessionWriter.insertSpending: a session the database refuses spends no jti, and fails alone', async function () {
    const writer = new SessionWriter(pool);
    const expiresAt = new Date(Date.now() + 60_000);
    const hostileSpend = { digest: randomBytes(32), expiresAt };
    const honest = Array.from({ length: 10 }, () => row());
    const outcomes = await Promise.allSettled([
      ...honest.map((r) => writer.insertSpending(r, { digest: randomBytes(32), expiresAt })),
      writer.insertSpending(row({ audience: 'https://api.example\u0000' }), hostileSpend),
    ]);
    expect(outcomes.map((o) => o.status)).to.deep.equal([...Array(10).fill('fulfilled'), 'rejected']);
    expect(outcomes.slice(0, 10).map((o) => (o as PromiseFulfilledResult<boolean>).value)).to.deep.equal(Array(10).fill(true));
    // Its jti was not spent: the same assertion, with a session the database takes, gets its token.
    expect(await writer.insertSpending(row(), hostileSpend)).to.equal(true);
  });

  it('RefreshWriter: 100 honest refreshes and 10 hostile ones at once; every honest one is applied', async function () {
    const holders = Array.from({ length: 110 }, () => row());
    await insertSessions(pool, holders);
    const writer = new RefreshWriter(pool);
    const refreshes = holders.map((h, i) => ({
      session: row({ parent: h.id, family: h.family, refreshTokenHash: null, audience: i % 11 === 5 ? 'x\u0000' : 'x' }),
      rotate: false,
      refreshTokenExp: null,
    }));
    const outcomes = await Promise.allSettled(refreshes.map((r) => writer.apply(r)));
    const hostile = refreshes.map((r, i) => (r.session.audience === 'x' ? -1 : i)).filter((i) => i >= 0);
    expect(hostile).to.have.length(10);
    outcomes.forEach((o, i) => {
      if (hostile.includes(i)) expect(o.status, `hostile ${i}`).to.equal('rejected');
      else expect(o, `honest ${i}`).to.deep.equal({ status: 'fulfilled', value: true });
    });
    for (const r of refreshes.filter((r) => r.session.audience === 'x')) expect(await findById(pool, r.session.id)).to.not.equal(undefined);
  });

  it('retries item by item only when a row may be the cause', async function () {
    const refused = await pool.query('SELECT $1::text', ['a\u0000']).catch((err: unknown) => err);
    expect(rowMayCause(refused), String(refused)).to.equal(true);
    const nowhere = createPool('postgres://boxauth@127.0.0.1:1/none', 1);
    const unreachable = await nowhere.query('SELECT 1').catch((err: unknown) => err);
    await nowhere.end();
    expect(unreachable).to.be.instanceOf(Error);
    expect(rowMayCause(unreachable), String(unreachable)).to.equal(false);
  });
});
