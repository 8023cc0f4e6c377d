// The memory of verified workload tokens: never past the token's exp, never
// longer than a minute, bounded in size.
import { expect } from 'chai';
import { VerifiedAssertions } from '../../../../api/credentials/workload/assertion.js';

describe('VerifiedAssertions', function () {
  const now = Date.parse('2026-11-23T12:00:00Z');
  const payload = (expInSeconds: number) => ({
    iss: 'https://kube',
    sub: 'system:serviceaccount:a:b',
    exp: Math.floor(now / 1000) + expInSeconds,
  });

  it('remembers a token until its exp, and at most a minute', function () {
    const memory = new VerifiedAssertions();
    memory.remember('short', 'https://kube', payload(10), now);
    memory.remember('long', 'https://kube', payload(3600), now);
    expect(memory.get('short', now + 9_000)?.issuer).to.equal('https://kube');
    expect(memory.get('short', now + 10_000)).to.equal(undefined);
    expect(memory.get('long', now + 59_000)?.payload.sub).to.equal('system:serviceaccount:a:b');
    expect(memory.get('long', now + 60_000)).to.equal(undefined);
    expect(memory.get('unknown', now)).to.equal(undefined);
  });

  it('forgets the oldest when full', function () {
    const memory = new VerifiedAssertions(2);
    for (const d of ['a', 'b', 'c']) memory.remember(d, 'https://kube', payload(600), now);
    expect(memory.get('a', now)).to.equal(undefined);
    expect(memory.get('c', now)).to.not.equal(undefined);
  });
});
