import { expect } from 'chai';
import { randomBytesPooled } from '../../api/random.js';

describe('pooled random bytes', function () {
  it('hands out fresh bytes of the asked length, across refills of the pool', function () {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      // 2000 × 32 bytes: several 8 KiB refills
      const b = randomBytesPooled(32);
      expect(b.length).to.equal(32);
      seen.add(b.toString('hex'));
    }
    expect(seen.size).to.equal(2000);
  });

  it('a value handed out never changes afterwards, not even when the pool refills', function () {
    const a = randomBytesPooled(16);
    const before = a.toString('hex');
    expect(before).to.not.equal('0'.repeat(32));
    for (let i = 0; i < 1000; i++) randomBytesPooled(32); // several refills of the 8 KiB pool
    expect(a.toString('hex')).to.equal(before);
  });

  it('is for token-sized values only', function () {
    expect(() => randomBytesPooled(257)).to.throw(RangeError);
  });
});
