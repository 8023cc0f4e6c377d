// What a token says of the sign-in behind it (api/credentials/acr.ts signInOf), and which of the
// classes several App policies ask for is enough (weakest).
import { expect } from 'chai';
import { signInOf, weakest } from '../../../api/credentials/acr.js';

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
