// The cel engine over HTTP (docs/concepts/access-control.md): an expression over the request
// object, refused when written if it names a field that cannot exist or costs too much, allowing
// only on true; the owner rule through AuthZEN, a box API policy, dry-run and explain; and the
// attacks of issue 53 on it (cost, another app's data and fields, prototype keys, an expression
// stored by an older version that no longer compiles).
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { pepReadsPeople } from '../support/pep.js';

type Json = Record<string, any>;

describe('the cel engine', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let alice: string; // a user id, as an AuthZEN subject names her
  let bob: string;
  let pep: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const put = (id: string, body: Json): Promise<JsonResponse> => box.json('PUT', `/AccessPolicy/${id}`, body, root);
  const evaluation = (subject: string, resource: Json, action = 'edit', context?: Json): Promise<JsonResponse> =>
    box.json(
      'POST',
      '/apps/docs/access/v1/evaluation',
      { subject: { type: 'user', id: subject }, action: { name: action }, resource, ...(context ? { context } : {}) },
      pep,
    );
  /** A kept refusal, explained (the record is written after the answer: waited for). */
  const explained = (id: string): Promise<Json> =>
    eventually(`decision ${id} to be kept`, async () => {
      const res = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
      return res.status === 200 && (res.body as Json);
    });
  const whyOf = async (decision: string, policy: string): Promise<string> =>
    ((await explained(decision)).policies as Json[]).find((p) => p.id === policy)!.why as string;
  const explainAt = (app: string, body: Json): Promise<JsonResponse> => box.json('POST', '/authz/explain', { app, ...body }, root);

  before(async function () {
    alice = String((await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password-1' }, root)).body.id);
    bob = String((await box.json('POST', '/users', { email: 'bob@example.com', password: 'bob-password-1' }, root)).body.id);
    expect((await box.json('PUT', '/App/docs', { urls: ['https://docs.example'] }, root)).status).to.equal(201);
    expect(
      (await box.json('PUT', '/App/billing', { urls: ['https://billing.example'], policyHeaders: ['x-tenant'] }, root)).status,
    ).to.equal(201);
    const { secret } = await box.addClient('docs-pep', {}, { policy: false });
    await put('docs-pep-asks', {
      engine: 'cel',
      link: [{ id: 'docs-pep', resourceType: 'Client' }],
      cel: 'request["request-method"] == "post" && request.uri.startsWith("/apps/docs/access/v1/evaluation")',
    });
    await pepReadsPeople(box, root, 'docs-pep');
    pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('docs-pep', secret) })).body
      .access_token;
    // The owner rule: a person edits the documents they own.
    const owner = await put('docs-owner', {
      app: 'docs',
      engine: 'cel',
      cel: 'request["request-method"] == "edit" && request.user.email == request.resource.properties.ownerID',
    });
    expect(owner.status, owner.text).to.equal(201);
  });

  describe('the owner rule through AuthZEN', function () {
    it('allows the owner and denies another person, saying which sub-expression was false', async function () {
      const doc = { type: 'document', id: 'd1', properties: { ownerID: 'alice@example.com' } };
      const yes = await evaluation(alice, doc);
      expect(yes.status, yes.text).to.equal(200);
      expect(yes.body.decision).to.equal(true);
      const no = await evaluation(bob, doc);
      expect(no.body.decision).to.equal(false);
      const why = await whyOf(no.headers.get('x-boxauth-decision')!, 'docs-owner');
      expect(why).to.include('the expression is false');
      expect(why).to.include('request.user.email == request.resource.properties.ownerID is false');
      expect(why).to.include('"bob@example.com"');
    });

    it('denies, and says so, when a field the expression reads is missing', async function () {
      const no = await evaluation(alice, { type: 'document', id: 'd2' });
      expect(no.body.decision).to.equal(false);
      const why = await whyOf(no.headers.get('x-boxauth-decision')!, 'docs-owner');
      expect(why).to.match(/could not be evaluated \(denied\)/);
    });

    it('denies a value that is not exactly true', async function () {
      await put('docs-not-a-bool', { app: 'docs', engine: 'cel', cel: 'request.resource.properties.flag' });
      try {
        const no = await evaluation(bob, { type: 'document', id: 'd3', properties: { flag: 'true' } });
        expect(no.body.decision).to.equal(false);
        const why = await whyOf(no.headers.get('x-boxauth-decision')!, 'docs-not-a-bool');
        expect(why).to.equal('the expression is "true", not true (denied)');
        expect((await evaluation(bob, { type: 'document', id: 'd3', properties: { flag: true } })).body.decision).to.equal(true);
      } finally {
        await box.json('DELETE', '/AccessPolicy/docs-not-a-bool', undefined, root);
      }
    });

    it('a dry-run cel policy decides nothing, and the record says what it would have', async function () {
      await put('docs-dry', { app: 'docs', engine: 'cel', dryRun: true, cel: 'request.resource.type == "document"' });
      try {
        const no = await evaluation(bob, { type: 'document', id: 'd4', properties: { ownerID: 'alice@example.com' } });
        expect(no.body.decision).to.equal(false);
        const record = await explained(no.headers.get('x-boxauth-decision')!);
        expect((record.policies as Json[]).find((p) => p.id === 'docs-dry')!.verdict).to.equal('would allow');
      } finally {
        await box.json('DELETE', '/AccessPolicy/docs-dry', undefined, root);
      }
    });
  });

  describe('on the box API', function () {
    it('a client reads the users, and writes nothing, by a cel policy linked to it', async function () {
      const { secret } = await box.addClient('reader', {}, { policy: false });
      await put('reader-reads', {
        engine: 'cel',
        link: [{ id: 'reader', resourceType: 'Client' }],
        cel: 'request["request-method"] == "get" && request.uri == "/users"',
      });
      const token = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('reader', secret) })).body
        .access_token;
      expect((await box.json('GET', '/users', undefined, token)).status).to.equal(200);
      expect((await box.json('POST', '/groups', { name: 'nope' }, token)).status).to.equal(403);
    });
  });

  describe('refused when written (422 naming the problem)', function () {
    const refused = async (body: Json, mentions: string | RegExp): Promise<void> => {
      const res = await put('refused', body);
      expect(res.status, res.text).to.equal(422);
      expect(res.body.entity).to.be.an('object');
      const problems = (res.body.errors.cel as string[]).join('\n');
      if (typeof mentions === 'string') expect(problems).to.include(mentions);
      else expect(problems).to.match(mentions);
    };

    it('a field that cannot exist, named', async function () {
      await refused({ engine: 'cel', cel: 'request.usr.email == "a"' }, 'request.usr: no such field');
      await refused({ app: 'docs', engine: 'cel', cel: 'request.user.emial == "a"' }, 'request.user.emial: no such field');
      // An app's request has no box API uri; the box API's has no gateway path.
      await refused({ app: 'docs', engine: 'cel', cel: 'request.uri == "/"' }, 'request.uri: no such field');
      await refused({ engine: 'cel', cel: 'request.path == "/"' }, 'request.path: no such field');
    });

    it('an expression that does not parse, is not a bool, or calls what does not exist', async function () {
      await refused({ engine: 'cel', cel: 'request.user.email ==' }, 'does not parse');
      await refused({ engine: 'cel', cel: 'request.user.email' }, 'a policy allows only when it is true');
      await refused({ engine: 'cel', cel: 'exec("rm")' }, 'exec: no such function');
    });

    it('an expression that loops through lists within lists, or builds huge strings in a loop (the cost limit)', async function () {
      await refused({ engine: 'cel', cel: 'request.user.groups.exists(a, request.user.groups.exists(b, a == b))' }, /estimated cost/);
      await refused(
        { app: 'docs', engine: 'cel', cel: 'request.context.items.map(x, request.context.s + request.context.s + x).size() > 0' },
        /estimated cost/,
      );
    });

    it("another app's data cannot be named: the expression sees only its own request", async function () {
      await refused({ app: 'docs', engine: 'cel', cel: 'apps.billing.policies.size() > 0' }, 'apps: no such variable');
      await refused({ app: 'docs', engine: 'cel', cel: 'request.billing.tenant == "a"' }, 'request.billing: no such field');
    });
  });

  describe('attacks at run time', function () {
    it('a policy of app A naming a header only app B lets policies see never sees it', async function () {
      // billing lets its policies see x-tenant; docs does not: a docs policy testing it is denied, the header sent or not.
      await put('docs-tenant', { app: 'docs', engine: 'cel', cel: 'request.headers["x-tenant"] == "acme"' });
      await put('billing-tenant', { app: 'billing', engine: 'cel', cel: 'request.headers["x-tenant"] == "acme"' });
      try {
        const atDocs = await explainAt('docs', { user: bob, method: 'GET', path: '/x', headers: { 'x-tenant': 'acme' } });
        expect(atDocs.body.allowed, atDocs.text).to.equal(false);
        expect((atDocs.body.policies as Json[]).find((p) => p.id === 'docs-tenant')!.why).to.include('could not be evaluated');
        const atBilling = await explainAt('billing', { user: bob, method: 'GET', path: '/x', headers: { 'x-tenant': 'acme' } });
        expect(atBilling.body.allowed, atBilling.text).to.equal(true);
      } finally {
        await box.json('DELETE', '/AccessPolicy/docs-tenant', undefined, root);
        await box.json('DELETE', '/AccessPolicy/billing-tenant', undefined, root);
      }
    });

    it('__proto__ and constructor keys in request data reach no prototype and break nothing', async function () {
      await put('docs-proto', {
        app: 'docs',
        engine: 'cel',
        cel: 'request.resource.properties["__proto__"].admin == true || request.context.constructor.name == "Object" || has(request.context.toString)',
      });
      try {
        const body =
          '{"subject":{"type":"user","id":"' +
          bob +
          '"},"action":{"name":"read"},"resource":{"type":"t","id":"1","properties":{"__proto__":{"admin":false}}},"context":{"constructor":{"name":"Evil"}}}';
        const res = await box.request('POST', '/apps/docs/access/v1/evaluation', {
          body,
          headers: { Authorization: `Bearer ${pep}`, 'Content-Type': 'application/json' },
        });
        expect(res.status, res.text).to.be.oneOf([200, 400]);
        if (res.status === 200) expect(JSON.parse(res.text).decision).to.equal(false);
      } finally {
        await box.json('DELETE', '/AccessPolicy/docs-proto', undefined, root);
      }
    });
  });

  describe('an expression stored by an older version that no longer compiles', function () {
    it('denies, is logged, and the policy says it is broken', async function () {
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        await db.query(`INSERT INTO access_policies (id, resource) VALUES ('docs-stale', $1)`, [
          JSON.stringify({ id: 'docs-stale', app: 'docs', engine: 'cel', cel: 'request.user.nickname == "al"' }),
        ]);
      } finally {
        await db.end();
      }
      // The box hears of the row through its change feed, and loads it at the next question.
      await eventually('the box to load and log the broken policy', async () => {
        const no = await evaluation(alice, { type: 'document', id: 'd6' }, 'read');
        expect(no.body.decision).to.equal(false);
        return box.logs.some((l) => l.includes('docs-stale') && l.includes('request.user.nickname: no such field'));
      });
    });
  });
});
