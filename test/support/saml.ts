// SAML fixtures for the tests of api/saml/: an IdP's RSA key with a self-signed certificate
// (Debian's openssl writes the certificate; the key is node:crypto's), Responses and
// AuthnRequests as an IdP or an SP would send them, and enveloped signatures made with
// xml-crypto's SignedXml directly — not with the box's signer, so a test of the verifier does not
// lean on the code it would also catch.
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignedXml } from 'xml-crypto';
import { childElements, readSamlXml, SAML_NS } from '../../api/saml/xml.js';
import type { Box } from './box.js';

export interface TestSamlKey {
  privateKey: crypto.KeyObject;
  certificatePem: string;
}

/** A fresh RSA-2048 key and a self-signed certificate for it (CN=`subject`, valid a day). */
export function testSamlKey(subject: string): TestSamlKey {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-saml-key-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    fs.writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const certificatePem = execFileSync(
      'openssl',
      ['req', '-x509', '-new', '-key', keyFile, '-subj', `/CN=${subject}`, '-days', '1', '-sha256'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    return { privateKey, certificatePem };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export const ALGORITHMS = {
  excC14n: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  excC14nWithComments: 'http://www.w3.org/2001/10/xml-exc-c14n#WithComments',
  envelopedSignature: 'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha1: 'http://www.w3.org/2000/09/xmldsig#sha1',
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  rsaSha1: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
} as const;

export interface SignOptions {
  /** Default: the first element of `localName`. */
  xpath?: string;
  /** Where the Signature goes: default right after that element's own Issuer (where the schema puts it). */
  location?: { reference: string; action: 'append' | 'prepend' | 'before' | 'after' };
  signatureAlgorithm?: string;
  digestAlgorithm?: string;
  transforms?: string[];
  /** The certificate published in KeyInfo (default the signer's own). */
  keyInfoCertificatePem?: string;
}

/** `xml` with an enveloped signature of the first element named `localName` (by its ID), as an IdP makes it. */
export function signEnveloped(xml: string, localName: string, key: TestSamlKey, options: SignOptions = {}): string {
  const element = options.xpath ?? `//*[local-name(.)='${localName}']`;
  const signed = new SignedXml({
    privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    publicCert: options.keyInfoCertificatePem ?? key.certificatePem,
    canonicalizationAlgorithm: ALGORITHMS.excC14n,
    signatureAlgorithm: options.signatureAlgorithm ?? ALGORITHMS.rsaSha256,
  });
  signed.addReference({
    xpath: element,
    transforms: options.transforms ?? [ALGORITHMS.envelopedSignature, ALGORITHMS.excC14n],
    digestAlgorithm: options.digestAlgorithm ?? ALGORITHMS.sha256,
  });
  signed.computeSignature(xml, {
    prefix: 'ds',
    location: options.location ?? { reference: `(${element})[1]/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return signed.getSignedXml();
}

export interface ResponseFields {
  responseId?: string;
  assertionId?: string;
  nameId?: string;
  /** Extra elements right after the Response's Status (a second Assertion, …). */
  extra?: string;
}

/** An assertion as an IdP writes it (schema-valid, unsigned). */
export function assertionXml(id: string, nameId: string): string {
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="2026-11-28T06:00:00Z">` +
    `<saml:Issuer>https://idp.example</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${nameId}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData InResponseTo="_request" NotOnOrAfter="2026-11-28T06:05:00Z" Recipient="https://sp.example/acs"/>` +
    `</saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="2026-11-28T05:59:00Z" NotOnOrAfter="2026-11-28T06:05:00Z">` +
    `<saml:AudienceRestriction><saml:Audience>https://sp.example</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="2026-11-28T06:00:00Z" SessionIndex="_session"><saml:AuthnContext>` +
    `<saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef>` +
    `</saml:AuthnContext></saml:AuthnStatement></saml:Assertion>`
  );
}

/** A successful Response holding one assertion (schema-valid, unsigned). */
export function responseXml(fields: ResponseFields = {}): string {
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"` +
    ` ID="${fields.responseId ?? '_response'}" Version="2.0" IssueInstant="2026-11-28T06:00:00Z"` +
    ` Destination="https://sp.example/acs" InResponseTo="_request">` +
    `<saml:Issuer>https://idp.example</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    (fields.extra ?? '') +
    assertionXml(fields.assertionId ?? '_assertion', fields.nameId ?? 'alice@example.com') +
    `</samlp:Response>`
  );
}

/** An AuthnRequest as an SP sends it (schema-valid, unsigned). */
export function authnRequestXml(id = '_request'): string {
  return (
    `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"` +
    ` ID="${id}" Version="2.0" IssueInstant="2026-11-28T06:00:00Z" Destination="https://box.example/saml/sso"` +
    ` AssertionConsumerServiceURL="https://sp.example/acs">` +
    `<saml:Issuer>https://sp.example</saml:Issuer></samlp:AuthnRequest>`
  );
}

/** The HTTP-Redirect binding's query, signed over `signedOrder` (the parameter names in the order the signer used). */
export function signedRedirectQuery(
  parameters: { SAMLRequest?: string; SAMLResponse?: string; RelayState?: string },
  key: TestSamlKey,
  options: { sigAlg?: string; signedOrder?: string[] } = {},
): string {
  const encoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) encoded[name] = encodeURIComponent(value);
  encoded.SigAlg = encodeURIComponent(options.sigAlg ?? ALGORITHMS.rsaSha256);
  const order = options.signedOrder ?? ['SAMLRequest', 'SAMLResponse', 'RelayState', 'SigAlg'];
  const signedText = order
    .filter((name) => encoded[name] !== undefined)
    .map((name) => `${name}=${encoded[name]}`)
    .join('&');
  const digest = options.sigAlg === ALGORITHMS.rsaSha1 ? 'sha1' : 'sha256';
  const signature = crypto.sign(digest, Buffer.from(signedText, 'utf8'), key.privateKey).toString('base64');
  return `${signedText}&Signature=${encodeURIComponent(signature)}`;
}

/** A box's IdP signing certificates (PEM), from its metadata: what an SP trusts. */
export async function idpCertificates(box: Box): Promise<string[]> {
  const doc = await readSamlXml((await box.request('GET', '/auth/saml/metadata')).text, 'metadata');
  const idp = childElements(doc.documentElement, SAML_NS.metadata, 'IDPSSODescriptor')[0]!;
  return childElements(idp, SAML_NS.metadata, 'KeyDescriptor').map((kd) => {
    const body = kd.getElementsByTagNameNS(SAML_NS.dsig, 'X509Certificate')[0]!.textContent.replace(/\s+/g, '');
    return `-----BEGIN CERTIFICATE-----\n${body.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  });
}
