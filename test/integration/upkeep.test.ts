// The upkeep (the purge job) over the rows of signing in: browser sessions past their end,
// authorization codes an hour past theirs, and throttling windows older than the longest
// window are deleted; the rest are kept. The rows are the box's own (a real sign-in, a real
// code, a real wrong password); the test only moves their times into the past.
import { expect } from 'chai';
import pg from 'pg';
import { Box, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { authorizePath, APP_REDIRECT } from '../support/signed-in.js';

describe('the upkeep of sign-in rows', function () {
  let box: Box;
  let db: pg.Client;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_PURGE_INTERVAL_SECONDS: '1' } });
    const root = await box.rootToken();
    await box.addClient(
      'app',
      { grant_types: ['authorization_code'], first_party: true, auth: { authorization_code: { redirect_uri: APP_REDIRECT } } },
      { secret: 'app-secret-123', policy: false },
    );
    for (const email of ['old@example.com', 'live@example.com']) {
      const made = await box.json('POST', '/users', { email, password: 'a-good-password' }, root);
      expect(made.status, made.text).to.equal(201);
    }
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
  });
  after(async function () {
    await db?.end();
    await box?.stop();
  });

  /** A browser of `email` signed in, a code it was given, and a failed sign-in counted for `email`'s account. */
  async function rowsOf(email: string): Promise<void> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'a-good-password')).status).to.equal(303);
    expect((await browser.get(authorizePath('app'))).status).to.equal(302);
    // After the sign-in: a good password clears the account's count.
    expect((await new FormAgent(box).signIn(email, 'a wrong password')).status).to.equal(401);
  }

  const count = async (sql: string, email: string): Promise<number> => (await db.query(sql, [email])).rows[0].n;
  const ROWS = {
    browserSessions: 'SELECT count(*)::int AS n FROM browser_sessions JOIN users u ON u.id = user_id WHERE u.email = $1',
    codes: 'SELECT count(*)::int AS n FROM authorization_codes JOIN users u ON u.id = user_id WHERE u.email = $1',
    failures: "SELECT count(*)::int AS n FROM sign_in_failures WHERE key = 'email:' || $1",
  };

  it('deletes the rows whose time is over, and keeps the others', async function () {
    await rowsOf('old@example.com');
    await rowsOf('live@example.com');
    for (const email of ['old@example.com', 'live@example.com']) {
      for (const [what, sql] of Object.entries(ROWS)) expect(await count(sql, email), `${what} of ${email}`).to.equal(1);
    }
    // Over: the session ended a minute ago, the code two hours ago, the window began a month ago.
    const old = (await db.query("SELECT id FROM users WHERE email = 'old@example.com'")).rows[0].id;
    await db.query("UPDATE browser_sessions SET expires_at = now() - interval '1 minute' WHERE user_id = $1", [old]);
    await db.query("UPDATE authorization_codes SET expires_at = now() - interval '2 hours' WHERE user_id = $1", [old]);
    await db.query("UPDATE sign_in_failures SET window_start = now() - interval '30 days' WHERE key = 'email:old@example.com'");

    await eventually(
      'the upkeep to delete the rows whose time is over',
      async () => {
        for (const sql of Object.values(ROWS)) if ((await count(sql, 'old@example.com')) !== 0) return false;
        return true;
      },
      10_000,
      250,
    );
    for (const [what, sql] of Object.entries(ROWS)) expect(await count(sql, 'live@example.com'), `${what} kept`).to.equal(1);
  });
});
