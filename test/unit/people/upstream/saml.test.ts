// The checks of a SAML Response once its signature held (api/people/upstream/saml.ts), with the
// clock given: each rule of the Web Browser SSO profile refusing alone, the bounds of the skew,
// and the profile read from the NameID and the attributes (the common IdPs' names by default).
import { expect } from 'chai';
import { acceptedAssertion, CLOCK_SKEW_MS, samlProfile, type SamlExpectations } from '../../../../api/people/upstream/saml.js';
import { UpstreamError } from '../../../../api/people/upstream/profile.js';
import { parseXml, SAML_NS } from '../../../../api/saml/xml.js';
import type { VerifiedResponse } from '../../../../api/saml/verify.js';

const NOW = new Date('2026-11-28T06:00:00Z');
const EXPECTED: SamlExpectations = {
  idpEntityId: 'https://idp.example',
  spEntityId: 'https://box.example/auth/upstream/corp/saml/metadata',
  acsUrl: 'https://box.example/auth/upstream/corp/saml/acs',
  requestId: '_req1',
};

interface Bent {
  status?: string;
  destination?: string;
  inResponseTo?: string;
  issuer?: string;
  recipient?: string;
  confirmationInResponseTo?: string;
  confirmationNotOnOrAfter?: string;
  notBefore?: string;
  notOnOrAfter?: string;
  audience?: string;
  nameId?: string;
  nameIdFormat?: string;
  attributes?: string;
  authn?: boolean;
}

function verified(b: Bent = {}): VerifiedResponse {
  const xml =
    `<samlp:Response xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_r" Version="2.0" IssueInstant="2026-11-28T06:00:00Z"` +
    ` Destination="${b.destination ?? EXPECTED.acsUrl}" InResponseTo="${b.inResponseTo ?? EXPECTED.requestId}">` +
    `<saml:Issuer>${b.issuer ?? EXPECTED.idpEntityId}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${b.status ?? 'urn:oasis:names:tc:SAML:2.0:status:Success'}"/></samlp:Status>` +
    `<saml:Assertion ID="_a1" Version="2.0" IssueInstant="2026-11-28T06:00:00Z"><saml:Issuer>${b.issuer ?? EXPECTED.idpEntityId}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${b.nameIdFormat ?? 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'}">${b.nameId ?? 'kim-123'}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData Recipient="${b.recipient ?? EXPECTED.acsUrl}"` +
    ` InResponseTo="${b.confirmationInResponseTo ?? EXPECTED.requestId}" NotOnOrAfter="${b.confirmationNotOnOrAfter ?? '2026-11-28T06:05:00Z'}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${b.notBefore ?? '2026-11-28T05:59:55Z'}" NotOnOrAfter="${b.notOnOrAfter ?? '2026-11-28T06:05:00Z'}">` +
    `<saml:AudienceRestriction><saml:Audience>${b.audience ?? EXPECTED.spEntityId}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    (b.authn === false
      ? ''
      : `<saml:AuthnStatement AuthnInstant="2026-11-28T06:00:00Z"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`) +
    (b.attributes ? `<saml:AttributeStatement>${b.attributes}</saml:AttributeStatement>` : '') +
    `</saml:Assertion></samlp:Response>`;
  const response = parseXml(xml).documentElement;
  const assertion = Array.from(response.childNodes).find((n) => (n as Element).localName === 'Assertion') as Element;
  return { response, responseSigned: false, assertion };
}

function refusal(b: Bent, now = NOW): UpstreamError {
  try {
    acceptedAssertion(verified(b), EXPECTED, now);
  } catch (err) {
    expect(err).to.be.instanceOf(UpstreamError);
    return err as UpstreamError;
  }
  throw new Error('accepted');
}

describe('people/upstream/saml: a verified Response checked', () => {
  it('accepts what an honest identity provider sends, until the confirmation ends plus the skew', () => {
    const accepted = acceptedAssertion(verified(), EXPECTED, NOW);
    expect(accepted.id).to.equal('_a1');
    expect(accepted.nameId).to.equal('kim-123');
    expect(accepted.acceptUntil.toISOString()).to.equal(new Date(Date.parse('2026-11-28T06:05:00Z') + CLOCK_SKEW_MS).toISOString());
  });

  it('refuses each thing that does not hold, on its own', () => {
    expect(refusal({ status: 'urn:oasis:names:tc:SAML:2.0:status:Requester' }).failure).to.equal('refused');
    expect(refusal({ destination: 'https://other.example/acs' }).message).to.include('Destination');
    expect(refusal({ inResponseTo: '_other' }).message).to.include('another request');
    expect(refusal({ confirmationInResponseTo: '_other' }).message).to.include('another request');
    expect(refusal({ issuer: 'https://evil.example' }).message).to.include('Issuer');
    expect(refusal({ recipient: 'https://other.example/acs' }).message).to.include('Recipient');
    expect(refusal({ audience: 'https://other.example' }).message).to.include('Audience');
    expect(refusal({ authn: false }).message).to.include('AuthnStatement');
    expect(refusal({ notBefore: 'yesterday' }).message).to.include('not a time');
  });

  it('takes two minutes of skew either way, and not a second more', () => {
    const at = (iso: string, ms: number): Date => new Date(Date.parse(iso) + ms);
    // Not yet valid: NotBefore 06:02:00 is two minutes ahead of the box's 06:00:00.
    expect(() => acceptedAssertion(verified({ notBefore: '2026-11-28T06:02:00Z' }), EXPECTED, NOW)).not.to.throw();
    expect(refusal({ notBefore: '2026-11-28T06:02:01Z' }).message).to.include('not valid yet');
    // Expired: NotOnOrAfter 06:05:00, the box at 06:06:59.999 takes it, at 06:07:00 it does not.
    expect(() => acceptedAssertion(verified(), EXPECTED, at('2026-11-28T06:07:00Z', -1))).not.to.throw();
    expect(refusal({}, at('2026-11-28T06:07:00Z', 0)).message).to.include('expired');
    expect(refusal({ confirmationNotOnOrAfter: '2026-11-28T05:57:00Z' }).message).to.include('expired');
  });

  it('refuses a NameID or Audience holding anything but text (a comment cuts no value short)', () => {
    expect(refusal({ nameId: 'admin@example.com<!---->.evil.com' }).message).to.include('NameID');
    expect(refusal({ audience: `${EXPECTED.spEntityId}<!---->` }).message).to.include('Audience');
  });

  it('reads the profile: the NameID as subject, the common attribute names, a transient NameID refused', () => {
    const attributes =
      '<saml:Attribute Name="http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"><saml:AttributeValue>kim@corp.example</saml:AttributeValue></saml:Attribute>' +
      '<saml:Attribute Name="memberOf"><saml:AttributeValue>eng</saml:AttributeValue><saml:AttributeValue>ops</saml:AttributeValue></saml:Attribute>' +
      '<saml:Attribute Name="uid"><saml:AttributeValue>k42</saml:AttributeValue></saml:Attribute>';
    const settings = { entityId: EXPECTED.idpEntityId, metadata: { xml: '<x/>' } };
    const profile = samlProfile(settings, acceptedAssertion(verified({ attributes }), EXPECTED, NOW));
    expect(profile).to.deep.include({ subject: 'kim-123', email: 'kim@corp.example', emailVerified: false, groups: ['eng', 'ops'] });
    expect(profile.claims.uid).to.equal('k42');
    const named = samlProfile(
      { ...settings, emailVerified: true, attributes: { subject: 'uid', groups: 'uid' } },
      acceptedAssertion(verified({ attributes }), EXPECTED, NOW),
    );
    expect(named).to.deep.include({ subject: 'k42', emailVerified: true, groups: ['k42'] });
    const transient = acceptedAssertion(verified({ nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient' }), EXPECTED, NOW);
    expect(() => samlProfile(settings, transient)).to.throw(UpstreamError, /transient/);
    const byEmail = acceptedAssertion(
      verified({ nameId: 'kim@corp.example', nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' }),
      EXPECTED,
      NOW,
    );
    expect(samlProfile(settings, byEmail).email).to.equal('kim@corp.example');
  });
});
