// The in-memory throttle of failed client authentication (api/credentials/throttle.ts).
import { expect } from 'chai';
import { FailureThrottle, TooManyAttempts, addressKey, clientKey } from '../../../api/credentials/throttle.js';

describe('FailureThrottle', function () {
  let now = 1_000_000;
  const throttle = (maxKeys = 100): FailureThrottle =>
    new FailureThrottle((key) => (key.kind === 'address' ? 4 : 2), 60_000, { maxKeys, now: () => now });

  it('refuses a key at its limit until the window ends; a released attempt does not count', function () {
    const t = throttle();
    t.reserve([clientKey('a'), addressKey('1')]);
    t.reserve([clientKey('a'), addressKey('1')]);
    t.release([clientKey('a'), addressKey('1')]);
    t.reserve([clientKey('a'), addressKey('1')]);
    expect(() => t.reserve([clientKey('a'), addressKey('2')])).to.throw(TooManyAttempts, /try again in 60 s/);
    now += 60_000;
    t.reserve([clientKey('a'), addressKey('2')]);
  });

  it('an address at its limit cannot evict its own window by sending made-up client ids', function () {
    const t = throttle(10);
    for (let i = 0; i < 4; i++) t.reserve([clientKey(`real-${i}`), addressKey('attacker')]);
    for (let i = 0; i < 100; i++) expect(() => t.reserve([clientKey(`made-up-${i}`), addressKey('attacker')])).to.throw(TooManyAttempts);
    expect(() => t.reserve([clientKey('victim'), addressKey('attacker')])).to.throw(TooManyAttempts);
  });
});
