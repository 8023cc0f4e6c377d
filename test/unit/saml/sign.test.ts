// What the box signs in SAML, as an SP checks it: xml-crypto (and Debian's xmlsec1, the Python
// SP's) verify each signature with the box's certificate, and one character changed anywhere
// the signature covers makes it fail; the signature sits where the schema puts it; the
// HTTP-Redirect binding's signature covers the query's octets.
import { verify } from 'node:crypto';
import { expect } from 'chai';
import { decodeRedirectMessage, encodeRedirectMessage } from '../../../api/saml/bindings.js';
import { RSA_SHA256, signRedirectQuery, signSamlXml } from '../../../api/saml/sign.js';
import { verifiedResponse, verifyRedirectSignature } from '../../../api/saml/verify.js';
import { readSamlXml } from '../../../api/saml/xml.js';
import {
  assertionXml,
  box,
  childNames,
  entityDescriptorXml,
  NS,
  parseXml,
  responseXml,
  samlKey,
  signatureChecks,
  xmlsec1,
} from './signing-fixtures.js';

describe('signSamlXml: what an SP verifies', function () {
  const other = samlKey('other.example');

  it('signs an Assertion that verifies with the certificate, and not after one character changes', function () {
    const signed = signSamlXml(assertionXml(), 'Assertion', box);
    expect(signatureChecks(signed, NS.assertion, 'Assertion')).to.equal(true);
    expect(signatureChecks(signed.replace('sam@example.com', 'sam@example.con'), NS.assertion, 'Assertion')).to.equal(false);
    expect(signatureChecks(signed.replace('https://sp.example<', 'https://sp.exampl3<'), NS.assertion, 'Assertion')).to.equal(false);
    expect(signatureChecks(signed.replace('ID="_a1"', 'ID="_a2"'), NS.assertion, 'Assertion')).to.equal(false);
  });

  it("does not verify with another IdP's certificate", function () {
    const signed = signSamlXml(assertionXml(), 'Assertion', box);
    expect(signatureChecks(signed, NS.assertion, 'Assertion', other.certificatePem)).to.equal(false);
  });

  it('writes the SAML profile of XML Signature: #ID, enveloped then exclusive c14n, SHA-256, RSA-SHA256, the certificate', function () {
    const signed = signSamlXml(assertionXml('_profile'), 'Assertion', box);
    const signature = parseXml(signed).getElementsByTagNameNS(NS.dsig, 'Signature')[0]!;
    const algorithm = (localName: string): string[] =>
      Array.from(signature.getElementsByTagNameNS(NS.dsig, localName)).map((e) => e.getAttribute('Algorithm') ?? '');
    expect(signature.getElementsByTagNameNS(NS.dsig, 'Reference')[0]?.getAttribute('URI')).to.equal('#_profile');
    expect(signature.getElementsByTagNameNS(NS.dsig, 'Reference')).to.have.length(1);
    expect(algorithm('Transform')).to.deep.equal([
      'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
      'http://www.w3.org/2001/10/xml-exc-c14n#',
    ]);
    expect(algorithm('CanonicalizationMethod')).to.deep.equal(['http://www.w3.org/2001/10/xml-exc-c14n#']);
    expect(algorithm('DigestMethod')).to.deep.equal(['http://www.w3.org/2001/04/xmlenc#sha256']);
    expect(algorithm('SignatureMethod')).to.deep.equal([RSA_SHA256]);
    const certificate = signature.getElementsByTagNameNS(NS.dsig, 'X509Certificate')[0]?.textContent;
    expect(certificate).to.equal(box.certificatePem.replace(/-----[A-Z ]+-----|\s/g, ''));
  });

  it('places the Signature right after the Issuer, as the schema orders an Assertion and a Response', function () {
    const assertion = signSamlXml(assertionXml(), 'Assertion', box);
    expect(childNames(assertion, NS.assertion, 'Assertion')).to.deep.equal([
      'Issuer',
      'Signature',
      'Subject',
      'Conditions',
      'AuthnStatement',
    ]);
    const response = signSamlXml(responseXml(assertionXml()), 'Response', box);
    expect(childNames(response, NS.protocol, 'Response')).to.deep.equal(['Issuer', 'Signature', 'Status', 'Assertion']);
  });

  it('places the Signature first in an EntityDescriptor, and signs it verifiably', function () {
    const metadata = signSamlXml(entityDescriptorXml(), 'EntityDescriptor', box);
    expect(childNames(metadata, NS.metadata, 'EntityDescriptor')).to.deep.equal(['Signature', 'IDPSSODescriptor']);
    expect(signatureChecks(metadata, NS.metadata, 'EntityDescriptor')).to.equal(true);
    expect(signatureChecks(metadata.replace('/saml/sso', '/saml/ss0'), NS.metadata, 'EntityDescriptor')).to.equal(false);
  });

  it('places the Signature first in a request without an Issuer', function () {
    const request = `<samlp:LogoutRequest xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="_lr" Version="2.0" IssueInstant="2026-11-28T06:00:00Z"><saml:NameID>x</saml:NameID></samlp:LogoutRequest>`;
    const signed = signSamlXml(request, 'LogoutRequest', box);
    expect(childNames(signed, NS.protocol, 'LogoutRequest')).to.deep.equal(['Signature', 'NameID']);
    expect(signatureChecks(signed, NS.protocol, 'LogoutRequest')).to.equal(true);
  });

  it("signs the Assertion, then the Response whose digest covers the Assertion's signature", function () {
    const signed = signSamlXml(signSamlXml(responseXml(assertionXml()), 'Assertion', box), 'Response', box);
    expect(signatureChecks(signed, NS.assertion, 'Assertion')).to.equal(true);
    expect(signatureChecks(signed, NS.protocol, 'Response')).to.equal(true);
    expect(childNames(signed, NS.assertion, 'Assertion')).to.deep.equal(['Issuer', 'Signature', 'Subject', 'Conditions', 'AuthnStatement']);
    // The Assertion's SignatureValue is inside what the Response signed.
    const value = /<ds:SignatureValue>([^<]+)</.exec(signed.slice(signed.indexOf('<saml:Assertion')))![1]!;
    const tampered = signed.replace(value, `${value[0] === 'A' ? 'B' : 'A'}${value.slice(1)}`);
    expect(signatureChecks(tampered, NS.protocol, 'Response')).to.equal(false);
    expect(signatureChecks(tampered, NS.assertion, 'Assertion')).to.equal(false);
  });

  it('refuses to sign an Assertion inside a Response signed already (the Response would no longer verify)', function () {
    const responseFirst = signSamlXml(responseXml(assertionXml()), 'Response', box);
    expect(() => signSamlXml(responseFirst, 'Assertion', box)).to.throw(/before the element that holds it/);
    expect(() => signSamlXml(responseFirst, 'Response', box)).to.throw(/signed already/);
  });

  it('refuses an element without an ID, with an ID that is not unique or not an NCName, and a certificate of another key', function () {
    expect(() => signSamlXml(assertionXml().replace(' ID="_a1"', ''), 'Assertion', box)).to.throw(/no ID/);
    expect(() => signSamlXml(assertionXml("_a1' or '1'='1"), 'Assertion', box)).to.throw(/no ID/);
    expect(() => signSamlXml(responseXml(assertionXml('_same'), '_same'), 'Response', box)).to.throw(/not unique/);
    expect(() => signSamlXml(assertionXml(), 'Response', box)).to.throw(/no Response to sign/);
    expect(() => signSamlXml(assertionXml(), 'Assertion', { privateKey: box.privateKey, certificatePem: other.certificatePem })).to.throw(
      /not the signing key's/,
    );
  });

  it("follows the OASIS schemas and passes the box's own verification (readSamlXml, verifiedResponse)", async function () {
    const signed = signSamlXml(signSamlXml(responseXml(assertionXml()), 'Assertion', box), 'Response', box);
    const verified = verifiedResponse(await readSamlXml(signed, 'protocol'), [box.certificatePem]);
    expect(verified.responseSigned).to.equal(true);
    expect(verified.assertion.getElementsByTagNameNS(NS.assertion, 'NameID')[0]?.textContent).to.equal('sam@example.com');
    expect(() => verifiedResponse(parseXml(signed.replace('sam@example.com', 'sam@example.con')), [box.certificatePem])).to.throw();
    const assertionOnly = signSamlXml(responseXml(assertionXml()), 'Assertion', box);
    expect(verifiedResponse(await readSamlXml(assertionOnly, 'protocol'), [box.certificatePem]).responseSigned).to.equal(false);
    await readSamlXml(signSamlXml(entityDescriptorXml(), 'EntityDescriptor', box), 'metadata');
  });

  it('verifies in xmlsec1, the library of the Python SP', function () {
    const xmlsec1Verify = (xml: string): ReturnType<typeof xmlsec1> =>
      xmlsec1({ 'cert.pem': box.certificatePem, 'signed.xml': xml }, (dir) => [
        ...['--verify', '--pubkey-cert-pem', `${dir}/cert.pem`],
        ...['--id-attr:ID', `${NS.assertion}:Assertion`, `${dir}/signed.xml`],
      ]);
    const signed = signSamlXml(assertionXml(), 'Assertion', box);
    const ok = xmlsec1Verify(signed);
    if (!ok) this.skip(); // no xmlsec1 here: xml-crypto's check above stands
    expect(ok.status, ok.out).to.equal(0);
    expect(xmlsec1Verify(signed.replace('sam@example.com', 'sam@example.con'))?.status).not.to.equal(0);
  });
});

describe('signRedirectQuery: the HTTP-Redirect binding', function () {
  const request = `<samlp:AuthnRequest xmlns:samlp="${NS.protocol}" ID="_q1" Version="2.0" IssueInstant="2026-11-28T06:00:00Z"/>`;

  /** The query split as the binding's verifier reads it: the signed octets as sent, and the values. */
  function read(query: string): { signedOctets: string; values: URLSearchParams } {
    return { signedOctets: query.slice(0, query.indexOf('&Signature=')), values: new URLSearchParams(query) };
  }

  it('signs SAMLRequest, RelayState and SigAlg in that order, and the message round-trips', function () {
    const relayState = 'back to /app?x=1&y=ü';
    const query = signRedirectQuery({ SAMLRequest: encodeRedirectMessage(request), RelayState: relayState }, box);
    expect([...new URLSearchParams(query).keys()]).to.deep.equal(['SAMLRequest', 'RelayState', 'SigAlg', 'Signature']);
    const { signedOctets, values } = read(query);
    expect(values.get('SigAlg')).to.equal(RSA_SHA256);
    expect(values.get('RelayState')).to.equal(relayState);
    expect(decodeRedirectMessage(values.get('SAMLRequest')!)).to.equal(request);
    expect(verify('sha256', Buffer.from(signedOctets), box.publicKey, Buffer.from(values.get('Signature')!, 'base64'))).to.equal(true);
    expect(verifyRedirectSignature(query, [box.certificatePem])).to.equal(true);
  });

  it('leaves RelayState out of the query and the signature when there is none, and signs a SAMLResponse', function () {
    const query = signRedirectQuery({ SAMLResponse: encodeRedirectMessage(request) }, box);
    expect([...new URLSearchParams(query).keys()]).to.deep.equal(['SAMLResponse', 'SigAlg', 'Signature']);
    const { signedOctets, values } = read(query);
    expect(verify('sha256', Buffer.from(signedOctets), box.publicKey, Buffer.from(values.get('Signature')!, 'base64'))).to.equal(true);
  });

  it('is detected when the message, the RelayState or the SigAlg is changed', function () {
    const query = signRedirectQuery({ SAMLRequest: encodeRedirectMessage(request), RelayState: 'abc' }, box);
    const { values } = read(query);
    const signature = Buffer.from(values.get('Signature')!, 'base64');
    const other = encodeURIComponent(encodeRedirectMessage(request.replace('_q1', '_q2')));
    for (const changed of [
      query.replace(/SAMLRequest=[^&]+/, `SAMLRequest=${other}`),
      query.replace('RelayState=abc', 'RelayState=abd'),
      query.replace('rsa-sha256', 'rsa-sha512'),
    ]) {
      expect(verify('sha256', Buffer.from(read(changed).signedOctets), box.publicKey, signature)).to.equal(false);
      expect(verifyRedirectSignature(changed, [box.certificatePem])).to.equal(false);
    }
  });

  it('URL-encodes every value, so base64 and RelayState characters cannot end a parameter', function () {
    const query = signRedirectQuery({ SAMLRequest: 'a+b/c==', RelayState: 'x&SigAlg=y' }, box);
    expect(query.startsWith('SAMLRequest=a%2Bb%2Fc%3D%3D&RelayState=x%26SigAlg%3Dy&SigAlg=')).to.equal(true);
  });

  it('refuses both messages at once, or none', function () {
    expect(() => signRedirectQuery({ SAMLRequest: 'a', SAMLResponse: 'b' }, box)).to.throw(/one SAMLRequest or one SAMLResponse/);
    expect(() => signRedirectQuery({ RelayState: 'a' }, box)).to.throw(/one SAMLRequest or one SAMLResponse/);
  });
});
