// Encrypted Assertions (SAML Core §6, XML Encryption 1.1), with xml-encryption: the content with
// AES-GCM, the content key transported with RSA-OAEP to the certificate the other side's
// metadata publishes. Decryption takes those and nothing else: AES-CBC without a MAC and RSA
// PKCS#1 v1.5 are padding oracles (Jager & Somorovsky, "How to Break XML Encryption", 2011),
// whatever the signature on what they decrypt to.
import { randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { XMLSerializer } from '@xmldom/xmldom';
import xmlenc from 'xml-encryption';
import { childElements, parseXml, readSamlXml, SAML_NS, SamlRefusal } from './xml.js';

const AES256_GCM = 'http://www.w3.org/2009/xmlenc11#aes256-gcm';
const CONTENT_ALGORITHMS: ReadonlySet<string> = new Set(['http://www.w3.org/2009/xmlenc11#aes128-gcm', AES256_GCM]);
/** RSA-OAEP with MGF1-SHA-1: the identifier every SAML implementation decrypts (xmlsec1 1.2, Santuario, ADFS); OAEP's security does not rest on SHA-1's collision resistance. */
const RSA_OAEP_MGF1P = 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p';
const KEY_TRANSPORT_ALGORITHMS: ReadonlySet<string> = new Set([RSA_OAEP_MGF1P, 'http://www.w3.org/2009/xmlenc11#rsa-oaep']);

/** `<saml:EncryptedAssertion>` holding `assertionXml` (one saml:Assertion, signed already if it is to be), for the holder of `recipientCertificatePem`'s key. */
export async function encryptAssertion(assertionXml: string, recipientCertificatePem: string): Promise<string> {
  const recipient = new X509Certificate(recipientCertificatePem);
  if (recipient.publicKey.asymmetricKeyType !== 'rsa')
    throw new Error("an Assertion is encrypted to an RSA key only (RSA-OAEP), and the SP's certificate is not one");
  // The content is an element: an XML declaration before it would not parse where it is put back.
  const element = assertionXml.replace(/^\s*<\?xml[^>]*\?>\s*/, '');
  const encrypted = await new Promise<string>((resolve, reject) =>
    xmlenc.encrypt(
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
  const copy = parseXml(new XMLSerializer().serializeToString(doc));
  const before = Array.from(copy.documentElement.childNodes).filter(isElement);
  const decrypted = new Map<string, string>();
  for (const encryptedAssertion of childElements(copy.documentElement, SAML_NS.assertion, 'EncryptedAssertion')) {
    checkAlgorithms(encryptedAssertion);
    const xml = await new Promise<string>((resolve, reject) =>
      xmlenc.decrypt(
        encryptedAssertion,
        { key: privateKey, disallowDecryptionWithInsecureAlgorithm: true, warnInsecureAlgorithm: false },
        (err, result) =>
          err || result === undefined
            ? reject(new SamlRefusal("an EncryptedAssertion does not decrypt with the box's key"))
            : resolve(result),
      ),
    );
    // A comment no document can hold (a random name) marks where the decrypted XML goes in.
    const mark = `decrypted-${randomBytes(16).toString('hex')}`;
    decrypted.set(`<!--${mark}-->`, xml.replace(/^\s*<\?xml[^>]*\?>/, ''));
    copy.documentElement.replaceChild(copy.createComment(mark), encryptedAssertion);
  }
  let xml = new XMLSerializer().serializeToString(copy);
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
        ? isSamlElement(after[i]!, SAML_NS.assertion, 'Assertion')
        : same(element, after[i]!),
    );
  if (!asExpected) throw new SamlRefusal('an EncryptedAssertion holds something else than one Assertion');
  return result;
}

/**
 * Every EncryptionMethod inside: AES-GCM for the content, RSA-OAEP for a key; none missing.
 * xml-encryption finds its elements by local name alone, so every element of that local name is
 * looked at, whatever its namespace.
 */
function checkAlgorithms(encryptedAssertion: Element): void {
  const data = childElements(encryptedAssertion, SAML_NS.xenc, 'EncryptedData');
  if (data.length !== 1) throw new SamlRefusal('an EncryptedAssertion holds one EncryptedData');
  if (childElements(data[0]!, SAML_NS.xenc, 'EncryptionMethod').length !== 1)
    throw new SamlRefusal("an EncryptedAssertion's EncryptedData names its EncryptionMethod");
  const all = encryptedAssertion.getElementsByTagName('*');
  for (let i = 0; i < all.length; i++) {
    const method = all[i]!;
    if (method.localName !== 'EncryptionMethod') continue;
    const parent = method.parentNode;
    if (method.namespaceURI !== SAML_NS.xenc) throw new SamlRefusal('an EncryptionMethod in an EncryptedAssertion is out of place');
    const algorithm = method.getAttribute('Algorithm') ?? '';
    if (parent && isSamlElement(parent, SAML_NS.xenc, 'EncryptedData')) {
      if (!CONTENT_ALGORITHMS.has(algorithm)) throw new SamlRefusal('an EncryptedAssertion is not encrypted with AES-GCM');
    } else if (parent && isSamlElement(parent, SAML_NS.xenc, 'EncryptedKey')) {
      if (!KEY_TRANSPORT_ALGORITHMS.has(algorithm)) throw new SamlRefusal("an EncryptedAssertion's key is not transported with RSA-OAEP");
    } else {
      throw new SamlRefusal('an EncryptionMethod in an EncryptedAssertion is out of place');
    }
  }
}

function isElement(node: Node): node is Element {
  return node.nodeType === node.ELEMENT_NODE;
}

function isSamlElement(node: Node, ns: string, localName: string): node is Element {
  return isElement(node) && node.namespaceURI === ns && node.localName === localName;
}
