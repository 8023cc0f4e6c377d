// The XML Signature Wrapping attacks of "On Breaking SAML: Be Whoever You Want to Be"
// (Somorovsky et al., USENIX Security 2012), in the eight forms SAML Raider names XSW1–XSW8:
// each takes a Response the IdP signed for alice and moves elements so that the signature still
// verifies over the original while a reader would take the attacker's assertion for mallory.
// Each is tried on the document as parsed (no schema), so the refusal is the verifier's own.
import { XMLSerializer } from '@xmldom/xmldom';
import { expect } from 'chai';
import { SignedXml } from 'xml-crypto';
import { verifiedResponse } from '../../../api/saml/verify.js';
import { SAML_NS, SamlRefusal, childElements, onlyChild, parseXml, textOf } from '../../../api/saml/xml.js';
import { responseXml, signEnveloped, testSamlKey, type TestSamlKey } from '../../support/saml.js';

/** The attacker's edit of an assertion: the subject becomes mallory. */
function makeEvil(assertion: Element, newId: string): Element {
  assertion.setAttribute('ID', newId);
  const nameId = assertion.getElementsByTagNameNS(SAML_NS.assertion, 'NameID').item(0);
  if (!nameId?.firstChild) throw new Error('fixture without a NameID');
  (nameId.firstChild as Text).data = 'mallory@example.com';
  return assertion;
}

function withoutSignature(element: Element): Element {
  const copy = element.cloneNode(true) as Element;
  for (const signature of childElements(copy, SAML_NS.dsig, 'Signature')) copy.removeChild(signature);
  return copy;
}

function parts(xml: string): { doc: Document; response: Element; assertion: Element } {
  const doc = parseXml(xml);
  return { doc, response: doc.documentElement, assertion: onlyChild(doc.documentElement, SAML_NS.assertion, 'Assertion') };
}

describe('SAML signature wrapping (XSW1–XSW8)', function () {
  let idp: TestSamlKey;
  let signedResponse: string;
  let signedAssertion: string;

  before(function () {
    idp = testSamlKey('idp.example');
    signedResponse = signEnveloped(responseXml({ nameId: 'alice@example.com' }), 'Response', idp);
    signedAssertion = signEnveloped(responseXml({ nameId: 'alice@example.com' }), 'Assertion', idp);
  });

  /** The attack keeps the IdP's signature valid: xml-crypto alone, given the first Signature, accepts the document. */
  function signatureStillVerifies(xml: string): boolean {
    const doc = parseXml(xml);
    const signature = doc.getElementsByTagNameNS(SAML_NS.dsig, 'Signature').item(0);
    if (!signature) return false;
    const check = new SignedXml({ publicCert: idp.certificatePem, getCertFromKeyInfo: () => null });
    check.loadSignature(signature);
    return check.checkSignature(xml);
  }

  function expectRefused(doc: Document): void {
    const xml = new XMLSerializer().serializeToString(doc);
    expect(signatureStillVerifies(xml), 'the wrapped signature still verifies on its own').to.equal(true);
    expect(() => verifiedResponse(parseXml(xml), [idp.certificatePem])).to.throw(SamlRefusal);
  }

  it('the untouched fixtures verify, for alice (so each refusal below is the attack’s)', function () {
    for (const xml of [signedResponse, signedAssertion]) {
      const { assertion } = verifiedResponse(parseXml(xml), [idp.certificatePem]);
      expect(textOf(onlyChild(onlyChild(assertion, SAML_NS.assertion, 'Subject'), SAML_NS.assertion, 'NameID'))).to.equal(
        'alice@example.com',
      );
    }
  });

  it('XSW1: an evil Response at the root, the signed original inside its Signature', function () {
    const { doc, response } = parts(signedResponse);
    const original = withoutSignature(response);
    const signature = onlyChild(response, SAML_NS.dsig, 'Signature');
    response.setAttribute('ID', '_evil_response');
    makeEvil(onlyChild(response, SAML_NS.assertion, 'Assertion'), '_evil_assertion');
    signature.appendChild(original);
    expectRefused(doc);
  });

  it('XSW2: an evil Response at the root, the signed original beside its Signature (detached)', function () {
    const { doc, response } = parts(signedResponse);
    const original = withoutSignature(response);
    const signature = onlyChild(response, SAML_NS.dsig, 'Signature');
    response.setAttribute('ID', '_evil_response');
    makeEvil(onlyChild(response, SAML_NS.assertion, 'Assertion'), '_evil_assertion');
    response.insertBefore(original, signature);
    expectRefused(doc);
  });

  it('XSW3: an unsigned evil Assertion before the signed one', function () {
    const { doc, response, assertion } = parts(signedAssertion);
    const evil = makeEvil(withoutSignature(assertion), '_evil_assertion');
    response.insertBefore(evil, assertion);
    expectRefused(doc);
  });

  it('XSW4: an unsigned evil Assertion wrapping the signed one', function () {
    const { doc, response, assertion } = parts(signedAssertion);
    const evil = makeEvil(withoutSignature(assertion), '_evil_assertion');
    response.replaceChild(evil, assertion);
    evil.appendChild(assertion);
    expectRefused(doc);
  });

  it('XSW5: the evil Assertion keeps the Signature, a copy of the original is appended to the Response', function () {
    const { doc, response, assertion } = parts(signedAssertion);
    const original = withoutSignature(assertion);
    makeEvil(assertion, '_evil_assertion');
    response.appendChild(original);
    expectRefused(doc);
  });

  it('XSW6: the evil Assertion keeps the Signature, a copy of the original inside that Signature', function () {
    const { doc, assertion } = parts(signedAssertion);
    const original = withoutSignature(assertion);
    makeEvil(assertion, '_evil_assertion');
    onlyChild(assertion, SAML_NS.dsig, 'Signature').appendChild(original);
    expectRefused(doc);
  });

  it('XSW7: the signed original inside samlp:Extensions, an unsigned evil Assertion in its place', function () {
    const { doc, response, assertion } = parts(signedAssertion);
    const extensions = doc.createElementNS(SAML_NS.protocol, 'samlp:Extensions');
    extensions.appendChild(assertion.cloneNode(true));
    const evil = makeEvil(withoutSignature(assertion), '_evil_assertion');
    response.replaceChild(evil, assertion);
    response.insertBefore(extensions, onlyChild(response, SAML_NS.protocol, 'Status'));
    expectRefused(doc);
  });

  it('XSW8: the evil Assertion keeps the Signature, the original inside a ds:Object of it', function () {
    const { doc, assertion } = parts(signedAssertion);
    const original = withoutSignature(assertion);
    makeEvil(assertion, '_evil_assertion');
    const object = doc.createElementNS(SAML_NS.dsig, 'ds:Object');
    object.appendChild(original);
    onlyChild(assertion, SAML_NS.dsig, 'Signature').appendChild(object);
    expectRefused(doc);
  });

  it('an unsigned evil Assertion hidden in samlp:Extensions beside the signed one (one Assertion per document)', function () {
    const { doc, response, assertion } = parts(signedAssertion);
    const extensions = doc.createElementNS(SAML_NS.protocol, 'samlp:Extensions');
    extensions.appendChild(makeEvil(withoutSignature(assertion), '_evil_assertion'));
    response.insertBefore(extensions, onlyChild(response, SAML_NS.protocol, 'Status'));
    expectRefused(doc);
  });
});
