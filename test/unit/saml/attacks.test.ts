// Attacks on the SAML XML core beyond the classic XSW1–XSW8 of signature-wrapping.test.ts: what
// parses differently from what is signed (processing instructions, CDATA, character references,
// namespaces), IDs under other names, signatures in other places or of other shapes, encrypted
// payloads that are not one Assertion, the HTTP-Redirect query read another way than it was
// verified, trusted keys too weak to trust, and documents that cost the box more than they
// cost the sender. Each passes when the attack is refused, or when what a reader gets from the
// verifier is what the IdP signed.
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { expect } from 'chai';
import { ExclusiveCanonicalization } from 'xml-crypto';
import { decodePostMessage, decodeRedirectMessage, encodeRedirectMessage } from '../../../api/saml/bindings.js';
import { decryptAssertions, encryptAssertion } from '../../../api/saml/encryption.js';
import { verifiedResponse, verifiedSignedMessage, verifyRedirectSignature } from '../../../api/saml/verify.js';
import { SAML_NS, SamlRefusal, onlyChild, parseXml, readSamlXml, textOf } from '../../../api/saml/xml.js';
import {
  assertionXml,
  authnRequestXml,
  responseXml,
  signEnveloped,
  signedRedirectQuery,
  testSamlKey,
  type TestSamlKey,
} from '../../support/saml.js';

const PROTOCOL_CAP = 256 * 1024;

function nameIdOf(assertion: Element): string {
  return textOf(onlyChild(onlyChild(assertion, SAML_NS.assertion, 'Subject'), SAML_NS.assertion, 'NameID'));
}

async function refusalOf(work: () => unknown): Promise<string> {
  try {
    await work();
  } catch (err) {
    expect(err, String(err)).to.be.instanceOf(SamlRefusal);
    return (err as SamlRefusal).reason;
  }
  throw new Error('not refused');
}

/** A key pair of another kind or size with a self-signed certificate (Debian's openssl), as an IdP's metadata may carry. */
function certifiedKey(options: { type: 'rsa'; modulusLength: number } | { type: 'ec' }): TestSamlKey {
  const { privateKey } =
    options.type === 'rsa'
      ? crypto.generateKeyPairSync('rsa', { modulusLength: options.modulusLength })
      : crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-saml-attack-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    fs.writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const certificatePem = execFileSync('openssl', ['req', '-x509', '-new', '-key', keyFile, '-subj', '/CN=weak.example', '-days', '1'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { privateKey, certificatePem };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `xml` (signed by `key`) with its first SignedInfo edited and signed again by `key`: a signature
 * of a shape the IdP itself made, so that only the verifier's rules can refuse it.
 */
function resigned(xml: string, key: TestSamlKey, edit: (signedInfo: string) => string): string {
  const signedInfo = /<ds:SignedInfo>.*?<\/ds:SignedInfo>/.exec(xml)?.[0];
  if (!signedInfo) throw new Error('fixture without a SignedInfo');
  const edited = edit(signedInfo);
  expect(edited).not.to.equal(signedInfo);
  const element = parseXml(`<ds:Signature xmlns:ds="${SAML_NS.dsig}">${edited}</ds:Signature>`).documentElement.firstChild as Element;
  const canonical = new ExclusiveCanonicalization().process(element, {});
  const value = crypto.sign('sha256', Buffer.from(canonical, 'utf8'), key.privateKey).toString('base64');
  return xml
    .replace(signedInfo, () => edited)
    .replace(/<ds:SignatureValue>[^<]*<\/ds:SignatureValue>/, `<ds:SignatureValue>${value}</ds:SignatureValue>`);
}

/** `xml` with `inner` in a samlp:Extensions right before the Response's Status (where the schema lets anything of another namespace in). */
function withExtensions(xml: string, inner: string): string {
  return xml.replace('<samlp:Status>', `<samlp:Extensions>${inner}</samlp:Extensions><samlp:Status>`);
}

describe('SAML attacks beyond signature wrapping (attacks.test.ts)', function () {
  let idp: TestSamlKey;
  let attacker: TestSamlKey;
  let sp: TestSamlKey;
  /** The attacker's own account, signed by the IdP: the value a smuggled reading would turn into admin@example.com. */
  let signedForAttacker: string;

  before(function () {
    idp = testSamlKey('idp.example');
    attacker = testSamlKey('attacker.example');
    sp = testSamlKey('sp.example');
    signedForAttacker = signEnveloped(responseXml({ nameId: 'not-an-admin@example.com' }), 'Assertion', idp);
  });

  async function verifiedNameId(xml: string, trusted = [idp.certificatePem]): Promise<string> {
    return nameIdOf(verifiedResponse(await readSamlXml(xml, 'protocol'), trusted).assertion);
  }

  describe('what is parsed differs from what is signed', function () {
    it('a processing instruction inside a NameID (<?p not-an-?>admin@…) is refused when read', async function () {
      const xml = signedForAttacker.replace('not-an-admin@example.com', '<?p not-an-?>admin@example.com');
      expect(await refusalOf(() => readSamlXml(xml, 'protocol'))).to.equal('the document holds a processing instruction');
    });

    it('…and, were it let in, the verifier reads the signed text, never the admin the DOM shows', function () {
      // xml-crypto's exclusive c14n renders a PI's data as text: the digest is the attacker's own
      // signed NameID, so only a reader of the arrived DOM would see admin@example.com.
      const xml = signedForAttacker.replace('not-an-admin@example.com', '<?p not-an-?>admin@example.com');
      expect(nameIdOf(verifiedResponse(parseXml(xml), [idp.certificatePem]).assertion)).to.equal('not-an-admin@example.com');
    });

    it('processing instructions in odd places: a second XML declaration, whitespace or a comment before it, after the root', async function () {
      for (const xml of [
        `<?xml version="1.0"?><?xml version="1.0"?>${signedForAttacker}`,
        ` <?xml version="1.0"?>${signedForAttacker}`,
        `<!-- x --><?xml version="1.0"?>${signedForAttacker}`,
        `${signedForAttacker}<?p x?>`,
        signedForAttacker.replace('<saml:Issuer>', '<saml:Issuer><?xml version="1.0"?>'),
      ]) {
        expect(await refusalOf(() => readSamlXml(xml, 'protocol'))).to.equal('the document holds a processing instruction');
      }
    });

    it('a byte-order mark before the declaration reads the same; a declared UTF-16 that is not is refused', async function () {
      expect(await verifiedNameId(`\uFEFF<?xml version="1.0" encoding="UTF-8"?>${signedForAttacker}`)).to.equal('not-an-admin@example.com');
      expect(await refusalOf(() => readSamlXml(`<?xml version="1.0" encoding="UTF-16"?>${signedForAttacker}`, 'protocol'))).to.equal(
        'the document does not follow the SAML protocol schema',
      );
    });

    it('a CDATA section splitting a NameID reads as the whole signed value', async function () {
      const signed = signEnveloped(responseXml({ nameId: 'admin@example.com.evil.com' }), 'Assertion', idp);
      const xml = signed.replace('admin@example.com.evil.com', 'admin@example.com<![CDATA[]]>.evil.com');
      expect(await verifiedNameId(xml)).to.equal('admin@example.com.evil.com');
    });

    it('character references in a NameID read as the signed characters; an HTML entity is not XML', async function () {
      expect(await verifiedNameId(signedForAttacker.replace('not-an-admin', 'not-an-&#x61;dmin'))).to.equal('not-an-admin@example.com');
      expect(await refusalOf(() => readSamlXml(signedForAttacker.replace('not-an-admin', 'not-an-admin&nbsp;'), 'protocol'))).to.equal(
        'the document is not well-formed XML',
      );
      expect(await refusalOf(() => readSamlXml(signedForAttacker.replace('not-an-admin', 'x&#0;'), 'protocol'))).to.match(
        /not well-formed|schema/,
      );
    });

    it('the saml prefix rebound inside the signed Assertion breaks its digest', async function () {
      const xml = signedForAttacker.replace('<saml:NameID ', '<saml:NameID xmlns:saml="urn:example:not-saml" ');
      expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.match(/changed|exactly one/);
    });

    it('an unsigned Assertion in a look-alike namespace or typed xsi:type AssertionType beside the signed one is never what is read', async function () {
      const evil = assertionXml('_evil', 'admin@example.com');
      const lookAlike = evil.replace(
        /xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"/,
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion "',
      );
      const typed =
        `<x:Assertion xmlns:x="urn:example:x" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="x:Other" ID="_typed">` +
        `admin@example.com</x:Assertion>`;
      // The schema refuses this one already; the verifier's own reading is what is shown here.
      const doc = parseXml(withExtensions(signedForAttacker, lookAlike + typed));
      expect(nameIdOf(verifiedResponse(doc, [idp.certificatePem]).assertion)).to.equal('not-an-admin@example.com');
    });

    it('an unsigned Assertion in the SAML namespace by the default namespace, hidden in Extensions, is a second Assertion', async function () {
      const evil = assertionXml('_evil', 'admin@example.com').replace(/saml:/g, '').replace('xmlns:saml=', 'xmlns=');
      const wrapped = `<x:Box xmlns:x="urn:example:x">${evil}</x:Box>`;
      expect(
        await refusalOf(async () => verifiedResponse(parseXml(withExtensions(signedForAttacker, wrapped)), [idp.certificatePem])),
      ).to.equal('the response must hold exactly one assertion');
    });
  });

  describe('IDs under other names', function () {
    for (const attribute of [
      'Id="_assertion"',
      'id="_assertion"',
      'xml:id="_assertion"',
      'xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd" wsu:Id="_assertion"',
      'xmlns:y="urn:example:y" y:ID="_assertion"',
    ]) {
      it(`the signed ID given to a decoy as ${attribute.replace(/^xmlns:\S+ /, '')}`, async function () {
        const xml = withExtensions(signedForAttacker, `<x:Decoy xmlns:x="urn:example:x" ${attribute}>admin@example.com</x:Decoy>`);
        expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal(
          'the signed ID is not unique in the document',
        );
      });
    }

    it('a SAML 1.1 AssertionID of the same value is no ID to xml-crypto: what is read is still the signed Assertion', async function () {
      const xml = withExtensions(
        signedForAttacker,
        '<x:Decoy xmlns:x="urn:example:x" AssertionID="_assertion">admin@example.com</x:Decoy>',
      );
      expect(nameIdOf(verifiedResponse(parseXml(xml), [idp.certificatePem]).assertion)).to.equal('not-an-admin@example.com');
    });
  });

  describe('signatures in other places and of other shapes', function () {
    it('the IdP’s Assertion signature moved into samlp:Extensions: the Assertion is unsigned', async function () {
      const signature = /<ds:Signature .*<\/ds:Signature>/.exec(signedForAttacker)?.[0] ?? '';
      const xml = withExtensions(signedForAttacker.replace(signature, ''), signature);
      expect(await refusalOf(() => verifiedNameId(xml))).to.equal('neither the response nor its assertion is signed');
    });

    it('a signature the IdP put in the Subject or in an Advice is no enveloped signature of the Assertion', async function () {
      const inSubject = signEnveloped(responseXml(), 'Assertion', idp, {
        location: { reference: "//*[local-name(.)='Subject']", action: 'append' },
      });
      expect(await refusalOf(async () => verifiedResponse(parseXml(inSubject), [idp.certificatePem]))).to.equal(
        'neither the response nor its assertion is signed',
      );
      const withAdvice = responseXml().replace(
        '<saml:AuthnStatement',
        '<saml:Advice><saml:AssertionIDRef>_x</saml:AssertionIDRef></saml:Advice><saml:AuthnStatement',
      );
      const inAdvice = signEnveloped(withAdvice, 'Assertion', idp, {
        location: { reference: "//*[local-name(.)='Advice']", action: 'append' },
      });
      expect(await refusalOf(async () => verifiedResponse(parseXml(inAdvice), [idp.certificatePem]))).to.equal(
        'neither the response nor its assertion is signed',
      );
    });

    it('a second Signature beside the IdP’s (the attacker’s own, over the same Assertion)', async function () {
      const theirs = /<ds:Signature .*<\/ds:Signature>/.exec(
        signEnveloped(responseXml({ nameId: 'not-an-admin@example.com' }), 'Assertion', attacker),
      )?.[0];
      const xml = signedForAttacker.replace('</ds:Signature>', `</ds:Signature>${theirs}`);
      expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal(
        'expected exactly one Signature in Assertion',
      );
    });

    it('a Reference URI="" (the whole document) or an XPointer, made and signed by the IdP', async function () {
      // The whole Response digested by a signature inside the Assertion, then its URI made "".
      const whole = signEnveloped(responseXml(), 'Assertion', idp, {
        xpath: '/*',
        location: { reference: "//*[local-name(.)='Assertion']/*[local-name(.)='Issuer']", action: 'after' },
      });
      for (const xml of [
        resigned(whole, idp, (s) => s.replace('URI="#_response"', 'URI=""')),
        resigned(signedForAttacker, idp, (s) => s.replace('URI="#_assertion"', 'URI="#xpointer(id(\'_assertion\'))"')),
      ]) {
        expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal(
          'the signature does not reference the element it is in',
        );
      }
    });

    it('transforms with XPath, XSLT, c14n with comments, or a canonicalization of SignedInfo with comments, signed by the IdP', async function () {
      const transformsEdits = [
        (s: string) =>
          s.replace(
            '</ds:Transforms>',
            '<ds:Transform Algorithm="http://www.w3.org/TR/1999/REC-xpath-19991116"><ds:XPath>not(ancestor-or-self::ds:Signature)</ds:XPath></ds:Transform></ds:Transforms>',
          ),
        (s: string) =>
          s.replace('</ds:Transforms>', '<ds:Transform Algorithm="http://www.w3.org/TR/1999/REC-xslt-19991116"/></ds:Transforms>'),
        (s: string) =>
          s.replace(
            /(<ds:Transform Algorithm=")http:\/\/www\.w3\.org\/2001\/10\/xml-exc-c14n#"/,
            '$1http://www.w3.org/2001/10/xml-exc-c14n#WithComments"',
          ),
        (s: string) => s.replace('</ds:Transforms>', '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></ds:Transforms>'),
      ];
      for (const edit of transformsEdits) {
        const xml = resigned(signedForAttacker, idp, edit);
        expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.match(/transforms/);
      }
      const signedInfoWithComments = resigned(signedForAttacker, idp, (s) =>
        s.replace(
          '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"',
          '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#WithComments"',
        ),
      );
      expect(await refusalOf(async () => verifiedResponse(parseXml(signedInfoWithComments), [idp.certificatePem]))).to.equal(
        'the signature is not canonicalized with exclusive c14n',
      );
    });

    it('two References, the second to the Response, signed by the IdP', async function () {
      const xml = resigned(signedForAttacker, idp, (s) => {
        const reference = /<ds:Reference .*<\/ds:Reference>/.exec(s)?.[0] ?? '';
        return s.replace(reference, reference + reference.replace('#_assertion', '#_response'));
      });
      expect(await refusalOf(async () => verifiedResponse(parseXml(xml), [idp.certificatePem]))).to.equal(
        'expected exactly one Reference in SignedInfo',
      );
    });

    it('an empty DigestValue (schema-valid base64) is a refusal that quotes nothing, not an error of xml-crypto’s', async function () {
      const xml = signedForAttacker.replace(/<ds:DigestValue>[^<]*<\/ds:DigestValue>/, '<ds:DigestValue></ds:DigestValue>');
      const doc = await readSamlXml(xml, 'protocol');
      expect(await refusalOf(async () => verifiedResponse(doc, [idp.certificatePem]))).to.equal('the signature cannot be read');
    });

    it('verifiedSignedMessage refuses an AuthnRequest carrying the IdP’s Signature twice', async function () {
      const signed = signEnveloped(authnRequestXml(), 'AuthnRequest', idp);
      const signature = /<ds:Signature .*<\/ds:Signature>/.exec(signed)?.[0] ?? '';
      const twice = signed.replace('</ds:Signature>', `</ds:Signature>${signature}`);
      expect(await refusalOf(async () => verifiedSignedMessage(parseXml(twice), [idp.certificatePem]))).to.match(/exactly one Signature/);
    });
  });

  describe('encrypted payloads', function () {
    async function responseWithEncrypted(payload: string, extra = ''): Promise<Document> {
      const encrypted = await encryptAssertion(payload, sp.certificatePem);
      return parseXml(responseXml({ extra: encrypted + extra }).replace(/<saml:Assertion .*<\/saml:Assertion>/, ''));
    }

    it('a decrypted payload with a DOCTYPE, an entity or a processing instruction is read as every document is', async function () {
      const assertion = signEnveloped(responseXml(), 'Assertion', idp).match(/<saml:Assertion .*<\/saml:Assertion>/)?.[0] ?? '';
      const doctype = await responseWithEncrypted(`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${assertion}`);
      expect(await refusalOf(() => decryptAssertions(doctype, sp.privateKey))).to.equal('the document declares a DTD or entities');
      const pi = await responseWithEncrypted(assertion.replace('alice@example.com', '<?p x?>alice@example.com'));
      expect(await refusalOf(() => decryptAssertions(pi, sp.privateKey))).to.equal('the document holds a processing instruction');
    });

    it('a decrypted payload of two Assertions, of none, or one that closes the Response', async function () {
      const assertion = signEnveloped(responseXml(), 'Assertion', idp).match(/<saml:Assertion .*<\/saml:Assertion>/)?.[0] ?? '';
      const two = await responseWithEncrypted(assertion + assertion.replace('_assertion', '_second'));
      expect(await refusalOf(() => decryptAssertions(two, sp.privateKey))).to.match(/schema|one Assertion/);
      const none = await responseWithEncrypted('<x:Nothing xmlns:x="urn:example:x"/>');
      expect(await refusalOf(() => decryptAssertions(none, sp.privateKey))).to.match(/schema|one Assertion/);
      const closing = await responseWithEncrypted(`${assertion}</samlp:Response><samlp:Response>`);
      expect(await refusalOf(() => decryptAssertions(closing, sp.privateKey))).to.equal('the document is not well-formed XML');
    });

    it('a Response of a hundred EncryptedAssertions is refused before any is decrypted', async function () {
      const one = await encryptAssertion(assertionXml('_evil', 'admin@example.com'), sp.certificatePem);
      const many = parseXml(responseXml({ extra: one.repeat(100) }).replace(/<saml:Assertion .*<\/saml:Assertion>/, ''));
      const started = performance.now();
      expect(await refusalOf(() => decryptAssertions(many, sp.privateKey))).to.equal('a Response holds one EncryptedAssertion at most');
      expect(performance.now() - started, 'milliseconds').to.be.below(50);
    });

    it('an EncryptedAssertion of the attacker’s beside the IdP’s plain signed Assertion', async function () {
      const evil = await encryptAssertion(assertionXml('_evil', 'admin@example.com'), sp.certificatePem);
      const doc = await decryptAssertions(
        parseXml(signedForAttacker.replace('<saml:Assertion ', `${evil}<saml:Assertion `)),
        sp.privateKey,
      );
      expect(await refusalOf(async () => verifiedResponse(doc, [idp.certificatePem]))).to.equal(
        'the response must hold exactly one assertion',
      );
    });
  });

  describe('the HTTP-Redirect binding', function () {
    const good = () => encodeRedirectMessage(authnRequestXml('_good'));
    const evil = () => encodeRedirectMessage(authnRequestXml('_evil').replace('https://sp.example/acs', 'https://evil.example/acs'));

    /** What a handler reading the query with URLSearchParams (or Express's req.query) gets: the first value of each name. */
    function readAsAHandlerWould(query: string): { request: string | null; relayState: string | null } {
      const parameters = new URLSearchParams(query);
      return { request: parameters.get('SAMLRequest'), relayState: parameters.get('RelayState') };
    }

    it('a SAMLRequest or RelayState given again under a percent-encoded name (SAML%52equest) is a parameter twice', function () {
      const query = signedRedirectQuery({ SAMLRequest: good(), RelayState: 'r' }, idp);
      for (const forged of [`SAML%52equest=${encodeURIComponent(evil())}&${query}`, `Relay%53tate=evil&${query}`]) {
        const read = readAsAHandlerWould(forged);
        expect([read.request, read.relayState]).not.to.deep.equal([good(), 'r']);
        expect(verifyRedirectSignature(forged, [idp.certificatePem]), forged.slice(0, 20)).to.equal(false);
      }
    });

    it('an empty RelayState is signed as given; a value encoded otherwise than signed does not verify', function () {
      const empty = signedRedirectQuery({ SAMLRequest: good(), RelayState: '' }, idp);
      expect(verifyRedirectSignature(empty, [idp.certificatePem])).to.equal(true);
      expect(verifyRedirectSignature(empty.replace('RelayState=&', ''), [idp.certificatePem])).to.equal(false);
      const query = signedRedirectQuery({ SAMLRequest: good(), RelayState: 'https://app.example/a b' }, idp);
      expect(verifyRedirectSignature(query.replace('%20', '+'), [idp.certificatePem])).to.equal(false);
      expect(verifyRedirectSignature(query.replace(/%2F/g, '%2f'), [idp.certificatePem])).to.equal(false);
    });

    it('a deflate bomb inflates no further than the cap, quickly', function () {
      const bomb = deflateRawSync(Buffer.alloc(64 * 1024 * 1024, 0x20), { level: 9 }).toString('base64');
      const started = performance.now();
      expect(() => decodeRedirectMessage(bomb)).to.throw(SamlRefusal, /inflates to more than/);
      expect(performance.now() - started).to.be.below(500);
    });

    it('a huge base64 on HTTP-POST is refused before it is decoded', function () {
      const huge = 'A'.repeat(8 * 1024 * 1024);
      const started = performance.now();
      expect(() => decodePostMessage(huge)).to.throw(SamlRefusal, /longer than/);
      expect(performance.now() - started).to.be.below(50);
    });
  });

  describe('trusted keys', function () {
    it('an EC certificate among the trusted ones verifies nothing (and alone is a refusal); the RSA one beside it still does', async function () {
      const ec = certifiedKey({ type: 'ec' });
      expect(await verifiedNameId(signedForAttacker, [ec.certificatePem, idp.certificatePem])).to.equal('not-an-admin@example.com');
      expect(await refusalOf(() => verifiedNameId(signedForAttacker, [ec.certificatePem]))).to.equal(
        'no trusted RSA certificate of 2048 bits or more to verify with',
      );
      const query = signedRedirectQuery({ SAMLRequest: encodeRedirectMessage(authnRequestXml()) }, idp);
      expect(verifyRedirectSignature(query, [ec.certificatePem])).to.equal(false);
    });

    it('an RSA key of 512 bits in the trusted list (factorable) verifies nothing', async function () {
      const weak = certifiedKey({ type: 'rsa', modulusLength: 512 });
      const xml = signEnveloped(responseXml(), 'Assertion', weak);
      expect(await refusalOf(() => verifiedNameId(xml, [weak.certificatePem]))).to.equal(
        'no trusted RSA certificate of 2048 bits or more to verify with',
      );
      const query = signedRedirectQuery({ SAMLRequest: encodeRedirectMessage(authnRequestXml()) }, weak);
      expect(verifyRedirectSignature(query, [weak.certificatePem])).to.equal(false);
    });
  });

  describe('documents that cost more than they weigh', function () {
    this.timeout(60000);

    /** `signedForAttacker` padded to about the cap with `unit`, repeated inside an element of another namespace in Extensions. */
    function padded(unit: string): string {
      const room = PROTOCOL_CAP - signedForAttacker.length - 200;
      return withExtensions(signedForAttacker, `<x:a xmlns:x="urn:example:x">${unit.repeat(Math.floor(room / unit.length))}</x:a>`);
    }

    it('nesting 8,000 or 20,000 deep is refused when read, without overflowing a stack', async function () {
      // 8,000 is under the cap of elements and attributes: libxml2 refuses more than 256 levels.
      for (const [depth, reason] of [
        [8000, 'the document does not follow the SAML protocol schema'],
        [20000, 'the document holds too many elements and attributes'],
      ] as const) {
        const xml = withExtensions(signedForAttacker, `<x:a xmlns:x="urn:example:x">${'<x:a>'.repeat(depth)}${'</x:a>'.repeat(depth + 1)}`);
        expect(xml.length).to.be.below(PROTOCOL_CAP);
        expect(await refusalOf(() => readSamlXml(xml, 'protocol'))).to.equal(reason);
      }
    });

    it('40,000 empty elements cost no seconds of the event loop to verify with four trusted certificates', async function () {
      const others = [testSamlKey('a.example'), testSamlKey('b.example'), testSamlKey('c.example')].map((k) => k.certificatePem);
      const xml = padded('<x:b/>');
      let doc: Document;
      try {
        doc = await readSamlXml(xml, 'protocol');
      } catch (err) {
        // Refused at the door, before the schema check and the verifier spend anything on it.
        expect((err as SamlRefusal).reason).to.equal('the document holds too many elements and attributes');
        return;
      }
      const started = performance.now();
      verifiedResponse(doc, [...others, idp.certificatePem]);
      expect(performance.now() - started, 'milliseconds of synchronous verification').to.be.below(1000);
    });

    it('20,000 comments inside the signed Assertion (unsigned, so its digest holds) cost no seconds to verify', async function () {
      const xml = signedForAttacker.replace('<saml:Subject>', `<saml:Subject>${'<!---->'.repeat(20000)}`);
      let doc: Document;
      try {
        doc = await readSamlXml(xml, 'protocol');
      } catch (err) {
        expect((err as SamlRefusal).reason).to.equal('the document holds too many comments');
        return;
      }
      const started = performance.now();
      verifiedResponse(doc, [idp.certificatePem]);
      expect(performance.now() - started, 'milliseconds of synchronous verification').to.be.below(1000);
    });

    it('a few comments, as some IdPs and metadata write them, are still read', async function () {
      const xml = signedForAttacker.replace('<saml:Subject>', `<saml:Subject>${'<!-- written by the IdP -->'.repeat(10)}`);
      expect(await verifiedNameId(xml)).to.equal('not-an-admin@example.com');
    });

    it('four trusted certificates cost one pass of xml-crypto over the document, not four', async function () {
      const others = [testSamlKey('a.example'), testSamlKey('b.example'), testSamlKey('c.example')].map((k) => k.certificatePem);
      const doc = await readSamlXml(padded('<x:b/>'.padEnd(32)), 'protocol'); // under the cap of elements and attributes
      const fastest = (trusted: string[]): number => {
        let best = Infinity;
        for (let i = 0; i < 3; i++) {
          const started = performance.now();
          expect(nameIdOf(verifiedResponse(doc, trusted).assertion)).to.equal('not-an-admin@example.com');
          best = Math.min(best, performance.now() - started);
        }
        return best;
      };
      const one = fastest([idp.certificatePem]);
      const four = fastest([...others, idp.certificatePem]);
      expect(four, `${Math.round(one)} ms with one certificate`).to.be.below(2 * one);
    });

    it('a real Response near the cap (1,400 typed group values) is still read and verified whole', async function () {
      let values = '';
      for (let i = 0; i < 1400; i++) {
        values +=
          '<saml:AttributeValue xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' +
          ` xsi:type="xs:string">group-${i}</saml:AttributeValue>`;
      }
      const statement = `<saml:AttributeStatement><saml:Attribute Name="groups">${values}</saml:Attribute></saml:AttributeStatement>`;
      const xml = signEnveloped(responseXml().replace('</saml:Assertion>', `${statement}</saml:Assertion>`), 'Assertion', idp);
      expect(xml.length).to.be.within(200 * 1024, PROTOCOL_CAP);
      const { assertion } = verifiedResponse(await readSamlXml(xml, 'protocol'), [idp.certificatePem]);
      expect(assertion.getElementsByTagNameNS(SAML_NS.assertion, 'AttributeValue')).to.have.length(1400);
    });

    it('20,000 attributes on one element, or one 250 KiB attribute value, are read and verified in well under a second', async function () {
      let attributes = '';
      for (let i = 0; attributes.length < PROTOCOL_CAP - signedForAttacker.length - 400; i++) attributes += ` x:a${i}=""`;
      for (const xml of [
        withExtensions(signedForAttacker, `<x:a xmlns:x="urn:example:x"${attributes}/>`),
        withExtensions(
          signedForAttacker,
          `<x:a xmlns:x="urn:example:x" v="${'a'.repeat(PROTOCOL_CAP - signedForAttacker.length - 200)}"/>`,
        ),
      ]) {
        let doc: Document;
        try {
          doc = await readSamlXml(xml, 'protocol');
        } catch (err) {
          expect(err).to.be.instanceOf(SamlRefusal);
          continue;
        }
        const started = performance.now();
        expect(nameIdOf(verifiedResponse(doc, [idp.certificatePem]).assertion)).to.equal('not-an-admin@example.com');
        expect(performance.now() - started, 'milliseconds of synchronous verification').to.be.below(1000);
      }
    });
  });
});
