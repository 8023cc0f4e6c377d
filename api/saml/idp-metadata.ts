// The box as a SAML 2.0 identity provider, as its metadata says it (SAML 2.0 Metadata §2.4.3
// IDPSSODescriptor): its entity ID (the metadata's own URL, {issuer}/auth/saml/metadata), the
// certificates its assertions are signed with, where an SP sends people (SingleSignOnService,
// HTTP-Redirect and HTTP-POST) and their logouts (SingleLogoutService, HTTP-Redirect), and the
// NameID formats it gives. The keys are the box's RS256 keys (api/credentials/keyring.ts): every
// one still published is listed, so that during a rotation an SP that reads the metadata again
// trusts the new key before it signs and the old one while assertions it signed may still be
// checked, as the JWKS does for tokens (./box-keys.ts puts each in a certificate).
import type { Keyring } from '../credentials/keyring.js';
import { boxSamlKeys } from './box-keys.js';
import { certificateBody } from './certificate.js';
import { BINDING_POST, BINDING_REDIRECT, NAMEID_FORMATS, newSamlId, xmlEscaped } from './names.js';
import { signSamlXml } from './sign.js';
import { SAML_NS } from './xml.js';

/** The box's SAML endpoints, made from its issuer URL. */
export interface IdpEndpoints {
  entityId: string;
  sso: string;
  slo: string;
}

export const idpEndpoints = (issuer: string): IdpEndpoints => ({
  entityId: `${issuer}/auth/saml/metadata`,
  sso: `${issuer}/auth/saml/sso`,
  slo: `${issuer}/auth/saml/slo`,
});

/** The box's IdP metadata, signed with its active RS256 key. */
export function idpMetadata(keyring: Pick<Keyring, 'jwks' | 'find' | 'activeFor'>, issuer: string): string {
  const at = idpEndpoints(issuer);
  const published = boxSamlKeys(keyring);
  const keys = published
    .map(
      (key) =>
        `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(key.certificatePem)}` +
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
  return signSamlXml(xml, 'EntityDescriptor', published[0]!);
}
