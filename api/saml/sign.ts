// Signing what the box sends in SAML, as SAML Core §5 profiles XML Signature: an enveloped
// signature of one element by its ID (Reference URI '#ID'), the transforms enveloped-signature
// then exclusive c14n (no others, §5.4.4), SHA-256 and RSA-SHA256, and the certificate in
// KeyInfo/X509Data (which a verifier must not trust for that: ./verify.ts takes the key it
// trusts from metadata). The signature goes where each schema puts it: right after the
// element's saml:Issuer, or first in an md:EntityDescriptor.
//
// And the HTTP-Redirect binding's signature (Bindings §3.4.4.1), over the query's octets
// rather than the XML, which a redirect carries without its enveloped signature.
import { createPublicKey, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { childElements, parseXml, SAML_NS } from './xml.js';
import { xmlCryptoLibrary } from './xml-libraries.js';

/** The box's SAML signing key: RSA, and the certificate its metadata publishes for it (./certificate.ts). */
export interface SamlSigningKey {
  privateKey: KeyObject;
  certificatePem: string;
}

export type SignedElementName = 'Assertion' | 'Response' | 'AuthnRequest' | 'LogoutRequest' | 'LogoutResponse' | 'EntityDescriptor';

export const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const EXCLUSIVE_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED_SIGNATURE = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';

const NAMESPACE_OF: Record<SignedElementName, string> = {
  Assertion: SAML_NS.assertion,
  Response: SAML_NS.protocol,
  AuthnRequest: SAML_NS.protocol,
  LogoutRequest: SAML_NS.protocol,
  LogoutResponse: SAML_NS.protocol,
  EntityDescriptor: SAML_NS.metadata,
};

/** An xsd:ID as the box writes them (an NCName of ASCII): the only text this module puts into an XPath. */
const SAFE_ID = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * `xml` with the first `localName` element (in document order, in its SAML namespace) signed by
 * its ID. Sign an Assertion before the Response that holds it, so that the Response's digest
 * covers the signed Assertion: an Assertion inside an element already signed is refused.
 */
export function signSamlXml(xml: string, localName: SignedElementName, key: SamlSigningKey): string {
  checkCertificateIsKeys(key);
  const doc = parseXml(xml); // the box's own XML: a parse error is a bug, never a document to guess at
  const target = firstElement(doc, NAMESPACE_OF[localName], localName);
  if (!target) throw new Error(`no ${localName} to sign`);
  const id = target.getAttribute('ID');
  if (!id || !SAFE_ID.test(id)) throw new Error(`the ${localName} to sign has no ID the box writes`);
  if (elementsWithId(doc, id) !== 1) throw new Error(`the ID of the ${localName} to sign is not unique in its document`);
  if (directSignature(target)) throw new Error(`the ${localName} is signed already`);
  for (let up = target.parentNode; up && up.nodeType === up.ELEMENT_NODE; up = up.parentNode) {
    if (directSignature(up as Element)) throw new Error(`sign the ${localName} before the element that holds it`);
  }

  const targetPath = `//*[local-name(.)='${localName}' and namespace-uri(.)='${NAMESPACE_OF[localName]}' and @ID='${id}']`;
  const first = firstChildElement(target);
  const afterIssuer = localName !== 'EntityDescriptor' && first?.localName === 'Issuer' && first.namespaceURI === SAML_NS.assertion;
  if (localName === 'Assertion' && !afterIssuer) throw new Error('an Assertion begins with its Issuer');

  const signer = new (xmlCryptoLibrary().SignedXml)({
    privateKey: key.privateKey,
    publicCert: key.certificatePem,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: EXCLUSIVE_C14N,
    idAttribute: 'ID',
  });
  signer.addReference({ xpath: targetPath, transforms: [ENVELOPED_SIGNATURE, EXCLUSIVE_C14N], digestAlgorithm: SHA256, uri: `#${id}` });
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: afterIssuer
      ? { reference: `${targetPath}/*[local-name(.)='Issuer' and namespace-uri(.)='${SAML_NS.assertion}'][1]`, action: 'after' }
      : { reference: targetPath, action: 'prepend' },
  });
  return signer.getSignedXml();
}

/**
 * The query string (without `?`) of an HTTP-Redirect binding message, signed (Bindings
 * §3.4.4.1): `SAMLRequest` or `SAMLResponse` (one of them: ./bindings.ts encodeRedirectMessage's
 * value), `RelayState` when given, `SigAlg`, then `Signature` over the octets of the three before
 * it exactly as they are written, each URL-encoded.
 */
export function signRedirectQuery(
  params: { SAMLRequest?: string; SAMLResponse?: string; RelayState?: string },
  key: SamlSigningKey,
): string {
  if ((params.SAMLRequest === undefined) === (params.SAMLResponse === undefined)) {
    throw new Error('a redirect carries one SAMLRequest or one SAMLResponse');
  }
  const message: [string, string] =
    params.SAMLRequest !== undefined ? ['SAMLRequest', params.SAMLRequest] : ['SAMLResponse', params.SAMLResponse ?? ''];
  const pairs: [string, string][] = [message];
  if (params.RelayState !== undefined) pairs.push(['RelayState', params.RelayState]);
  pairs.push(['SigAlg', RSA_SHA256]);
  const signed = pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  const signature = sign('sha256', Buffer.from(signed, 'utf8'), key.privateKey).toString('base64');
  return `${signed}&Signature=${encodeURIComponent(signature)}`;
}

/** A certificate of another key would publish a key that verifies nothing the box signs. */
function checkCertificateIsKeys(key: SamlSigningKey): void {
  if (key.privateKey.asymmetricKeyType !== 'rsa') throw new Error('a SAML signing key is RSA');
  const certified = new X509Certificate(key.certificatePem).publicKey.export({ type: 'spki', format: 'der' });
  if (!certified.equals(createPublicKey(key.privateKey).export({ type: 'spki', format: 'der' }))) {
    throw new Error("the SAML signing certificate is not the signing key's");
  }
}

function firstElement(doc: Document, ns: string, localName: string): Element | undefined {
  return doc.getElementsByTagNameNS(ns, localName)[0];
}

function elementsWithId(doc: Document, id: string): number {
  let count = 0;
  const all = doc.getElementsByTagName('*');
  for (let i = 0; i < all.length; i++) if (all[i]?.getAttribute('ID') === id) count++;
  return count;
}

function firstChildElement(parent: Element): Element | undefined {
  for (let n = parent.firstChild; n; n = n.nextSibling) if (n.nodeType === n.ELEMENT_NODE) return n as Element;
  return undefined;
}

function directSignature(parent: Element): boolean {
  return childElements(parent, SAML_NS.dsig, 'Signature').length > 0;
}
