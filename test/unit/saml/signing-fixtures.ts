// What the SAML signing tests share: an RSA key with its certificate (made once: RSA keys are slow
// to make), SAML documents as the box writes them, and xml-crypto's own check of a signature.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { selfSignedCertificate } from '../../../api/saml/certificate.js';
import type { SamlSigningKey } from '../../../api/saml/sign.js';

export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
};

/** An RSA key and its self-signed certificate, as api/saml/certificate.ts makes them for the box. */
export function samlKey(subject: string): SamlSigningKey & { publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificatePem = selfSignedCertificate(
    { privateKey, publicKey },
    subject,
    new Date('2026-01-01T00:00:00Z'),
    new Date('2036-01-01T00:00:00Z'),
  );
  return { privateKey, publicKey, certificatePem };
}

export const box = samlKey('box.example');

export function assertionXml(id = '_a1', nameId = 'sam@example.com'): string {
  return (
    `<saml:Assertion xmlns:saml="${NS.assertion}" ID="${id}" Version="2.0" IssueInstant="2026-11-28T06:00:00Z">` +
    `<saml:Issuer>https://box.example</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${nameId}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="2026-11-28T06:05:00Z" Recipient="https://sp.example/acs" InResponseTo="_r1"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="2026-11-28T05:59:00Z" NotOnOrAfter="2026-11-28T06:05:00Z"><saml:AudienceRestriction><saml:Audience>https://sp.example</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="2026-11-28T06:00:00Z"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `</saml:Assertion>`
  );
}

/** A Response around `inner` (an Assertion or an EncryptedAssertion). */
export function responseXml(inner: string, id = '_r-response'): string {
  return (
    `<samlp:Response xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="${id}" Version="2.0" IssueInstant="2026-11-28T06:00:00Z" Destination="https://sp.example/acs" InResponseTo="_r1">` +
    `<saml:Issuer>https://box.example</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    inner +
    `</samlp:Response>`
  );
}

export function entityDescriptorXml(): string {
  return (
    `<md:EntityDescriptor xmlns:md="${NS.metadata}" entityID="https://box.example/saml/metadata" ID="_md1">` +
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="false">` +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://box.example/saml/sso"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>`
  );
}

export function parseXml(xml: string): Document {
  return new DOMParser().parseFromString(xml, 'text/xml');
}

/** The element children's local names of the first `localName` in `ns`: the schema's order is read off it. */
export function childNames(xml: string, ns: string, localName: string): string[] {
  const element = parseXml(xml).getElementsByTagNameNS(ns, localName)[0];
  const names: string[] = [];
  for (let n = element?.firstChild; n; n = n.nextSibling) if (n.nodeType === n.ELEMENT_NODE) names.push((n as Element).localName);
  return names;
}

/**
 * Whether the enveloped signature of the first `localName` element checks with xml-crypto against
 * `certificatePem` (never the certificate the signature carries).
 */
export function signatureChecks(xml: string, ns: string, localName: string, certificatePem = box.certificatePem): boolean {
  const element = parseXml(xml).getElementsByTagNameNS(ns, localName)[0];
  let signature: Element | undefined;
  for (let n = element?.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === n.ELEMENT_NODE && (n as Element).localName === 'Signature' && (n as Element).namespaceURI === NS.dsig)
      signature = n as Element;
  }
  if (!signature) return false;
  const checker = new SignedXml({ publicCert: certificatePem, getCertFromKeyInfo: () => null });
  checker.loadSignature(signature);
  try {
    return checker.checkSignature(xml);
  } catch {
    return false;
  }
}

/** Runs xmlsec1 (Debian's, the one the Python SP uses) on files it is given; undefined when the machine has none. */
export function xmlsec1(
  files: Record<string, string>,
  args: (dir: string) => string[],
): { status: number | null; out: string } | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'saml-xmlsec1-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const run = spawnSync('xmlsec1', args(dir), { encoding: 'utf8' });
    if (run.error) return undefined;
    return { status: run.status, out: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
