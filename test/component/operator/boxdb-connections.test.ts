// The operator's connections to box databases, all boxes together: at most its budget
// (BOX_CONNECTIONS_MAX) open at once, however many boxes it is working on. A thousand boxes looked
// at in turn once opened a connection each, held a moment after, past PostgreSQL's 100.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../../api/log.js';
import { PostgresBoxDatabases, type BoxAccess } from '../../../operator/boxdb.js';
import { createDatabase } from '../../support/postgres.js';

const NAMESPACES = ['team-a', 'team-b', 'team-c', 'team-d'];

describe("the operator's connections to box databases", function () {
  this.timeout(120_000);
  let databases: PostgresBoxDatabases;
  afterEach(() => databases?.close());

  it('are at most its budget, all boxes together: a query beyond it waits for a connection to close', async function () {
    const adminUrl = await createDatabase('budget');
    const password = `pw-${randomBytes(8).toString('hex')}`;
    databases = new PostgresBoxDatabases(createLogger('silent'), 2);
    const roles: string[] = [];
    for (const ns of NAMESPACES) {
      // Each box in a database of its own, as the operator provisions a new box: the budget is across databases.
      const access: BoxAccess = { kind: 'role', adminUrl, password, place: await databases.place(ns, adminUrl, 'Database') };
      await databases.ensure(ns, access);
      roles.push(access.place.names.role);
    }
    // Each box asked at once; each answer counts the boxes' connections open as it is given (after a moment's sleep).
    const counts = await Promise.all(
      NAMESPACES.map(async (ns) => {
        const { rows } = await databases
          .pool(ns)!
          .query<{ n: number }>(
            `SELECT pg_sleep(0.3)::text AS slept, (SELECT count(*)::int FROM pg_stat_activity WHERE usename = ANY($1)) AS n`,
            [roles],
          );
        return rows[0]!.n;
      }),
    );
    expect(Math.max(...counts)).to.equal(2);
  });
});
