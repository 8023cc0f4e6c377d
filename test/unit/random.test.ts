import { expect } from 'chai';
import { randomBytesPooled } from '../../api/random.js';

describe('pooled random bytes', function () {
  it('hands out fresh bytes of the asked length, across refills of the pool', function () {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) { // 2000 × 32 bytes: several 8 KiB refills
      const b = randomBytesPooled(32);
      expect(b.length).to.equal(32);
      seen.add(b.toString('hex'));
    }
    expect(seen.size).to.equal(2000);
  });

  it('returns a copy: changing it does not change later values', function () {
    const a = randomBytesPooled(16);
    a.fill(0);
    expect(randomBytesPooled(16).equals(Buffer.alloc(16))).to.equal(false);
  });

  it('is for token-sized values only', function () {
    expect(() => randomBytesPooled(257)).to.throw(RangeError);
  });
});
