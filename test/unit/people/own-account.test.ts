// What stands for a person's current password on their account page, and how a sign-up proves its address.
import { expect } from 'chai';
import { FRESH_MINUTES, freshSecondFactor } from '../../../api/people/own-account.js';
import { proofOf } from '../../../api/people/registration.js';

describe('freshSecondFactor', function () {
  const now = Date.parse('2026-11-25T10:00:00Z');
  const ago = (minutes: number): Date => new Date(now - minutes * 60_000);

  it('a sign-in with a second factor minutes ago stands for the current password', function () {
    expect(freshSecondFactor({ amr: ['pwd', 'otp', 'mfa'], authTime: ago(1) }, now)).to.equal(true);
    expect(freshSecondFactor({ amr: ['hwk', 'user', 'mfa'], authTime: ago(FRESH_MINUTES) }, now)).to.equal(true);
  });

  it('a password alone, or a second factor given longer ago, does not', function () {
    expect(freshSecondFactor({ amr: ['pwd'], authTime: ago(0) }, now)).to.equal(false);
    expect(freshSecondFactor({ amr: ['pwd', 'otp', 'mfa'], authTime: ago(FRESH_MINUTES + 1) }, now)).to.equal(false);
  });
});

describe('proofOf', function () {
  const smtp = { url: 'smtp://mail.example:587', from: 'box <no-reply@example.com>' };

  it('without mail there is no proof to ask for, whatever is configured', function () {
    expect(proofOf({ smtp: undefined, registrationVerify: 'after-sign-in' })).to.equal('none');
  });

  it('with mail, the configured moment', function () {
    expect(proofOf({ smtp, registrationVerify: 'before-sign-in' } as never)).to.equal('before-sign-in');
    expect(proofOf({ smtp, registrationVerify: 'after-sign-in' } as never)).to.equal('after-sign-in');
  });
});
