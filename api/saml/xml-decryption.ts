// An EncryptedAssertion's content (XML Encryption 1.1), decrypted with node:crypto: the content
// key transported with RSA-OAEP to the box's key, the content AES-GCM, and nothing else — AES-CBC
// without a MAC and RSA PKCS#1 v1.5 are padding oracles (Jager & Somorovsky, "How to Break XML
// Encryption", 2011), whatever the signature on what they decrypt to. Not xml-encryption's
// decrypt: OAEP whose MGF1 digest differs from its own it does in JavaScript (and not with a
// KeyObject), and Keycloak's default (xenc11 rsa-oaep, SHA-256, MGF1-SHA-256) must decrypt while
// each other combination is refused by its name, so an admin knows which setting to change.
import { constants, createDecipheriv, privateDecrypt, type KeyObject } from 'node:crypto';
import { childElements, isElementNamed, onlyChild, SAML_NS, SamlRefusal, textOf } from './xml.js';

export const AES256_GCM = `${SAML_NS.xenc11}aes256-gcm`;
const CONTENT_CIPHERS: ReadonlyMap<string, { cipher: 'aes-128-gcm' | 'aes-256-gcm'; keyLength: number }> = new Map([
  [`${SAML_NS.xenc11}aes128-gcm`, { cipher: 'aes-128-gcm', keyLength: 16 }],
  [AES256_GCM, { cipher: 'aes-256-gcm', keyLength: 32 }],
]);
/** AES-GCM as XML Encryption 1.1 §5.2.4 lays it out: the IV first, the tag last. */
const GCM_IV_LENGTH = 12;
const GCM_TAG_LENGTH = 16;

/** RSA-OAEP whose MGF1 is SHA-1 by its name: the identifier every SAML implementation decrypts (xmlsec1 1.2, Santuario, ADFS). */
export const RSA_OAEP_MGF1P = `${SAML_NS.xenc}rsa-oaep-mgf1p`;
/** RSA-OAEP with its MGF in an xenc11:MGF child (MGF1-SHA-1 without one): Keycloak's default. */
const RSA_OAEP = `${SAML_NS.xenc11}rsa-oaep`;

/** OAEP's digest (the DigestMethod inside the EncryptionMethod; SHA-1 without one), as node:crypto and an admin name it. */
const OAEP_DIGESTS: ReadonlyMap<string, { hash: string; name: string }> = new Map([
  [`${SAML_NS.dsig}sha1`, { hash: 'sha1', name: 'SHA-1' }],
  [`${SAML_NS.xenc}sha256`, { hash: 'sha256', name: 'SHA-256' }],
  [`${SAML_NS.xenc}sha512`, { hash: 'sha512', name: 'SHA-512' }],
]);
const SHA1 = OAEP_DIGESTS.get(`${SAML_NS.dsig}sha1`)!;

/** Every MGF XML Encryption 1.1 §5.5.2 names, by its digest, so a refusal can say which one came. */
const MGF1_DIGESTS: ReadonlyMap<string, string> = new Map(
  ['SHA-1', 'SHA-224', 'SHA-256', 'SHA-384', 'SHA-512'].map((name) => [
    `${SAML_NS.xenc11}mgf1${name.replace('-', '').toLowerCase()}`,
    name,
  ]),
);

const doesNotDecrypt = (): SamlRefusal => new SamlRefusal("an EncryptedAssertion does not decrypt with the box's key");

/**
 * The XML `encryptedAssertion` (a saml:EncryptedAssertion) holds, decrypted with `privateKey`.
 * Throws SamlRefusal for any EncryptionMethod other than AES-GCM for the content and RSA-OAEP
 * for the key (or out of place), for OAEP parameters node:crypto does not take, for a key that
 * is not found or does not decrypt, and for a content whose tag does not check.
 */
export function decryptedContent(encryptedAssertion: Element, privateKey: KeyObject): string {
  checkAlgorithms(encryptedAssertion);
  const data = onlyChild(encryptedAssertion, SAML_NS.xenc, 'EncryptedData');
  const content = CONTENT_CIPHERS.get(onlyChild(data, SAML_NS.xenc, 'EncryptionMethod').getAttribute('Algorithm') ?? '')!;
  const key = contentKey(encryptedKeyOf(encryptedAssertion, data), privateKey);
  if (key.length !== content.keyLength) throw doesNotDecrypt();
  const bytes = cipherValue(data);
  if (bytes.length < GCM_IV_LENGTH + GCM_TAG_LENGTH) throw doesNotDecrypt();
  try {
    const decipher = createDecipheriv(content.cipher, key, bytes.subarray(0, GCM_IV_LENGTH), { authTagLength: GCM_TAG_LENGTH });
    decipher.setAuthTag(bytes.subarray(bytes.length - GCM_TAG_LENGTH));
    return Buffer.concat([decipher.update(bytes.subarray(GCM_IV_LENGTH, bytes.length - GCM_TAG_LENGTH)), decipher.final()]).toString(
      'utf8',
    );
  } catch {
    throw doesNotDecrypt();
  }
}

/**
 * The EncryptedKey of `data`: inside its KeyInfo (Keycloak, xml-encryption, most IdPs), the
 * EncryptedAssertion's own EncryptedKey its KeyInfo's RetrievalMethod points at, or the
 * EncryptedAssertion's one EncryptedKey (SAML Core §2.2.4 puts them there).
 */
function encryptedKeyOf(encryptedAssertion: Element, data: Element): Element {
  const keyInfo = childElements(data, SAML_NS.dsig, 'KeyInfo');
  if (keyInfo.length > 1) throw new SamlRefusal('expected at most one KeyInfo in EncryptedData');
  const inline = keyInfo[0] ? childElements(keyInfo[0], SAML_NS.xenc, 'EncryptedKey') : [];
  if (inline.length > 1) throw new SamlRefusal('expected at most one EncryptedKey in KeyInfo');
  if (inline[0]) return inline[0];
  const peers = childElements(encryptedAssertion, SAML_NS.xenc, 'EncryptedKey');
  const retrieval = keyInfo[0] ? childElements(keyInfo[0], SAML_NS.dsig, 'RetrievalMethod') : [];
  if (retrieval.length > 1) throw new SamlRefusal('expected at most one RetrievalMethod in KeyInfo');
  // A same-document reference only: nothing is fetched.
  const uri = retrieval[0]?.getAttribute('URI') ?? '';
  const named = !retrieval[0] ? peers : uri.startsWith('#') ? peers.filter((key) => key.getAttribute('Id') === uri.slice(1)) : [];
  if (named.length !== 1 || !named[0]) throw new SamlRefusal("an EncryptedAssertion's EncryptedData names no one EncryptedKey");
  return named[0];
}

/** The content key `encryptedKey` transports, with OAEP as its EncryptionMethod says, or a refusal naming what the box does not take. */
function contentKey(encryptedKey: Element, privateKey: KeyObject): Buffer {
  const method = onlyChild(encryptedKey, SAML_NS.xenc, 'EncryptionMethod');
  const algorithm = method.getAttribute('Algorithm');
  const digestMethod = atMostOne(method, SAML_NS.dsig, 'DigestMethod');
  const digest = digestMethod ? OAEP_DIGESTS.get(digestMethod.getAttribute('Algorithm') ?? '') : SHA1;
  if (!digest) throw new SamlRefusal("the OAEP digest of an EncryptedAssertion's key is not SHA-1, SHA-256 or SHA-512");
  const mgf = atMostOne(method, SAML_NS.xenc11, 'MGF');
  if (mgf && algorithm === RSA_OAEP_MGF1P) throw new SamlRefusal("an EncryptedAssertion's key names an MGF, which rsa-oaep-mgf1p may not");
  const mgfDigest = mgf ? MGF1_DIGESTS.get(mgf.getAttribute('Algorithm') ?? '') : SHA1.name;
  if (!mgfDigest) throw new SamlRefusal("an EncryptedAssertion's key uses an MGF the box does not know");
  // node:crypto's OAEP takes one digest for both; OAEP in JavaScript would be a timing oracle.
  if (mgfDigest !== digest.name)
    throw new SamlRefusal(
      `an EncryptedAssertion's key uses OAEP with digest ${digest.name} and MGF1 with ${mgfDigest}; the box takes one digest for both`,
    );
  const params = atMostOne(method, SAML_NS.xenc, 'OAEPparams');
  try {
    return privateDecrypt(
      {
        key: privateKey,
        padding: constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: digest.hash,
        ...(params ? { oaepLabel: Buffer.from(textOf(params), 'base64') } : {}),
      },
      cipherValue(encryptedKey),
    );
  } catch {
    throw doesNotDecrypt();
  }
}

/** The bytes of an EncryptedData's or EncryptedKey's CipherValue; a CipherReference (something to fetch) is a refusal. */
function cipherValue(encrypted: Element): Buffer {
  return Buffer.from(textOf(onlyChild(onlyChild(encrypted, SAML_NS.xenc, 'CipherData'), SAML_NS.xenc, 'CipherValue')), 'base64');
}

function atMostOne(parent: Element, ns: string, localName: string): Element | undefined {
  const found = childElements(parent, ns, localName);
  if (found.length > 1) throw new SamlRefusal(`expected at most one ${localName} in ${parent.localName}`);
  return found[0];
}

/**
 * Every EncryptionMethod inside: AES-GCM for the EncryptedData, RSA-OAEP for an EncryptedKey;
 * the EncryptedData's not missing. Every element of that local name is looked at, whatever its
 * namespace or place: one another reader of the document (a log, a later library) could take for
 * the one in use is refused, not passed over.
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
    if (parent && isElementNamed(parent, SAML_NS.xenc, 'EncryptedData')) {
      if (!CONTENT_CIPHERS.has(algorithm)) throw new SamlRefusal('an EncryptedAssertion is not encrypted with AES-GCM');
    } else if (parent && isElementNamed(parent, SAML_NS.xenc, 'EncryptedKey')) {
      if (algorithm !== RSA_OAEP_MGF1P && algorithm !== RSA_OAEP)
        throw new SamlRefusal("an EncryptedAssertion's key is not transported with RSA-OAEP");
    } else {
      throw new SamlRefusal('an EncryptionMethod in an EncryptedAssertion is out of place');
    }
  }
}
