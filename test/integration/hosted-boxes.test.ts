// A host of many boxes (api/host/): each box at its own issuer, with its own
// database, keys and records; opened on its first request and closed when idle,
// holding no connection then; the registry read again when it changes.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { basic, Box, eventually } from '../support/box.js';
import { Host } from '../support/host.js';
import { createDatabase } from '../support/postgres.js';

/** Connections to `databaseUrl`'s database (any role, any state), as PostgreSQL counts them. */
async function connectionsTo(databaseUrl: string): Promise<number> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const db = new pg.Client({ connectionString: admin.toString() });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
    return rows[0]!.n;
  } finally {
    await db.end();
  }
}

const openBoxes = (metrics: string): number => Number(/boxauth_host_boxes\{[^}]*state="open"[^}]*\} (\d+)/.exec(metrics)?.[1] ?? NaN);

describe('a host of many boxes', function () {
  this.timeout(120_000);
  let host: Host;

  before(async () => {
    host = await Host.start([{ team: 'team-a' }, { team: 'team-b' }], { BOXAUTH_HOST_IDLE_SECONDS: '1' });
    await Promise.all([host.ready('team-a'), host.ready('team-b')]);
  });
  after(async () => {
    await host?.stop();
  });

  it('serves each box at its own issuer, with its own keys', async () => {
    const [a, b] = [host.box('team-a'), host.box('team-b')];
    const metaA = await a.json('GET', '/.well-known/openid-configuration');
    const metaB = await b.json('GET', '/.well-known/openid-configuration');
    expect(metaA.body.issuer).to.equal(host.urlOf('team-a'));
    expect(metaB.body.issuer).to.equal(host.urlOf('team-b'));
    const kids = async (box: typeof a): Promise<string[]> =>
      ((await box.json('GET', '/.well-known/jwks.json')).body.keys as { kid: string }[]).map((k) => k.kid);
    const [kidsA, kidsB] = [await kids(a), await kids(b)];
    expect(kidsA.length).to.be.greaterThan(0);
    expect(kidsA.filter((k) => kidsB.includes(k))).to.deep.equal([]);
    // Each box's series under its own label, on the host's one metrics port.
    const metrics = await host.metrics();
    for (const box of ['team-a/default', 'team-b/default'])
      expect(metrics).to.match(new RegExp(`boxauth_db_pool_connections\\{[^}]*box="${box}"`));
  });

  it("refuses box A's tokens and client at box B", async () => {
    const [a, b] = [host.box('team-a'), host.box('team-b')];
    const tokenA = await a.rootToken();
    expect((await a.json('GET', '/Client', undefined, tokenA)).status).to.equal(200);
    expect((await b.json('GET', '/Client', undefined, tokenA)).status).to.equal(401);
    // A's root secret is not B's: B's root client refuses it.
    const wrong = await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', a.rootSecret) });
    expect(wrong.status).to.equal(401);
    const introspected = await b.form('/auth/introspect', { token: tokenA }, { Authorization: basic('root', b.rootSecret) });
    expect(introspected.body).to.deep.equal({ active: false });
  });

  it('answers a name no box has with 404, without the name', async () => {
    const res = await fetch(`http://nobody.test:${host.port}/auth/token`, { method: 'POST', dispatcher: host.dispatcher } as RequestInit);
    expect(res.status).to.equal(404);
    expect(await res.text()).to.not.contain('nobody');
  });

  it('closes an idle box: no connection held, and it answers again when asked', async () => {
    const a = host.box('team-a');
    const databaseUrl = host.entries.get('team-a')!.env.DATABASE_URL!;
    await a.rootToken();
    expect(await connectionsTo(databaseUrl)).to.be.greaterThan(0);
    await eventually(
      'the box closed',
      async () => openBoxes(await host.metrics()) === 0 && (await connectionsTo(databaseUrl)) === 0,
      15_000,
    );
    expect(await a.rootToken()).to.be.a('string');
  });

  it('closes an idle box after requests pipelined on a connection its client hung up, and serves it again', async () => {
    const a = host.box('team-a');
    await a.rootToken();
    const at = `team-a.test:${host.port}`;
    const body = 'grant_type=client_credentials';
    // A wrong secret (an argon2 run) first; the answers of the others wait behind its answer.
    const wrongSecret =
      `POST /auth/token HTTP/1.1\r\nHost: ${at}\r\nAuthorization: ${basic('root', 'a-wrong-secret')}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const discovery = `GET /.well-known/openid-configuration HTTP/1.1\r\nHost: ${at}\r\n\r\n`;
    const connection = net.connect(host.port, '127.0.0.1').on('error', () => undefined);
    connection.write(wrongSecret + discovery.repeat(5));
    await new Promise((resolve) => setTimeout(resolve, 10));
    connection.destroy();
    // Each of them is over: none is counted in flight for ever, which would keep the box open.
    await eventually('the box closed', async () => openBoxes(await host.metrics()) === 0, 15_000);
    expect(await a.rootToken()).to.be.a('string');
  });

  it('answers 503 for a box whose variables are wrong, and serves the others', async () => {
    await host.add({ team: 'team-bad', env: { BOXAUTH_JWT_ALG: 'none' } });
    await eventually('the fault logged', async () => host.logs.join('\n').includes('BOXAUTH_JWT_ALG must be one of'), 10_000);
    const res = await host.box('team-bad').json('GET', '/.well-known/openid-configuration');
    expect(res.status).to.equal(503);
    expect(res.text).to.not.contain('JWT_ALG'); // why is in the host's log, not for whoever asks
    expect(await host.box('team-a').rootToken()).to.be.a('string');
    host.remove('team-bad');
  });

  it('serves a box added to the registry, and keeps its boxes through a registry that does not parse', async () => {
    await host.add({ team: 'team-c' });
    await host.ready('team-c');
    expect(await host.box('team-c').rootToken()).to.be.a('string');
    host.writeRegistry('{"boxes": [');
    await eventually('the fault logged', async () => host.logs.join('\n').includes('host registry not applied'), 10_000);
    expect(await host.box('team-c').rootToken()).to.be.a('string');
    const c = host.box('team-c');
    host.remove('team-c');
    await eventually('team-c gone', async () => (await c.json('GET', '/readyz')).status === 404, 10_000);
  });
});

describe('a box moved between its own process and a host', function () {
  this.timeout(120_000);
  let host: Host | undefined;
  let dedicated: Box | undefined;
  after(async () => {
    await dedicated?.stop();
    await host?.stop();
  });

  it('keeps its tokens, keys and records both ways', async () => {
    host = await Host.start([]);
    const databaseUrl = await createDatabase();
    const env = {
      BOXAUTH_BASE_URL: host.urlOf('team-m'),
      BOXAUTH_FACTOR_KEY: randomBytes(32).toString('base64'),
      BOXAUTH_ROOT_CLIENT_SECRET: `root-${randomBytes(12).toString('hex')}`,
    };
    dedicated = await Box.start({ databaseUrl, env });
    const svc = await dedicated.addClient('svc', { auth: { client_credentials: { token_format: 'jwt' } } });
    const token = async (box: Box, id: string, secret: string): Promise<string> => {
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
      expect(res.status, res.text).to.equal(200);
      return res.body.access_token as string;
    };
    const opaque = await token(dedicated, 'root', env.BOXAUTH_ROOT_CLIENT_SECRET);
    const jwt = await token(dedicated, svc.id, svc.secret);
    const kids = async (box: Box): Promise<string> => JSON.stringify((await box.json('GET', '/.well-known/jwks.json')).body);
    const keysBefore = await kids(dedicated);

    // To the host: the same database and variables; the dedicated process stops once the host answers.
    await host.add({ team: 'team-m', databaseUrl, env });
    await host.ready('team-m');
    await dedicated.stop();
    const hosted = host.box('team-m');
    expect(await kids(hosted)).to.equal(keysBefore);
    for (const t of [opaque, jwt])
      expect((await hosted.json('GET', '/Client/svc', undefined, t)).status, 'a token of before').to.not.equal(401);
    const introspected = await hosted.form('/auth/introspect', { token: jwt }, { Authorization: basic(svc.id, svc.secret) });
    expect(introspected.body.active).to.equal(true);
    const madeHosted = await token(hosted, 'root', env.BOXAUTH_ROOT_CLIENT_SECRET);

    // And back: its own process again, the host's entry removed.
    dedicated = await Box.start({ databaseUrl, env });
    host.remove('team-m');
    expect(await kids(dedicated)).to.equal(keysBefore);
    for (const t of [opaque, jwt, madeHosted]) {
      expect(
        (await dedicated.form('/auth/introspect', { token: t }, { Authorization: basic('root', env.BOXAUTH_ROOT_CLIENT_SECRET) })).body
          .active,
      ).to.equal(true);
    }
  });
});
