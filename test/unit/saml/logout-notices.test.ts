// Who a close tells by a SAML LogoutRequest, and how the SOAP answer is read (api/saml/logout-notices.ts).
import { expect } from 'chai';
import type { ClosedSession } from '../../../api/notices/kinds.js';
import { logoutRequestId, logoutStatusOf, samlLogoutNotices, soapEnvelope, logoutRequestXml } from '../../../api/saml/logout-notices.js';
import { SAML_NS, SamlRefusal } from '../../../api/saml/xml.js';

const signIn = (client: string, sid: string | null, nameId?: string): ClosedSession => ({
  session: `${client}-${sid}`,
  client,
  user: 7,
  sid,
  ...(nameId !== undefined ? { saml: { nameId, nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' } } : {}),
});

const response = (status: string): string =>
  soapEnvelope(
    `<samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" ID="_r" Version="2.0" IssueInstant="2026-11-28T00:00:00Z">` +
      `<samlp:Status><samlp:StatusCode Value="${status}"/></samlp:Status></samlp:LogoutResponse>`,
  );

describe('SAML logout notices', function () {
  it('one notice per SAML sign-in a close ended, to the apps told only; grants of tokens are not its to tell', function () {
    const closed = [signIn('wiki', 'sid-a', 'n1'), signIn('wiki', 'sid-a', 'n1'), signIn('wiki', 'sid-b', 'n1'), signIn('rp', 'sid-a')];
    closed.push(signIn('quiet', 'sid-a', 'n2'));
    expect(samlLogoutNotices(closed, new Set(['wiki', 'rp']))).to.deep.equal([
      { destination: 'wiki', payload: { nameId: 'n1', nameIdFormat: closed[0]!.saml!.nameIdFormat, sessionIndex: 'sid-a' } },
      { destination: 'wiki', payload: { nameId: 'n1', nameIdFormat: closed[0]!.saml!.nameIdFormat, sessionIndex: 'sid-b' } },
    ]);
  });

  it("keeps a LogoutRequest's ID across retries of one notice, and never between notices or boxes", function () {
    expect(logoutRequestId('https://box', '1')).to.equal(logoutRequestId('https://box', '1'));
    expect(logoutRequestId('https://box', '1')).to.not.equal(logoutRequestId('https://box', '2'));
    expect(logoutRequestId('https://box', '1')).to.not.equal(logoutRequestId('https://other', '1'));
    expect(logoutRequestId('https://box', '1')).to.match(/^_[0-9a-f]{64}$/);
  });

  it('escapes what it names in the LogoutRequest', function () {
    const xml = logoutRequestXml('https://box', 'https://sp/slo', { nameId: 'a<b>&"', nameIdFormat: 'f', sessionIndex: 's' }, '_id', 0);
    expect(xml).to.include('>a&lt;b&gt;&amp;&quot;</saml:NameID>');
  });

  it('names the NameID format by its URN, as the assertion did, whether the sign-in kept its short name or the URN', function () {
    const subject = { nameId: 'n', sessionIndex: 's' };
    for (const [kept, said] of [
      ['persistent', 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'],
      ['emailAddress', 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
      ['urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'],
    ]) {
      const xml = logoutRequestXml('https://box', 'https://sp/slo', { ...subject, nameIdFormat: kept! }, '_id', 0);
      expect(xml, kept).to.include(`<saml:NameID Format="${said}">n</saml:NameID>`);
    }
    expect(logoutRequestXml('https://box', 'https://sp/slo', { ...subject, nameIdFormat: 'persistent' }, '_id', 0, 'user')).to.include(
      'Reason="urn:oasis:names:tc:SAML:2.0:logout:user"',
    );
  });

  it("reads the app's LogoutResponse status from its SOAP answer, and refuses anything else", function () {
    expect(logoutStatusOf(response('urn:oasis:names:tc:SAML:2.0:status:Success'))).to.equal('urn:oasis:names:tc:SAML:2.0:status:Success');
    expect(logoutStatusOf(response('urn:oasis:names:tc:SAML:2.0:status:Responder'))).to.equal(
      'urn:oasis:names:tc:SAML:2.0:status:Responder',
    );
    for (const answer of [
      '<html>ok</html>',
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "x">]><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"/>',
      soapEnvelope('<nothing/>'),
      'not xml',
      'x'.repeat(70_000),
    ])
      expect(() => logoutStatusOf(answer), answer.slice(0, 40)).to.throw(SamlRefusal);
  });
});
