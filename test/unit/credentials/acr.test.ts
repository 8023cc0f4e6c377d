// The classes of sign-in, what a sign-in proved (RFC 8176 amr) and what a token says of it
// (signInOf); which of the classes several App policies ask for is enough (weakest). Pure.
import { expect } from 'chai';
import { acrAsked, acrOf, meets, signInOf, strongest, weakest, withFactor } from '../../../api/credentials/acr.js';
import { seal, unseal } from '../../../api/credentials/sealing.js';
import { randomBytes } from 'node:crypto';

describe('the classes of sign-in', function () {
  it('follow from what was proven: a password; several factors; a passkey', function () {
    expect(acrOf(['pwd'])).to.equal('urn:boxauth:acr:password');
    expect(acrOf(['pwd', 'otp', 'mfa'])).to.equal('urn:boxauth:acr:mfa');
    expect(acrOf(['hwk', 'user', 'mfa'])).to.equal('phr');
    expect(acrOf(['pwd', 'swk', 'mfa'])).to.equal('phr');
    // Two values without mfa were never said of one sign-in by the box: the ladder reads mfa.
    expect(acrOf(['pwd', 'otp'])).to.equal('urn:boxauth:acr:password');
  });

  it('adding a factor says mfa once two kinds are proven, or a passkey verified its person', function () {
    expect(withFactor(['pwd'], ['otp'])).to.deep.equal(['pwd', 'otp', 'mfa']);
    expect(withFactor([], ['hwk', 'user'])).to.deep.equal(['hwk', 'user', 'mfa']);
    expect(withFactor([], ['swk'])).to.deep.equal(['swk']);
    expect(withFactor(['pwd', 'otp', 'mfa'], ['otp'])).to.deep.equal(['pwd', 'otp', 'mfa']);
    expect(withFactor(['pwd', 'otp', 'mfa'], ['hwk', 'user'])).to.deep.equal(['pwd', 'otp', 'hwk', 'user', 'mfa']);
  });

  it('the ladder: a class meets itself and those below; the strongest of several asks wins', function () {
    expect(meets('phr', 'urn:boxauth:acr:mfa')).to.equal(true);
    expect(meets('urn:boxauth:acr:mfa', 'phr')).to.equal(false);
    expect(meets('urn:boxauth:acr:password', undefined)).to.equal(true);
    expect(strongest(undefined, 'urn:boxauth:acr:mfa', 'urn:boxauth:acr:password')).to.equal('urn:boxauth:acr:mfa');
    expect(strongest()).to.equal(undefined);
  });

  it('acr_values: any listed value satisfies, so the weakest known one is asked; unknown values are left aside', function () {
    expect(acrAsked('phr urn:boxauth:acr:mfa')).to.equal('urn:boxauth:acr:mfa');
    expect(acrAsked('urn:example:gold phr')).to.equal('phr');
    expect(acrAsked('urn:example:gold')).to.equal(undefined);
    expect(acrAsked(undefined)).to.equal(undefined);
  });
});

describe('sealing', function () {
  it('reads back only with its key and for its purpose; a changed byte is refused', function () {
    const key = randomBytes(32);
    const sealed = seal(key, 'totp', Buffer.from('secret'));
    expect(unseal(key, 'totp', sealed).toString()).to.equal('secret');
    expect(() => unseal(randomBytes(32), 'totp', sealed)).to.throw();
    expect(() => unseal(key, 'other', sealed)).to.throw();
    const flipped = Buffer.from(sealed);
    flipped[20] = flipped[20]! ^ 1;
    expect(() => unseal(key, 'totp', flipped)).to.throw();
    expect(seal(key, 'totp', Buffer.from('secret')).equals(sealed)).to.equal(false);
  });
});

describe('acr: the sign-in a token speaks for', function () {
  it('a browser sign-in: what it proved, its class and when', function () {
    const details = { sid: 's', auth_time: 1_700_000_000, amr: ['pwd', 'hwk', 'user', 'mfa'], acr: 'phr' };
    expect(signInOf({ userId: 7, details })).to.deep.equal({ amr: ['pwd', 'hwk', 'user', 'mfa'], acr: 'phr', authTime: 1_700_000_000 });
  });

  it('a sign-in from before amr was kept proved a password', function () {
    expect(signInOf({ userId: 7, details: { sid: 's', auth_time: 5 } })).to.deep.equal({
      amr: ['pwd'],
      acr: 'urn:boxauth:acr:password',
      authTime: 5,
    });
  });

  it('the class follows from amr, never from an acr recorded beside it', function () {
    expect(signInOf({ userId: 7, details: { sid: 's', amr: ['pwd'], acr: 'phr' } })?.acr).to.equal('urn:boxauth:acr:password');
  });

  it('none without a person, or without a browser sign-in behind the token', function () {
    expect(signInOf({ userId: null, details: { sid: 's', amr: ['hwk'] } })).to.equal(null);
    expect(signInOf({ userId: 7, details: null })).to.equal(null);
    expect(signInOf({ userId: 7, details: { amr: ['hwk'] } })).to.equal(null);
  });

  it('of the classes asked, the weakest the ladder knows is enough', function () {
    expect(weakest(['phr', 'urn:boxauth:acr:mfa'])).to.equal('urn:boxauth:acr:mfa');
    expect(weakest(['gold', 'phr'])).to.equal('phr');
    expect(weakest(['gold'])).to.equal(undefined);
    expect(weakest([])).to.equal(undefined);
  });
});
