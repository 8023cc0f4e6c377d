// `apply -f` and `create -f` of a file that is missing or not records: the user's input, exit 2 as
// docs/reference/cli.md says, found before any box is asked (no box answers here at all).
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../support/cli.js';

describe('boxauth … apply -f of a bad file', function () {
  this.timeout(30_000);
  let dir: string;
  // Nothing listens on port 9 of localhost: a command that asked the box would fail with exit 1.
  const env = (): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    BOXAUTH_URL: 'http://127.0.0.1:9',
    BOXAUTH_CLIENT_ID: 'root',
    BOXAUTH_CLIENT_SECRET: 'unused-secret',
  });

  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-apply-input-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cases: [string, string[], string][] = [
    ['a missing file', ['client', 'apply', '-f', 'missing.yaml'], 'cannot read'],
    ['malformed YAML', ['client', 'apply', '-f', 'malformed.yaml'], 'malformed.yaml'],
    ['a file with no record of the kind', ['accesspolicy', 'create', '-f', 'empty.yaml'], 'no AccessPolicy in it'],
    ['a Client manifest without a name', ['client', 'apply', '-f', 'nameless.yaml'], 'without metadata.name'],
    ['a missing people file', ['user', 'apply', '-f', 'missing.yaml'], 'cannot read'],
    ['a malformed people file', ['group', 'apply', '-f', 'malformed.yaml'], 'malformed.yaml'],
  ];
  for (const [what, args, said] of cases) {
    it(`${what}: exit 2, naming it, and no box asked`, async function () {
      fs.writeFileSync(path.join(dir, 'malformed.yaml'), 'id: [unclosed\n');
      fs.writeFileSync(path.join(dir, 'empty.yaml'), '# nothing\n');
      fs.writeFileSync(path.join(dir, 'nameless.yaml'), 'apiVersion: boxauth.io/v1alpha1\nkind: Client\nspec: {}\n');
      const run = await runCli(
        args.map((a) => (a.endsWith('.yaml') ? path.join(dir, a) : a)),
        env(),
      );
      expect(run.code, run.stderr).to.equal(2);
      expect(run.stderr).to.include(said);
      expect(run.stderr).not.to.match(/ECONNREFUSED|fetch failed/);
    });
  }
});
