// The names SAML 2.0 gives things, said once for the box's both sides (the IdP for apps, ./idp.ts;
// the SP of upstream providers, api/people/upstream/saml*.ts): the bindings (SAML Bindings §3), the
// NameID formats the box gives and takes (SAML Core §8.3), a fresh message ID, and text written
// into the XML the box makes.
import { randomBytes } from 'node:crypto';

/** SAML Bindings §3.5 (HTTP-POST) and §3.4 (HTTP-Redirect), as metadata names them. */
export const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
export const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
/** SAML Bindings §3.2: a SOAP 1.1 exchange, server to server (Single Logout without the browser). */
export const BINDING_SOAP = 'urn:oasis:names:tc:SAML:2.0:bindings:SOAP';

/** The NameID formats the box gives an app and takes from a provider, by the name a resource writes. */
export const NAMEID_FORMATS = {
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
} as const;
export type NameIdFormat = keyof typeof NAMEID_FORMATS;

/** An XML ID (xs:ID: an NCName, so never starting with a digit), unguessable: a message's or an assertion's. */
export const newSamlId = (): string => `_${randomBytes(20).toString('hex')}`;

/** Text or an attribute value as XML writes it. */
export function xmlEscaped(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}
