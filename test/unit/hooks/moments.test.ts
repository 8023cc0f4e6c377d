import { expect } from 'chai';
import { admittedClaims, combine, FAILED_MESSAGE, readAnswer, type HookPart } from '../../../api/hooks/moments.js';

const allowed = (hook: string, answer: Record<string, unknown>, failurePolicy: 'Fail' | 'Ignore' = 'Fail'): HookPart => ({
  hook,
  failurePolicy,
  outcome: { answer: { allowed: true, ...answer } },
});

describe('hooks: what an answer means', function () {
  it('reads only a 200 with a JSON object whose allowed is a boolean as an answer', function () {
    expect(readAnswer('tokenIssuing', 200, '{"allowed":true,"claims":{"a":1}}')).to.deep.equal({
      answer: { allowed: true, claims: { a: 1 } },
    });
    expect(readAnswer('tokenIssuing', 500, '{"allowed":true}')).to.include({ failed: 'status' });
    expect(readAnswer('tokenIssuing', 307, '')).to.include({ failed: 'status' });
    expect(readAnswer('tokenIssuing', 200, 'yes')).to.include({ failed: 'garbage' });
    expect(readAnswer('tokenIssuing', 200, '[true]')).to.include({ failed: 'garbage' });
    expect(readAnswer('tokenIssuing', 200, '{"allowed":"yes"}')).to.include({ failed: 'garbage' });
    expect(readAnswer('tokenIssuing', 200, '{"allowed":true,"claims":[1]}')).to.include({ failed: 'garbage' });
    expect(readAnswer('personCreating', 200, '{"allowed":true,"groups":[1]}')).to.include({ failed: 'garbage' });
    expect(readAnswer('passwordImport', 200, '{"allowed":true}')).to.include({ failed: 'garbage' });
    expect(readAnswer('passwordImport', 200, '{"valid":true}')).to.deep.equal({ answer: { allowed: true, valid: true } });
  });

  it('never admits a claim the box alone states, nor one too large', function () {
    const { claims, dropped } = admittedClaims({
      tenant: 't',
      sub: 'x',
      ISS: 'y',
      acr: 'phr',
      groups: [],
      email: 'a@b',
      big: 'x'.repeat(9000),
    });
    expect(claims).to.deep.equal({ tenant: 't' });
    expect(dropped.map((d) => d.claim)).to.deep.equal(['sub', 'ISS', 'acr', 'groups', 'email', 'big']);
  });

  it('refuses at the first refusal or failed call under Fail, in the order of the hooks; Ignore adds nothing', function () {
    const failed = (hook: string, failurePolicy: 'Fail' | 'Ignore'): HookPart => ({
      hook,
      failurePolicy,
      outcome: { failed: 'timeout', why: 'slow' },
    });
    expect(combine('tokenIssuing', [allowed('b', { claims: { x: 1 } }), failed('a', 'Ignore')])).to.deep.include({
      allowed: true,
      claims: { x: 1 },
    });
    expect(combine('tokenIssuing', [allowed('b', {}), failed('a', 'Fail')])).to.deep.equal({
      allowed: false,
      hook: 'a',
      message: FAILED_MESSAGE,
      failed: true,
    });
    const refusing: HookPart = { hook: 'c', failurePolicy: 'Ignore', outcome: { answer: { allowed: false, message: 'no' } } };
    expect(combine('signingIn', [allowed('a', {}), refusing])).to.deep.equal({ allowed: false, hook: 'c', message: 'no', failed: false });
  });

  it("keeps an earlier hook's claim of a name, and takes what each moment lets it", function () {
    const verdict = combine('tokenIssuing', [
      allowed('b', { claims: { x: 2, y: 2 } }),
      allowed('a', { claims: { x: 1 }, groups: ['g'], acr: 'phr' }),
    ]);
    expect(verdict).to.deep.include({ allowed: true, claims: { x: 1, y: 2 }, groups: [], data: {} });
    expect(verdict).to.not.have.property('acr');
    const person = combine('personCreating', [allowed('a', { data: { e: 1 }, groups: ['staff', 'staff'], claims: { x: 1 } })]);
    expect(person).to.deep.include({ claims: {}, data: { e: 1 }, groups: ['staff'] });
    expect(combine('signingIn', [allowed('a', { acr: 'urn:boxauth:acr:mfa' })])).to.deep.include({ acr: 'urn:boxauth:acr:mfa' });
    expect(combine('passwordImport', [allowed('a', { valid: false }), allowed('b', { valid: true })])).to.deep.include({ valid: true });
  });
});
