// The box's X.509 certificate for SAML: SAML metadata publishes a signing key only as a
// certificate (KeyInfo/X509Data/X509Certificate), never as a bare key, so the keyring's RSA key
// is wrapped in a self-signed certificate. Nobody trusts it for its issuer: an SP trusts the key
// inside it because an admin pasted the box's metadata. It is written here by hand as DER (a v3
// TBSCertificate without extensions, RFC 5280 §4.1) because the little it needs is smaller than
// a dependency, and node:crypto's X509Certificate checks what this writes (the unit tests).
//
// The certificate is a function of its inputs alone (the serial is a digest of them, and an RSA
// PKCS#1 v1.5 signature is deterministic): every replica of a box publishes the same bytes for
// the same key, so an SP that pinned a certificate's fingerprint sees no change between them.
import { createHash, sign, verify, type KeyObject } from 'node:crypto';

/** RFC 5280 §4.1.2.4, Appendix A: ub-common-name. */
const MAX_COMMON_NAME = 64;

/** sha256WithRSAEncryption, RFC 4055 §5: the OID with NULL parameters. */
const SHA256_WITH_RSA = sequence(oid('1.2.840.113549.1.1.11'), Buffer.from([0x05, 0x00]));
const COMMON_NAME = oid('2.5.4.3');

/**
 * A self-signed certificate (PEM) for `key`, with `subject` as the issuer's and the subject's
 * common name, valid from `notBefore` to `notAfter` (whole seconds, UTC). The key must be RSA:
 * SAML's one signature algorithm every SP accepts is RSA-SHA256.
 */
export function selfSignedCertificate(
  key: { privateKey: KeyObject; publicKey: KeyObject },
  subject: string,
  notBefore: Date,
  notAfter: Date,
): string {
  if (key.privateKey.asymmetricKeyType !== 'rsa' || key.publicKey.asymmetricKeyType !== 'rsa') {
    throw new Error('a SAML certificate is made for an RSA key only');
  }
  if (subject.length === 0 || subject.length > MAX_COMMON_NAME) {
    throw new Error(`a certificate's common name has 1 to ${MAX_COMMON_NAME} characters`);
  }
  if (!(notBefore.getTime() < notAfter.getTime())) throw new Error("a certificate's validity must end after it begins");
  const name = sequence(set(sequence(COMMON_NAME, tlv(0x0c, Buffer.from(subject, 'utf8')))));
  const validity = sequence(time(notBefore), time(notAfter));
  const spki = key.publicKey.export({ type: 'spki', format: 'der' });
  const serial = serialNumber(name, validity, spki);
  const tbs = sequence(
    tlv(0xa0, integer(Buffer.from([2]))), // [0] EXPLICIT version: v3
    integer(serial),
    SHA256_WITH_RSA,
    name, // issuer: self-signed
    validity,
    name, // subject
    spki,
  );
  const signature = sign('sha256', tbs, key.privateKey);
  // A public key that is not the private key's would make a certificate nobody can check.
  if (!verify('sha256', tbs, key.publicKey, signature)) throw new Error("the certificate's public key is not its private key's");
  const der = sequence(tbs, SHA256_WITH_RSA, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/** The base64 of one PEM certificate, without its armour and line breaks: the text of a ds:X509Certificate. */
export function certificateBody(pem: string): string {
  const found = /^\s*-----BEGIN CERTIFICATE-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END CERTIFICATE-----\s*$/.exec(pem);
  if (!found?.[1]) throw new Error('not one PEM certificate');
  return found[1].replace(/\s+/g, '');
}

/** 16 octets of a digest of the rest, positive and without a leading zero octet (RFC 5280 §4.1.2.2: at most 20). */
function serialNumber(...parts: Buffer[]): Buffer {
  const serial = createHash('sha256').update(Buffer.concat(parts)).digest().subarray(0, 16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  return serial;
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; both in Z, to the second. */
function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const year = date.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new Error('a certificate time lies between 1950 and 9999');
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z';
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii')) : tlv(0x18, Buffer.from(digits, 'ascii'));
}

function integer(unsigned: Buffer): Buffer {
  return tlv(0x02, unsigned[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), unsigned]) : unsigned);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const octets = [40 * first + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    octets.push(...base128);
  }
  return tlv(0x06, Buffer.from(octets));
}

function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(items));
}

/** DER: tag, definite length (short form under 128, else long form), value. */
function tlv(tag: number, value: Buffer): Buffer {
  const n = value.length;
  const length = [];
  if (n < 0x80) length.push(n);
  else {
    for (let v = n; v > 0; v >>>= 8) length.unshift(v & 0xff);
    length.unshift(0x80 | length.length);
  }
  return Buffer.concat([Buffer.from([tag, ...length]), value]);
}
