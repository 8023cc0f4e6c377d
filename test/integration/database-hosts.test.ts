// A box on a DATABASE_URL of several hosts, and what it answers while its database
// is out of reach: a host that is down is passed over; a database that falls silent
// (a machine gone, its packets dropped) is a 503 within seconds, never a hang; and
// what the box knew when it lost the database still answers from memory for
// BOXAUTH_OUTAGE_MEMORY_SECONDS (tokens at introspection and at the decision point,
// the signing keys, discovery), while everything that needs the database is a 503.
// Failover between two real PostgreSQL servers is test/integration/failover.test.ts.
import { expect } from 'chai';
import net from 'node:net';
import pg from 'pg';
import { CHANGE_FEED_APPLICATION_NAME } from '../../api/db/notify.js';
import { Box, basic, eventually, sleep } from '../support/box.js';
import { createDatabase } from '../support/postgres.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const WIKI = 'https://wiki.example';

/** An app behind the decision point, and a client allowed to it (introspection included). */
async function prepareWiki(box: Box, root: string): Promise<void> {
  await box.addClient('indexer', { audience: [WIKI] }, { secret: 'indexer-secret', policy: false });
  expect((await box.json('PUT', '/App/wiki', { urls: [WIKI], audience: WIKI }, root)).status).to.equal(201);
  const policy = { app: 'wiki', engine: 'allow', link: [{ id: 'indexer', resourceType: 'Client' }] };
  expect((await box.json('PUT', '/AccessPolicy/wiki-indexer', policy, root)).status).to.equal(201);
}

const tokenAt = (box: Box, client = 'root', secret = box.rootSecret, extra: Record<string, string> = {}) =>
  box.form('/auth/token', { grant_type: 'client_credentials', ...extra }, { Authorization: basic(client, secret) });
const wikiTokenAt = async (box: Box) => (await tokenAt(box, 'indexer', 'indexer-secret', { audience: WIKI })).body.access_token as string;
const introspectAt = (box: Box, t: string) =>
  box.form('/auth/introspect', { token: t }, { Authorization: basic('indexer', 'indexer-secret') });
const revokeAt = (box: Box, t: string) => box.form('/auth/revoke', { token: t }, { Authorization: basic('indexer', 'indexer-secret') });
const forwardAuthAt = (box: Box, t: string) =>
  box.request('GET', '/authz/forward-auth/wiki', {
    headers: {
      Authorization: `Bearer ${t}`,
      'X-Forwarded-Method': 'GET',
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'wiki.example',
      'X-Forwarded-Uri': '/docs/a',
    },
  });
const unavailable = (res: { status: number; body: { error?: unknown }; headers: Headers }) =>
  res.status === 503 && res.body?.error === 'temporarily_unavailable' && res.headers.get('retry-after') === '5';

describe('a database of several hosts, and its outages', function () {
  this.timeout(120_000);
  let box: Box;
  let proxy: TcpProxy;
  let root: string;

  before(async function () {
    const url = new URL(await createDatabase());
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    // The first host is down: the box goes on to the second, as libpq would.
    const hosts = `127.0.0.1:${await closedPort()},127.0.0.1:${proxy.port}`;
    const databaseUrl = `postgres://${url.username}:${url.password}@${hosts}${url.pathname}`;
    box = await Box.start({ databaseUrl, movableClock: true, env: { BOXAUTH_DATABASE_CONNECT_TIMEOUT_MS: '1000' } });
    root = await box.rootToken();
    await prepareWiki(box, root);
  });

  after(async function () {
    await box?.stop();
    await proxy?.cut();
  });

  const token = (client = 'root', secret = box.rootSecret, extra: Record<string, string> = {}) => tokenAt(box, client, secret, extra);
  const introspect = (t: string) => introspectAt(box, t);
  const forwardAuth = (t: string) => forwardAuthAt(box, t);

  it('a host of DATABASE_URL that is down is passed over: the box serves from the next', async function () {
    expect((await token()).status).to.equal(200);
    expect((await box.request('GET', '/readyz')).status).to.equal(200);
  });

  it('a database that falls silent is a 503 within seconds, never a hang; the box serves again once it answers', async function () {
    const before = (await token('indexer', 'indexer-secret', { audience: WIKI })).body.access_token as string;
    const used = await forwardAuth(before);
    expect(used.status, used.text).to.equal(200);
    proxy.silence();
    try {
      // Each request ends, with the documented 503, well before a client would give up: no statement
      // waits on a server that does not answer (the watch gives it up; its connections are cut).
      const answers = await Promise.all(Array.from({ length: 6 }, () => token().then((res) => `${res.status} ${res.body?.error}`)));
      expect(answers).to.deep.equal(Array(6).fill('503 temporarily_unavailable'));
      const ready = await box.request('GET', '/readyz');
      expect([ready.status, ready.body.problems]).to.deep.equal([503, ['database unreachable']]);
      await box.logged('database host given up');
      // What the box knew answers from memory meanwhile.
      expect((await forwardAuth(before)).status).to.equal(200);
      // And at once: once the hosts failed to answer a search, no request waits for the next one (each
      // takes the connect timeout, 1 s here, as long as the hosts stay silent); they run in the background.
      for (let i = 0; i < 6; i++) {
        await sleep(300);
        const started = Date.now();
        const [remembered, needsDatabase] = await Promise.all([forwardAuth(before), token()]);
        expect([remembered.status, needsDatabase.status]).to.deep.equal([200, 503]);
        expect(Date.now() - started, 'waited for a search of silent hosts').to.be.lessThan(800);
      }
    } finally {
      await proxy.restore();
    }
    await eventually('tokens again', async () => (await token()).status === 200, 15_000);
    await eventually('ready again', async () => (await box.request('GET', '/readyz')).status === 200, 15_000);
  });

  it('while the database is unreachable, what the box knew answers from memory, for BOXAUTH_OUTAGE_MEMORY_SECONDS; the rest is 503', async function () {
    const known = (await token('indexer', 'indexer-secret', { audience: WIKI })).body.access_token as string;
    const revoked = (await token('indexer', 'indexer-secret', { audience: WIKI })).body.access_token as string;
    // Both used before the outage (so the box knows them), one then revoked: a close heard before the outage holds through it.
    for (const t of [known, revoked]) {
      const res = await forwardAuth(t);
      expect(res.status, res.text).to.equal(200);
    }
    expect((await box.form('/auth/revoke', { token: revoked }, { Authorization: basic('indexer', 'indexer-secret') })).status).to.equal(
      200,
    );
    await eventually('the revocation heard', async () => (await forwardAuth(revoked)).status === 401, 5_000, 20);
    const unused = (await token('indexer', 'indexer-secret', { audience: WIKI })).body.access_token as string; // never seen since
    await proxy.cut();
    try {
      await eventually('the outage seen', async () => unavailable(await token()), 10_000);
      // Known: introspection and the decision point answer from memory; keys and discovery are in memory anyway.
      const introspected = await introspect(known);
      expect([introspected.status, introspected.body.active, introspected.body.client_id]).to.deep.equal([200, true, 'indexer']);
      const allowed = await forwardAuth(known);
      expect([allowed.status, allowed.headers.get('x-auth-request-client')]).to.deep.equal([200, 'indexer']);
      // Revoked before the outage: known closed (401), or forgotten (503); never active, never allowed.
      const introspectedRevoked = await introspect(revoked);
      const said = introspectedRevoked.status === 200 ? JSON.stringify(introspectedRevoked.body) : String(introspectedRevoked.status);
      expect(said).to.be.oneOf(['503', '{"active":false}']);
      expect((await forwardAuth(revoked)).status).to.be.oneOf([401, 503]);
      expect((await box.json('GET', '/.well-known/jwks.json')).body.keys.length).to.be.greaterThan(0);
      expect((await box.json('GET', '/.well-known/openid-configuration')).status).to.equal(200);
      // Not known, or needing the database: 503, never a guess.
      expect(unavailable(await introspect(unused)), 'a token the box never saw').to.equal(true);
      expect(unavailable(await forwardAuth(unused))).to.equal(true);
      expect(unavailable(await box.json('GET', '/users', undefined, root))).to.equal(true);
      expect(unavailable(await box.form('/auth/revoke', { token: known }, { Authorization: basic('indexer', 'indexer-secret') }))).to.equal(
        true,
      );
      // The memory is only as long as it is allowed to be (60 s by default).
      box.advanceClock(61);
      expect(unavailable(await introspect(known)), 'after BOXAUTH_OUTAGE_MEMORY_SECONDS').to.equal(true);
      expect(unavailable(await forwardAuth(known))).to.equal(true);
    } finally {
      await proxy.restore();
    }
    // Back: read afresh, and the token still good.
    await eventually('introspection from the database again', async () => (await introspect(known)).body.active === true, 15_000);
  });
});

describe('the change feed, on a connection of its own', function () {
  this.timeout(120_000);
  let box: Box; // DATABASE_URL through one proxy, the change feed (BOXAUTH_DATABASE_DIRECT_URL) through another
  let other: Box; // another process, whose writes the first hears of only through its feed
  let database: string;
  let poolProxy: TcpProxy;
  let feedProxy: TcpProxy;

  before(async function () {
    database = await createDatabase();
    const url = new URL(database);
    poolProxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    feedProxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    box = await Box.start({
      databaseUrl: poolProxy.through(database),
      env: { BOXAUTH_DATABASE_DIRECT_URL: feedProxy.through(database), BOXAUTH_DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    });
    await prepareWiki(box, await box.rootToken());
    other = await box.startAnother();
  });

  after(async function () {
    await other?.stop();
    await box?.stop();
    await poolProxy?.cut();
    await feedProxy?.cut();
  });

  /** One query on this database, on a connection of the test's own. */
  async function query<R extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: database });
    await client.connect();
    try {
      return (await client.query<R>(text, params)).rows;
    } finally {
      await client.end();
    }
  }

  /** The server processes of the boxes' connections of one kind on this database (pg_stat_activity). */
  async function backends(applicationName: string): Promise<number[]> {
    const sql = 'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1';
    return (await query<{ pid: number }>(sql, [applicationName])).map((r) => r.pid);
  }

  it('one that stops answering without a word is taken for dead within seconds: a revocation elsewhere still holds', async function () {
    const t = await wikiTokenAt(box);
    expect((await forwardAuthAt(box, t)).status).to.equal(200); // known to the box now
    // The server processes behind the feeds stop (SIGSTOP): their connections stay open and say nothing,
    // as one a firewall forgot does. The database itself answers everything else.
    const stopped = await backends(CHANGE_FEED_APPLICATION_NAME);
    expect(stopped.length).to.be.greaterThan(0);
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    try {
      expect((await revokeAt(other, t)).status).to.equal(200);
      await eventually('the revocation holds at the first process', async () => (await forwardAuthAt(box, t)).status === 401, 10_000, 50);
      await box.logged('change feed connection does not answer');
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
    }
  });

  it('lost while the database still answers, it lets nothing answer from memory in the outage that follows', async function () {
    const t = await wikiTokenAt(box);
    expect((await forwardAuthAt(box, t)).status).to.equal(200); // known to the box when its feed goes
    // Listening (after the first test it listens again), then lost: its own connection cut, the database still there.
    const said = (what: string) => box.logs.filter((l) => l.includes(what)).length;
    await eventually('the feed listening', async () => said('change feed reconnected') >= said('change feed connection lost'));
    const lostBefore = said('change feed connection lost');
    await feedProxy.cut();
    try {
      await eventually('the feed lost', async () => said('change feed connection lost') > lostBefore);
      // The database answers, the feed does not hear: the token is revoked by another process meanwhile.
      expect((await revokeAt(other, t)).status).to.equal(200);
      expect((await forwardAuthAt(box, t)).status, 'read through while the feed is lost').to.equal(401);
      await poolProxy.cut();
      try {
        await eventually('the outage seen', async () => unavailable(await tokenAt(box)), 10_000);
        // What the box held when its feed went says the token is good: it must not say so now.
        expect(unavailable(await forwardAuthAt(box, t)), 'the decision point').to.equal(true);
        expect(unavailable(await introspectAt(box, t)), 'introspection').to.equal(true);
      } finally {
        await poolProxy.restore();
      }
    } finally {
      await feedProxy.restore();
    }
    await eventually('serving again', async () => (await tokenAt(box)).status === 200, 15_000);
  });

  it('one connection an administrator terminates is made again: the database host is not given up for it', async function () {
    const said = (what: string) => box.logs.filter((l) => l.includes(what)).length;
    // The watch's connections (one per database URL of each process: three here; after an outage, made at
    // the first check once the host is found again), closed under them.
    let checks: number[] = [];
    await eventually('every watch connected', async () => (checks = await backends('boxauth host check')).length >= 3, 10_000, 50);
    const givenUp = said('database host given up');
    await query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [checks]);
    // A few checks later: still the same host, every request served.
    for (let i = 0; i < 5; i++) {
      expect((await tokenAt(box)).status).to.equal(200);
      await sleep(500);
    }
    expect(said('database host given up'), 'given up for one closed connection').to.equal(givenUp);
    const again = await backends('boxauth host check');
    expect(again.filter((pid) => !checks.includes(pid))).to.not.deep.equal([]);
  });
});
