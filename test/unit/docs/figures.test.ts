// Every page that quotes boxauth beside its peers quotes the latest measured run, with its date
// (issue 81 item 10): the README and the page on choosing boxauth said 19–42× and 5,699 tokens a
// second, from runs two releases old, while docs/performance.md's latest quiet run said 14–27×.
import { expect } from 'chai';
import fs from 'node:fs';
import { projectPath } from '../../../api/paths.js';

const read = (file: string): string => fs.readFileSync(projectPath(...file.split('/')), 'utf8');

/** The side-by-side token table of "The figures of this release": each target's tokens a second, and the run's date. */
function latestPeers(): { date: string; rates: Record<string, number> } {
  const page = read('docs/performance.md');
  const release = page.slice(page.indexOf('### The figures of this release'));
  const at = release.indexOf('Side by side with the peers');
  const date = /(\d{4}-\d{2}-\d{2})/.exec(release.slice(at, at + 300))![1]!;
  const rates: Record<string, number> = {};
  for (const [, target, rate] of release.slice(at).matchAll(/^\| (Ory Hydra|Keycloak|boxauth, opaque|boxauth, JWT)[^|]*\| ([\d,]+) \|/gm))
    rates[target!] ??= Number(rate!.replace(/,/g, ''));
  return { date, rates };
}

describe('the figures the pages quote', function () {
  const { date, rates } = latestPeers();
  const peers = [rates['Ory Hydra']!, rates.Keycloak!];
  const ours = [rates['boxauth, opaque']!, rates['boxauth, JWT']!];

  it('performance.md has a latest run of boxauth beside Hydra and Keycloak', function () {
    expect(Object.keys(rates)).to.have.members(['Ory Hydra', 'Keycloak', 'boxauth, opaque', 'boxauth, JWT']);
  });

  it("the README's ratio to the peers is the latest run's, with its date", function () {
    const ratios = ours.flatMap((b) => peers.map((p) => Math.floor(b / p)));
    const readme = read('README.md').replace(/\s+/g, ' ');
    expect(readme).to.include(`${Math.min(...ratios)}–${Math.max(...ratios)}× as many client-credentials tokens`);
    expect(readme).to.include(date);
  });

  it("what-is-boxauth.md's speed table quotes the latest run's tokens, with its date", function () {
    const page = read('docs/what-is-boxauth.md');
    const speed = page.slice(page.indexOf('## Speed'), page.indexOf('## Next'));
    expect(speed).to.include(date);
    for (const rate of [...peers, ...ours]) expect(speed).to.include(rate.toLocaleString('en'));
  });
});
