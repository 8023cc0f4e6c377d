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
