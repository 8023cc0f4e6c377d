// What stands for a person's current password on their account page, and how a sign-up proves its address.
import { expect } from 'chai';
import { RECENT_PROOF_MINUTES as FRESH_MINUTES, recentProof } from '../../../api/people/factors.js';
import { freshSecondFactor } from '../../../api/people/own-account.js';
import { proofOf } from '../../../api/people/registration.js';

describe('freshSecondFactor', function () {
  const now = Date.parse('2026-11-25T10:00:00Z');
  const ago = (minutes: number): Date => new Date(now - minutes * 60_000);

  it('a sign-in with a second factor minutes ago stands for the current password', function () {
    expect(freshSecondFactor({ amr: ['pwd', 'otp', 'mfa'], authTime: ago(1), proven: true }, now)).to.equal(true);
    expect(freshSecondFactor({ amr: ['hwk', 'user', 'mfa'], authTime: ago(FRESH_MINUTES), proven: true }, now)).to.equal(true);
  });

  it('nor does a factor enrolled in the session since its sign-in: whoever holds a session can enrol one', function () {
    expect(freshSecondFactor({ amr: ['pwd', 'hwk', 'user', 'mfa'], authTime: ago(0), proven: false }, now)).to.equal(false);
  });

  it('a password alone, or a second factor given longer ago, does not', function () {
    expect(freshSecondFactor({ amr: ['pwd'], authTime: ago(0), proven: true }, now)).to.equal(false);
    expect(freshSecondFactor({ amr: ['pwd', 'otp', 'mfa'], authTime: ago(FRESH_MINUTES + 1), proven: true }, now)).to.equal(false);
  });
});

describe('recentProof', function () {
  const now = Date.parse('2026-11-25T10:00:00Z');
  const ago = (minutes: number): Date => new Date(now - minutes * 60_000);

  it('a proof given minutes ago stands for a credential change; one given longer ago does not', function () {
    expect(recentProof(ago(0), now)).to.equal(true);
    expect(recentProof(ago(FRESH_MINUTES), now)).to.equal(true);
    expect(recentProof(ago(FRESH_MINUTES + 1), now)).to.equal(false);
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

describe('browserName', function () {
  it('names the browser and the system a person would recognise', async function () {
    const { browserName } = await import('../../../api/ui/account-page.js');
    const edge = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0';
    expect(browserName(edge)).to.equal('Edge on Windows');
    expect(
      browserName('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36'),
    ).to.equal('Chrome on Android');
    expect(
      browserName('Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1'),
    ).to.equal('Safari on iPhone');
    expect(browserName('curl/8.5.0')).to.equal('curl/8.5.0');
    expect(browserName(null)).to.equal('unknown');
  });
});
