// The README's walkthrough, run as pasted: the bash block of "Quick start on a
// laptop" against a box started as `make run` starts it (root credentials
// generated into .boxauth/ of the directory it runs in). Only the address
// changes: the test's box listens on a free port instead of 8080.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';

/** The README's shell block that defines B=http://localhost:8080. */
function walkthrough(): string {
  const readme = fs.readFileSync(projectPath('README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.startsWith('B=http://localhost:8080\n'));
  if (!block) throw new Error('README.md has no ```sh block starting with B=http://localhost:8080');
  return block;
}

interface Session {
  id: string;
  type: string;
  parent?: { id: string };
}

/** The JSON value that starts at `from` in `text`, where several answers are printed one after another. */
function jsonAt(text: string, from: number): unknown {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return JSON.parse(text.slice(from, i + 1));
  }
  throw new Error(`no JSON value at ${from}`);
}

describe("the README's walkthrough", function () {
  this.timeout(120_000);
  let box: Box;
  let dir: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-readme-'));
    box = await Box.start({ dataDir: path.join(dir, '.boxauth'), env: { BOXAUTH_ROOT_CLIENT_SECRET: '' } });
  });

  after(async function () {
    await box?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('asks the reader to fill in nothing: every value a step needs, an earlier step captured', function () {
    expect(walkthrough()).not.to.match(/<[a-z_]+>/);
  });

  it('runs as pasted: a token, a client, a policy, a refresh, a sign-out that ends the token, YAML', function () {
    const script = walkthrough().replace('B=http://localhost:8080\n', `B=${box.url}\n`);
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(run.status, run.stderr).to.equal(0);
    const out = run.stdout;
    expect(out).to.include('"id":"orders"'); // step 2's PUT, and step 6's read with the refreshed token
    expect(out).to.include('"resourceType":"Bundle"'); // step 6: the sessions
    // Step 5's refresh made a child session, as its comment says: the refreshed token's session names the first as its parent.
    const bundle = jsonAt(out, out.indexOf('{"resourceType":"Bundle"')) as { entry: { resource: Session }[] };
    const [first, child] = bundle.entry.map((e) => e.resource);
    expect([first?.type, child?.type]).to.deep.equal(['client_credentials', 'refresh_token']);
    expect(child?.parent?.id).to.equal(first?.id);
    expect(out).to.match(/"error":"invalid_token"[^]*resourceType: Client/); // after the sign-out: 401; then step 7's YAML
  });
});
