// Every relative link of the README, CONTRIBUTING and docs/ leads somewhere: to a
// file of the repository and, with a #fragment, to a heading of that page (as
// GitHub makes its anchors). Pages move; a link that did not follow fails here.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';

function pages(): string[] {
  const docs = fs.readdirSync(projectPath('docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md'));
  return ['README.md', 'CONTRIBUTING.md', ...docs.map((f) => path.join('docs', f))];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replaceAll(' ', '-');

function anchors(file: string): Set<string> {
  const text = fs.readFileSync(projectPath(file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

describe('links in the documentation', function () {
  it('every relative link names a file that exists, and a heading that exists', function () {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = fs.readFileSync(projectPath(page), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [file, fragment] = target!.split('#') as [string, string | undefined];
        const resolved = file ? path.normalize(path.join(path.dirname(page), file)) : page;
        if (!fs.existsSync(projectPath(resolved))) broken.push(`${page}: ${target} (no ${resolved})`);
        else if (fragment && resolved.endsWith('.md') && !anchors(resolved).has(fragment)) broken.push(`${page}: ${target} (no heading)`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});

/** The pages people read to use boxauth: the README and docs/ (CONTRIBUTING.md is for those who change it). */
const userPages = (): string[] => pages().filter((p) => p !== 'CONTRIBUTING.md');

/**
 * A test file named as evidence: a path under test/ (the bench's programs under test/bench/ aside:
 * docs/performance.md says how to run them) or a `*.test.ts` file. What a page promises is backed
 * by the documents it implements (RFCs, OpenID, OWASP, NIST) and said plainly; tests change names.
 */
const TEST_FILE = /(?<![\w.-])(?:dist\/)?test\/(?!bench\/)[\w*.-][\w*./-]*|[\w-]+\.test\.[jt]s\b/g;

/** The names the tests give their screenshots: `screenshot(page, 'name')` in test/. */
function screenshotNames(): Set<string> {
  const files = fs.readdirSync(projectPath('test'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const names = files.flatMap((f) => [...fs.readFileSync(projectPath('test', f), 'utf8').matchAll(/screenshot\(\s*\w+,\s*'([\w-]+)'\)/g)]);
  return new Set(names.map((m) => m[1]!));
}

describe('what the documentation cites and shows', function () {
  it('names no test file: a page cites the RFC or the document, and says what holds', function () {
    const cited = userPages().flatMap((page) =>
      fs
        .readFileSync(projectPath(page), 'utf8')
        .split('\n')
        .flatMap((line, i) => [...line.matchAll(TEST_FILE)].map((m) => `${page}:${i + 1}: ${m[0]}`)),
    );
    expect(cited).to.deep.equal([]);
  });

  it('tells a test file apart from what is not one', function () {
    const named = (text: string) => [...text.matchAll(TEST_FILE)].map((m) => m[0]);
    expect(named('see [the test](../test/integration/scim.test.ts)')).to.deep.equal(['test/integration/scim.test.ts']);
    expect(named('(`test/e2e/gateways/`)')).to.deep.equal(['test/e2e/gateways/']);
    expect(named('`scim-adoption.test.ts`')).to.deep.equal(['scim-adoption.test.ts']);
    expect(named('`node dist/test/bench/profile.js /tmp/prof`, `test/bench/scale.ts`')).to.deep.equal([]);
    expect(named('a contest/e2e, latest/unit, test/       mocha')).to.deep.equal([]);
  });

  it('shows only screenshots a test takes, and every one it keeps is shown', function () {
    const taken = screenshotNames();
    const kept = fs.readdirSync(projectPath('docs', 'screenshots')).filter((f) => f.endsWith('.png'));
    const shown = new Set(
      pages().flatMap((page) => [...fs.readFileSync(projectPath(page), 'utf8').matchAll(/screenshots\/([\w-]+)\.png/g)].map((m) => m[1]!)),
    );
    expect(
      kept.filter((f) => !taken.has(f.replace(/\.png$/, ''))),
      'in docs/screenshots/, taken by no test',
    ).to.deep.equal([]);
    expect(
      kept.filter((f) => !shown.has(f.replace(/\.png$/, ''))),
      'in docs/screenshots/, shown by no page',
    ).to.deep.equal([]);
  });
});
