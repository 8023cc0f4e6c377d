// Sessions: closing with DELETE /Session, rejection everywhere at once (JWTs
// included), the resource API over sessions, and the purge of old rows.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';

describe('sessions', function () {
  let box: Box;
  let root: string;
  let secret: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    ({ secret } = await box.addClient('app', { auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 3600 } } }));
    await box.addClient('opaque-app', {}, { secret });
  });
  after(async function () {
    await box?.stop();
  });

  const issue = async (client: string): Promise<string> =>
    (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(client, secret) })).body.access_token;

  for (const kind of ['app', 'opaque-app']) {
    it(`DELETE /Session with the token closes it at once (${kind === 'app' ? 'JWT' : 'opaque'})`, async function () {
      const token = await issue(kind);
      expect((await box.json('GET', `/Client/${kind}`, undefined, token)).status).to.equal(200);
      const closed = await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } });
      expect(closed.status).to.equal(200);
      expect(closed.body).to.include({ resourceType: 'Session', active: false });
      expect(closed.body.end).to.be.a('string');
      const after = await box.json('GET', `/Client/${kind}`, undefined, token);
      expect(after.status).to.equal(401);
      expect(after.body.error_description).to.match(/closed/);
      // Closing twice: the token is no longer valid.
      expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(401);
    });
  }

  for (const rotation of [false, true]) {
    it(`DELETE /Session with a refreshed access token ends the grant's refresh token (rotation ${rotation ? 'on' : 'off'})`, async function () {
      const id = `refresher-${rotation ? 'rotating' : 'plain'}`;
      await box.addClient(id, { auth: { client_credentials: { refresh_token: true, refresh_token_rotation: rotation } } }, { secret });
      const first = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) })).body;
      expect(first.refresh_token).to.be.a('string');
      const refreshed = await box.form('/auth/token', { grant_type: 'refresh_token', client_id: id, refresh_token: first.refresh_token });
      expect(refreshed.status, refreshed.text).to.equal(200);
      const refreshToken: string = refreshed.body.refresh_token ?? first.refresh_token;
      expect(refreshToken !== first.refresh_token).to.equal(rotation);

      const signedOut = await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${refreshed.body.access_token}` } });
      expect(signedOut.status).to.equal(200);
      expect(signedOut.body).to.include({ resourceType: 'Session', active: false });
      // Access tokens first: presenting a rotated-away refresh token would close the family itself.
      for (const token of [first.access_token, refreshed.body.access_token]) {
        expect((await box.json('GET', `/Client/${id}`, undefined, token)).status).to.equal(401);
      }
      for (const token of new Set([refreshToken, first.refresh_token])) {
        const again = await box.form('/auth/token', { grant_type: 'refresh_token', client_id: id, refresh_token: token });
        expect(again.status).to.equal(400);
        expect(again.body.error).to.equal('invalid_grant');
      }
    });
  }

  it('DELETE /Session without a token is 401', async function () {
    expect((await box.request('DELETE', '/Session')).status).to.equal(401);
  });

  it('GET /Session lists sessions; filters by client and active', async function () {
    const token = await issue('app');
    const jti = decodeJwt(token).jti;
    const list = await box.json('GET', '/Session?client=app&active=true&_count=1000', undefined, root);
    expect(list.status).to.equal(200);
    expect(list.body.resourceType).to.equal('Bundle');
    expect(list.body.entry.map((e: any) => e.resource.id)).to.include(jti);
    for (const e of list.body.entry) expect(e.resource.client.id).to.equal('app');
    const bad = await box.json('GET', '/Session?colour=red', undefined, root);
    expect(bad.status).to.equal(400);
  });

  it('PUT /Session/<id> can shorten exp or close it; history fields are read-only', async function () {
    const token = await issue('app');
    const id = decodeJwt(token).jti as string;
    const session = (await box.json('GET', `/Session/${id}`, undefined, root)).body;
    const soon = new Date(Date.now() + 60_000).toISOString();
    const shortened = await box.json('PUT', `/Session/${id}`, { ...session, exp: soon }, root);
    expect(shortened.status).to.equal(200);
    expect(shortened.body.exp).to.equal(soon);
    const readOnly = await box.json('PUT', `/Session/${id}`, { ...session, client: { id: 'other', resourceType: 'Client' } }, root);
    expect(readOnly.status).to.equal(422);
    expect(readOnly.body.errors).to.deep.equal({ client: ['is read-only'] });
    const closed = await box.json('PUT', `/Session/${id}`, { active: false }, root);
    expect(closed.body.active).to.equal(false);
    expect((await box.json('GET', '/Client/app', undefined, token)).status).to.equal(401);
    const reopen = await box.json('PUT', `/Session/${id}`, { active: true }, root);
    expect(reopen.status).to.equal(422);
  });

  it('DELETE /Session/<id> closes a session by id; POST /Session is refused', async function () {
    const token = await issue('opaque-app');
    const list = await box.json('GET', '/Session?client=opaque-app&active=true&_sort=-start&_count=1', undefined, root);
    const id = list.body.entry[0].resource.id;
    expect((await box.json('DELETE', `/Session/${id}`, undefined, root)).body.active).to.equal(false);
    expect((await box.json('GET', '/Client/opaque-app', undefined, token)).status).to.equal(401);
    expect((await box.json('POST', '/Session', { type: 'x' }, root)).status).to.equal(405);
    expect((await box.json('GET', '/Session/00000000-0000-7000-8000-000000000000', undefined, root)).status).to.equal(404);
    expect((await box.json('GET', '/Session/not-a-uuid', undefined, root)).status).to.equal(404);
  });

  it('stores tokens only as SHA-256 digests', async function () {
    const token = await issue('opaque-app');
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query('SELECT to_jsonb(s)::text AS row FROM sessions s WHERE access_token_hash = sha256($1::bytea)', [
        Buffer.from(token),
      ]);
      expect(rows).to.have.length(1);
      expect(rows[0].row).not.to.include(token);
    } finally {
      await db.end();
    }
  });
});

describe('sessions, purged', function () {
  let box: Box;
  before(async function () {
    // A box of its own: the purge it runs every second deletes closed sessions as well, which the
    // tests above close and then read.
    box = await Box.start({ env: { BOXAUTH_PURGE_INTERVAL_SECONDS: '1', BOXAUTH_SESSION_RETENTION_HOURS: '0' } });
  });
  after(async function () {
    await box?.stop();
  });

  it('purges expired sessions in the background', async function () {
    const root = await box.rootToken();
    const { secret } = await box.addClient('ephemeral', { auth: { client_credentials: { access_token_expiration: 1 } } });
    await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('ephemeral', secret) });
    const count = async (): Promise<number> => (await box.json('GET', '/Session?client=ephemeral', undefined, root)).body.total;
    expect(await count()).to.equal(1);
    // Expired after 1 s (PostgreSQL's clock decides), then gone at the job's next run (every second here).
    await eventually('the purge job to delete the expired session', async () => (await count()) === 0, 10_000, 250);
    expect(await count()).to.equal(0);
  });
});
