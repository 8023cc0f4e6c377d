// Attacks on the audit trail (GET /AuditEvent): a delegated administrator learning of another App's
// events through the cursor a page ends with, a cursor the database cannot read, and a stranger
// with curl refused at a gate in a loop, whose refusals would push every other event out of the
// trail.
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, boxForSuite, eventually } from '../support/box.js';

describe('the audit trail, attacked', function () {
  this.timeout(90_000);
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const page = async (query: string, token: string): Promise<{ ids: string[]; next?: string; last?: string; body: any }> => {
    const res = await box.json('GET', `/AuditEvent?${query}`, undefined, token);
    expect(res.status, res.text).to.equal(200);
    return {
      ids: res.body.entry.map((e: any) => e.resource.resource?.id ?? ''),
      next: res.body.link.find((l: any) => l.relation === 'next')?.url,
      last: res.body.last,
      body: res.body,
    };
  };
  const sql = async (text: string, values: unknown[] = []): Promise<any[]> => {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      return (await db.query(text, values)).rows;
    } finally {
      await db.end();
    }
  };

  /** A token of the wiki's administrator: it may read the trail and the records named wiki…, nothing else. */
  async function wikiAdmin(): Promise<string> {
    const { secret } = await box.addClient('wiki-admin', {}, { policy: false });
    const matcho = {
      'request-method': 'get',
      params: { 'resource/type': { $enum: ['AuditEvent', 'App'] }, 'resource/id': { '$one-of': ['nil?', '#^wiki'] } },
    };
    const put = await box.json(
      'PUT',
      '/AccessPolicy/wiki-admin-reads',
      { engine: 'matcho', link: [{ id: 'wiki-admin', resourceType: 'Client' }], matcho },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    return (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-admin', secret) })).body
      .access_token as string;
  }

  it("a delegated administrator learns nothing of another App's events from where a page ends", async function () {
    const token = await wikiAdmin();
    await box.json('PUT', '/App/wiki', { urls: ['https://wiki.example'] }, root);
    for (let i = 0; i < 5; i++) await box.json('PUT', '/App/payroll', { urls: [`https://payroll-${i}.example`] }, root);
    const payroll = await page('resource_type=App&resource_id=payroll&_count=1', root);
    expect(payroll.ids).to.deep.equal(['payroll']);

    // Whether payroll changed (and, with since/until, when) was told by the next link and by `last`.
    const asked = await page('resource_type=App&resource_id=payroll&_count=1', token);
    expect(asked.ids).to.deep.equal([]);
    expect(asked.next).to.equal(undefined);
    const followed = await page('resource_type=App&resource_id=payroll&_after=1', token);
    expect(followed.ids).to.deep.equal([]);
    expect(followed.last).to.equal('1');

    // A page is filled with what the reader may see, past the events it may not: the wiki's, behind payroll's.
    const first = await page('_count=1', token);
    expect(first.ids).to.deep.equal(['wiki']);
    expect(first.next).to.be.a('string');
  });

  it('a cursor beyond what an id can be is a 400, and --follow may start from 0 on an empty trail', async function () {
    for (const query of ['_cursor=9999999999999999999', '_after=9223372036854775808']) {
      const res = await box.json('GET', `/AuditEvent?${query}`, undefined, root);
      expect(res.status, `${query}: ${res.text}`).to.equal(400);
    }
    expect((await box.json('GET', '/AuditEvent?_after=9223372036854775807', undefined, root)).status).to.equal(200);
    expect((await box.json('GET', '/AuditEvent?_after=0&event=nothing-such', undefined, root)).body.last).to.equal('0');
  });

  it("a stranger refused at a gate in a loop writes nothing to the trail; a caller's refusals kept are", async function () {
    const audience = 'https://gated.example';
    expect((await box.json('PUT', '/App/gated', { urls: [box.url], audience }, root)).status).to.equal(201);
    const gate = (headers: Record<string, string> = {}) =>
      box.request('GET', '/authz/forward-auth/gated', {
        headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Host': new URL(box.url).host, 'X-Forwarded-Uri': '/x', ...headers },
      });
    const strangers = await Promise.all(Array.from({ length: 60 }, () => gate()));
    expect(strangers.every((r) => r.status === 401 || r.status === 403 || r.status === 302)).to.equal(true);
    // Then one identified caller, refused and kept: the trail's writer keeps its events in order.
    await box.addClient('gated-caller', { audience: [audience] }, { secret: 'gated-caller-secret', policy: false });
    const token = (
      await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience },
        { Authorization: basic('gated-caller', 'gated-caller-secret') },
      )
    ).body.access_token as string;
    const refused = await gate({ Authorization: `Bearer ${token}` });
    expect(refused.status).to.equal(403);
    const id = refused.headers.get('x-boxauth-decision')!;
    await eventually(
      'the caller’s refusal in the trail',
      // (eventually returns any value but undefined and false: a count of 0 would end the wait)
      async () => (await page(`resource_type=Decision&resource_id=${id}`, root)).ids.length > 0,
    );
    const decisions = await sql("SELECT detail FROM audit_events WHERE event = 'decision' AND detail->>'app' = 'gated'");
    expect(decisions.map((d) => d.detail.id)).to.deep.equal([id]);
  });
});
