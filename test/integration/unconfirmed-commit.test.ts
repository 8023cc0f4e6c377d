// A commit whose outcome is unknown is never answered as success. With synchronous
// replication, PostgreSQL holds each COMMIT until a standby has it; when that wait is
// cut short (an administrator's cancel, boxauth's own statement deadline), it
// answers the COMMIT with success and a WARNING that the transaction "might not have
// been replicated to the standby" — a failover then loses it. The box answers 503
// instead, and no request waits on a standby that is gone for more than its deadline.
// A primary and its synchronous standby (test/support/replicated-postgres.ts): the standby's
// connection cut, every commit waits, as it does when the standby's machine is gone.
import { expect } from 'chai';
import { Box, basic } from '../support/box.js';
import { ReplicatedPostgres } from '../support/replicated-postgres.js';

describe('commits a synchronous standby never confirmed', function () {
  this.timeout(120_000);
  let db: ReplicatedPostgres;
  const boxes: Box[] = [];

  before(async function () {
    db = await ReplicatedPostgres.start({ synchronous: true });
  });

  after(async function () {
    for (const box of boxes) await box.stop();
    await db?.stop();
  });

  /** From now on every commit waits for the standby, which receives nothing. */
  const standbyGone = async (gone: boolean): Promise<void> => {
    await (gone ? db.holdBackStandby() : db.releaseStandby());
  };
  const sessions = async (): Promise<number> =>
    (await db.primary.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions')).rows[0]!.n;
  const token = (box: Box) =>
    box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) });

  it("at the box's statement deadline the wait is canceled, and the commit PostgreSQL then calls a success is a 503", async function () {
    const box = await Box.start({ databaseUrl: db.url(), env: { BOXAUTH_DATABASE_STATEMENT_TIMEOUT_MS: '1500' } });
    boxes.push(box);
    expect((await token(box)).status).to.equal(200);
    const before = await sessions();
    await standbyGone(true);
    try {
      const answers = await Promise.all([token(box), token(box), token(box)]);
      expect(answers.map((a) => [a.status, a.body.error])).to.deep.equal(Array(3).fill([503, 'temporarily_unavailable']));
      // PostgreSQL did commit them, locally: exactly what a failover would lose, and what nobody was told is theirs.
      expect(await sessions()).to.be.greaterThan(before);
      await box.logged('without the confirmation of its synchronous standby');
    } finally {
      await standbyGone(false);
    }
    expect((await token(box)).status).to.equal(200);
  });

  it('an administrator canceling the wait (pg_cancel_backend) gets PostgreSQL to say success: the box says 503, never 200', async function () {
    // The box's own deadline off: the administrator is the one who cancels. (PostgreSQL's statement_timeout
    // does not: it is disabled before the commit waits, so without a deadline of the box's, the request would wait.)
    const box = await boxes[0]!.startAnother({ BOXAUTH_DATABASE_STATEMENT_TIMEOUT_MS: '0' });
    boxes.push(box);
    expect((await token(box)).status).to.equal(200);
    await standbyGone(true);
    try {
      const answer = token(box);
      let canceled = 0;
      while (canceled === 0) {
        const { rows } = await db.primary.query<{ n: number }>(
          "SELECT count(pg_cancel_backend(pid))::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
        );
        canceled = rows[0]!.n;
      }
      const res = await answer;
      expect([res.status, res.body.error]).to.deep.equal([503, 'temporarily_unavailable']);
    } finally {
      await standbyGone(false);
    }
    expect((await token(box)).status).to.equal(200);
  });
});
