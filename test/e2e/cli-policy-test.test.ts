// boxauth policy test as a CI job runs it: every example of docs/examples/policies/ (a case file
// and the manifests it tests) passes against its manifests with no box running; a broken copy —
// a case that expects the other decision, a policy changed — fails with exit 1 and the failure
// printed; a case file or manifest that is not one is exit 2, saying where. Then against a
// running box: the example's records applied through the API decide the cases the same way, and
// a policy changed on the box fails them.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readManifestDir } from '../../api/cli/policy-sources.js';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { runCli, type CliRun } from '../support/cli.js';

const EXAMPLES = projectPath('docs', 'examples', 'policies');
const examples = (): string[] => fs.readdirSync(EXAMPLES).filter((name) => fs.existsSync(path.join(EXAMPLES, name, 'cases.yaml')));

describe('boxauth policy test', function () {
  this.timeout(60_000);
  let dir: string;
  const offline = { PATH: process.env.PATH, HOME: os.tmpdir() };

  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-policy-test-'));
  });
  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A copy of an example, to break. */
  function copyOf(example: string): string {
    const copy = path.join(dir, `${example}-${Math.random().toString(36).slice(2)}`);
    fs.cpSync(path.join(EXAMPLES, example), copy, { recursive: true });
    return copy;
  }

  const test = (cases: string, manifests: string, ...more: string[]): Promise<CliRun> =>
    runCli(['policy', 'test', '-f', cases, '--manifests', manifests, ...more], offline);

  it('has examples', function () {
    expect(examples()).to.include('wiki');
  });

  for (const example of examples()) {
    it(`passes every case of the docs' example ${example} against its manifests, with no box`, async function () {
      const run = await test(path.join(EXAMPLES, example, 'cases.yaml'), path.join(EXAMPLES, example, 'manifests'));
      expect(run.code, run.stdout + run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^PASS: (\d+)\/\1$/m);
      expect(run.stdout).not.to.include('FAIL');
    });

    it(`fails a broken copy of ${example} (a case expecting the other decision): exit 1, the failure printed`, async function () {
      const copy = copyOf(example);
      const file = path.join(copy, 'cases.yaml');
      const text = fs.readFileSync(file, 'utf8');
      const first = /expect: (allow|deny)\n(\s*allowedBy: .*\n)?/.exec(text)!;
      fs.writeFileSync(file, text.replace(first[0], `expect: ${first[1] === 'allow' ? 'deny' : 'allow'}\n`));
      const run = await test(file, path.join(copy, 'manifests'));
      expect(run.code, run.stdout + run.stderr).to.equal(1);
      expect(run.stdout).to.match(/^FAILURES\n-{80}\n.*cases\.yaml:\d+:\d+: .*: expected (allow|deny), got (allow|deny) /m);
      expect(run.stdout).to.match(/^FAIL: 1\/\d+$/m);
      expect(run.stderr).to.match(/1 of \d+ cases failed/);
    });
  }

  it('prints what each policy made of a failing case, as boxauth explain does', async function () {
    const copy = copyOf('wiki');
    const policies = path.join(copy, 'manifests', 'wiki.yaml');
    // The editors' policy no longer keeps them out of the board's space.
    fs.writeFileSync(policies, fs.readFileSync(policies, 'utf8').replace('const: board', 'const: boards'));
    const run = await test(path.join(copy, 'cases.yaml'), path.join(copy, 'manifests'), '-v');
    expect(run.code).to.equal(1);
    expect(run.stdout).to.include("an editor does not edit the board's space: expected deny, got allow (allowed by wiki-editors)");
    expect(run.stdout).to.match(/^ {2}wiki-readers +does not allow +request-method: "post" does not match "get"$/m);
    expect(run.stdout).to.match(/^ {2}wiki-editors +allows$/m);
    expect(run.stdout).to.match(/^ {2}request: \{"app":"wiki","request-method":"post",/m);
    expect(run.stdout).to.match(/^.*cases\.yaml:\d+:\d+: an editor edits a page: PASS$/m);

    const json = await test(path.join(copy, 'cases.yaml'), path.join(copy, 'manifests'), '-o', 'json');
    expect(json.code).to.equal(1);
    const report = JSON.parse(json.stdout) as {
      passed: number;
      failed: number;
      cases: { name: string; passed: boolean; allowedBy: string[] }[];
    };
    expect(report.failed).to.equal(1);
    expect(report.cases.find((c) => !c.passed)).to.deep.include({ allowedBy: ['wiki-editors'] });
  });

  it("prints a CEL policy's failing sub-expressions and errors, as boxauth explain does", async function () {
    const copy = copyOf('wiki');
    const cases = path.join(copy, 'cases.yaml');
    const text = fs.readFileSync(cases, 'utf8');
    // The PEP sends the owner under another name: the owners' policy cannot read it, and denies.
    fs.writeFileSync(cases, text.replace('properties: { ownerID: bo@example.com }', 'properties: { owner: bo@example.com }'));
    const run = await test(cases, path.join(copy, 'manifests'));
    expect(run.code).to.equal(1);
    expect(run.stdout).to.include('a person edits a page they own: expected allow by wiki-page-owners, got deny');
    expect(run.stdout).to.match(
      /^ {2}wiki-page-owners +does not allow +the expression could not be evaluated \(denied\): field not found: ownerID$/m,
    );
    // Another team's space: the policy is false, and says which part is.
    fs.writeFileSync(
      cases,
      text.replace(
        'data: { team: docs } }\n      request: { method: PUT, path: /spaces/docs/intro }',
        'data: { team: sales } }\n      request: { method: PUT, path: /spaces/docs/intro }',
      ),
    );
    const other = await test(cases, path.join(copy, 'manifests'));
    expect(other.code).to.equal(1);
    expect(other.stdout).to.include("a person writes in their team's space: expected allow by wiki-team-spaces, got deny");
    expect(other.stdout).to.match(
      /^ {2}wiki-team-spaces +does not allow +the expression is false: .*"claims": \{"team": "sales"\}.*; request\.path\.startsWith\("\/spaces\/" \+ request\.user\.claims\.team \+ "\/"\) is false/m,
    );
  });

  it('refuses (exit 2) a malformed case file and a manifest the box would refuse, naming the file and where', async function () {
    const copy = copyOf('wiki');
    const cases = path.join(copy, 'cases.yaml');
    fs.writeFileSync(cases, fs.readFileSync(cases, 'utf8').replace('expect: deny', 'expect: denied'));
    let run = await test(cases, path.join(copy, 'manifests'));
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/^boxauth policy: .*cases\.yaml:\d+:\d+: cases\[1\]\.expect must be allow or deny\n$/);
    expect(run.stdout).to.equal('');

    const good = path.join(EXAMPLES, 'wiki', 'cases.yaml');
    fs.writeFileSync(
      path.join(copy, 'manifests', 'broken.yaml'),
      'resourceType: AccessPolicy\nid: broken\nengine: matcho\nmatcho: { path: "#(a" }\n',
    );
    run = await test(good, path.join(copy, 'manifests'));
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/broken\.yaml:4:9: AccessPolicy broken: matcho: /);

    run = await runCli(['policy', 'test', '--manifests', path.join(copy, 'manifests')], offline);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('usage: boxauth policy test -f <cases.yaml>');
    run = await test(path.join(copy, 'no-such.yaml'), path.join(copy, 'manifests'));
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('cannot read');
  });

  it("decides an app case's JSON-RPC calls as the gate does: each call of a batch, a body read as the gate reads it", async function () {
    const example = path.join(EXAMPLES, 'mcp');
    const run = await test(path.join(example, 'cases.yaml'), path.join(example, 'manifests'), '-o', 'json');
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    const results = JSON.parse(run.stdout) as { cases: { name: string; reason: string; request: { jsonrpc?: unknown } | null }[] };
    const result = (name: string) => results.cases.find((c) => c.name === name)!;
    expect(result("an analyst's agent searches").request?.jsonrpc).to.deep.equal({ method: 'tools/call', tool: 'search' });
    expect(result('the same search, as the body the gateway sends').request?.jsonrpc).to.deep.equal({
      method: 'tools/call',
      tool: 'search',
    });
    expect(result('a forbidden call does not hide behind an allowed one in a batch').reason).to.equal(
      'call 2 of the batch refused: no policy of the app allows it',
    );
    expect(result('a tool named twice in one call is refused before any policy').reason).to.match(
      /^refused before the policies: .*"name" appears twice in one object \(400 at the gate\)$/,
    );
    expect(result('a POST whose body the gateway did not send is allowed by nothing').request?.jsonrpc).to.equal(null);

    // What the case file cannot say: a tool of a method other than tools/call, a tools/call without one, both forms at once.
    const copy = copyOf('mcp');
    const cases = path.join(copy, 'cases.yaml');
    const text = fs.readFileSync(cases, 'utf8');
    for (const [from, to, error] of [
      [
        '{ method: initialize }',
        '{ method: initialize, tool: search }',
        /cases\[8\]\.app\.request\.jsonrpc\[0\]\.tool is only a tools\/call's/,
      ],
      ['tool: delete_all }', '}', /cases\[1\]\.app\.request\.jsonrpc\.tool must be a non-empty string/],
      [
        '{ method: POST, path: /mcp }',
        '{ method: POST, path: /mcp, jsonrpc: { method: ping }, body: "{}" }',
        /cases\[10\]\.app\.request\.body goes without jsonrpc/,
      ],
    ] as const) {
      fs.writeFileSync(cases, text.replace(from, to));
      const refused = await test(cases, path.join(copy, 'manifests'));
      expect(refused.code, refused.stdout + refused.stderr).to.equal(2);
      expect(refused.stderr).to.match(error);
    }
  });

  describe('against a running box', function () {
    let box: Box;
    let env: NodeJS.ProcessEnv;
    let root: string;

    before(async function () {
      box = await Box.start();
      root = await box.rootToken();
      env = { ...offline, BOXAUTH_URL: box.url, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: box.rootSecret };
      // The example's records, applied through the API as they are read from its manifests.
      const sources = readManifestDir(path.join(EXAMPLES, 'wiki', 'manifests'), () => undefined);
      const records = [...sources.clients.values(), ...sources.apps.values(), ...sources.policies] as unknown as {
        resourceType: string;
        id: string;
      }[];
      for (const r of records) {
        const res = await box.json('PUT', `/${r.resourceType}/${r.id}`, r, root);
        expect(res.status, res.text).to.be.oneOf([200, 201]);
      }
    });
    after(async function () {
      await box?.stop();
    });

    it("decides the example's cases by the box's policies as by its manifests", async function () {
      const run = await runCli(['policy', 'test', '-f', path.join(EXAMPLES, 'wiki', 'cases.yaml')], env);
      expect(run.code, run.stdout + run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^PASS: (\d+)\/\1$/m);
    });

    it('fails them, with why, once a policy changes on the box', async function () {
      const res = await box.json(
        'PUT',
        '/AccessPolicy/people-read-groups',
        { engine: 'matcho', matcho: { 'request-method': 'get', params: { 'resource/type': 'groups' } } },
        root,
      );
      expect(res.status, res.text).to.equal(200);
      const run = await runCli(['policy', 'test', '-f', path.join(EXAMPLES, 'wiki', 'cases.yaml')], env);
      expect(run.code).to.equal(1);
      expect(run.stdout).to.include('not for a person whose address is not verified: expected deny, got allow');
      expect(run.stdout).to.match(/^ {2}people-read-groups +person +allows$/m);
      expect(run.stdout).to.match(/^FAIL: 1\/\d+$/m);
    });

    it('says so (exit 1) when its client may not read the policies', async function () {
      const reader = await box.addClient('pt-no-reads', {}, { policy: false });
      const run = await runCli(['policy', 'test', '-f', path.join(EXAMPLES, 'wiki', 'cases.yaml')], {
        ...env,
        BOXAUTH_CLIENT_ID: reader.id,
        BOXAUTH_CLIENT_SECRET: reader.secret,
      });
      expect(run.code).to.equal(1);
      expect(run.stderr).to.match(/cannot read the box's AccessPolicy records: .*403/);
    });
  });
});
