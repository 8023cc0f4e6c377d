// The memory of verified workload tokens: never past the token's exp, never
// longer than a minute, never once its key is no longer published, bounded in size.
import { expect } from 'chai';
import crypto from 'node:crypto';
import { VerifiedAssertions } from '../../../../api/credentials/workload/assertion.js';

describe('VerifiedAssertions', function () {
  const now = Date.parse('2026-11-23T12:00:00Z');
  const key = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
  const published = (): boolean => true;
  const verified = (expInSeconds: number) => ({
    issuer: 'https://kube',
    key,
    payload: { iss: 'https://kube', sub: 'system:serviceaccount:a:b', exp: Math.floor(now / 1000) + expInSeconds },
  });

  it('remembers a token until its exp, and at most a minute', function () {
    const memory = new VerifiedAssertions();
    memory.remember('short', verified(10), now);
    memory.remember('long', verified(3600), now);
    expect(memory.get('short', now + 9_000, published)?.issuer).to.equal('https://kube');
    expect(memory.get('short', now + 10_000, published)).to.equal(undefined);
    expect(memory.get('long', now + 59_000, published)?.payload.sub).to.equal('system:serviceaccount:a:b');
    expect(memory.get('long', now + 60_000, published)).to.equal(undefined);
    expect(memory.get('unknown', now, published)).to.equal(undefined);
  });

  it('forgets a token once the key that verified it is no longer published', function () {
    const memory = new VerifiedAssertions();
    memory.remember('t', verified(600), now);
    const asked: [string, crypto.KeyObject][] = [];
    expect(memory.get('t', now, (issuer, k) => (asked.push([issuer, k]), false))).to.equal(undefined);
    expect(asked).to.deep.equal([['https://kube', key]]);
    // Forgotten: published again or not, its signature is checked afresh.
    expect(memory.get('t', now, published)).to.equal(undefined);
  });

  it('forgets the oldest when full', function () {
    const memory = new VerifiedAssertions(2);
    for (const d of ['a', 'b', 'c']) memory.remember(d, verified(600), now);
    expect(memory.get('a', now, published)).to.equal(undefined);
    expect(memory.get('c', now, published)).to.not.equal(undefined);
  });
});
