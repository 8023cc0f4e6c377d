// Two boxes in one database as the operator provisions them (operator/boxdb.ts: a schema and a
// role each), box A served by two processes, and box B's role — the URL B's pods get — doing what
// PostgreSQL lets any role of a database do to another box's change feed and locks: LISTEN on
// every channel it can name, NOTIFY in A's name, and take every advisory lock whose key it can
// compute from what it knows of A (its schema, its grants) or see held in pg_locks. A hears none
// of it and waits for none of it, and its own processes still hear each other.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLogger } from '../../api/log.js';
import { PostgresBoxDatabases, urlAs } from '../../operator/boxdb.js';
import { basic, Box, eventually, sleep } from '../support/box.js';
import { createDatabase } from '../support/postgres.js';

/** `work`, or a failure naming `what` once `ms` passed: a stalled request fails the test rather than hanging it. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // ended by the test
  await client.connect();
  return client;
}

/** The channels a role of the database can name: the shared ones every release used, and any made of A's names. */
const guessedChannels = (schema: string, role: string): string[] => [
  'boxauth',
  'boxauth_mail',
  'boxauth_notice_events',
  'boxauth_notices',
  schema,
  role,
  `boxauth_${schema}`.slice(0, 63),
  `${schema}_mail`.slice(0, 63),
];

/**
 * The advisory lock keys a role can compute for the box of `schema` (as the releases before
 * migration 039 made them), given the families of its grants and ids of its clients it came to know.
 */
const computableKeys = (schema: string, families: string[], clients: string[]): { sql: string; params: unknown[] }[] => [
  ...['records', 'keys', 'purge', 'email_key', 'migrate'].map((what) => ({
    sql: `SELECT hashtext('boxauth.${what}.' || $1)::bigint::text AS k`,
    params: [schema],
  })),
  { sql: "SELECT hashtextextended($1 || '.notice_events', 0)::text AS k", params: [schema] },
  { sql: "SELECT hashtext('boxauth.register.' || $1 || '.' || '127.0.0.1')::bigint::text AS k", params: [schema] },
  ...families.map((family) => ({
    sql: "SELECT hashtextextended('boxauth.grant.' || $1 || '.' || $2, 0)::text AS k",
    params: [schema, family],
  })),
  ...clients.map((id) => ({ sql: 'SELECT hashtextextended($1, 31)::text AS k', params: [`ssf-streams/${id}`] })),
];

describe("another box's role in the same database, against a box's change feed and locks", function () {
  this.timeout(180_000);
  let databaseUrl: string;
  let databases: PostgresBoxDatabases;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  let a: { schema: string; role: string; url: string };
  let bUrl: string;
  let a1: Box;
  let a2: Box;
  let root: string;
  let admin: pg.Client;
  const secret = 'svc-secret-123';
  /** A client whose tokens come with refresh tokens. */
  const SVC = { grant_types: ['client_credentials'], auth: { client_credentials: { refresh_token: true } } };

  const token = async (box: Box): Promise<{ access_token: string; refresh_token: string }> => {
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('svc', secret) });
    expect(res.status, res.text).to.equal(200);
    return res.body as { access_token: string; refresh_token: string };
  };
  /** What the token may do on A's API: 200 while its session is open, 401 once closed. */
  const used = async (box: Box, accessToken: string): Promise<number> =>
    (await box.json('GET', '/Client/svc', undefined, accessToken)).status;

  before(async function () {
    databaseUrl = await createDatabase('chan');
    databases = new PostgresBoxDatabases(createLogger('silent'));
    // Both boxes in schemas of one shared database (BOXAUTH_OPERATOR_BOX_ISOLATION=Schema): what this is about.
    const inShared = async (ns: string) =>
      databases.ensure(ns, { kind: 'role', adminUrl: databaseUrl, password, place: await databases.place(ns, databaseUrl, 'Schema') });
    const namesA = await inShared('team-a');
    const namesB = await inShared('team-b');
    a = { ...namesA, url: urlAs(databaseUrl, namesA.role, password) };
    bUrl = urlAs(databaseUrl, namesB.role, password);
    await databases.close(); // the operator's connections are not the boxes' business here
    a1 = await Box.start({ databaseUrl: a.url, env: { BOXAUTH_PURGE_INTERVAL_SECONDS: '1' } });
    a2 = await a1.startAnother({ BOXAUTH_PURGE_INTERVAL_SECONDS: '1' });
    root = await a1.rootToken();
    await a1.addClient('svc', SVC, { secret });
    admin = await connect(databaseUrl); // as the test's superuser
  });

  after(async function () {
    await Promise.all([a1?.stop(), a2?.stop()]);
    await admin?.end();
  });

  it("hears nothing of the box's changes on any channel it can name, while the box's processes hear each other", async function () {
    const listener = await connect(bUrl);
    try {
      const channels = guessedChannels(a.schema, a.role);
      const heard: string[] = [];
      const markers = new Set<string>();
      let allBack = (): void => undefined;
      const back = new Promise<void>((resolve) => (allBack = resolve));
      listener.on('notification', (msg) => {
        if (!markers.delete(`${msg.channel} ${msg.payload ?? ''}`)) heard.push(`${msg.channel}: ${msg.payload ?? ''}`);
        else if (markers.size === 0) allBack();
      });
      for (const channel of channels) await listener.query(`LISTEN ${listener.escapeIdentifier(channel)}`);

      // At A: a session revoked, a client changed, a person made.
      const { access_token: revoked } = await token(a1);
      expect(await used(a2, revoked)).to.equal(200); // cached at the other process now
      expect((await a1.form('/auth/revoke', { token: revoked }, { Authorization: basic('svc', secret) })).status).to.equal(200);
      const changed = await a1.json('PUT', '/Client/svc', { ...SVC, secret, description: 'changed' }, root);
      expect(changed.status, changed.text).to.equal(200);
      expect((await a1.json('POST', '/users', { email: 'ann@example.com', password: 'ann-password-1' }, root)).status).to.equal(201);

      // A's other process heard all of it, within a second.
      await eventually('the revoked token refused at the other process', async () => (await used(a2, revoked)) === 401, 1000, 20);
      await eventually(
        'the changed client at the other process',
        async () => (await a2.json('GET', '/Client/svc', undefined, root)).body.description === 'changed',
        1000,
        20,
      );

      // B's own notifications come back to it after everything committed before them: then it has heard all it ever will.
      const marker = `marker-${randomBytes(4).toString('hex')}`;
      for (const channel of channels) markers.add(`${channel} ${marker}`);
      await listener.query('SELECT pg_notify(c, $2) FROM unnest($1::text[]) c', [channels, marker]);
      await within(5000, "B's markers", back);
      expect(heard).to.deep.equal([]);
    } finally {
      await listener.end();
    }
  });

  it("changes nothing at the box by announcing a change in the box's name", async function () {
    const before = await a1.json('GET', '/Client/svc', undefined, root); // in a1's cache now
    expect(before.status).to.equal(200);
    // A change the feed is not told of (triggers off, as a superuser may): a1 keeps serving what it cached.
    await admin.query('SET session_replication_role = replica');
    await admin.query(
      `UPDATE ${pg.escapeIdentifier(a.schema)}.clients SET resource = jsonb_set(resource, '{description}', '"told by nobody"') WHERE id = 'svc'`,
    );
    await admin.query('SET session_replication_role = DEFAULT');
    expect((await a1.json('GET', '/Client/svc', undefined, root)).body.description).to.equal(before.body.description);

    const sender = await connect(bUrl);
    try {
      const forged = JSON.stringify({ schema: a.schema, table: 'clients', id: 'svc' });
      for (const channel of guessedChannels(a.schema, a.role)) await sender.query('SELECT pg_notify($1, $2)', [channel, forged]);
    } finally {
      await sender.end();
    }
    // A GET passes a read fence: every notification a1's feed would hear before it has been heard.
    expect((await a1.json('GET', '/Client/svc', undefined, root)).body.description).to.equal(before.body.description);
  });

  it('holds up none of its record writes, refreshes, key rotation, upkeep or starts by holding every lock it can compute or see', async function () {
    const { refresh_token: refreshToken, access_token: accessToken } = await token(a1);
    const { rows: grants } = await admin.query<{ family: string }>(
      `SELECT DISTINCT family::text FROM ${pg.escapeIdentifier(a.schema)}.sessions WHERE active`,
    );
    const b = await connect(bUrl);
    const grabbers: pg.Client[] = [];
    let watching = true;
    const held = new Set<string>();
    /** Takes `key` on a connection of its own, waiting for A to let go of it, and keeps it. */
    const grab = async (key: string): Promise<void> => {
      if (held.has(key)) return;
      held.add(key);
      const c = await connect(bUrl);
      grabbers.push(c);
      c.query('SELECT pg_advisory_lock($1::bigint)', [key]).catch(() => undefined);
    };
    // What B sees held in pg_locks by another role's connections, taken as soon as seen.
    const watcher = (async () => {
      const w = await connect(bUrl);
      grabbers.push(w);
      while (watching) {
        await sleep(2);
        const { rows } = await w.query<{ k: string }>(
          `SELECT ((classid::bigint << 32) | objid::bigint)::text AS k FROM pg_locks
           WHERE locktype = 'advisory' AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND pid <> pg_backend_pid() AND pid NOT IN (SELECT pid FROM pg_stat_activity WHERE usename = current_user)`,
        );
        for (const { k } of rows) await grab(k);
      }
    })();
    try {
      const { rows: clientIds } = await admin.query<{ id: string }>(`SELECT id FROM ${pg.escapeIdentifier(a.schema)}.clients`);
      for (const { sql, params } of computableKeys(
        a.schema,
        grants.map((g) => g.family),
        clientIds.map((c) => c.id),
      )) {
        const { rows } = await b.query<{ k: string }>(sql, params);
        expect((await b.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [rows[0]!.k])).rows[0]!.ok).to.equal(true);
        held.add(rows[0]!.k);
      }

      // A record written, a grant refreshed and its token used, at both processes.
      for (const box of [a1, a2]) {
        const put = await within(
          15_000,
          'a record write',
          box.json('PUT', `/Client/more-${box.port}`, { grant_types: ['client_credentials'], secret }, root),
        );
        expect(put.status, put.text).to.equal(201);
        const refreshed = await within(
          15_000,
          'a refresh',
          box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { Authorization: basic('svc', secret) }),
        );
        expect(refreshed.status, refreshed.text).to.equal(200);
        expect(await used(box, accessToken)).to.equal(200);
      }
      // A grant closed, while its refreshes are B's to hold if B could.
      expect(
        (await within(15_000, 'a revocation', a2.form('/auth/revoke', { token: refreshToken }, { Authorization: basic('svc', secret) })))
          .status,
      ).to.equal(200);

      // The upkeep: keys due for rotation are rotated, and sessions past their retention purged.
      const kids = async (): Promise<string[]> =>
        ((await a1.json('GET', '/.well-known/jwks.json')).body.keys as { kid: string }[]).map((k) => k.kid);
      const old = await kids();
      await admin.query(`UPDATE ${pg.escapeIdentifier(a.schema)}.signing_keys SET created_at = now() - interval '40 days'`);
      await admin.query(`UPDATE ${pg.escapeIdentifier(a.schema)}.sessions SET purge_at = now() - interval '2 days' WHERE NOT active`);
      await eventually('a new signing key', async () => (await kids()).some((k) => !old.includes(k)), 15_000);
      await eventually(
        'the closed sessions purged',
        async () => (await admin.query(`SELECT FROM ${pg.escapeIdentifier(a.schema)}.sessions WHERE NOT active`)).rowCount === 0,
        15_000,
      );

      // A third process starts: migrations, signing keys, the root client and admin, each under its lock.
      const a3 = await a1.startAnother();
      await a3.stop();
      expect(held.size).to.be.greaterThan(8); // B did hold what it could name
    } finally {
      watching = false;
      await watcher.catch(() => undefined);
      await Promise.all([b, ...grabbers].map((c) => c.end().catch(() => undefined)));
    }
  });
});
