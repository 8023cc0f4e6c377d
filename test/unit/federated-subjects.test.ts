// Subject patterns of federated bindings (api/federated-subjects.ts): what a `*` may
// stand for, which patterns are refused as bare wildcards, and that a tenant's pattern cannot make
// the match slow.
import { expect } from 'chai';
import { bindingNames, subjectMatches, subjectPatternProblem } from '../../api/federated-subjects.js';

describe('federated subject patterns', function () {
  it('a * stands for any run of characters within one colon-separated part', function () {
    expect(subjectMatches('repo:octo-org/*:ref:refs/heads/main', 'repo:octo-org/shop:ref:refs/heads/main')).to.equal(true);
    expect(subjectMatches('repo:octo-org/*:ref:refs/heads/*', 'repo:octo-org/shop:ref:refs/heads/feature/x')).to.equal(true);
    expect(subjectMatches('repo:octo-org/*:ref:refs/heads/main', 'repo:octo-org/shop:pull_request')).to.equal(false);
    expect(subjectMatches('repo:octo-org/*:ref:refs/heads/main', 'repo:octo-org/shop:environment:prod:ref:refs/heads/main')).to.equal(
      false,
    );
    expect(subjectMatches('repo:octo-org/*', 'repo:octo-org/shop:ref:refs/heads/main')).to.equal(false);
    expect(subjectMatches('repo:octo-org/*', 'repo:octo-org-evil/shop')).to.equal(false);
    expect(subjectMatches('system:serviceaccount:apps:*', 'system:serviceaccount:apps:orders')).to.equal(true);
    expect(subjectMatches('system:serviceaccount:apps:*', 'system:serviceaccount:apps2:orders')).to.equal(false);
    expect(subjectMatches('project_path:g/*:ref_type:branch:ref:release-*', 'project_path:g/api:ref_type:branch:ref:release-1.4')).to.equal(
      true,
    );
  });

  it('refuses patterns that fix neither the kind of subject nor the start of its name', function () {
    for (const bare of ['*', '**', 'repo:*', '*:octo-org/shop', 'repo', ':*', 'repo*:x'])
      expect(subjectPatternProblem(bare), bare).to.be.a('string');
    expect(subjectPatternProblem('a:b*c*d*e*f*g*h*i*j*k')).to.match(/more than 8/);
    expect(subjectPatternProblem('repo:o*')).to.equal(undefined);
    expect(subjectPatternProblem('repo:octo-org/shop')).to.match(/no \*/);
  });

  it('a refused pattern binds nothing, whatever it would match', function () {
    expect(bindingNames({ issuer: 'https://i', subjectPattern: 'repo:*' }, 'https://i', 'repo:x')).to.equal(false);
    expect(bindingNames({ issuer: 'https://i', subject: 'repo:x' }, 'https://other', 'repo:x')).to.equal(false);
    expect(bindingNames({ issuer: 'https://i', subject: 'repo:x' }, 'https://i', 'repo:x')).to.equal(true);
  });

  it('answers a pathological pattern and subject (a backtracking regex would not finish within the test)', function () {
    // `a:*a*a*a*a*a*a*a*ab` against a long run of a: 2^8 × 10^5 tries for a naive backtracker, ~10^6 steps here.
    expect(subjectMatches(`a:${'*a'.repeat(8)}b`, `a:${'a'.repeat(100_000)}`)).to.equal(false);
    expect(subjectMatches(`a:${'*a'.repeat(8)}`, `a:${'a'.repeat(100_000)}`)).to.equal(true);
  });
});
