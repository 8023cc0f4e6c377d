// The group read of refresh token holders (store/refresh-reader.ts), against a real PostgreSQL:
// reads asked for at once share a statement, and each still gets its own holder, none, or the
// holder committed just before it was asked for.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { migrate } from '../../api/db/migrate.js';
import { createPool, type Pool } from '../../api/db/pool.js';
import { RefreshReader } from '../../api/store/refresh-reader.js';
import { insertSessions, newSessionId, type SessionRow } from '../../api/store/sessions.js';
import { createDatabase } from '../support/postgres.js';
import { sessionRow } from '../support/session-row.js';

describe('RefreshReader: holders read together', function () {
  let pool: Pool;

  before(async function () {
    pool = createPool(await createDatabase(), 4);
    await migrate(pool);
  });
  after(async function () {
    await pool?.end();
  });

  async function holders(n: number): Promise<SessionRow[]> {
    const rows = Array.from({ length: n }, () => {
      const id = newSessionId();
      return sessionRow({ id, family: id, accessTokenHash: randomBytes(32), refreshTokenHash: randomBytes(32) });
    });
    await insertSessions(pool, rows);
    return rows;
  }

  it('gives each of many parallel reads its own holder, none for an unknown token, the same twice for a token asked twice', async function () {
    const stored = await holders(40);
    const unknown = Array.from({ length: 7 }, () => randomBytes(32));
    const asked = [...stored.map((h) => h.refreshTokenHash!), ...unknown, stored[3]!.refreshTokenHash!, stored[3]!.refreshTokenHash!];
    let statements = 0;
    const counted = { query: (...args: Parameters<Pool['query']>) => (statements++, pool.query(...args)) } as unknown as Pool;
    const reader = new RefreshReader(counted, 1, 500);
    const found = await Promise.all(asked.map((hash) => reader.find(hash)));
    expect(found.slice(0, 40).map((h) => h?.id)).to.deep.equal(stored.map((h) => h.id));
    expect(found.slice(40, 47)).to.deep.equal(Array(7).fill(undefined));
    expect([found[47]?.id, found[48]?.id]).to.deep.equal([stored[3]!.id, stored[3]!.id]);
    // The first read goes alone; the 48 asked for while it ran share the next statement.
    expect(statements).to.equal(2);
  });

  it('sees a holder committed just before it was asked for', async function () {
    const reader = new RefreshReader(pool);
    for (let i = 0; i < 20; i++) {
      const [row] = await holders(1);
      const [found] = await Promise.all([reader.find(row!.refreshTokenHash!), reader.find(randomBytes(32))]);
      expect(found?.id, `round ${i}`).to.equal(row!.id);
    }
  });
});
