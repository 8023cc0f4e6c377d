import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { DEVICE_DAYS, deviceToken, knownDevice } from '../../../api/people/devices.js';

describe('device cookies', function () {
  const key = randomBytes(32);

  it('a token names its person and no other, until it ends', function () {
    const now = Date.now();
    const { token, expiresAt } = deviceToken(key, 7, now);
    expect(expiresAt.getTime()).to.equal((Math.floor(now / 1000) + DEVICE_DAYS * 86_400) * 1000);
    const device = knownDevice(key, token, 7, now);
    expect(device).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(token).to.include(device);
    expect(knownDevice(key, token, 8, now)).to.equal(undefined);
    expect(knownDevice(key, token, 7, expiresAt.getTime())).to.equal(undefined);
    expect(deviceToken(key, 7, now).token).not.to.equal(token);
  });

  it('a token another key made, or one changed, is nobody', function () {
    const { token } = deviceToken(key, 7);
    expect(knownDevice(randomBytes(32), token, 7)).to.equal(undefined);
    const [user, expires, nonce, mac] = token.split('.');
    expect(knownDevice(key, [user, String(Number(expires) + 1), nonce, mac].join('.'), 7)).to.equal(undefined);
    expect(knownDevice(key, [user, expires, nonce!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')), mac].join('.'), 7)).to.equal(undefined);
    expect(knownDevice(key, undefined, 7)).to.equal(undefined);
    expect(knownDevice(key, 'garbage', 7)).to.equal(undefined);
  });
});
