// The AuthZEN working group's interop scenarios and the certification fixture, put in place by
// scripts/oidf-setup exactly as the OpenID Foundation's plans run it (../shared/oidf: the Apps and
// the PEP registered first, as its register.py does), then every case of the WG's own files
// (test/fixtures/authzen-interop/README.md says where each comes from): the Todo scenario's 40
// evaluations and 3 batches, and the search scenario's subject, resource and action searches.
import { execFile } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Box, basic, boxForSuite, type JsonResponse } from '../support/box.js';
import { projectPath } from '../../api/paths.js';

type Json = Record<string, any>;
const run = promisify(execFile);
const fixture = (name: string): Json => JSON.parse(fs.readFileSync(projectPath('test', 'fixtures', 'authzen-interop', name), 'utf8'));

describe('AuthZEN interop scenarios (scripts/oidf-setup, the WG case files)', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let pep: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  /** scripts/oidf-setup <plan> <box>, with what run.sh gives it. */
  const setup = (plan: string, app: string): Promise<{ stdout: string }> =>
    run(path.join(projectPath(), 'scripts', 'oidf-setup'), [plan, box.url], {
      env: { ...process.env, OIDF_ROOT_TOKEN: root, OIDF_AUTHZEN_APP: app, OIDF_AUTHZEN_PEP_CLIENT_ID: 'oidf-pep' },
    });

  before(async function () {
    // What the harness's register.py registers: an App per scenario, and the PEP allowed to ask them.
    for (const app of ['oidf-todo', 'oidf-search', 'oidf-cert']) {
      const res = await box.json('PUT', `/App/${app}`, { description: 'an AuthZEN scenario', urls: [`https://${app}.example`] }, root);
      expect(res.status, res.text).to.be.oneOf([200, 201]);
    }
    const { secret } = await box.addClient('oidf-pep', {}, { policy: false });
    await box.json(
      'PUT',
      '/AccessPolicy/oidf-pep-asks',
      {
        engine: 'matcho',
        link: [{ id: 'oidf-pep', resourceType: 'Client' }],
        matcho: {
          'request-method': 'post',
          uri: '#^/apps/oidf-(todo|search|cert)/access/v1/(evaluations?|search/(subject|resource|action))$',
        },
      },
      root,
    );
    pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('oidf-pep', secret) })).body
      .access_token as string;
    // Twice, as before each plan: the second run changes nothing. A plan that is not AuthZEN's has nothing to do.
    for (const [plan, app] of [
      ['authzen-eval', 'oidf-todo'],
      ['authzen-evals', 'oidf-todo'],
      ['authzen-search-subject', 'oidf-search'],
      ['authzen-cert-eval', 'oidf-cert'],
      ['authzen-cert-search-action', 'oidf-cert'],
    ] as const) {
      expect((await setup(plan, app)).stdout).to.include(`${plan}: scenario`);
    }
    expect((await setup('basic', 'none')).stdout).to.equal('');
  });

  const ask = (app: string, endpoint: string, body: unknown): Promise<JsonResponse> =>
    box.json('POST', `/apps/${app}/access/v1/${endpoint}`, body, pep);

  it("decides every case of the Todo scenario's case file (40 evaluations, 3 batches)", async function () {
    const cases = fixture('todo-decisions.json');
    const wrong: string[] = [];
    for (const c of cases.evaluation as Json[]) {
      const res = await ask('oidf-todo', 'evaluation', c.request);
      expect(res.status, res.text).to.equal(200);
      if (res.body.decision !== c.expected) wrong.push(`${JSON.stringify(c.request)}: ${res.text}`);
    }
    for (const c of cases.evaluations as Json[]) {
      const res = await ask('oidf-todo', 'evaluations', c.request);
      expect(res.status, res.text).to.equal(200);
      const got = (res.body.evaluations as Json[]).map((e) => e.decision as boolean);
      const want = (c.expected as Json[]).map((e) => e.decision as boolean);
      if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${JSON.stringify(c.request)}: ${res.text}`);
    }
    expect(wrong, wrong.join('\n')).to.deep.equal([]);
  });

  for (const kind of ['subject', 'resource', 'action'] as const) {
    it(`answers every ${kind} search of the search scenario with the WG's results`, async function () {
      const wrong: string[] = [];
      const key = (r: Json): string => JSON.stringify(r, Object.keys(r).sort());
      for (const c of fixture(`search-${kind}.json`).evaluation as Json[]) {
        const res = await ask('oidf-search', `search/${kind}`, c.request);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.page).to.deep.equal({ next_token: '' }); // all of them on one page
        const got = (res.body.results as Json[]).map(key).sort();
        const want = (c.expected.results as Json[]).map(key).sort();
        if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${JSON.stringify(c.request)}: ${res.text}`);
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    });
  }

  it("decides the certification fixture's Core rules and searches (§C.1.4, §C.1.5)", async function () {
    const decide = async (subject: string, action: string, resource: string): Promise<boolean> =>
      (
        await ask('oidf-cert', 'evaluation', {
          subject: { type: 'user', id: subject },
          action: { name: action },
          resource: { type: 'record', id: resource },
        })
      ).body.decision as boolean;
    expect(await decide('alice', 'read', 'record-1')).to.equal(true);
    expect(await decide('alice', 'write', 'record-1')).to.equal(true);
    expect(await decide('bob', 'read', 'record-1')).to.equal(true);
    expect(await decide('bob', 'write', 'record-1')).to.equal(false);
    expect(await decide('alice', 'write', 'record-2')).to.equal(false); // archived: the App's word
    const subjects = await ask('oidf-cert', 'search/subject', {
      subject: { type: 'user' },
      action: { name: 'read' },
      resource: { type: 'record', id: 'record-1' },
    });
    expect(subjects.body.results).to.deep.include.members([
      { type: 'user', id: 'alice' },
      { type: 'user', id: 'bob' },
    ]);
    const resources = await ask('oidf-cert', 'search/resource', {
      subject: { type: 'user', id: 'alice' },
      action: { name: 'read' },
      resource: { type: 'record' },
    });
    expect(resources.body.results).to.deep.equal([
      { type: 'record', id: 'record-1' },
      { type: 'record', id: 'record-2' },
    ]);
    const actions = await ask('oidf-cert', 'search/action', {
      subject: { type: 'user', id: 'alice' },
      resource: { type: 'record', id: 'record-1' },
    });
    expect(actions.body.results).to.deep.equal([{ name: 'read' }, { name: 'write' }]);
  });
});
