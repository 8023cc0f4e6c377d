// The box as a SAML 2.0 identity provider, as its metadata says it (SAML 2.0 Metadata §2.4.3
// IDPSSODescriptor): its entity ID (the metadata's own URL, {issuer}/saml/metadata), the
// certificates its assertions are signed with, where an SP sends people (SingleSignOnService,
// HTTP-Redirect and HTTP-POST) and their logouts (SingleLogoutService, HTTP-Redirect), and the
// NameID formats it gives. The keys are the box's RS256 keys (api/credentials/keyring.ts): every
// one still published is listed, so that during a rotation an SP that reads the metadata again
// trusts the new key before it signs and the old one while assertions it signed may still be
// checked, as the JWKS does for tokens. Each key is put in a self-signed certificate (SAML knows
// keys by certificates), made once per key and process: the same key always gives the same bytes
// only if the certificate is deterministic (api/saml/certificate.ts).
import { randomBytes } from 'node:crypto';
import type { SigningKey } from '../credentials/jwt.js';
import type { Keyring } from '../credentials/keyring.js';
import { certificateBody, selfSignedCertificate } from './certificate.js';
import { signSamlXml, type SamlSigningKey } from './sign.js';
import { BINDING_POST, BINDING_REDIRECT } from './service-providers.js';
import { SAML_NS } from './xml.js';

export const NAMEID_FORMATS = {
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
} as const;
export type NameIdFormat = keyof typeof NAMEID_FORMATS;

/** The box's SAML endpoints, made from its issuer URL. */
export interface IdpEndpoints {
  entityId: string;
  sso: string;
  slo: string;
}

export const idpEndpoints = (issuer: string): IdpEndpoints => ({
  entityId: `${issuer}/saml/metadata`,
  sso: `${issuer}/saml/sso`,
  slo: `${issuer}/saml/slo`,
});

/** Text or an attribute value as XML writes it. */
export function xmlEscaped(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** An XML ID (xs:ID: an NCName, so never starting with a digit), unguessable. */
export const newSamlId = (): string => `_${randomBytes(20).toString('hex')}`;

// A certificate is a way to name a key to SAML, not a statement of trust: its dates cover any
// time an SP may check them, and the same key always gets the same dates.
const NOT_BEFORE = new Date('2026-01-01T00:00:00Z');
const NOT_AFTER = new Date('2049-12-31T23:59:59Z');

const certificates = new Map<string, string>();

/** The PEM certificate of the box's key `key`, self-signed, made once per process. */
export function certificateOf(key: SigningKey, issuer: string): string {
  const made = certificates.get(key.kid);
  if (made) return made;
  const pem = selfSignedCertificate(
    { privateKey: key.privateKey, publicKey: key.publicKey },
    `boxauth ${new URL(issuer).host}`,
    NOT_BEFORE,
    NOT_AFTER,
  );
  if (certificates.size >= 100) certificates.delete(certificates.keys().next().value!);
  certificates.set(key.kid, pem);
  return pem;
}

/** Every RS256 key the box still publishes (its JWKS), the one that signs first. */
export function publishedRsaKeys(keyring: Pick<Keyring, 'jwks' | 'find' | 'activeFor'>): SigningKey[] {
  const active = keyring.activeFor('RS256');
  const others = keyring
    .jwks()
    .keys.filter((jwk) => (jwk as { alg?: string }).alg === 'RS256' && (jwk as { kid?: string }).kid !== active.kid)
    .map((jwk) => keyring.find((jwk as { kid: string }).kid))
    .filter((key): key is SigningKey => key !== undefined);
  return [active, ...others];
}

/** The key SAML messages are signed with now: the active RS256 key and its certificate. */
export function samlSigningKey(keyring: Pick<Keyring, 'activeFor'>, issuer: string): SamlSigningKey {
  const key = keyring.activeFor('RS256');
  return { privateKey: key.privateKey, certificatePem: certificateOf(key, issuer) };
}

/** The box's IdP metadata, signed with its active RS256 key. */
export function idpMetadata(keyring: Pick<Keyring, 'jwks' | 'find' | 'activeFor'>, issuer: string): string {
  const at = idpEndpoints(issuer);
  const keys = publishedRsaKeys(keyring)
    .map(
      (key) =>
        `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(certificateOf(key, issuer))}` +
        '</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>',
    )
    .join('');
  const xml =
    `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" ID="${newSamlId()}" entityID="${xmlEscaped(at.entityId)}">` +
    `<md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="${SAML_NS.protocol}">` +
    keys +
    `<md:SingleLogoutService Binding="${BINDING_REDIRECT}" Location="${xmlEscaped(at.slo)}"/>` +
    Object.values(NAMEID_FORMATS)
      .map((format) => `<md:NameIDFormat>${format}</md:NameIDFormat>`)
      .join('') +
    `<md:SingleSignOnService Binding="${BINDING_REDIRECT}" Location="${xmlEscaped(at.sso)}"/>` +
    `<md:SingleSignOnService Binding="${BINDING_POST}" Location="${xmlEscaped(at.sso)}"/>` +
    '</md:IDPSSODescriptor></md:EntityDescriptor>';
  return signSamlXml(xml, 'EntityDescriptor', samlSigningKey(keyring, issuer));
}
