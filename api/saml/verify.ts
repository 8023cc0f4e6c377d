// What a signature covers, and nothing else. SAML's history is signature wrapping (XSW: the
// signature checks one element, the reader reads another), so the elements returned here are
// never found again in the document that arrived: each is re-parsed from the canonical XML that
// xml-crypto digested and verified (`getSignedReferences()`), after this file has checked the
// signature's shape itself: exactly one Reference, `#` + the ID of the element the Signature is
// a direct child of, that ID on no other element of the document, transforms exactly
// enveloped-signature then exclusive c14n without comments, SHA-256 digest, RSA-SHA256 (SHA-1
// is refused), no comment or processing instruction anywhere in the Signature, and the key one
// of the trusted certificates given (KeyInfo is never read for trust; each certificate is tried).
//
// The library: xml-crypto 6.3.2 (node-saml's, the XML signature code of node-saml and
// passport-saml, maintained, every advisory answered with a release), on @xmldom/xmldom 0.8.15,
// the one copy in node_modules, so the document xml-crypto digests and the one read here come
// from the same parser. Its advisories, and why each cannot come back here:
// - CVE-2024-32962 (4.0.0–6.0.0: the default getCertFromKeyInfo trusted the certificate in the
//   document's KeyInfo, so anyone's key verified): fixed in 6.0.0's default; here also
//   `getCertFromKeyInfo: () => null` is passed explicitly and the only keys are the trusted
//   certificates (test: "a KeyInfo carrying another certificate is ignored").
// - CVE-2025-29775 (≤ 6.0.0: a comment inside DigestValue made xml-crypto compare part of the
//   value): fixed in 6.0.1; here also a Signature holding any comment is refused before
//   xml-crypto sees it.
// - CVE-2025-29774 (≤ 6.0.0: a second SignedInfo, or references loaded from another SignedInfo
//   than the one verified): fixed in 6.0.1; here also exactly one SignedInfo with exactly one
//   Reference is required.
// Comments in signed content are not signed (xml-crypto 6.x removes them before digesting), so
// a value split by a comment is read from the signed XML, which holds none; textOf refuses a
// comment anyway. Processing instructions, which exclusive c14n renders as text, are refused by
// readSamlXml before parsing.
import crypto from 'node:crypto';
import type { SignatureAlgorithm } from 'xml-crypto';
import { xmlCryptoLibrary, xmldomLibrary } from './xml-libraries.js';
import { SAML_NS, SamlRefusal, childElements, onlyChild, parseXml } from './xml.js';

export { textOf } from './xml.js';

const ALGORITHM = {
  excC14n: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  envelopedSignature: 'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
} as const;

const COMMENT_NODE = 8;
const PROCESSING_INSTRUCTION_NODE = 7;

export interface VerifiedResponse {
  /** The Response: re-parsed from its signed XML when it is signed; otherwise as it arrived (unsigned: read nothing of it that matters unchecked). */
  response: Element;
  responseSigned: boolean;
  /** The one Assertion, re-parsed from the XML a valid signature covered (its own, or the Response's). */
  assertion: Element;
}

/** RSA keys shorter are factored by whoever pays for it (512 bits in hours, 1024 bits is NIST's disallowed since 2014). */
const MIN_RSA_BITS = 2048;

/**
 * The trusted certificates' RSA keys of MIN_RSA_BITS or more; the rest cannot verify an RSA-SHA256
 * signature (an EC key would verify ECDSA under that name), or cannot be trusted to.
 */
function trustedKeys(trustedCertificatesPem: readonly string[]): crypto.KeyObject[] {
  const keys = trustedCertificatesPem
    .map((pem) => {
      try {
        return new crypto.X509Certificate(pem).publicKey;
      } catch {
        throw new SamlRefusal('a trusted certificate cannot be read');
      }
    })
    .filter((key) => key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_BITS);
  if (keys.length === 0) throw new SamlRefusal(`no trusted RSA certificate of ${MIN_RSA_BITS} bits or more to verify with`);
  return keys;
}

function algorithmOf(parent: Element, localName: string): string {
  return onlyChild(parent, SAML_NS.dsig, localName).getAttribute('Algorithm') ?? '';
}

function refuseCommentsIn(node: Node): void {
  for (let child = node.firstChild; child; child = child.nextSibling) {
    if (child.nodeType === COMMENT_NODE || child.nodeType === PROCESSING_INSTRUCTION_NODE) {
      throw new SamlRefusal('the signature holds a comment or a processing instruction');
    }
    refuseCommentsIn(child);
  }
}

/** How many elements of the document carry `id` in an attribute xml-crypto takes for an ID (Id, ID, id, in any namespace). */
function elementsWithId(doc: Document, id: string): number {
  let count = 0;
  const elements = doc.getElementsByTagName('*');
  for (let i = 0; i < elements.length; i++) {
    const attributes = elements.item(i)?.attributes;
    for (let j = 0; attributes && j < attributes.length; j++) {
      const attribute = attributes.item(j);
      if (attribute && ['ID', 'Id', 'id'].includes(attribute.localName) && attribute.value === id) count++;
    }
  }
  return count;
}

/** The signature's shape, checked on the document before xml-crypto runs: what it would verify is only what is accepted here. */
function checkShape(signature: Element, signedId: string, doc: Document): void {
  refuseCommentsIn(signature);
  const signedInfo = onlyChild(signature, SAML_NS.dsig, 'SignedInfo');
  onlyChild(signature, SAML_NS.dsig, 'SignatureValue');
  if (algorithmOf(signedInfo, 'CanonicalizationMethod') !== ALGORITHM.excC14n) {
    throw new SamlRefusal('the signature is not canonicalized with exclusive c14n');
  }
  if (algorithmOf(signedInfo, 'SignatureMethod') !== ALGORITHM.rsaSha256) throw new SamlRefusal('the signature is not RSA-SHA256');
  const reference = onlyChild(signedInfo, SAML_NS.dsig, 'Reference');
  if (reference.getAttribute('URI') !== `#${signedId}`) throw new SamlRefusal('the signature does not reference the element it is in');
  const transforms = childElements(onlyChild(reference, SAML_NS.dsig, 'Transforms'), SAML_NS.dsig, 'Transform').map((transform) =>
    transform.getAttribute('Algorithm'),
  );
  if (transforms.length !== 2 || transforms[0] !== ALGORITHM.envelopedSignature || transforms[1] !== ALGORITHM.excC14n) {
    throw new SamlRefusal('the signature transforms are not enveloped-signature and exclusive c14n');
  }
  if (algorithmOf(reference, 'DigestMethod') !== ALGORITHM.sha256) throw new SamlRefusal('the signature digest is not SHA-256');
  if (elementsWithId(doc, signedId) !== 1) throw new SamlRefusal('the signed ID is not unique in the document');
}

/**
 * xml-crypto's RSA-SHA256 check with every trusted key at once: the SignatureValue verified over
 * the one canonical SignedInfo by any of `keys`. A SignedXml per key would parse, search and
 * canonicalize the whole document once per key (seconds for a padded 256 KiB document).
 */
function rsaSha256ByAnyOf(keys: crypto.KeyObject[]): new () => SignatureAlgorithm {
  const { createOptionalCallbackFunction } = xmlCryptoLibrary();
  return class {
    getSignature = createOptionalCallbackFunction((_signedInfo: crypto.BinaryLike, _privateKey: crypto.KeyLike): string => {
      throw new Error('verify.ts verifies only');
    });
    verifySignature = createOptionalCallbackFunction((material: string, _key: crypto.KeyLike, signatureValue: string): boolean => {
      const value = Buffer.from(signatureValue, 'base64');
      return keys.some((key) => crypto.verify('sha256', Buffer.from(material, 'utf8'), key, value));
    });
    getAlgorithmName = (): string => ALGORITHM.rsaSha256;
  };
}

/** The canonical XML xml-crypto verified for this signature with one of the keys. */
function signedXmlOf(signature: Element, xml: string, keys: crypto.KeyObject[]): string {
  // publicCert is only handed to rsaSha256ByAnyOf, which tries every key; xml-crypto refuses to check without one.
  const signed = new (xmlCryptoLibrary().SignedXml)({ publicCert: keys[0], getCertFromKeyInfo: () => null });
  signed.SignatureAlgorithms = { [ALGORITHM.rsaSha256]: rsaSha256ByAnyOf(keys) };
  try {
    signed.loadSignature(signature);
  } catch {
    // What the schema lets through and xml-crypto cannot read (an empty DigestValue): its Error quotes the document.
    throw new SamlRefusal('the signature cannot be read');
  }
  let valid: boolean;
  try {
    valid = signed.checkSignature(xml);
  } catch {
    throw new SamlRefusal('no trusted certificate verifies the signature');
  }
  // false: a digest differs, whatever the key
  if (!valid) throw new SamlRefusal('the signed content was changed');
  const references = signed.getSignedReferences();
  if (references.length !== 1 || references[0] === undefined) throw new SamlRefusal('the signature covers more than one reference');
  return references[0];
}

/** `parent`'s enveloped signature verified; `parent` as that signature covered it, re-parsed from the signed XML. */
function verifiedEnveloped(parent: Element, doc: Document, keys: crypto.KeyObject[]): Element {
  const signature = onlyChild(parent, SAML_NS.dsig, 'Signature');
  const id = parent.getAttribute('ID') ?? '';
  if (id === '') throw new SamlRefusal(`the signed ${parent.localName} has no ID`);
  checkShape(signature, id, doc);
  const signed = parseXml(signedXmlOf(signature, new (xmldomLibrary().XMLSerializer)().serializeToString(doc), keys)).documentElement;
  if (signed.namespaceURI !== parent.namespaceURI || signed.localName !== parent.localName || signed.getAttribute('ID') !== id) {
    throw new SamlRefusal(`the signature does not cover the ${parent.localName}`);
  }
  return signed;
}

/**
 * The Response as it arrived, when `decrypted` is what decryptAssertions made of it: the same
 * Response (its ID), holding exactly one EncryptedAssertion, a direct child (so its enveloped
 * signature, if any, covers it), and no Assertion.
 */
function arrivedEncrypted(arrived: Document, decrypted: Element): Element {
  const response = arrived.documentElement;
  const id = decrypted.getAttribute('ID') ?? '';
  if (response.namespaceURI !== SAML_NS.protocol || response.localName !== 'Response' || id === '' || response.getAttribute('ID') !== id) {
    throw new SamlRefusal('the decrypted response is not the one that arrived');
  }
  if (
    arrived.getElementsByTagNameNS(SAML_NS.assertion, 'Assertion').length !== 0 ||
    arrived.getElementsByTagNameNS(SAML_NS.assertion, 'EncryptedAssertion').length !== 1 ||
    childElements(response, SAML_NS.assertion, 'EncryptedAssertion').length !== 1
  ) {
    throw new SamlRefusal('the response must hold exactly one assertion');
  }
  return response;
}

/**
 * A Response with exactly one Assertion, a direct child, and no other anywhere in the document;
 * signed by the Assertion's own enveloped signature, the Response's, or both (each present
 * signature must verify). Throws SamlRefusal otherwise.
 *
 * An encrypted assertion: `doc` is what decryptAssertions returned and `arrived` the document it
 * was given. The Response's signature covers the EncryptedAssertion, so it is verified on
 * `arrived` (which must hold exactly that one EncryptedAssertion and no Assertion); the
 * Assertion's own signature, if any, on `doc`. An Assertion without one is taken from `doc` when
 * the Response's signature verified: that signature covered the one ciphertext it was decrypted
 * from with the box's key.
 */
export function verifiedResponse(doc: Document, trustedCertificatesPem: readonly string[], arrived: Document = doc): VerifiedResponse {
  const response = doc.documentElement;
  if (response.namespaceURI !== SAML_NS.protocol || response.localName !== 'Response')
    throw new SamlRefusal('the document is not a Response');
  if (doc.getElementsByTagNameNS(SAML_NS.assertion, 'EncryptedAssertion').length > 0) {
    throw new SamlRefusal('the response holds an encrypted assertion that was not decrypted');
  }
  if (doc.getElementsByTagNameNS(SAML_NS.assertion, 'Assertion').length !== 1) {
    throw new SamlRefusal('the response must hold exactly one assertion');
  }
  const assertion = onlyChild(response, SAML_NS.assertion, 'Assertion');
  const decrypted = arrived !== doc;
  const arrivedResponse = decrypted ? arrivedEncrypted(arrived, response) : response;
  const responseSigned = childElements(arrivedResponse, SAML_NS.dsig, 'Signature').length > 0;
  const assertionSigned = childElements(assertion, SAML_NS.dsig, 'Signature').length > 0;
  if (!responseSigned && !assertionSigned) throw new SamlRefusal('neither the response nor its assertion is signed');
  const keys = trustedKeys(trustedCertificatesPem);
  const signedResponse = responseSigned ? verifiedEnveloped(arrivedResponse, arrived, keys) : undefined;
  if (assertionSigned) return { response: signedResponse ?? response, responseSigned, assertion: verifiedEnveloped(assertion, doc, keys) };
  if (!signedResponse) throw new SamlRefusal('neither the response nor its assertion is signed');
  // Only the Response is signed: the Assertion is read from the Response's signed XML, or,
  // encrypted, decrypted from the ciphertext that XML holds.
  return {
    response: signedResponse,
    responseSigned,
    assertion: decrypted ? assertion : onlyChild(signedResponse, SAML_NS.assertion, 'Assertion'),
  };
}

/** The messages verifiedSignedMessage reads. */
const SIGNED_MESSAGES: readonly string[] = ['AuthnRequest', 'LogoutRequest', 'LogoutResponse'];

/**
 * A message sent by HTTP-POST with an enveloped signature (AuthnRequest, LogoutRequest,
 * LogoutResponse): its root as the signature covered it, re-parsed. A Response goes through
 * verifiedResponse, whose assertion rules it would skip here.
 */
export function verifiedSignedMessage(doc: Document, trustedCertificatesPem: readonly string[]): Element {
  const root = doc.documentElement;
  if (root.namespaceURI === SAML_NS.protocol && root.localName === 'Response')
    throw new SamlRefusal('a Response is read with verifiedResponse');
  // Only the messages a box takes by HTTP-POST: a signed ArtifactResponse (or any other protocol
  // root) may carry a Response, whose Assertion would then pass here unchecked by verifiedResponse.
  if (root.namespaceURI !== SAML_NS.protocol || !SIGNED_MESSAGES.includes(root.localName))
    throw new SamlRefusal(`the box takes no ${root.localName} by HTTP-POST`);
  if (childElements(root, SAML_NS.dsig, 'Signature').length === 0) throw new SamlRefusal(`the ${root.localName} is not signed`);
  return verifiedEnveloped(root, doc, trustedKeys(trustedCertificatesPem));
}

/**
 * The raw (still URL-encoded) value of each parameter of a query, by its name decoded as a
 * handler's URLSearchParams (or Express's req.query) decodes it; a name given twice is a refusal,
 * in two spellings too: `SAML%52equest=…` beside a signed `SAMLRequest=…` would be read first.
 */
function rawParameters(rawQuery: string): Map<string, string> {
  const parameters = new Map<string, string>();
  for (const pair of rawQuery.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decodeURIComponent((equals < 0 ? pair : pair.slice(0, equals)).replace(/\+/g, ' '));
    if (parameters.has(name)) throw new SamlRefusal(`the query gives ${name} twice`);
    parameters.set(name, equals < 0 ? '' : pair.slice(equals + 1));
  }
  return parameters;
}

/**
 * The HTTP-Redirect binding's signature (SAML Bindings §3.4.4.1): over
 * `SAMLRequest=…&RelayState=…&SigAlg=…` (or SAMLResponse), each value exactly as it appears in
 * the raw query (URL-encoded as the sender encoded it), in that order whatever the order of the
 * query; RSA-SHA256 only; the key one of the trusted certificates. A query without a signature,
 * with a parameter twice or with both or neither message is false.
 */
export function verifyRedirectSignature(rawQuery: string, trustedCertificatesPem: readonly string[]): boolean {
  let parameters: Map<string, string>;
  try {
    parameters = rawParameters(rawQuery);
  } catch {
    return false;
  }
  const messageNames = ['SAMLRequest', 'SAMLResponse'].filter((name) => parameters.has(name));
  const sigAlg = parameters.get('SigAlg');
  const signature = parameters.get('Signature');
  if (messageNames.length !== 1 || !messageNames[0] || sigAlg === undefined || signature === undefined) return false;
  let algorithm: string;
  let signatureBytes: Buffer;
  try {
    algorithm = decodeURIComponent(sigAlg);
    signatureBytes = Buffer.from(decodeURIComponent(signature), 'base64');
  } catch {
    return false; // a broken percent-encoding
  }
  if (algorithm !== ALGORITHM.rsaSha256) return false;
  const relayState = parameters.get('RelayState');
  const signedText = [
    `${messageNames[0]}=${parameters.get(messageNames[0])}`,
    ...(relayState === undefined ? [] : [`RelayState=${relayState}`]),
    `SigAlg=${sigAlg}`,
  ].join('&');
  let keys: crypto.KeyObject[];
  try {
    keys = trustedKeys(trustedCertificatesPem);
  } catch {
    return false;
  }
  return keys.some((key) => crypto.verify('sha256', Buffer.from(signedText, 'utf8'), key, signatureBytes));
}
