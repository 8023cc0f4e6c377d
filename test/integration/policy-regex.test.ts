// Policy regexes with nested quantifiers, against inputs crafted to make a backtracking engine
// take hours: every request is answered as the policy says, and the box stays healthy meanwhile.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';
import { pepReadsPeople } from '../support/pep.js';

describe('policy regexes run in linear time', function () {
  let box: Box;
  let root: string;
  const tokens: Record<string, string> = {};

  async function clientWithPolicy(id: string, policy: Record<string, unknown>): Promise<string> {
    const { secret } = await box.addClient(id, {}, { policy: false });
    const put = await box.json('PUT', `/AccessPolicy/${id}`, { ...policy, link: [{ id, resourceType: 'Client' }] }, root);
    expect(put.status, put.text).to.be.oneOf([200, 201]);
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    return res.body.access_token;
  }

  boxForSuite((b, r) => ([box, root] = [b, r]));
  before(async function () {
    tokens.matcho = await clientWithPolicy('evil-matcho', {
      engine: 'matcho',
      matcho: { 'request-method': 'get', uri: '#^/Client/(/?a+)+$' },
    });
    tokens.schema = await clientWithPolicy('evil-schema', {
      engine: 'json-schema',
      schema: {
        type: 'object',
        required: ['params'],
        properties: {
          params: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(b+)+$': false } },
        },
      },
    });
  });

  it('answers crafted 40-character paths and values as the policies say, and /healthz meanwhile', async function () {
    this.timeout(10_000); // a request stuck in a backtracking regex would end the test here
    const near = (c: string): string => `${c.repeat(39)}!`;
    const [healthz, ...answers] = await Promise.all([
      box.request('GET', '/healthz'),
      box.json('GET', `/Client/${near('a')}`, undefined, tokens.matcho),
      box.json('GET', `/Client/${'a'.repeat(40)}`, undefined, tokens.matcho),
      box.json('GET', `/Client?q=${near('a')}`, undefined, tokens.schema),
      box.json('GET', `/Client?q=${'a'.repeat(40)}`, undefined, tokens.schema),
      box.json('GET', `/Client/absent?${near('b')}=1`, undefined, tokens.schema),
      box.json('GET', `/Client/absent?${'b'.repeat(40)}=1`, undefined, tokens.schema),
    ]);
    expect(healthz.status).to.equal(200);
    expect(answers.map((a) => a.status)).to.deep.equal([403, 404, 403, 200, 404, 403]); // 404: allowed, and absent
  });

  it('refuses (422) a policy whose pattern RE2 cannot run, naming the field', async function () {
    const matcho = await box.json('PUT', '/AccessPolicy/lookbehind', { engine: 'matcho', matcho: { uri: '#(?<=/)Client' } }, root);
    expect(matcho.status).to.equal(422);
    expect(matcho.body.errors).to.have.key('matcho');
    expect(matcho.body.errors.matcho[0]).to.match(/matcho\.uri .*RE2/);
    const schema = await box.json(
      'PUT',
      '/AccessPolicy/lookbehind',
      {
        engine: 'json-schema',
        schema: { properties: { uri: { type: 'string', pattern: '(?<=/)Client' } } },
      },
      root,
    );
    expect(schema.status).to.equal(422);
    expect(schema.body.errors).to.have.key('schema');
    expect((await box.json('GET', '/AccessPolicy/lookbehind', undefined, root)).status).to.equal(404);
  });
});

// Issue 63: a team allowed to write only its own App's policies (the worked delegation example of
// docs/concepts/access-control.md) writes patterns that are linear in the input and still stall:
// 17 characters, 2,999 instructions, a second of re2js per match over a 4,000-character path.
describe("an App's delegated policy writer cannot stall the box (issue 63)", function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let team: string;
  let pep: string;
  let alice: string;
  // Over the limit of 1,000 instructions: refused when written.
  const STALL = '(?:a?){999}a{999}';
  // Under it (902 instructions): taken, and every match charged its bound.
  const HEAVY = '(?:a?){300}a{300}';
  const WIKI = 'https://wiki.example';
  const ids = [1, 2, 3].map((i) => `${'a'.repeat(250)}${i}`);

  boxForSuite((b, r) => ([box, root] = [b, r]));

  before(async function () {
    expect((await box.json('PUT', '/App/wiki', { urls: [WIKI] }, root)).status).to.equal(201);
    // The worked example: wiki-admin may change the App wiki, and write its policies, named wiki-…, for the app wiki only.
    const { secret } = await box.addClient('wiki-admin', {}, { policy: false });
    const rights = {
      'wiki-admin-app': { 'request-method': { $enum: ['get', 'put'] }, params: { 'resource/type': 'App', 'resource/id': 'wiki' } },
      'wiki-admin-policies': {
        'request-method': 'put',
        params: { 'resource/type': 'AccessPolicy', 'resource/id': '#^wiki-' },
        body: { app: 'wiki' },
      },
    };
    for (const [id, matcho] of Object.entries(rights)) {
      const put = await box.json(
        'PUT',
        `/AccessPolicy/${id}`,
        { engine: 'matcho', link: [{ id: 'wiki-admin', resourceType: 'Client' }], matcho },
        root,
      );
      expect(put.status, put.text).to.equal(201);
    }
    team = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-admin', secret) })).body
      .access_token;
    // The team declares its resources, for Resource Search: ids as long as an App may declare.
    const app = await box.json('PUT', '/App/wiki', { urls: [WIKI], resources: ids.map((id) => ({ type: 'doc', id })) }, team);
    expect(app.status, app.text).to.equal(200);
    // A PEP that may ask the wiki's decision point.
    const pepClient = await box.addClient('wiki-pep', {}, { policy: false });
    await box.json(
      'PUT',
      '/AccessPolicy/wiki-pep-asks',
      { engine: 'cel', link: [{ id: 'wiki-pep', resourceType: 'Client' }], cel: 'request.uri.startsWith("/apps/wiki/access/v1/")' },
      root,
    );
    pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-pep', pepClient.secret) })).body
      .access_token;
    // It names people it may read (api/decision/engine.ts namedCaller): alice reaches the team's policies.
    await pepReadsPeople(box, root, 'wiki-pep');
    alice = String((await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password-1' }, root)).body.id);
  });

  /** The team's policies of each engine around `pattern`: CEL three times over the path (as the issue's), matcho, json-schema, and CEL over an AuthZEN resource's id. */
  const policies = (pattern: string): Record<string, Record<string, unknown>> => ({
    'wiki-cel': { engine: 'cel', cel: [1, 2, 3].map(() => `request.path.matches("${pattern}")`).join(' || ') },
    'wiki-matcho': { engine: 'matcho', matcho: { path: `#${pattern}` } },
    'wiki-schema': { engine: 'json-schema', schema: { type: 'object', properties: { path: { type: 'string', pattern } } } },
    'wiki-resource': { engine: 'cel', cel: `request.resource.id.matches("${pattern}")` },
  });

  const forwardAuth = (path: string) =>
    box.request('GET', '/authz/forward-auth/wiki', {
      headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'wiki.example', 'X-Forwarded-Uri': path },
    });

  it('refuses (422) a pattern over the program limit in every engine, naming the limit', async function () {
    for (const [id, policy] of Object.entries(policies(STALL))) {
      const res = await box.json('PUT', `/AccessPolicy/${id}`, { app: 'wiki', ...policy }, team);
      expect(res.status, `${id}: ${res.text}`).to.equal(422);
      expect(JSON.stringify(res.body.errors), id).to.match(/instructions of RE2's program, over the limit of 1,000/);
      expect((await box.json('GET', `/AccessPolicy/${id}`, undefined, root)).status).to.equal(404);
    }
  });

  describe('the strongest patterns the box takes', function () {
    before(async function () {
      // The team writes the pattern where the box takes it, and the largest of its kind under the limit where not.
      for (const [id, stall] of Object.entries(policies(STALL))) {
        const res = await box.json('PUT', `/AccessPolicy/${id}`, { app: 'wiki', ...stall }, team);
        if (res.status === 422) {
          const heavy = await box.json('PUT', `/AccessPolicy/${id}`, { app: 'wiki', ...policies(HEAVY)[id] }, team);
          expect(heavy.status, `${id}: ${heavy.text}`).to.equal(201);
        } else expect(res.status, `${id}: ${res.text}`).to.be.oneOf([200, 201]);
      }
    });

    it('deny a 4,000-character path by their budget, and the decision says why', async function () {
      const evaluation = await box.json(
        'POST',
        '/apps/wiki/access/v1/evaluation',
        { subject: { type: 'user', id: alice }, action: { name: 'view' }, resource: { type: 'doc', id: 'a'.repeat(4000) } },
        pep,
      );
      expect(evaluation.status, evaluation.text).to.equal(200);
      expect(evaluation.body.decision).to.equal(false);
      expect(evaluation.body.context.reason).to.match(/the evaluation was stopped: the decision exceeded its budget of 100,000/);
      expect((await forwardAuth(`/${'a'.repeat(4000)}`)).status).to.be.oneOf([401, 403]);
      expect(await box.metrics()).to.match(/boxauth_policy_evaluations_stopped_total\{limit="decision"[^}]*\} [1-9]/);
    });

    it('an AuthZEN Resource Search through them answers', async function () {
      const search = await box.json(
        'POST',
        '/apps/wiki/access/v1/search/resource',
        { subject: { type: 'user', id: alice }, action: { name: 'view' }, resource: { type: 'doc' } },
        pep,
      );
      expect(search.status, search.text).to.equal(200);
      expect(search.body.results).to.deep.equal([]);
    });

    it("hold another client's token request for less than a second while the attacker's requests run", async function () {
      const other = await box.addClient('bystander', {}, { policy: false });
      const statuses: number[] = [];
      const token = async (): Promise<number> => {
        const started = performance.now();
        const res = await box.form(
          '/auth/token',
          { grant_type: 'client_credentials' },
          { Authorization: basic('bystander', other.secret) },
        );
        statuses.push(res.status);
        return performance.now() - started;
      };
      const quiet: number[] = [];
      for (let i = 0; i < 5; i++) quiet.push(await token());
      // Four attackers in parallel, each in a loop: 4,000-character paths (each match over the budget),
      // paths just within it (each match run: about 90,000 units), Resource Searches, batches of evaluations.
      let attacking = true;
      const attacks = { sent: 0 };
      const attacker = async (n: number): Promise<void> => {
        const asks = [
          () => forwardAuth(`/${'a'.repeat(4000)}`),
          () => forwardAuth(`/${'a'.repeat(320)}`),
          () =>
            box.json(
              'POST',
              '/apps/wiki/access/v1/search/resource',
              { subject: { type: 'user', id: alice }, action: { name: 'view' }, resource: { type: 'doc' } },
              pep,
            ),
          () =>
            box.json(
              'POST',
              '/apps/wiki/access/v1/evaluations',
              {
                subject: { type: 'user', id: alice },
                action: { name: 'view' },
                evaluations: Array.from({ length: 20 }, () => ({ resource: { type: 'doc', id: 'a'.repeat(320) } })),
              },
              pep,
            ),
        ];
        while (attacking) {
          await asks[n % asks.length]!();
          attacks.sent += 1;
        }
      };
      const running = [0, 1, 2, 3].map(attacker);
      const under: number[] = [];
      try {
        for (let i = 0; i < 10; i++) under.push(await token());
      } finally {
        attacking = false;
        await Promise.all(running);
      }
      if (process.env.BOXAUTH_SHOW_LATENCY)
        console.log(
          `token latency ms, quiet: ${quiet.map(Math.round).join(' ')}; under attack (${attacks.sent} requests): ${under.map(Math.round).join(' ')}`,
        );
      expect(
        statuses.every((s) => s === 200),
        `statuses ${statuses.join(' ')}`,
      ).to.equal(true);
      expect(attacks.sent).to.be.above(4);
      expect(Math.max(...under)).to.be.below(1000);
    });
  });
});
