// The record of refused decisions that `boxauth explain <id>` reads (api/decision/record.ts):
// what a kept refusal holds of a long query or a huge AuthZEN context (a bounded excerpt,
// explained as one), each caller's share of the refusals kept per second under another's
// flood, and the table's cap (BOXAUTH_DECISION_MAX_ROWS) with its metrics. A stranger's
// flood (nothing kept) is in ./gate.test.ts.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';

const AUDIENCE = 'https://wiki.example';

/** The app `wiki` at the box's own origin, with no policy: every identified caller is refused (403) and the refusal kept. */
async function boxWithWiki(env: Record<string, string> = {}): Promise<{ box: Box; root: string }> {
  const box = await Box.start({ env });
  const root = await box.rootToken();
  const put = await box.json('PUT', '/App/wiki', { urls: [box.url], audience: AUDIENCE }, root);
  expect(put.status, put.text).to.equal(201);
  return { box, root };
}

async function clientToken(box: Box, id: string): Promise<string> {
  await box.addClient(id, { audience: [AUDIENCE] }, { secret: `${id}-secret`, policy: false });
  const res = await box.form(
    '/auth/token',
    { grant_type: 'client_credentials', audience: AUDIENCE },
    { Authorization: basic(id, `${id}-secret`) },
  );
  expect(res.status, res.text).to.equal(200);
  return res.body.access_token as string;
}

/** A forward-auth check of `uri` with a token, as Traefik sends it; the decision's id. */
async function refused(box: Box, token: string, uri = '/secret'): Promise<string> {
  const res = await box.request('GET', '/authz/forward-auth/wiki', {
    headers: {
      'X-Forwarded-Method': 'GET',
      'X-Forwarded-Host': new URL(box.url).host,
      'X-Forwarded-Uri': uri,
      Authorization: `Bearer ${token}`,
    },
  });
  expect(res.status, res.text).to.equal(403);
  return res.headers.get('x-boxauth-decision')!;
}

/** The kept decision, once the record's writer has written it. */
const kept = (box: Box, root: string, id: string) =>
  eventually(`decision ${id}, kept`, async () => {
    const res = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
    return res.status === 200 && res.body;
  });

async function query<T extends pg.QueryResultRow>(box: Box, sql: string, params: unknown[] = []): Promise<T[]> {
  const db = new pg.Client({ connectionString: box.databaseUrl });
  await db.connect();
  try {
    return (await db.query<T>(sql, params)).rows;
  } finally {
    await db.end();
  }
}

/** The bytes a kept row takes in the table, all of it. */
const rowBytes = async (box: Box, id: string): Promise<number> =>
  Number((await query<{ n: string }>(box, 'SELECT pg_column_size(d.*) AS n FROM decisions d WHERE id = $1', [id]))[0]!.n);

/** A counter or gauge of the box's metrics (0 when absent). */
function metric(exposition: string, name: string, labels = ''): number {
  const line = exposition.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('the record of refused decisions', function () {
  this.timeout(120_000);

  describe('what a refusal keeps, and how the box explains it', function () {
    let box: Box;
    let root: string;
    let quiet: string;
    before(async function () {
      ({ box, root } = await boxWithWiki());
      quiet = await clientToken(box, 'quiet');
    });
    after(async function () {
      await box?.stop();
    });

    it('keeps a 12,000-character query as an excerpt: each string at most 256 characters, the row under 10 kB', async function () {
      const long = (c: string): string => c.repeat(4000);
      const id = await refused(box, quiet, `/secret?a=${long('a')}&b=${long('b')}&c=${long('c')}`);
      const explained = await kept(box, root, id);
      expect(explained.request.query).to.deep.equal({ a: 'a'.repeat(256), b: 'b'.repeat(256), c: 'c'.repeat(256) });
      expect(explained.cut).to.deep.equal(['a', 'b', 'c'].map((p) => `request.query.${p}: 256 of 4000 characters kept`));
      // The policies are not evaluated again against the excerpt: it is not the request.
      for (const p of explained.policies as { why: string }[]) expect(p.why).to.match(/^not evaluated again: the record keeps an excerpt/);
      expect(await rowBytes(box, id)).to.be.below(10_000);
      // A request within the limits is kept whole, and its policies evaluated again as before.
      const whole = await kept(box, root, await refused(box, quiet, '/secret?a=1'));
      expect(whole).to.not.have.property('cut');
      expect(whole.request.query).to.deep.equal({ a: '1' });
    });

    it('keeps a 200,000-character AuthZEN context, and one of 1,900 keys, as excerpts of at most 4,096 characters', async function () {
      const { secret } = await box.addClient('wiki-pep', {}, { policy: false });
      await box.json(
        'PUT',
        '/AccessPolicy/wiki-pep-asks',
        {
          engine: 'matcho',
          link: [{ id: 'wiki-pep', resourceType: 'Client' }],
          matcho: { 'request-method': 'post', uri: '#^/apps/wiki/access/v1/evaluation$' },
        },
        root,
      );
      const pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-pep', secret) })).body
        .access_token as string;
      const ask = async (context: Record<string, unknown>): Promise<string> => {
        const res = await box.json(
          'POST',
          '/apps/wiki/access/v1/evaluation',
          { subject: { type: 'client', id: 'quiet' }, resource: { type: 'page', id: 'secret' }, action: { name: 'read' }, context },
          pep,
        );
        expect(res.status, res.text).to.equal(200);
        expect(res.body.decision).to.equal(false);
        // The decision's id travels in X-Boxauth-Decision: the body is the same for identical requests.
        return res.headers.get('x-boxauth-decision')!;
      };
      const huge = await ask({ note: 'n'.repeat(200_000) });
      const one = await kept(box, root, huge);
      expect(one.request.context).to.deep.equal({ note: 'n'.repeat(256) });
      expect(one.cut).to.deep.equal(['request.context.note: 256 of 200000 characters kept']);
      expect(await rowBytes(box, huge)).to.be.below(10_000);

      const wide = await ask(Object.fromEntries(Array.from({ length: 1900 }, (_, i) => [`key${i}`, 'v'.repeat(100)])));
      const many = await kept(box, root, wide);
      expect(JSON.stringify(many.request).length).to.be.at.most(4096);
      expect(many.cut.at(-1)).to.match(/^request\.context: \d+ of 1900 entries left out$/);
      expect(await rowBytes(box, wide)).to.be.below(10_000);
    });

    it("keeps a quiet caller's refusals while another caller floods the box with refused requests in parallel", async function () {
      const flooder = await clientToken(box, 'flooder');
      // A caller of its own: the tests before spent the quiet one's share, maybe within this very second.
      const calm = await clientToken(box, 'calm');
      const FLOOD = 1200;
      let answered = 0;
      const waiting: { n: number; go: () => void }[] = [];
      /** Resolves once `n` of the flood's requests were answered. */
      const floodAt = (n: number): Promise<void> => new Promise((go) => (answered >= n ? go() : waiting.push({ n, go })));
      const flood = Promise.all(
        Array.from({ length: 32 }, async (_, worker) => {
          for (let i = worker; i < FLOOD; i += 32) {
            await refused(box, flooder, `/secret?flood=${i}`);
            answered++;
            for (const w of waiting.filter((w) => w.n <= answered)) {
              waiting.splice(waiting.indexOf(w), 1);
              w.go();
            }
          }
        }),
      );
      // Five refusals of the quiet caller, spread over the flood (its share: 5 a second).
      const ids: string[] = [];
      for (let k = 1; k <= 5; k++) {
        await floodAt((k * FLOOD) / 7);
        ids.push(await refused(box, calm, `/secret?quiet=${k}`));
      }
      await flood;
      for (const id of ids) expect((await kept(box, root, id)).request.query).to.have.property('quiet');
      // The flooder got its share, no more: the rest of its refusals are in the audit log only.
      const flooded = await query<{ n: string }>(box, "SELECT count(*) AS n FROM decisions WHERE request->>'client' = 'flooder'");
      expect(Number(flooded[0]!.n))
        .to.be.above(0)
        .and.below(FLOOD / 2);
      expect(metric(await box.metrics(), 'boxauth_decisions_not_kept_total', 'why="share"')).to.be.above(FLOOD / 2);
    });
  });

  describe('the cap on the rows kept', function () {
    let box: Box;
    let root: string;
    before(async function () {
      ({ box, root } = await boxWithWiki({ BOXAUTH_DECISION_MAX_ROWS: '10', BOXAUTH_PURGE_INTERVAL_SECONDS: '1' }));
    });
    after(async function () {
      await box?.stop();
    });

    it('deletes the oldest beyond BOXAUTH_DECISION_MAX_ROWS, and says so in metrics and the log', async function () {
      const ids: string[] = [];
      for (const caller of ['one', 'two', 'three']) {
        const token = await clientToken(box, caller);
        for (let i = 0; i < 5; i++) ids.push(await refused(box, token)); // each caller within its share
      }
      await kept(box, root, ids.at(-1)!);
      const measured = await eventually('the purge job to cap the record', async () => {
        const m = await box.metrics();
        return metric(m, 'boxauth_decisions_not_kept_total', 'why="cap"') >= 5 && metric(m, 'boxauth_decision_records') === 10 && m;
      });
      await box.logged('BOXAUTH_DECISION_MAX_ROWS');
      expect(metric(measured, 'boxauth_decision_records_bytes')).to.be.above(0);
      expect(Number((await query<{ n: string }>(box, 'SELECT count(*) AS n FROM decisions'))[0]!.n)).to.equal(10);
      // The newest are kept; the oldest were deleted before their retention.
      expect((await box.json('GET', `/authz/decisions/${ids[0]!}`, undefined, root)).status).to.equal(404);
      expect((await box.json('GET', `/authz/decisions/${ids.at(-1)!}`, undefined, root)).status).to.equal(200);
    });
  });

  describe("an App's refusals, listed (GET /authz/decisions?app=<id>, the admin console's Apps tab)", function () {
    let box: Box;
    let root: string;
    const wiki: string[] = [];
    let payroll: string;
    before(async function () {
      ({ box, root } = await boxWithWiki());
      const token = await clientToken(box, 'reader');
      for (const uri of ['/one', '/two', '/three']) wiki.push(await refused(box, token, uri));
      await kept(box, root, wiki.at(-1)!);
      // Another App's refusal, newer than wiki's: listed with payroll's, never with wiki's.
      payroll = randomUUID();
      await query(
        box,
        `INSERT INTO decisions (id, app, at, status, reason, request, policies) VALUES ($1, 'payroll', now() + interval '1 minute', 403, 'no policy allows', '{}', '[]')`,
        [payroll],
      );
    });
    after(async function () {
      await box?.stop();
    });
    const get = (path: string, token = root) => box.json('GET', path, undefined, token);

    it("lists one App's kept refusals, newest first, bounded by _count", async function () {
      const all = await get('/authz/decisions?app=wiki');
      expect(all.status, all.text).to.equal(200);
      expect(all.body.map((d: { id: string }) => d.id)).to.deep.equal([...wiki].reverse());
      expect(all.body[0]).to.have.keys('id', 'app', 'at', 'status', 'reason');
      expect(all.body[0]).to.include({ app: 'wiki', status: 403 });
      expect((await get('/authz/decisions?app=wiki&_count=1')).body.map((d: { id: string }) => d.id)).to.deep.equal([wiki[2]]);
      expect((await get('/authz/decisions?app=payroll')).body.map((d: { id: string }) => d.id)).to.deep.equal([payroll]);
      expect((await get('/authz/decisions?app=nobody')).body).to.deep.equal([]);
      for (const bad of ['', '?_count=5', '?app=wiki&_count=0', '?app=wiki&_count=101', '?app=wiki&app=payroll', '?app=wiki&user=7']) {
        const res = await get(`/authz/decisions${bad}`);
        expect(res.status, `${bad}: ${res.text}`).to.equal(400);
      }
    });

    it("with ?app=, a decision of another App is not found; a policy on params.app grants one App's refusals and their explanations only", async function () {
      expect((await get(`/authz/decisions/${payroll}?app=wiki`)).status).to.equal(404);
      expect((await get(`/authz/decisions/${payroll}?app=payroll`)).status).to.equal(200);
      await box.addClient('wiki-owner', {}, { secret: 'wiki-owner-secret', policy: false });
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/wiki-owner-refusals',
        {
          engine: 'matcho',
          link: [{ id: 'wiki-owner', resourceType: 'Client' }],
          matcho: { 'request-method': 'get', uri: '#^/authz/decisions(/|$)', params: { app: 'wiki' } },
        },
        root,
      );
      expect(policy.status, policy.text).to.equal(201);
      const owner = (
        await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-owner', 'wiki-owner-secret') })
      ).body.access_token as string;
      expect((await get('/authz/decisions?app=wiki', owner)).body).to.have.length(3);
      expect((await get(`/authz/decisions/${wiki[0]!}?app=wiki`, owner)).status).to.equal(200);
      for (const path of ['/authz/decisions?app=payroll', `/authz/decisions/${payroll}`, `/authz/decisions/${payroll}?app=payroll`])
        expect((await get(path, owner)).status, path).to.equal(403);
      expect((await get(`/authz/decisions/${payroll}?app=wiki`, owner)).status).to.equal(404);
    });
  });
});
