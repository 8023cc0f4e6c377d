import { expect } from 'chai';
import { oauth2ClaimNames, oidcClaimNames, profileOf } from '../../../../api/people/upstream/claims.js';
import { UpstreamError } from '../../../../api/people/upstream/profile.js';

describe('upstream claims', function () {
  it('reads the standard claims of an OpenID provider', function () {
    const claims = { sub: 'ann', email: 'ann@idp.example', email_verified: true, name: 'Ann', groups: ['staff', 'ops'] };
    expect(profileOf(claims, oidcClaimNames(), ['pwd', 'mfa'])).to.deep.equal({
      subject: 'ann',
      email: 'ann@idp.example',
      emailVerified: true,
      name: 'Ann',
      groups: ['staff', 'ops'],
      claims,
      amr: ['pwd', 'mfa'],
    });
  });

  it('verifies an email only on a boolean true, and keeps only the strings of groups and amr', function () {
    for (const said of ['true', 1, 'yes', null, undefined]) {
      expect(profileOf({ sub: 'a', email: 'a@x.example', email_verified: said }, oidcClaimNames()).emailVerified, String(said)).to.equal(
        false,
      );
    }
    expect(profileOf({ sub: 'a', email_verified: true }, oidcClaimNames()).emailVerified, 'no email').to.equal(false);
    const odd = profileOf({ sub: 'a', groups: ['ok', 7, { name: 'x' }, null, 'fine'] }, oidcClaimNames(), ['pwd', 3]);
    expect(odd.groups).to.deep.equal(['ok', 'fine']);
    expect(odd.amr).to.deep.equal(['pwd']);
    expect(profileOf({ sub: 'a', groups: 'staff' }, oidcClaimNames()).groups).to.deep.equal([]);
  });

  it('takes the claim names of the settings', function () {
    const names = oidcClaimNames({ subject: 'oid', email: 'upn', emailVerified: 'upn_checked', groups: 'roles' });
    const profile = profileOf({ sub: 'x', oid: 'o-1', upn: 'a@corp.example', upn_checked: true, roles: ['admin'] }, names);
    expect(profile).to.include({ subject: 'o-1', email: 'a@corp.example', emailVerified: true });
    expect(profile.groups).to.deep.equal(['admin']);
  });

  it('an OAuth 2.0 service: id as the subject (a number becomes a string), and no email verified unless a claim is named', function () {
    const body = { id: 42, email: 'a@svc.example', email_verified: true, name: 'A' };
    expect(profileOf(body, oauth2ClaimNames())).to.include({ subject: '42', email: 'a@svc.example', emailVerified: false });
    expect(profileOf(body, oauth2ClaimNames({ emailVerified: 'email_verified' })).emailVerified).to.equal(true);
  });

  it('takes an email only as an address the box takes of anyone: else none (never verified), and why', function () {
    const bad = [
      'victim@example.com\r\nBcc: everyone@example.com',
      'one@example.com, two@example.com',
      'one@example.com,two@example.com',
      `${'a'.repeat(4988)}@example.com`,
      'nul\u0000@example.com',
      'no-at-sign',
    ];
    for (const email of bad) {
      const profile = profileOf({ sub: 'a', email, email_verified: true }, oidcClaimNames());
      expect(profile, JSON.stringify(email).slice(0, 60)).not.to.have.property('email');
      expect(profile.emailVerified).to.equal(false);
      expect(profile.unusableEmail).to.be.a('string');
      expect(profile.unusableEmail).not.to.include('example.com');
    }
    expect(profileOf({ sub: 'a', email: '  a@x.example ' }, oidcClaimNames())).to.include({ email: 'a@x.example' });
    expect(profileOf({ sub: 'a', email: '' }, oidcClaimNames())).not.to.have.property('unusableEmail');
  });

  it('refuses a profile without a subject', function () {
    for (const claims of [{}, { sub: '' }, { sub: { id: 1 } }, { sub: 1.5 }]) {
      expect(() => profileOf(claims, oidcClaimNames()), JSON.stringify(claims)).to.throw(UpstreamError, /no subject/);
    }
  });
});
