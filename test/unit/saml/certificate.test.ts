// The box's SAML certificate, written by hand as DER: what an SP reads of it (node:crypto's X.509
// parser and, when the machine has it, OpenSSL's) is the subject, the validity and the key given,
// signed by that key.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { expect } from 'chai';
import { certificateBody, selfSignedCertificate } from '../../../api/saml/certificate.js';

const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
const notBefore = new Date('2026-11-28T06:00:00.000Z');
const notAfter = new Date('2036-11-28T06:00:00.000Z');

describe('the SAML certificate of a signing key', function () {
  const pem = selfSignedCertificate(key, 'box.example', notBefore, notAfter);
  const certificate = new X509Certificate(pem);

  it('parses as X.509 with the subject, issuer, validity and public key given', function () {
    expect(certificate.subject).to.equal('CN=box.example');
    expect(certificate.issuer).to.equal('CN=box.example');
    expect(new Date(certificate.validFrom).toISOString()).to.equal(notBefore.toISOString());
    expect(new Date(certificate.validTo).toISOString()).to.equal(notAfter.toISOString());
    expect(certificate.publicKey.export({ type: 'spki', format: 'der' })).to.deep.equal(
      key.publicKey.export({ type: 'spki', format: 'der' }),
    );
    expect(certificate.ca).to.equal(false);
  });

  it('verifies with its own key, and not with another', function () {
    expect(certificate.verify(key.publicKey)).to.equal(true);
    expect(certificate.checkIssued(certificate)).to.equal(true);
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect(certificate.verify(other.publicKey)).to.equal(false);
  });

  it('is the same certificate for the same key, subject and validity (every replica publishes one)', function () {
    expect(selfSignedCertificate(key, 'box.example', notBefore, notAfter)).to.equal(pem);
    expect(selfSignedCertificate(key, 'other.example', notBefore, notAfter)).not.to.equal(pem);
  });

  it('has a positive serial number of 16 octets', function () {
    expect(certificate.serialNumber).to.match(/^[4-7][0-9A-F]{31}$/);
  });

  it('writes a validity from 2050 as GeneralizedTime, which the parser reads back', function () {
    const late = new X509Certificate(
      selfSignedCertificate(key, 'box.example', new Date('2049-12-31T23:59:59Z'), new Date('2050-01-01T00:00:00Z')),
    );
    expect(new Date(late.validFrom).toISOString()).to.equal('2049-12-31T23:59:59.000Z');
    expect(new Date(late.validTo).toISOString()).to.equal('2050-01-01T00:00:00.000Z');
  });

  it('takes a subject of up to 64 characters in UTF-8, and refuses a longer one', function () {
    const named = new X509Certificate(selfSignedCertificate(key, 'Böx ✓', notBefore, notAfter));
    expect(named.subject).to.equal('CN=Böx ✓');
    expect(new X509Certificate(selfSignedCertificate(key, 'a'.repeat(64), notBefore, notAfter)).subject).to.equal(`CN=${'a'.repeat(64)}`);
    expect(() => selfSignedCertificate(key, 'a'.repeat(65), notBefore, notAfter)).to.throw(/1 to 64 characters/);
    expect(() => selfSignedCertificate(key, '', notBefore, notAfter)).to.throw(/1 to 64 characters/);
  });

  it('refuses a validity that ends before it begins, a key that is not RSA and a public key of another key', function () {
    expect(() => selfSignedCertificate(key, 'box.example', notAfter, notBefore)).to.throw(/end after it begins/);
    expect(() => selfSignedCertificate(generateKeyPairSync('ec', { namedCurve: 'P-256' }), 'box.example', notBefore, notAfter)).to.throw(
      /RSA key only/,
    );
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect(() =>
      selfSignedCertificate({ privateKey: key.privateKey, publicKey: other.publicKey }, 'box.example', notBefore, notAfter),
    ).to.throw(/not its private key's/);
  });

  it("gives the base64 body for a ds:X509Certificate, which is the certificate's DER", function () {
    const body = certificateBody(pem);
    expect(body).to.match(/^[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(body, 'base64')).to.deep.equal(certificate.raw);
    expect(() => certificateBody('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')).to.throw(/not one PEM certificate/);
    expect(() => certificateBody(pem + pem)).to.throw(/not one PEM certificate/);
  });

  it('reads in OpenSSL as a v3 certificate signed with sha256WithRSAEncryption', function () {
    const openssl = spawnSync('openssl', ['x509', '-noout', '-text'], { input: pem, encoding: 'utf8' });
    if (openssl.error) this.skip(); // no openssl on this machine: node:crypto's parser above is the check
    expect(openssl.status, openssl.stderr).to.equal(0);
    expect(openssl.stdout).to.include('Version: 3 (0x2)');
    expect(openssl.stdout).to.include('Signature Algorithm: sha256WithRSAEncryption');
    expect(openssl.stdout).to.include('Issuer: CN = box.example');
    expect(openssl.stdout).to.include('Subject: CN = box.example');
    expect(openssl.stdout).to.include('Not Before: Nov 28 06:00:00 2026 GMT');
    expect(openssl.stdout).to.include('Not After : Nov 28 06:00:00 2036 GMT');
    expect(openssl.stdout).to.include('Public-Key: (2048 bit)');
  });
});
