// Closing a grant while it is being refreshed (docs/architecture.md §7, "closing beats
// using"): a thief refreshes a stolen refresh token in a loop, from several
// connections, while its owner signs out, revokes it, changes the password or an
// administrator closes the session. Whichever commits second must see the other:
// afterwards no token of the grant works, whatever the timing.
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

type Closer = 'sign-out' | 'revoke' | 'password' | 'delete-session';
const CLOSERS: Closer[] = ['sign-out', 'revoke', 'password', 'delete-session'];

interface Grant {
  /** Every access token the grant gave, and its newest refresh token as each loop last saw it. */
  accessTokens: string[];
  refreshTokens: Set<string>;
  /** The session of the first access token (the grant's root). */
  firstAccessToken: string;
  /** The refresh loops running on it, and whether its close has been answered. */
  loops?: Promise<unknown>;
  closed?: boolean;
}

describe('closing a grant races its refreshes', function () {
  this.timeout(240_000);
  const secret = 'racing-client-secret';
  const password = 'racer-password-1';
  let box: Box;
  let root: string;
  let userId: number;
  let currentPassword = password;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    for (const rotation of [false, true]) {
      await box.addClient(
        `app-${rotation ? 'rotating' : 'plain'}`,
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: {
            authorization_code: { redirect_uri: 'https://app.example/cb', refresh_token: true, refresh_token_rotation: rotation },
          },
        },
        { secret },
      );
    }
    userId = (await box.json('POST', '/users', { email: 'racer@example.com', password }, root)).body.id;
  });
  after(async function () {
    await box?.stop();
  });

  let agent: FormAgent | undefined;

  /** A grant for the user through the code flow; the browser signs in again when a password change ended its session. */
  async function signInGrant(client: string): Promise<Grant> {
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: 'https://app.example/cb' })}`;
    let redirect = agent && (await agent.get(authorize));
    if (redirect?.status !== 302) {
      agent = new FormAgent(box);
      const signedIn = await agent.signIn('racer@example.com', currentPassword, authorize);
      expect(signedIn.status, signedIn.text).to.equal(303);
      redirect = await agent.get(authorize);
    }
    const code = new URL(redirect.headers.get('location')!).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: 'https://app.example/cb' },
      { Authorization: basic(client, secret) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    return {
      accessTokens: [tokens.body.access_token],
      refreshTokens: new Set([tokens.body.refresh_token]),
      firstAccessToken: tokens.body.access_token,
    };
  }

  /**
   * Refreshes until refused, or until a few uses after the grant was closed (a
   * surviving grant is found afterwards); with rotation each use hands the next
   * refresh token on.
   */
  async function refreshLoop(client: string, grant: Grant, start: string, rotation: boolean, started: () => void): Promise<void> {
    let refreshToken = start;
    for (let i = 0, afterClose = 0; afterClose < 3; i++) {
      const res = await box.form('/auth/token', { grant_type: 'refresh_token', client_id: client, refresh_token: refreshToken });
      if (res.status !== 200) {
        expect(res.body.error, res.text).to.equal('invalid_grant');
        return;
      }
      grant.accessTokens.push(res.body.access_token);
      if (rotation) {
        refreshToken = res.body.refresh_token;
        grant.refreshTokens.add(refreshToken);
      }
      if (i === 1) started();
      if (grant.closed) afterClose++;
    }
  }

  async function close(closer: Closer, client: string, grant: Grant, round: number): Promise<void> {
    let res;
    if (closer === 'sign-out') {
      res = await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${grant.firstAccessToken}` } });
    } else if (closer === 'revoke') {
      const [first] = grant.refreshTokens;
      res = await box.form('/auth/revoke', { token: first!, token_type_hint: 'refresh_token' }, { Authorization: basic(client, secret) });
    } else if (closer === 'password') {
      res = await box.json('PUT', `/users/${userId}`, { password: `${password}-${round}` }, root);
      if (res.status === 200) currentPassword = `${password}-${round}`; // at once: a test cut short leaves the next one able to sign in
    } else {
      const session = await box.form('/auth/introspect', { token: grant.firstAccessToken }, { Authorization: basic(client, secret) });
      res = await box.json('DELETE', `/Session/${session.body.jti}`, undefined, root);
    }
    expect(res.status, res.text).to.equal(200);
  }

  /** Whether any token of the grant still works: introspection of each access token, a refresh with each refresh token. */
  async function survivors(client: string, grant: Grant): Promise<string[]> {
    const alive: string[] = [];
    for (const token of grant.accessTokens) {
      const res = await box.form('/auth/introspect', { token }, { Authorization: basic(client, secret) });
      if (res.body.active) alive.push(`access token of session ${res.body.jti}`);
    }
    // Refresh tokens last: a rotated-away one presented again would close the family itself.
    for (const token of grant.refreshTokens) {
      const res = await box.form('/auth/token', { grant_type: 'refresh_token', client_id: client, refresh_token: token });
      if (res.status === 200) alive.push('a refresh token');
    }
    return alive;
  }

  for (const rotation of [false, true]) {
    it(`no token of a closed grant works afterwards (rotation ${rotation ? 'on' : 'off'})`, async function () {
      const client = `app-${rotation ? 'rotating' : 'plain'}`;
      // Without rotation one refresh token may be used from several connections at once; with
      // rotation each use spends it, so each grant has one chain and the grants race together.
      const loopsPerGrant = rotation ? 1 : 4;
      const grantsPerRound = rotation ? 4 : 1;
      const rounds = 50;
      const failures: string[] = [];
      for (let round = 0; round < rounds; round++) {
        const closer = CLOSERS[round % CLOSERS.length]!;
        const grants: Grant[] = [];
        for (let g = 0; g < grantsPerRound; g++) grants.push(await signInGrant(client));
        await Promise.all(
          grants.map(async (grant) => {
            const [first] = grant.refreshTokens;
            let running = 0;
            const allStarted = new Promise<void>((resolve) => {
              const loops = Array.from({ length: loopsPerGrant }, () => {
                // Started, or already over: a loop another grant's close (a password change) ended before
                // its second use must not keep this grant's close waiting for ever.
                let signalled = false;
                const signal = (): void => {
                  if (signalled) return;
                  signalled = true;
                  if (++running === loopsPerGrant) resolve();
                };
                return refreshLoop(client, grant, first!, rotation, signal).finally(signal);
              });
              grant.loops = Promise.all(loops);
            });
            await allStarted;
            // A password change closes every grant of the person: one change per round is enough.
            if (closer !== 'password' || grant === grants[0]) await close(closer, client, grant, round);
            if (closer === 'password') grants.forEach((g) => (g.closed = true));
            else grant.closed = true;
            await grant.loops;
          }),
        );
        for (const grant of grants) {
          const alive = await survivors(client, grant);
          if (alive.length) failures.push(`round ${round} (${closer}): ${alive.join(', ')}`);
        }
      }
      expect(failures).to.deep.equal([]);
      const active = await box.json('GET', `/Session?client=${client}&active=true`, undefined, root);
      expect(active.body.total).to.equal(0);
    });
  }

  // A group-committed refresh that loses a deadlock (40P01) is decided again on the slow path,
  // which must hold the grant's lock as a close does. Deadlocks are rare under load, so this
  // test makes one: its own transaction locks the holder's row, waits until the box's refresh
  // statement waits for that row, then asks for every grant's lock at once — the table of the
  // box's locks (api/store/box-locks.ts), of which the statement holds a row. The box's
  // statement is the one PostgreSQL aborts; the slow path then queues behind the test's
  // transaction, and a close behind a second one queued after the slow path: a table's lock goes
  // to whoever asked first (a row's, to whoever runs first), so the slow path goes first, and the
  // close follows once it committed.
  for (const rotation of [false, true]) {
    it(`a refresh sent to the slow path by a deadlock still loses to a close racing it (rotation ${rotation ? 'on' : 'off'})`, async function () {
      const client = `app-${rotation ? 'rotating' : 'plain'}`;
      const blocker = new pg.Client({ connectionString: box.databaseUrl });
      const gate = new pg.Client({ connectionString: box.databaseUrl });
      const watcher = new pg.Client({ connectionString: box.databaseUrl });
      await Promise.all([blocker.connect(), gate.connect(), watcher.connect()]);
      const { pid } = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
      const { pid: gatePid } = (await gate.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
      /** Until a statement of the box matching `pattern` waits for a lock. */
      const waitsForLock = (what: string, pattern: string) =>
        eventually(
          what,
          async () =>
            (
              await watcher.query(
                `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> $1
                   AND wait_event_type = 'Lock' AND query LIKE $2`,
                [pid, pattern],
              )
            ).rowCount! > 0,
          30_000,
          20,
        );
      try {
        for (let round = 0; round < 2; round++) {
          const grant = await signInGrant(client);
          const [refreshToken] = grant.refreshTokens;
          const holder = (await box.form('/auth/introspect', { token: grant.firstAccessToken }, { Authorization: basic(client, secret) }))
            .body.jti as string;
          await blocker.query('BEGIN');
          // Never this transaction: the box's statement, waiting longer, is the deadlock's victim.
          await blocker.query("SET LOCAL deadlock_timeout = '10min'");
          await blocker.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [holder]);
          const refreshing = box.form('/auth/token', { grant_type: 'refresh_token', client_id: client, refresh_token: refreshToken! });
          await waitsForLock('the group-committed refresh waiting for the holder', '%WITH u AS%');
          await blocker.query('LOCK TABLE box_locks IN EXCLUSIVE MODE');
          await waitsForLock('the slow path waiting for the grant', '%WHERE refresh_token_hash = $1%');
          await gate.query('BEGIN');
          const gated = gate.query('LOCK TABLE box_locks IN EXCLUSIVE MODE');
          await eventually(
            'the second transaction waiting behind the slow path',
            async () =>
              (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [gatePid])).rowCount! > 0,
            30_000,
            20,
          );
          const closing = box.form(
            '/auth/revoke',
            { token: refreshToken!, token_type_hint: 'refresh_token' },
            { Authorization: basic(client, secret) },
          );
          await waitsForLock('the close waiting for the grant', '%array_agg(family)%AND active)%');
          await blocker.query('ROLLBACK');
          // The slow path asked for the grant first, so it issues, and the close that follows ends that too.
          const refreshed = await refreshing;
          expect(refreshed.status, refreshed.text).to.equal(200);
          await gated;
          await gate.query('ROLLBACK');
          const closed = await closing;
          expect(closed.status, closed.text).to.equal(200);
          grant.accessTokens.push(refreshed.body.access_token);
          if (rotation) grant.refreshTokens.add(refreshed.body.refresh_token);
          expect(await survivors(client, grant), `round ${round}`).to.deep.equal([]);
        }
      } finally {
        await Promise.all([blocker.query('ROLLBACK').catch(() => undefined), gate.query('ROLLBACK').catch(() => undefined)]);
        await Promise.all([blocker.end(), gate.end(), watcher.end()]);
      }
    });
  }
});
