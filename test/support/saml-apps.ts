// SAML apps of a running box, for the integration tests of its IdP side: an SP's metadata (a
// signing certificate, the consumer service and the SingleLogoutServices at the entity ID's
// /acs and /slo), an app declared with the policy that admits everyone, and a browser's sign-in to
// it (an SP's AuthnRequest by HTTP-Redirect, the assertion's NameID and SessionIndex read back).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { encodeRedirectMessage } from '../../api/saml/bindings.js';
import { certificateBody } from '../../api/saml/certificate.js';
import { readSamlXml, SAML_NS, textOf } from '../../api/saml/xml.js';
import type { Box } from './box.js';
import { hiddenFields, type FormAgent } from './form-agent.js';

/** An SP's metadata: signing with `certificatePem`; a SOAP SingleLogoutService at `soapSlo` when given, an HTTP-Redirect one always. */
export const samlAppMetadata = (entityId: string, certificatePem: string, soapSlo?: string): string =>
  `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" entityID="${entityId}">` +
  `<md:SPSSODescriptor protocolSupportEnumeration="${SAML_NS.protocol}">` +
  `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="${SAML_NS.dsig}"><ds:X509Data><ds:X509Certificate>${certificateBody(certificatePem)}` +
  '</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>' +
  (soapSlo ? `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${soapSlo}"/>` : '') +
  `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${entityId}/slo"/>` +
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${entityId}/acs" index="0" isDefault="true"/>` +
  '</md:SPSSODescriptor></md:EntityDescriptor>';

/** An SP's AuthnRequest, unsigned, a fresh ID, the consumer service of samlAppMetadata; for `destination` (an IdP's SSO URL) when given. */
export const samlAppAuthnRequest = (entityId: string, destination?: string): string =>
  `<samlp:AuthnRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
  `Version="2.0" IssueInstant="${new Date().toISOString()}"${destination ? ` Destination="${destination}"` : ''} AssertionConsumerServiceURL="${entityId}/acs">` +
  `<saml:Issuer>${entityId}</saml:Issuer></samlp:AuthnRequest>`;

/** Declares the SAML app `id` (first party, so no consent; `more` of its Client besides) with an access policy that admits everyone. */
export async function declareSamlApp(
  box: Box,
  root: string,
  id: string,
  saml: Record<string, unknown>,
  more: Record<string, unknown> = {},
): Promise<void> {
  const client = await box.json('PUT', `/Client/${id}`, { grant_types: [], first_party: true, saml, ...more }, root);
  expect(client.status, client.text).to.be.below(300);
  const policy = await box.json('PUT', `/AccessPolicy/${id}-people`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, root);
  expect(policy.status, policy.text).to.be.below(300);
}

/** The browser, signed in at the box, signs in to the app of `entityId`: the SAMLResponse (base64) the box posts to the app. */
export async function samlAppResponse(browser: FormAgent, entityId: string): Promise<string> {
  const res = await browser.get(`/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(samlAppAuthnRequest(entityId)))}`);
  const form = /<form method="post" action="[^"]*" id="form-post">([\s\S]*?)<\/form>/.exec(res.text);
  expect(form, res.text.slice(0, 300)).to.not.equal(null);
  return hiddenFields(form![1]!).SAMLResponse!;
}

/** The browser, signed in at the box, signs in to the app of `entityId`: the NameID and SessionIndex its assertion gave. */
export async function samlAppSignIn(browser: FormAgent, entityId: string): Promise<{ nameId: string; sessionIndex: string }> {
  const doc = await readSamlXml(Buffer.from(await samlAppResponse(browser, entityId), 'base64').toString('utf8'), 'protocol');
  return {
    nameId: textOf(doc.getElementsByTagNameNS(SAML_NS.assertion, 'NameID')[0]!),
    sessionIndex: doc.getElementsByTagNameNS(SAML_NS.assertion, 'AuthnStatement')[0]!.getAttribute('SessionIndex')!,
  };
}
