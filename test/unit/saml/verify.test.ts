import { expect } from 'chai';
import { verifiedResponse, verifiedSignedMessage, verifyRedirectSignature } from '../../../api/saml/verify.js';
import { SAML_NS, SamlRefusal, onlyChild, parseXml, readSamlXml, textOf } from '../../../api/saml/xml.js';
import {
  ALGORITHMS,
  authnRequestXml,
  responseXml,
  signEnveloped,
  signedRedirectQuery,
  testSamlKey,
  type TestSamlKey,
} from '../../support/saml.js';

function nameIdOf(assertion: Element): string {
  return textOf(onlyChild(onlyChild(assertion, SAML_NS.assertion, 'Subject'), SAML_NS.assertion, 'NameID'));
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(SamlRefusal);
    return (err as SamlRefusal).reason;
  }
  throw new Error('not refused');
}

describe('SAML signatures (verify.ts)', function () {
  let idp: TestSamlKey;
  let otherIdp: TestSamlKey;

  before(function () {
    idp = testSamlKey('idp.example');
    otherIdp = testSamlKey('other-idp.example');
  });

  describe('verifiedResponse: the happy paths, through readSamlXml (schema-valid)', function () {
    it('a Response whose Assertion alone is signed', async function () {
      const xml = signEnveloped(responseXml(), 'Assertion', idp);
      const verified = verifiedResponse(await readSamlXml(xml, 'protocol'), [idp.certificatePem]);
      expect(verified.responseSigned).to.equal(false);
      expect(nameIdOf(verified.assertion)).to.equal('alice@example.com');
      expect(verified.assertion.getAttribute('ID')).to.equal('_assertion');
    });

    it('a Response signed as a whole, its Assertion unsigned', async function () {
      const xml = signEnveloped(responseXml(), 'Response', idp);
      const verified = verifiedResponse(await readSamlXml(xml, 'protocol'), [idp.certificatePem]);
      expect(verified.responseSigned).to.equal(true);
      expect(verified.response.getAttribute('InResponseTo')).to.equal('_request');
      expect(nameIdOf(verified.assertion)).to.equal('alice@example.com');
    });

    it('both signed (the Assertion first, then the Response), with the other IdP’s certificate trusted too', async function () {
      const xml = signEnveloped(signEnveloped(responseXml(), 'Assertion', idp), 'Response', idp);
      const verified = verifiedResponse(await readSamlXml(xml, 'protocol'), [otherIdp.certificatePem, idp.certificatePem]);
      expect(verified.responseSigned).to.equal(true);
      expect(nameIdOf(verified.assertion)).to.equal('alice@example.com');
    });

    it('what it returns comes from the signed XML: a change to the document afterwards is not seen', function () {
      const doc = parseXml(signEnveloped(responseXml(), 'Assertion', idp));
      const verified = verifiedResponse(doc, [idp.certificatePem]);
      const arrivedNameId = doc.getElementsByTagNameNS(SAML_NS.assertion, 'NameID').item(0);
      (arrivedNameId?.firstChild as Text).data = 'mallory@example.com';
      expect(nameIdOf(verified.assertion)).to.equal('alice@example.com');
    });
  });

  describe('verifiedResponse: refusals', function () {
    it('an Assertion signed by another IdP’s key', function () {
      const doc = parseXml(signEnveloped(responseXml(), 'Assertion', otherIdp));
      expect(refusal(() => verifiedResponse(doc, [idp.certificatePem]))).to.equal('no trusted certificate verifies the signature');
    });

    it('a trusted certificate that cannot be read, or none that is RSA', function () {
      const doc = parseXml(signEnveloped(responseXml(), 'Assertion', idp));
      expect(refusal(() => verifiedResponse(doc, ['not a certificate']))).to.equal('a trusted certificate cannot be read');
      expect(refusal(() => verifiedResponse(doc, []))).to.equal('no trusted RSA certificate of 2048 bits or more to verify with');
    });

    it('a KeyInfo carrying another certificate is ignored: the attacker’s own signature and certificate do not verify…', function () {
      const doc = parseXml(signEnveloped(responseXml({ nameId: 'mallory@example.com' }), 'Assertion', otherIdp));
      expect(doc.getElementsByTagNameNS(SAML_NS.dsig, 'X509Certificate').length).to.equal(1);
      expect(refusal(() => verifiedResponse(doc, [idp.certificatePem]))).to.equal('no trusted certificate verifies the signature');
    });

    it('…and the IdP’s signature verifies whatever certificate KeyInfo names', function () {
      const xml = signEnveloped(responseXml(), 'Assertion', idp, { keyInfoCertificatePem: otherIdp.certificatePem });
      expect(nameIdOf(verifiedResponse(parseXml(xml), [idp.certificatePem]).assertion)).to.equal('alice@example.com');
    });

    it('a Response whose signature covers nothing used (an Extensions element), its Assertion unsigned', function () {
      const extensions = '<samlp:Extensions><x:Nothing xmlns:x="urn:example:nothing" ID="_nothing"/></samlp:Extensions>';
      const xml = responseXml({ nameId: 'mallory@example.com' }).replace('<samlp:Status>', `${extensions}<samlp:Status>`);
      const signed = signEnveloped(xml, 'Response', idp, {
        xpath: "//*[local-name(.)='Nothing']",
        location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' },
      });
      expect(refusal(() => verifiedResponse(parseXml(signed), [idp.certificatePem]))).to.equal(
        'the signature does not reference the element it is in',
      );
    });

    it('two Assertions, both signed by the IdP', function () {
      const second = signEnveloped(responseXml({ assertionId: '_second' }), 'Assertion', idp);
      const secondAssertion = second.slice(second.indexOf('<saml:Assertion'), second.indexOf('</samlp:Response>'));
      const xml = signEnveloped(responseXml({ extra: secondAssertion }), 'Assertion', idp, {
        xpath: "//*[local-name(.)='Assertion' and @ID='_assertion']",
      });
      expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal('the response must hold exactly one assertion');
    });

    it('an EncryptedAssertion still there (decryption comes first)', function () {
      const encrypted =
        '<saml:EncryptedAssertion><xenc:EncryptedData xmlns:xenc="http://www.w3.org/2001/04/xmlenc#"/></saml:EncryptedAssertion>';
      const xml = signEnveloped(responseXml({ extra: encrypted }), 'Assertion', idp);
      expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.match(/encrypted assertion/);
    });

    it('neither the Response nor the Assertion signed', function () {
      expect(refusal(() => verifiedResponse(parseXml(responseXml()), [idp.certificatePem]))).to.match(/neither/);
    });

    it('RSA-SHA1 and SHA-1 digests are refused', function () {
      const sha1 = signEnveloped(responseXml(), 'Assertion', idp, {
        signatureAlgorithm: ALGORITHMS.rsaSha1,
        digestAlgorithm: ALGORITHMS.sha1,
      });
      expect(refusal(() => verifiedResponse(parseXml(sha1), [idp.certificatePem]))).to.equal('the signature is not RSA-SHA256');
      const sha1Digest = signEnveloped(responseXml(), 'Assertion', idp, { digestAlgorithm: ALGORITHMS.sha1 });
      expect(refusal(() => verifiedResponse(parseXml(sha1Digest), [idp.certificatePem]))).to.equal('the signature digest is not SHA-256');
    });

    it('transforms other than enveloped-signature then exclusive c14n without comments', function () {
      for (const transforms of [
        [ALGORITHMS.envelopedSignature, ALGORITHMS.excC14nWithComments],
        [ALGORITHMS.excC14n, ALGORITHMS.envelopedSignature],
        [ALGORITHMS.envelopedSignature],
      ]) {
        const xml = signEnveloped(responseXml(), 'Assertion', idp, { transforms });
        expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.match(/transforms/);
      }
    });

    it('a changed signed Assertion (a digest that differs)', function () {
      const xml = signEnveloped(responseXml(), 'Assertion', idp).replace('alice@example.com', 'mallory@example.com');
      expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal('the signed content was changed');
    });

    it('the signed ID given to a second element', function () {
      const decoy = '<samlp:Extensions><x:Decoy xmlns:x="urn:example:decoy" ID="_assertion"/></samlp:Extensions>';
      const signed = signEnveloped(responseXml(), 'Assertion', idp);
      const xml = signed.replace('<samlp:Status>', `${decoy}<samlp:Status>`);
      expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal('the signed ID is not unique in the document');
    });

    it('a comment inside the Signature (CVE-2025-29775’s way in) is refused before xml-crypto runs', function () {
      const xml = signEnveloped(responseXml(), 'Assertion', idp).replace('</ds:DigestValue>', '<!-- x --></ds:DigestValue>');
      expect(refusal(() => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.match(/comment/);
    });
  });

  describe('verifiedResponse of a decrypted Response (the Response’s signature is checked as it arrived)', function () {
    // What decryptAssertions does, without its cryptography: the arrived Response holds one
    // EncryptedAssertion; the decrypted document is that Response with the Assertion in its place.
    const encrypted =
      '<saml:EncryptedAssertion><xenc:EncryptedData xmlns:xenc="http://www.w3.org/2001/04/xmlenc#">' +
      '<xenc:CipherData><xenc:CipherValue>AAAA</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData></saml:EncryptedAssertion>';
    const ASSERTION = /<saml:Assertion[\s\S]*<\/saml:Assertion>/;

    function decryptedPair(arrivedXml: string, assertion: string): { arrived: Document; decrypted: Document } {
      const plain = assertion.slice(
        assertion.indexOf('<saml:Assertion'),
        assertion.lastIndexOf('</saml:Assertion>') + '</saml:Assertion>'.length,
      );
      return {
        arrived: parseXml(arrivedXml),
        decrypted: parseXml(arrivedXml.replace(/<saml:EncryptedAssertion>[\s\S]*<\/saml:EncryptedAssertion>/, () => plain)),
      };
    }

    it('a signed Response around an encrypted, unsigned Assertion: verified on what arrived, the Assertion from the decryption', function () {
      const arrivedXml = signEnveloped(responseXml().replace(ASSERTION, encrypted), 'Response', idp);
      const { arrived, decrypted } = decryptedPair(arrivedXml, responseXml());
      const verified = verifiedResponse(decrypted, [idp.certificatePem], arrived);
      expect(verified.responseSigned).to.equal(true);
      expect(nameIdOf(verified.assertion)).to.equal('alice@example.com');
      // Checked on the decrypted document alone, the Response's signature no longer holds.
      expect(refusal(() => verifiedResponse(decrypted, [idp.certificatePem]))).to.equal('the signed content was changed');
    });

    it('an encrypted Assertion signed itself, in an unsigned Response', function () {
      const arrivedXml = responseXml().replace(ASSERTION, encrypted);
      const { arrived, decrypted } = decryptedPair(arrivedXml, signEnveloped(responseXml({ nameId: 'bob@example.com' }), 'Assertion', idp));
      expect(nameIdOf(verifiedResponse(decrypted, [idp.certificatePem], arrived).assertion)).to.equal('bob@example.com');
    });

    it('refuses another Response, an Assertion beside the encrypted one, and neither signed', function () {
      const arrivedXml = signEnveloped(responseXml().replace(ASSERTION, encrypted), 'Response', idp);
      const other = decryptedPair(arrivedXml.replace('ID="_response"', 'ID="_other"'), responseXml());
      expect(refusal(() => verifiedResponse(other.decrypted, [idp.certificatePem], parseXml(arrivedXml)))).to.equal(
        'the decrypted response is not the one that arrived',
      );
      const beside = signEnveloped(responseXml({ extra: encrypted, assertionId: '_beside' }), 'Response', idp);
      const withBoth = decryptedPair(beside, responseXml());
      expect(refusal(() => verifiedResponse(withBoth.decrypted, [idp.certificatePem], withBoth.arrived))).to.equal(
        'the response must hold exactly one assertion',
      );
      const unsigned = decryptedPair(responseXml().replace(ASSERTION, encrypted), responseXml());
      expect(refusal(() => verifiedResponse(unsigned.decrypted, [idp.certificatePem], unsigned.arrived))).to.match(/neither/);
    });
  });

  describe('a comment inside a NameID (admin@example.com<!---->.evil.com)', function () {
    it('the signed value is read whole from the signed XML, never cut at the comment', function () {
      const xml = signEnveloped(responseXml({ nameId: 'admin@example.com.evil.com' }), 'Assertion', idp).replace(
        'admin@example.com.evil.com',
        'admin@example.com<!---->.evil.com',
      );
      const doc = parseXml(xml);
      const { assertion } = verifiedResponse(doc, [idp.certificatePem]);
      expect(nameIdOf(assertion)).to.equal('admin@example.com.evil.com');
    });

    it('textOf refuses an element holding a comment, a child element or CDATA', function () {
      const doc = parseXml('<r><a>admin@example.com<!---->.evil.com</a><b>x<c/></b><d><![CDATA[x]]></d><e>plain &amp; simple</e></r>');
      const [a, b, d, e] = Array.from(doc.documentElement.childNodes) as Element[];
      for (const element of [a, b, d]) expect(() => textOf(element as Element)).to.throw(SamlRefusal);
      expect(textOf(e as Element)).to.equal('plain & simple');
    });
  });

  describe('verifiedSignedMessage (HTTP-POST)', function () {
    it('a signed AuthnRequest, returned as signed', async function () {
      const xml = signEnveloped(authnRequestXml(), 'AuthnRequest', idp);
      const request = verifiedSignedMessage(await readSamlXml(xml, 'protocol'), [idp.certificatePem]);
      expect(request.localName).to.equal('AuthnRequest');
      expect(request.getAttribute('AssertionConsumerServiceURL')).to.equal('https://sp.example/acs');
    });

    it('refuses a changed, an unsigned or another key’s AuthnRequest, and a Response', function () {
      const signed = signEnveloped(authnRequestXml(), 'AuthnRequest', idp);
      const changed = signed.replace('https://sp.example/acs', 'https://evil.example/acs');
      expect(refusal(() => verifiedSignedMessage(parseXml(changed), [idp.certificatePem]))).to.equal('the signed content was changed');
      expect(refusal(() => verifiedSignedMessage(parseXml(authnRequestXml()), [idp.certificatePem]))).to.match(/not signed/);
      expect(refusal(() => verifiedSignedMessage(parseXml(signed), [otherIdp.certificatePem]))).to.match(/no trusted/);
      const response = signEnveloped(responseXml(), 'Response', idp);
      expect(refusal(() => verifiedSignedMessage(parseXml(response), [idp.certificatePem]))).to.match(/verifiedResponse/);
    });

    it('refuses a signed ArtifactResponse, which could carry a Response past verifiedResponse', function () {
      const artifactResponse = `<samlp:ArtifactResponse xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_artifact" Version="2.0" IssueInstant="2026-01-01T00:00:00Z"><saml:Issuer>https://idp.example</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status></samlp:ArtifactResponse>`;
      const signed = signEnveloped(artifactResponse, 'ArtifactResponse', idp);
      expect(refusal(() => verifiedSignedMessage(parseXml(signed), [idp.certificatePem]))).to.equal(
        'the box takes no ArtifactResponse by HTTP-POST',
      );
    });
  });

  describe('verifyRedirectSignature (HTTP-Redirect, Bindings §3.4.4.1)', function () {
    const message = { SAMLRequest: 'fZBBT8MwDIX/Sum+d0pK5QAAAP//', RelayState: 'https://app.example/after?x=1&y=2' };

    it('a good signature verifies, and where each parameter sits in the query does not matter', function () {
      const query = signedRedirectQuery(message, idp);
      expect(verifyRedirectSignature(query, [idp.certificatePem])).to.equal(true);
      expect(verifyRedirectSignature(`?${query}`, [otherIdp.certificatePem, idp.certificatePem])).to.equal(true);
      const reordered = query.split('&').reverse().join('&');
      expect(verifyRedirectSignature(reordered, [idp.certificatePem])).to.equal(true);
    });

    it('a tampered RelayState does not', function () {
      const query = signedRedirectQuery(message, idp).replace(
        encodeURIComponent(message.RelayState),
        encodeURIComponent('https://evil.example/'),
      );
      expect(verifyRedirectSignature(query, [idp.certificatePem])).to.equal(false);
    });

    it('a signature over the parameters in another order does not', function () {
      const query = signedRedirectQuery(message, idp, { signedOrder: ['SigAlg', 'RelayState', 'SAMLRequest'] });
      expect(verifyRedirectSignature(query, [idp.certificatePem])).to.equal(false);
    });

    it('another key, RSA-SHA1, a missing Signature or a parameter twice does not', function () {
      expect(verifyRedirectSignature(signedRedirectQuery(message, otherIdp), [idp.certificatePem])).to.equal(false);
      expect(verifyRedirectSignature(signedRedirectQuery(message, idp, { sigAlg: ALGORITHMS.rsaSha1 }), [idp.certificatePem])).to.equal(
        false,
      );
      const query = signedRedirectQuery(message, idp);
      expect(verifyRedirectSignature(query.replace(/&Signature=.*$/, ''), [idp.certificatePem])).to.equal(false);
      expect(verifyRedirectSignature(`${query}&RelayState=x`, [idp.certificatePem])).to.equal(false);
    });
  });
});
