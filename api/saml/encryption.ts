// Encrypted Assertions (SAML Core §6, XML Encryption 1.1): the content with AES-GCM, the content
// key transported with RSA-OAEP to the certificate the other side's metadata publishes. The box
// encrypts with xml-encryption; what it decrypts, ./xml-decryption.ts decrypts with node:crypto.
import { randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { AES256_GCM, decryptedContent, RSA_OAEP_MGF1P } from './xml-decryption.js';
import { childElements, isElementNamed, parseXml, readSamlXml, SAML_NS, SamlRefusal } from './xml.js';
import { xmlEncryptionLibrary, xmldomLibrary } from './xml-libraries.js';

/** `<saml:EncryptedAssertion>` holding `assertionXml` (one saml:Assertion, signed already if it is to be), for the holder of `recipientCertificatePem`'s key. */
export async function encryptAssertion(assertionXml: string, recipientCertificatePem: string): Promise<string> {
  const recipient = new X509Certificate(recipientCertificatePem);
  if (recipient.publicKey.asymmetricKeyType !== 'rsa')
    throw new Error("an Assertion is encrypted to an RSA key only (RSA-OAEP), and the SP's certificate is not one");
  // The content is an element: an XML declaration before it would not parse where it is put back.
  const element = assertionXml.replace(/^\s*<\?xml[^>]*\?>\s*/, '');
  const encrypted = await new Promise<string>((resolve, reject) =>
    xmlEncryptionLibrary().encrypt(
      element,
      {
        rsa_pub: recipient.publicKey.export({ type: 'spki', format: 'pem' }),
        pem: recipientCertificatePem,
        encryptionAlgorithm: AES256_GCM,
        keyEncryptionAlgorithm: RSA_OAEP_MGF1P,
        keyEncryptionDigest: 'sha1',
        warnInsecureAlgorithm: false,
      },
      (err, result) => (err || result === undefined ? reject(err ?? new Error('xml-encryption gave nothing')) : resolve(result)),
    ),
  );
  return `<saml:EncryptedAssertion xmlns:saml="${SAML_NS.assertion}">${encrypted.trim()}</saml:EncryptedAssertion>`;
}

/**
 * A new Document: `doc` with the saml:EncryptedAssertion that is a child of its root (a
 * Response's) replaced by the Assertion it decrypts to with `privateKey`, and the whole read again
 * as every document from outside is (./xml.ts readSamlXml: no DTD, entity or processing
 * instruction, the protocol schema), so what was encrypted gets the checks what was not got.
 * The decrypted XML is parsed where it stood, in the Response's namespaces, as xmlsec1 and
 * Santuario do. `doc` is left as it arrived: a Response's signature covers the EncryptedAssertion,
 * and is checked on it. The Assertion's own signature is for ./verify.ts to check. Throws
 * SamlRefusal, also for more than one EncryptedAssertion.
 */
export async function decryptAssertions(doc: Document, privateKey: KeyObject): Promise<Document> {
  const count = childElements(doc.documentElement, SAML_NS.assertion, 'EncryptedAssertion').length;
  if (count === 0) return doc;
  // ./verify.ts takes exactly one Assertion: a second would be refused after its RSA decryption,
  // and a padded Response of a hundred would cost a hundred.
  if (count > 1) throw new SamlRefusal('a Response holds one EncryptedAssertion at most');
  const copy = parseXml(new (xmldomLibrary().XMLSerializer)().serializeToString(doc));
  const before = Array.from(copy.documentElement.childNodes).filter(isElement);
  const decrypted = new Map<string, string>();
  for (const encryptedAssertion of childElements(copy.documentElement, SAML_NS.assertion, 'EncryptedAssertion')) {
    const xml = decryptedContent(encryptedAssertion, privateKey);
    // A comment no document can hold (a random name) marks where the decrypted XML goes in.
    const mark = `decrypted-${randomBytes(16).toString('hex')}`;
    decrypted.set(`<!--${mark}-->`, xml.replace(/^\s*<\?xml[^>]*\?>/, ''));
    copy.documentElement.replaceChild(copy.createComment(mark), encryptedAssertion);
  }
  let xml = new (xmldomLibrary().XMLSerializer)().serializeToString(copy);
  for (const [mark, assertion] of decrypted) xml = xml.replace(mark, () => assertion);
  const result = await readSamlXml(xml, 'protocol');
  // Element for element as before, each EncryptedAssertion now one Assertion: decrypted XML of
  // none, two or another element has moved the rest.
  const after = Array.from(result.documentElement.childNodes).filter(isElement);
  const same = (a: Element, b: Element): boolean => a.namespaceURI === b.namespaceURI && a.localName === b.localName;
  const asExpected =
    after.length === before.length &&
    before.every((element, i) =>
      element.localName === 'EncryptedAssertion' && element.namespaceURI === SAML_NS.assertion
        ? isElementNamed(after[i]!, SAML_NS.assertion, 'Assertion')
        : same(element, after[i]!),
    );
  if (!asExpected) throw new SamlRefusal('an EncryptedAssertion holds something else than one Assertion');
  return result;
}

function isElement(node: Node): node is Element {
  return node.nodeType === node.ELEMENT_NODE;
}
