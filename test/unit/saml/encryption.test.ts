// Encrypted Assertions as an SP and the box receive them: what the box encrypts to an SP's
// certificate decrypts with the SP's key to the signed Assertion (in xml-encryption and in
// Debian's xmlsec1); what the box decrypts must be AES-GCM with RSA-OAEP, since AES-CBC and RSA
// PKCS#1 v1.5 are padding oracles, and must read as every SAML document does.
import { constants, createCipheriv, publicEncrypt, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import xmlenc from 'xml-encryption';
import { decryptAssertions, encryptAssertion } from '../../../api/saml/encryption.js';
import { signSamlXml } from '../../../api/saml/sign.js';
import { readSamlXml, SamlRefusal } from '../../../api/saml/xml.js';
import { assertionXml, box, childNames, NS, parseXml, responseXml, samlKey, signatureChecks, xmlsec1 } from './signing-fixtures.js';

const sp = samlKey('sp.example');
const XENC = 'http://www.w3.org/2001/04/xmlenc#';

/** An EncryptedAssertion made by xml-encryption with the algorithms given, as another IdP may send it. */
async function encryptedWith(content: string, encryptionAlgorithm: string, keyEncryptionAlgorithm: string): Promise<string> {
  const encrypted = await new Promise<string>((resolve, reject) =>
    xmlenc.encrypt(
      content,
      {
        rsa_pub: sp.publicKey.export({ type: 'spki', format: 'pem' }),
        pem: sp.certificatePem,
        encryptionAlgorithm,
        keyEncryptionAlgorithm,
        disallowEncryptionWithInsecureAlgorithm: false,
        warnInsecureAlgorithm: false,
      },
      (err, result) => (err || !result ? reject(err ?? new Error('nothing')) : resolve(result)),
    ),
  );
  return `<saml:EncryptedAssertion xmlns:saml="${NS.assertion}">${encrypted}</saml:EncryptedAssertion>`;
}

const XENC11 = 'http://www.w3.org/2009/xmlenc11#';

interface KeyTransport {
  algorithm?: string;
  /** The DigestMethod written, if any, and the one OAEP really uses (node:crypto: for MGF1 too). */
  digest?: { uri: string; hash: string };
  mgf?: string;
  content?: 'aes-256-gcm' | 'aes-128-gcm';
  /** Where the EncryptedKey goes: inside the EncryptedData's KeyInfo, or beside it, named by a RetrievalMethod. */
  placement?: 'inline' | 'retrieval';
}

const SHA256 = { uri: `${XENC}sha256`, hash: 'sha256' };

/**
 * An EncryptedAssertion as Keycloak 26 writes one by default (Santuario): the content AES-256-GCM
 * (IV, ciphertext, tag), the key RSA-OAEP of xenc11 with DigestMethod SHA-256 and xenc11:MGF
 * MGF1-SHA-256 inside the EncryptedKey's EncryptionMethod, the EncryptedKey inside the
 * EncryptedData's KeyInfo. Made with node:crypto alone, so no library of the box's is on both sides.
 */
function encryptedAsKeycloak(content: string, transport: KeyTransport = {}): string {
  const { algorithm = `${XENC11}rsa-oaep`, digest = SHA256, mgf = `${XENC11}mgf1sha256`, placement = 'inline' } = transport;
  const cipher = transport.content ?? 'aes-256-gcm';
  const key = randomBytes(cipher === 'aes-256-gcm' ? 32 : 16);
  const iv = randomBytes(12);
  const gcm = createCipheriv(cipher, key, iv);
  const sealed = Buffer.concat([iv, gcm.update(content, 'utf8'), gcm.final(), gcm.getAuthTag()]).toString('base64');
  const wrapped = publicEncrypt({ key: sp.publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: digest.hash }, key);
  const encryptedKey =
    `<xenc:EncryptedKey${placement === 'retrieval' ? ' Id="_key1"' : ''}><xenc:EncryptionMethod Algorithm="${algorithm}">` +
    (transport.digest === undefined || digest.uri ? `<ds:DigestMethod Algorithm="${digest.uri}"/>` : '') +
    (mgf ? `<xenc11:MGF xmlns:xenc11="${XENC11}" Algorithm="${mgf}"/>` : '') +
    `</xenc:EncryptionMethod><xenc:CipherData><xenc:CipherValue>${wrapped.toString('base64')}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey>`;
  const keyInfo = placement === 'inline' ? encryptedKey : `<ds:RetrievalMethod URI="#_key1" Type="${XENC}EncryptedKey"/>`;
  return (
    `<saml:EncryptedAssertion xmlns:saml="${NS.assertion}">` +
    `<xenc:EncryptedData xmlns:xenc="${XENC}" xmlns:ds="${NS.dsig}" Type="${XENC}Element">` +
    `<xenc:EncryptionMethod Algorithm="${XENC11}${cipher.replace('-gcm', '').replace('-', '')}-gcm"/>` +
    `<ds:KeyInfo>${keyInfo}</ds:KeyInfo>` +
    `<xenc:CipherData><xenc:CipherValue>${sealed}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData>` +
    (placement === 'retrieval'
      ? encryptedKey.replace('<xenc:EncryptedKey', `<xenc:EncryptedKey xmlns:xenc="${XENC}" xmlns:ds="${NS.dsig}"`)
      : '') +
    `</saml:EncryptedAssertion>`
  );
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(SamlRefusal);
    return (err as SamlRefusal).reason;
  }
  throw new Error('it was not refused');
}

describe('encrypted Assertions', function () {
  it("round-trips: a signed Assertion, encrypted to the SP's certificate, in a signed Response, decrypts to the Assertion whose signature checks", async function () {
    const assertion = signSamlXml(assertionXml('_enc'), 'Assertion', box);
    const encrypted = await encryptAssertion(assertion, sp.certificatePem);
    expect(encrypted).not.to.include('sam@example.com');
    const response = signSamlXml(responseXml(encrypted), 'Response', box);
    expect(childNames(response, NS.protocol, 'Response')).to.deep.equal(['Issuer', 'Signature', 'Status', 'EncryptedAssertion']);
    expect(signatureChecks(response, NS.protocol, 'Response')).to.equal(true);

    const doc = await decryptAssertions(parseXml(response), sp.privateKey);
    const decrypted = doc.toString();
    expect(doc.getElementsByTagNameNS(NS.assertion, 'EncryptedAssertion')).to.have.length(0);
    expect(childNames(decrypted, NS.protocol, 'Response')).to.deep.equal(['Issuer', 'Signature', 'Status', 'Assertion']);
    expect(signatureChecks(decrypted, NS.assertion, 'Assertion')).to.equal(true);
    expect(doc.getElementsByTagNameNS(NS.assertion, 'NameID')[0]?.textContent).to.equal('sam@example.com');
  });

  it('encrypts with AES-256-GCM and RSA-OAEP, and names the certificate it encrypted to', async function () {
    const doc = parseXml(await encryptAssertion(assertionXml(), sp.certificatePem));
    const methods = Array.from(doc.getElementsByTagNameNS(XENC, 'EncryptionMethod')).map((e) => e.getAttribute('Algorithm'));
    expect(methods).to.deep.equal(['http://www.w3.org/2009/xmlenc11#aes256-gcm', 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p']);
    expect(doc.getElementsByTagNameNS(NS.dsig, 'X509Certificate')[0]?.textContent).to.equal(
      sp.certificatePem.replace(/-----[A-Z ]+-----|\s/g, ''),
    );
  });

  it("does not decrypt with another key than the SP's", async function () {
    const response = responseXml(await encryptAssertion(assertionXml(), sp.certificatePem));
    expect(await refusal(decryptAssertions(parseXml(response), box.privateKey))).to.equal(
      "an EncryptedAssertion does not decrypt with the box's key",
    );
  });

  it('decrypts in xmlsec1, the library of the Python SP', async function () {
    const encrypted = await encryptAssertion(signSamlXml(assertionXml(), 'Assertion', box), sp.certificatePem);
    const pem = sp.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const data = parseXml(encrypted).getElementsByTagNameNS(XENC, 'EncryptedData')[0]!.toString();
    const run = xmlsec1({ 'key.pem': pem, 'encrypted.xml': data }, (dir) => [
      '--decrypt',
      '--privkey-pem',
      `${dir}/key.pem`,
      `${dir}/encrypted.xml`,
    ]);
    if (!run) this.skip(); // no xmlsec1 here: xml-encryption's round trip above stands
    expect(run.status, run.out).to.equal(0);
    expect(run.out).to.include('sam@example.com');
  });

  it('refuses an Assertion encrypted with AES-128-CBC (a padding oracle)', async function () {
    const response = responseXml(
      await encryptedWith(assertionXml(), 'http://www.w3.org/2001/04/xmlenc#aes128-cbc', 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p'),
    );
    expect(await refusal(decryptAssertions(parseXml(response), sp.privateKey))).to.equal(
      'an EncryptedAssertion is not encrypted with AES-GCM',
    );
  });

  it('refuses a key transported with RSA PKCS#1 v1.5 (a padding oracle)', async function () {
    const response = responseXml(
      await encryptedWith(assertionXml(), 'http://www.w3.org/2009/xmlenc11#aes256-gcm', 'http://www.w3.org/2001/04/xmlenc#rsa-1_5'),
    );
    expect(await refusal(decryptAssertions(parseXml(response), sp.privateKey))).to.equal(
      "an EncryptedAssertion's key is not transported with RSA-OAEP",
    );
  });

  it('refuses an EncryptionMethod in another namespace, which xml-encryption would read by its local name', async function () {
    const encrypted = await encryptedWith(
      assertionXml(),
      'http://www.w3.org/2009/xmlenc11#aes256-gcm',
      'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
    );
    const sneaked = encrypted.replace(
      /(<xenc:EncryptedData[^>]*>)/,
      '$1<x:EncryptionMethod xmlns:x="urn:example:x" Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>',
    );
    expect(sneaked).not.to.equal(encrypted);
    expect(await refusal(decryptAssertions(parseXml(responseXml(sneaked)), sp.privateKey))).to.equal(
      'an EncryptionMethod in an EncryptedAssertion is out of place',
    );
  });

  it('refuses a decrypted Assertion with a DOCTYPE, as every document is refused', async function () {
    const doctype = `<!DOCTYPE a [<!ENTITY x "y">]>${assertionXml()}`;
    const response = responseXml(
      await encryptedWith(doctype, 'http://www.w3.org/2009/xmlenc11#aes256-gcm', 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p'),
    );
    expect(await refusal(decryptAssertions(parseXml(response), sp.privateKey))).to.equal('the document declares a DTD or entities');
  });

  it('refuses an EncryptedAssertion holding two Assertions, or something else than an Assertion', async function () {
    const gcm = 'http://www.w3.org/2009/xmlenc11#aes256-gcm';
    const oaep = 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p';
    const two = responseXml(await encryptedWith(assertionXml('_one') + assertionXml('_two', 'admin@example.com'), gcm, oaep));
    expect(await refusal(decryptAssertions(parseXml(two), sp.privateKey))).to.equal(
      'an EncryptedAssertion holds something else than one Assertion',
    );
    const none = responseXml(await encryptedWith('<!-- nothing -->', gcm, oaep));
    expect(await refusal(decryptAssertions(parseXml(none), sp.privateKey))).to.equal(
      'an EncryptedAssertion holds something else than one Assertion',
    );
    const issuer = `<saml:Issuer xmlns:saml="${NS.assertion}">https://box.example</saml:Issuer>`;
    await refusal(decryptAssertions(parseXml(responseXml(await encryptedWith(issuer, gcm, oaep))), sp.privateKey));
  });

  it("parses the decrypted Assertion in the Response's namespaces, and leaves the Document given as it was", async function () {
    const contextual = assertionXml('_ctx').replace(` xmlns:saml="${NS.assertion}"`, '');
    const response = responseXml(
      await encryptedWith(contextual, 'http://www.w3.org/2009/xmlenc11#aes256-gcm', 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p'),
    );
    const given = parseXml(response);
    const doc = await decryptAssertions(given, sp.privateKey);
    expect(doc.getElementsByTagNameNS(NS.assertion, 'Assertion')[0]?.getAttribute('ID')).to.equal('_ctx');
    expect(given.toString()).to.equal(parseXml(response).toString());
  });

  it('leaves a Response without EncryptedAssertion as it is', async function () {
    const response = responseXml(assertionXml());
    expect((await decryptAssertions(parseXml(response), sp.privateKey)).toString()).to.equal(parseXml(response).toString());
  });

  describe('as Keycloak 26 encrypts by default (xenc11 rsa-oaep, SHA-256, MGF1-SHA-256, AES-256-GCM)', function () {
    it('reads the Response (the schema knows xenc11:MGF) and decrypts it to the signed Assertion', async function () {
      const assertion = signSamlXml(assertionXml('_kc'), 'Assertion', box);
      const response = responseXml(encryptedAsKeycloak(assertion));
      expect(response).to.include(`<xenc11:MGF xmlns:xenc11="${XENC11}" Algorithm="${XENC11}mgf1sha256"/>`);
      const doc = await decryptAssertions(await readSamlXml(response, 'protocol'), sp.privateKey);
      expect(childNames(doc.toString(), NS.protocol, 'Response')).to.deep.equal(['Issuer', 'Status', 'Assertion']);
      expect(doc.getElementsByTagNameNS(NS.assertion, 'NameID')[0]?.textContent).to.equal('sam@example.com');
      expect(signatureChecks(doc.toString(), NS.assertion, 'Assertion')).to.equal(true);
    });

    it('still refuses, when read, an element of a namespace no schema declares inside the EncryptionMethod', async function () {
      const response = responseXml(encryptedAsKeycloak(assertionXml())).replace(
        '<xenc11:MGF',
        '<x:Extra xmlns:x="urn:example:x"/><xenc11:MGF',
      );
      expect(await refusal(readSamlXml(response, 'protocol'))).to.equal('the document does not follow the SAML protocol schema');
    });

    it('decrypts OAEP with one digest for both: SHA-1 (with or without MGF or DigestMethod), SHA-512; rsa-oaep-mgf1p with SHA-1; AES-128-GCM', async function () {
      const sha1 = { uri: `${NS.dsig}sha1`, hash: 'sha1' };
      const sha512 = { uri: `${XENC}sha512`, hash: 'sha512' };
      const mgf1p = `${XENC}rsa-oaep-mgf1p`;
      const transports: KeyTransport[] = [
        { digest: sha1, mgf: `${XENC11}mgf1sha1` },
        { digest: sha1, mgf: '' },
        { digest: { uri: '', hash: 'sha1' }, mgf: '' },
        { digest: sha512, mgf: `${XENC11}mgf1sha512` },
        { algorithm: mgf1p, digest: sha1, mgf: '' },
        { algorithm: mgf1p, digest: { uri: '', hash: 'sha1' }, mgf: '' },
        { content: 'aes-128-gcm' },
      ];
      for (const transport of transports) {
        const doc = await decryptAssertions(parseXml(responseXml(encryptedAsKeycloak(assertionXml('_t'), transport))), sp.privateKey);
        expect(doc.getElementsByTagNameNS(NS.assertion, 'Assertion')[0]?.getAttribute('ID'), JSON.stringify(transport)).to.equal('_t');
      }
    });

    it('decrypts an EncryptedKey beside the EncryptedData, named by a RetrievalMethod, and no other', async function () {
      const encrypted = encryptedAsKeycloak(assertionXml('_peer'), { placement: 'retrieval' });
      const doc = await decryptAssertions(parseXml(responseXml(encrypted)), sp.privateKey);
      expect(doc.getElementsByTagNameNS(NS.assertion, 'Assertion')[0]?.getAttribute('ID')).to.equal('_peer');
      const elsewhere = encrypted.replace('URI="#_key1"', 'URI="https://evil.example/key"');
      expect(await refusal(decryptAssertions(parseXml(responseXml(elsewhere)), sp.privateKey))).to.equal(
        "an EncryptedAssertion's EncryptedData names no one EncryptedKey",
      );
    });

    it('refuses, naming them, OAEP digests whose MGF1 digest differs (node:crypto takes one for both)', async function () {
      const mismatched: [KeyTransport, string, string][] = [
        // Keycloak with keyAlgorithm rsa-oaep-mgf1p and its default digest method
        [{ algorithm: `${XENC}rsa-oaep-mgf1p`, mgf: '' }, 'SHA-256', 'SHA-1'],
        [{ mgf: '' }, 'SHA-256', 'SHA-1'],
        [{ mgf: `${XENC11}mgf1sha1` }, 'SHA-256', 'SHA-1'],
        [{ digest: { uri: `${NS.dsig}sha1`, hash: 'sha1' } }, 'SHA-1', 'SHA-256'],
        [{ mgf: `${XENC11}mgf1sha384` }, 'SHA-256', 'SHA-384'],
      ];
      for (const [transport, digest, mgf] of mismatched) {
        // Encrypted with OAEP-SHA-256 (or SHA-1) for both, so it would decrypt were the MGF passed over.
        const response = responseXml(encryptedAsKeycloak(assertionXml(), transport));
        expect(await refusal(decryptAssertions(parseXml(response), sp.privateKey))).to.equal(
          `an EncryptedAssertion's key uses OAEP with digest ${digest} and MGF1 with ${mgf}; the box takes one digest for both`,
        );
      }
    });

    it('refuses an OAEP digest other than SHA-1, SHA-256 or SHA-512, an MGF it does not know, and an MGF with rsa-oaep-mgf1p', async function () {
      const refusals: [KeyTransport, string][] = [
        [
          { digest: { uri: 'http://www.w3.org/2001/04/xmldsig-more#sha384', hash: 'sha384' }, mgf: `${XENC11}mgf1sha384` },
          "the OAEP digest of an EncryptedAssertion's key is not SHA-1, SHA-256 or SHA-512",
        ],
        [{ mgf: 'urn:example:mgf2' }, "an EncryptedAssertion's key uses an MGF the box does not know"],
        [
          { algorithm: `${XENC}rsa-oaep-mgf1p`, digest: { uri: `${NS.dsig}sha1`, hash: 'sha1' }, mgf: `${XENC11}mgf1sha1` },
          "an EncryptedAssertion's key names an MGF, which rsa-oaep-mgf1p may not",
        ],
      ];
      for (const [transport, reason] of refusals) {
        const response = responseXml(encryptedAsKeycloak(assertionXml(), transport));
        expect(await refusal(decryptAssertions(parseXml(response), sp.privateKey))).to.equal(reason);
      }
    });

    it('refuses a content whose GCM tag does not check, and RSA-1_5 or AES-CBC however the rest is written', async function () {
      const encrypted = encryptedAsKeycloak(assertionXml());
      const tampered = encrypted.replace(
        /(<xenc:CipherValue>[^<]*)(.)(<\/xenc:CipherValue><\/xenc:CipherData><\/xenc:EncryptedData>)/,
        (_m, head: string, last: string, tail: string) => `${head}${last === 'A' ? 'B' : 'A'}${tail}`,
      );
      expect(tampered).not.to.equal(encrypted);
      expect(await refusal(decryptAssertions(parseXml(responseXml(tampered)), sp.privateKey))).to.equal(
        "an EncryptedAssertion does not decrypt with the box's key",
      );
      const rsa15 = encryptedAsKeycloak(assertionXml(), { algorithm: `${XENC}rsa-1_5` });
      expect(await refusal(decryptAssertions(parseXml(responseXml(rsa15)), sp.privateKey))).to.equal(
        "an EncryptedAssertion's key is not transported with RSA-OAEP",
      );
      const cbc = encrypted.replace(`${XENC11}aes256-gcm`, `${XENC}aes256-cbc`);
      expect(await refusal(decryptAssertions(parseXml(responseXml(cbc)), sp.privateKey))).to.equal(
        'an EncryptedAssertion is not encrypted with AES-GCM',
      );
    });
  });
});
