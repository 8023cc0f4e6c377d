// The audit trail in the database (GET /AuditEvent): who changed a policy and how, who turned a
// person off, a refused sign-in; every change with its record in one transaction; paging by
// cursor; what a delegated administrator may see of it; no secret in any stored event; and a
// flood held by the row cap, the newest kept.
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, boxForSuite, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

/** The policies these tests write are linked to a client nobody has: a policy linked to nothing would be global. */
const NOBODY = [{ id: 'nobody', resourceType: 'Client' }];

describe('the audit trail (GET /AuditEvent)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const events = async (query: string, token = root): Promise<any[]> => {
    const res = await box.json('GET', `/AuditEvent?${query}`, undefined, token);
    expect(res.status, res.text).to.equal(200);
    return (res.body.entry as { resource: any }[]).map((e) => e.resource);
  };
  const sql = async <T extends pg.QueryResultRow = any>(text: string, values: unknown[] = []): Promise<T[]> => {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      return (await db.query<T>(text, values)).rows;
    } finally {
      await db.end();
    }
  };

  it('says who changed a policy, and what changed, before → after', async function () {
    const policy = { engine: 'matcho', description: 'first words', matcho: { 'request-method': 'get' }, link: NOBODY };
    expect((await box.json('PUT', '/AccessPolicy/audited', policy, root)).status).to.equal(201);
    await box.json('PUT', '/AccessPolicy/audited', { ...policy, description: 'second words' }, root);
    await box.json('PUT', '/AccessPolicy/audited', { ...policy, description: 'second words' }, root); // no change: no event
    const found = await events('resource_type=AccessPolicy&resource_id=audited');
    expect(found.map((e) => e.action)).to.deep.equal(['changed', 'created']);
    const [changed, created] = found;
    expect(changed.actor).to.include({ client: 'root' });
    expect(changed.event).to.equal('record_changed');
    expect(changed.detail.changes).to.deep.equal({ description: { from: 'first words', to: 'second words' } });
    expect(created.detail.changes.description).to.deep.equal({ to: 'first words' });
    expect(Number(changed.id)).to.be.greaterThan(Number(created.id));
    expect(new Date(changed.at).getTime()).to.be.at.least(new Date(created.at).getTime());
  });

  it('says who turned a person off: the change, the account event and the sessions it ended', async function () {
    const user = (await box.json('POST', '/users', { email: 'off@example.com', password: 'off-password-1' }, root)).body;
    const browser = new FormAgent(box);
    await browser.signIn('off@example.com', 'off-password-1');
    expect((await box.json('PUT', `/users/${user.id}`, { active: false }, root)).status).to.equal(200);
    const found = await events(`user=${user.id}`);
    const turnedOff = found.find((e) => e.event === 'record_changed' && e.action === 'changed');
    expect(turnedOff?.detail.changes.active).to.deep.equal({ from: true, to: false });
    expect(turnedOff?.actor).to.include({ client: 'root' });
    expect(found.find((e) => e.event === 'account' && e.action === 'deactivated')?.actor).to.include({ client: 'root' });
    expect((await box.json('GET', `/users/${user.id}/sessions`, undefined, root)).body.browsers).to.deep.equal([]);
  });

  it("keeps a person's refused sign-in, with where it came from; a stranger's only in the log", async function () {
    const user = (await box.json('POST', '/users', { email: 'refused@example.com', password: 'refused-password-1' }, root)).body;
    await new FormAgent(box).signIn('refused@example.com', 'not-a-password-9');
    const refused = await eventually('the refused sign-in in the trail', async () =>
      (await events(`event=sign_in&outcome=failure&user=${user.id}`)).find((e) => e.detail.reason === 'wrong password'),
    );
    expect(refused.detail.address).to.be.a('string');
    expect(refused.actor.user).to.equal(String(user.id));
    // An address nobody has names no person: a stranger trying addresses fills no trail.
    for (let i = 0; i < 5; i++) await new FormAgent(box).signIn(`nobody-${i}@example.com`, 'not-a-password-9');
    await eventually('counted as left out', async () =>
      /boxauth_audit_events_not_kept_total\{[^}]*why="anonymous"[^}]*\} ([1-9]\d*)/.test(await box.metrics()),
    );
    expect((await events('event=sign_in&outcome=failure')).filter((e) => e.detail.reason === 'unknown email')).to.deep.equal([]);
  });

  it('a change whose record cannot be written does not happen: they commit together', async function () {
    await sql("ALTER TABLE audit_events ADD CONSTRAINT refuse_apps CHECK (resource_type IS DISTINCT FROM 'App')");
    try {
      const res = await box.json('PUT', '/App/unrecorded', { urls: ['https://unrecorded.example'] }, root);
      expect(res.status).to.equal(500);
      expect((await box.json('GET', '/App/unrecorded', undefined, root)).status).to.equal(404);
    } finally {
      await sql('ALTER TABLE audit_events DROP CONSTRAINT refuse_apps');
    }
    expect((await box.json('PUT', '/App/unrecorded', { urls: ['https://unrecorded.example'] }, root)).status).to.equal(201);
    expect(await events('resource_type=App&resource_id=unrecorded')).to.have.length(1);
  });

  it('many writers of one record at once: each event goes on from the one before', async function () {
    await box.json('PUT', '/AccessPolicy/raced', { engine: 'matcho', description: 'start', matcho: {}, link: NOBODY }, root);
    const writes = Array.from({ length: 16 }, (_, i) =>
      box.json('PUT', '/AccessPolicy/raced', { engine: 'matcho', description: `writer ${i}`, matcho: {}, link: NOBODY }, root),
    );
    expect((await Promise.all(writes)).every((r) => r.status === 200)).to.equal(true);
    const chain = (await events('resource_type=AccessPolicy&resource_id=raced&_count=100')).reverse();
    expect(chain[0].action).to.equal('created');
    for (let i = 1; i < chain.length; i++)
      expect(chain[i].detail.changes.description.from).to.equal(chain[i - 1].detail.changes.description.to);
    const now = (await box.json('GET', '/AccessPolicy/raced', undefined, root)).body;
    expect(chain.at(-1).detail.changes.description.to).to.equal(now.description);
  });

  it('pages by cursor, newest first, every event once', async function () {
    for (let i = 0; i < 5; i++) await box.json('PUT', `/AccessPolicy/paged-${i}`, { engine: 'matcho', matcho: {}, link: NOBODY }, root);
    const seen: string[] = [];
    let url: string | undefined = '/AuditEvent?resource_type=AccessPolicy&_count=2';
    while (url) {
      const res: { status: number; body: any } = await box.json('GET', url, undefined, root);
      expect(res.status).to.equal(200);
      seen.push(...res.body.entry.map((e: any) => e.resource.id));
      url = res.body.link.find((l: any) => l.relation === 'next')?.url;
    }
    expect(new Set(seen).size).to.equal(seen.length);
    expect(seen.map(Number)).to.deep.equal([...seen.map(Number)].sort((a, b) => b - a));
    const paged = (await events('resource_type=AccessPolicy&_count=1000')).map((e) => e.resource.id);
    expect(paged.filter((id) => id.startsWith('paged-'))).to.deep.equal(['paged-4', 'paged-3', 'paged-2', 'paged-1', 'paged-0']);
  });

  it('orders ids as numbers past 9 and 99: pages back by cursor and forward by _after, each event once', async function () {
    for (let i = 0; i < 120; i += 10)
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          box.json('PUT', `/App/numbered-${i + j}`, { urls: [`https://numbered-${i + j}.example`] }, root),
        ),
      );
    const stored = (await sql<{ id: string }>("SELECT a.id::text AS id FROM audit_events a WHERE resource_type = 'App' ORDER BY a.id")).map(
      (r) => r.id,
    );
    expect(stored.length).to.be.at.least(120);
    expect(Number(stored.at(-1))).to.be.above(100);

    // Newest first: the first page of the default size starts with the newest event.
    expect((await events('resource_type=App'))[0].id).to.equal(stored.at(-1));

    // Back by cursor, a page of 7 at a time: every event once, newest first.
    const back: string[] = [];
    let url: string | undefined = '/AuditEvent?resource_type=App&_count=7';
    while (url) {
      const res: { status: number; body: any } = await box.json('GET', url, undefined, root);
      expect(res.status).to.equal(200);
      back.push(...res.body.entry.map((e: any) => e.resource.id as string));
      url = res.body.link.find((l: any) => l.relation === 'next')?.url;
    }
    expect(back).to.deep.equal([...stored].reverse());

    // Forward by _after (as `boxauth events --follow` goes on from `last`): every event once, oldest first.
    const forward: string[] = [];
    for (let after = '0'; ;) {
      const res = await box.json('GET', `/AuditEvent?resource_type=App&_count=7&_after=${after}`, undefined, root);
      expect(res.status).to.equal(200);
      if (!res.body.entry.length) break;
      forward.push(...res.body.entry.map((e: any) => e.resource.id as string));
      after = res.body.last;
    }
    expect(forward).to.deep.equal(stored);
  });

  it('refuses what it cannot read, clearly, and changes nothing', async function () {
    for (const query of [
      'nope=1',
      'since=yesterday',
      '_count=0',
      '_count=5000',
      'outcome=maybe',
      '_cursor=abc',
      '_cursor=1&_after=2',
      'user=1&user=2',
    ]) {
      const res = await box.json('GET', `/AuditEvent?${query}`, undefined, root);
      expect(res.status, query).to.equal(400);
      expect(res.body.error_description, query)
        .to.be.a('string')
        .and.not.match(/undefined|TypeError/);
    }
    const { secret } = await box.addClient('no-policy-reader', {}, { policy: false });
    const token = (
      await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('no-policy-reader', secret) })
    ).body.access_token as string;
    expect((await box.json('GET', '/AuditEvent', undefined, token)).status).to.equal(403);
  });

  it("a delegated administrator sees the events of what it may read, and no other's, whatever the filter", async function () {
    const { secret } = await box.addClient('wiki-admin', {}, { policy: false });
    await box.json(
      'PUT',
      '/AccessPolicy/wiki-admin-reads',
      {
        engine: 'matcho',
        link: [{ id: 'wiki-admin', resourceType: 'Client' }],
        matcho: {
          'request-method': 'get',
          params: { 'resource/type': { $enum: ['AuditEvent', 'App', 'AccessPolicy'] }, 'resource/id': { '$one-of': ['nil?', '#^wiki'] } },
        },
      },
      root,
    );
    const token = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-admin', secret) })).body
      .access_token as string;
    await box.json('PUT', '/App/wiki', { urls: ['https://wiki.example'] }, root);
    await box.json('PUT', '/App/payroll', { urls: ['https://payroll.example'] }, root);
    const all = await events('_count=1000', token);
    expect(all.length).to.be.greaterThan(0);
    for (const e of all) expect(e.resource?.id ?? '', JSON.stringify(e)).to.match(/^wiki/);
    expect(await events('resource_type=App&resource_id=payroll', token)).to.deep.equal([]);
    expect(await events('event=sign_in', token)).to.deep.equal([]);
    expect(await events('resource_type=User', token)).to.deep.equal([]);
  });

  it('holds no secret the suite knows, in any event', async function () {
    const known = ['client-secret-of-audit', 'person-password-of-audit', 'second-password-of-audit', 'provider-secret-of-audit'];
    await box.json('PUT', '/Client/secretive', { grant_types: ['client_credentials'], secret: known[0] }, root);
    await box.json('PUT', '/Client/secretive', { grant_types: ['client_credentials'], secret: 'rotated-secret-of-audit' }, root);
    known.push('rotated-secret-of-audit');
    const user = (await box.json('POST', '/users', { email: 'secrets@example.com', password: known[1] }, root)).body;
    await box.json('PUT', `/users/${user.id}`, { password: known[2] }, root);
    await new FormAgent(box).signIn('secrets@example.com', known[1]!); // the old one: refused
    await box.json(
      'PUT',
      '/IdentityProvider/audit-idp',
      {
        type: 'oauth2',
        oauth2: {
          authorizationUrl: 'https://idp.example/authorize',
          tokenUrl: 'https://idp.example/token',
          userinfoUrl: 'https://idp.example/userinfo',
          clientId: 'box',
        },
        secret: known[3],
      },
      root,
    );
    known.push(root, box.rootSecret);
    const changes = (await events('client=secretive')).find((e) => e.action === 'changed')?.detail.changes;
    expect(changes).to.deep.equal({ secret: { to: '(changed)' } });
    expect((await events(`user=${user.id}&event=record_changed`))[0].detail.changes.password).to.deep.equal({ to: '(changed)' });
    await eventually('the refused sign-in kept', async () => (await events(`event=sign_in&user=${user.id}`)).length > 0);
    const stored = (await sql<{ row: string }>('SELECT row_to_json(a)::text AS row FROM audit_events a')).map((r) => r.row).join('\n');
    for (const secret of known) expect(stored.includes(secret), secret.slice(0, 12)).to.equal(false);
  });
});

describe('the audit trail under a flood', function () {
  this.timeout(90_000);
  let box: Box;

  boxForSuite((b) => (box = b), { env: { BOXAUTH_AUDIT_MAX_ROWS: '40', BOXAUTH_PURGE_INTERVAL_SECONDS: '1' } });

  it('keeps at most BOXAUTH_AUDIT_MAX_ROWS events, the newest, and counts those it deleted', async function () {
    const root = await box.rootToken();
    const writes = Array.from({ length: 120 }, (_, i) =>
      box.json('PUT', `/App/flood-${i}`, { urls: [`https://flood-${i}.example`] }, root),
    );
    expect((await Promise.all(writes)).every((r) => r.status === 201)).to.equal(true);
    await box.json('PUT', '/App/after-the-flood', { urls: ['https://after.example'] }, root);
    const newest = await eventually('the last event kept, and the trail back under its cap', async () => {
      const res = await box.json('GET', '/AuditEvent?_count=1000', undefined, root);
      const kept = res.body.entry.map((e: any) => e.resource);
      return kept.length <= 40 && kept.some((e: any) => e.resource?.id === 'after-the-flood') && kept;
    });
    expect(newest.length).to.be.at.most(40);
    const metrics = await box.metrics();
    expect(Number(/boxauth_audit_events_not_kept_total\{[^}]*why="cap"[^}]*\} (\d+)/.exec(metrics)?.[1] ?? 0)).to.be.greaterThan(0);
  });
});
