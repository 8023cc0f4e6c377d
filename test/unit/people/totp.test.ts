import { expect } from 'chai';
import { matchingStep, newTotpSecret, secretText, stepOf, totpUri } from '../../../api/people/ways/totp-codes.js';

// RFC 6238 Appendix B: the SHA-1 seed, and the last six digits of its 8-digit codes.
const SEED = Buffer.from('12345678901234567890');
const VECTORS: [number, string][] = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
];

describe('TOTP (RFC 6238)', function () {
  it("computes the RFC's test vectors, and gives the step a code is for", function () {
    for (const [seconds, code] of VECTORS)
      expect(matchingStep(SEED, code, seconds * 1000, null), String(seconds)).to.equal(stepOf(seconds * 1000));
  });

  it('takes one step either side of now, and not two', function () {
    const now = 1111111109 * 1000;
    const step = stepOf(now);
    for (const off of [-1, 1]) expect(matchingStep(SEED, '081804', now + off * 30_000, null)).to.equal(step);
    for (const off of [-2, 2]) expect(matchingStep(SEED, '081804', now + off * 30_000, null)).to.equal(undefined);
  });

  it('refuses a step at or before the last one accepted: a code used once is refused again', function () {
    const now = 59_000;
    expect(matchingStep(SEED, '287082', now, 0)).to.equal(1);
    expect(matchingStep(SEED, '287082', now, 1)).to.equal(undefined);
    expect(matchingStep(SEED, '287082', now, 2)).to.equal(undefined);
  });

  it('refuses what is not six digits, and a wrong code', function () {
    for (const code of ['', '28708', '2870822', 'abcdef', '287 08x', '287083'])
      expect(matchingStep(SEED, code, 59_000, null), code).to.equal(undefined);
    expect(matchingStep(SEED, '287 082', 59_000, null)).to.equal(1);
  });

  it('makes 20-byte secrets, and the otpauth:// URI every app reads', function () {
    const a = newTotpSecret();
    expect(a).to.have.length(20);
    expect(a.equals(newTotpSecret())).to.equal(false);
    const uri = new URL(totpUri(SEED, 'home lab', 'ann@example.com'));
    expect(uri.protocol).to.equal('otpauth:');
    expect(uri.host).to.equal('totp');
    expect(decodeURIComponent(uri.pathname)).to.equal('/home lab:ann@example.com');
    expect(Object.fromEntries(uri.searchParams)).to.deep.equal({
      issuer: 'home lab',
      secret: secretText(SEED),
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
    expect(secretText(SEED)).to.equal('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  });
});
