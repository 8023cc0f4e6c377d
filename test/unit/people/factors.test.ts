// What a sign-in needs next, from what it proved, the person's factors and rules, and what is asked.
import { expect } from 'chai';
import { nextStep, type PersonsFactors } from '../../../api/people/factors.js';
import { NO_FACTORS } from '../../../api/factor-kinds.js';

const none: PersonsFactors = { ...NO_FACTORS, groupRequires: false, mustEnrol: false };

describe('nextStep', function () {
  it('a person without factors or rules: a password is enough, unless more is asked', function () {
    expect(nextStep(['pwd'], none, undefined)).to.equal('done');
    expect(nextStep(['pwd'], none, 'urn:boxauth:acr:mfa')).to.equal('enrol');
    expect(nextStep(['pwd'], none, 'phr')).to.equal('enrol');
  });

  it('a person with a factor gives it at every sign-in, whatever is asked', function () {
    expect(nextStep(['pwd'], { ...none, totp: 1 }, undefined)).to.equal('second-factor');
    expect(nextStep(['pwd'], { ...none, passkey: 1 }, undefined)).to.equal('second-factor');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1 }, undefined)).to.equal('done');
    // A passkey that verified its person is a whole sign-in.
    expect(nextStep(['hwk', 'user', 'mfa'], { ...none, passkey: 1, totp: 1 }, 'phr')).to.equal('done');
  });

  it("a group's rule or an administrator's reset: enrol now, before anything is issued", function () {
    expect(nextStep(['pwd'], { ...none, groupRequires: true }, undefined)).to.equal('enrol');
    expect(nextStep(['pwd'], { ...none, mustEnrol: true }, undefined)).to.equal('enrol');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, groupRequires: true, totp: 1 }, undefined)).to.equal('done');
  });

  it('a code given and a passkey asked: the passkey if they have one, else they add one', function () {
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1, passkey: 1 }, 'phr')).to.equal('second-factor');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1 }, 'phr')).to.equal('enrol');
  });

  it('a step-up (a signed-in browser asked for more) enrols only after a recent proof: else a sign-in again', function () {
    const now = Date.parse('2026-11-26T10:00:00Z');
    const recent = { proofAt: new Date(now - 2 * 60_000), now };
    const stale = { proofAt: new Date(now - 11 * 60_000), now };
    expect(nextStep(['pwd'], none, 'urn:boxauth:acr:mfa', recent)).to.equal('enrol');
    expect(nextStep(['pwd'], none, 'urn:boxauth:acr:mfa', stale)).to.equal('sign-in');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1 }, 'phr', stale)).to.equal('sign-in');
    // Giving a factor the person has is no enrolment: a stale step-up gives it as any step-up does.
    expect(nextStep(['pwd'], { ...none, totp: 1 }, 'urn:boxauth:acr:mfa', stale)).to.equal('second-factor');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1, passkey: 1 }, 'phr', stale)).to.equal('second-factor');
    expect(nextStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1 }, 'urn:boxauth:acr:mfa', stale)).to.equal('done');
  });
});
