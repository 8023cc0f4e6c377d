import { expect } from 'chai';
import { matchingStep, newSecret, otpauthUri, secretText, stepOf } from '../../../api/people/ways/one-time-codes.js';

// RFC 6238 Appendix B: the SHA-1 seed, and the last six digits of its 8-digit codes.
const SEED = Buffer.from('12345678901234567890');
const TIME = { period: 30 };
const at = (code: string, now: number, lastStep: number | null): number | undefined => matchingStep(TIME, SEED, code, now, lastStep);
const VECTORS: [number, string][] = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
];

describe('TOTP (RFC 6238)', function () {
  it("computes the RFC's test vectors, and gives the step a code is for", function () {
    for (const [seconds, code] of VECTORS) expect(at(code, seconds * 1000, null), String(seconds)).to.equal(stepOf(seconds * 1000, 30));
  });

  it('takes one step either side of now, and not two', function () {
    const now = 1111111109 * 1000;
    const step = stepOf(now, 30);
    for (const off of [-1, 1]) expect(at('081804', now + off * 30_000, null)).to.equal(step);
    for (const off of [-2, 2]) expect(at('081804', now + off * 30_000, null)).to.equal(undefined);
  });

  it('refuses a step at or before the last one accepted: a code used once is refused again', function () {
    const now = 59_000;
    expect(at('287082', now, 0)).to.equal(1);
    expect(at('287082', now, 1)).to.equal(undefined);
    expect(at('287082', now, 2)).to.equal(undefined);
  });

  it('refuses what is not six digits, and a wrong code', function () {
    for (const code of ['', '28708', '2870822', 'abcdef', '287 08x', '287083']) expect(at(code, 59_000, null), code).to.equal(undefined);
    expect(at('287 082', 59_000, null)).to.equal(1);
  });

  it('makes 20-byte secrets, and the otpauth:// URI every app reads', function () {
    const a = newSecret();
    expect(a).to.have.length(20);
    expect(a.equals(newSecret())).to.equal(false);
    const uri = new URL(otpauthUri(TIME, SEED, 'home lab', 'ann@example.com'));
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

describe('HOTP (RFC 4226): codes moved on by a counter', function () {
  // RFC 4226 Appendix D: the codes of counters 0 to 9 for the same seed.
  const CODES = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
  const COUNTER = { lookAhead: 3 };
  const counterOf = (code: string, lastStep: number | null): number | undefined => matchingStep(COUNTER, SEED, code, 0, lastStep);

  it('takes the next codes after the last one accepted, up to the look-ahead, and never one before', function () {
    expect(counterOf(CODES[0]!, null)).to.equal(0);
    expect(counterOf(CODES[2]!, null)).to.equal(2);
    expect(counterOf(CODES[3]!, null), 'past the look-ahead').to.equal(undefined);
    expect(counterOf(CODES[5]!, 2)).to.equal(5);
    expect(counterOf(CODES[2]!, 2), 'used once').to.equal(undefined);
    expect(counterOf(CODES[1]!, 2), 'older').to.equal(undefined);
    for (const [counter, code] of CODES.entries()) expect(counterOf(code, counter - 1), String(counter)).to.equal(counter);
  });

  it('gives the otpauth://hotp/ URI, counting from 0', function () {
    const uri = new URL(otpauthUri(COUNTER, SEED, 'home lab', 'ann@example.com'));
    expect(uri.host).to.equal('hotp');
    expect(uri.searchParams.get('counter')).to.equal('0');
    expect(uri.searchParams.get('secret')).to.equal(secretText(SEED));
  });
});
