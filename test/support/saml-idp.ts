// A SAML 2.0 identity provider played by the test, upstream of a box (IdentityProvider type saml):
// its key and self-signed certificate, its metadata, the AuthnRequest the box sent it read back
// from the redirect, and Responses it signs with api/saml/sign.ts — as they should be, or bent
// as an attacker bends them (every field of `ResponseOptions`).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { selfSignedCertificate, certificateBody } from '../../api/saml/certificate.js';
import { decodeRedirectMessage } from '../../api/saml/bindings.js';
import { signSamlXml, type SamlSigningKey } from '../../api/saml/sign.js';
import type { Box, JsonResponse } from './box.js';
import { FormAgent, hiddenFields } from './form-agent.js';

const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
};

export function samlKeyPair(name: string): SamlSigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificatePem = selfSignedCertificate(
    { privateKey, publicKey },
    name,
    new Date('2026-01-01T00:00:00Z'),
    new Date('2036-01-01T00:00:00Z'),
  );
  return { privateKey, certificatePem };
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** What a Response says; each default is what an honest identity provider says for `request`. */
export interface ResponseOptions {
  requestId: string;
  nameId: string;
  nameIdFormat?: string;
  /** Inserted as is into the NameID (after signing: a comment an attacker slips in). */
  nameIdAfterSigning?: string;
  attributes?: Record<string, string[]>;
  assertionId?: string;
  destination?: string;
  recipient?: string;
  audience?: string;
  issuer?: string;
  confirmationInResponseTo?: string;
  /** Offsets from now, in seconds: of the Conditions, and (default the same) of the bearer confirmation. */
  notBefore?: number;
  notOnOrAfter?: number;
  confirmationNotOnOrAfter?: number;
  /** Which element the identity provider signs (default the Assertion). */
  sign?: 'assertion' | 'response' | 'none';
  /** Signed with another key (another identity provider's). */
  signingKey?: SamlSigningKey;
}

export class TestSamlIdp {
  readonly key = samlKeyPair('idp.example');
  readonly signOnUrl = 'https://idp.example/saml/sso';

  constructor(readonly entityId = `https://idp.example/${randomBytes(4).toString('hex')}`) {}

  metadataXml(): string {
    return (
      `<md:EntityDescriptor xmlns:md="${NS.metadata}" xmlns:ds="${NS.dsig}" entityID="${this.entityId}">` +
      `<md:IDPSSODescriptor protocolSupportEnumeration="${NS.protocol}" WantAuthnRequestsSigned="true">` +
      `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(this.key.certificatePem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${this.signOnUrl}"/>` +
      `</md:IDPSSODescriptor></md:EntityDescriptor>`
    );
  }

  /** The Assertion's XML (unsigned), as `o` says. */
  assertionXml(box: Box, provider: string, o: ResponseOptions): string {
    const acs = `${box.url}/auth/upstream/${provider}/saml/acs`;
    const now = Date.now();
    const attributes = Object.entries(o.attributes ?? {})
      .map(
        ([name, values]) =>
          `<saml:Attribute Name="${name}">${values.map((v) => `<saml:AttributeValue>${v}</saml:AttributeValue>`).join('')}</saml:Attribute>`,
      )
      .join('');
    return (
      `<saml:Assertion xmlns:saml="${NS.assertion}" ID="${o.assertionId ?? `_a${randomBytes(12).toString('hex')}`}" Version="2.0" IssueInstant="${iso(now)}">` +
      `<saml:Issuer>${o.issuer ?? this.entityId}</saml:Issuer>` +
      `<saml:Subject><saml:NameID Format="${o.nameIdFormat ?? 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'}">${o.nameId}</saml:NameID>` +
      `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${iso(now + (o.confirmationNotOnOrAfter ?? o.notOnOrAfter ?? 300) * 1000)}" Recipient="${o.recipient ?? acs}" InResponseTo="${o.confirmationInResponseTo ?? o.requestId}"/></saml:SubjectConfirmation></saml:Subject>` +
      `<saml:Conditions NotBefore="${iso(now + (o.notBefore ?? -5) * 1000)}" NotOnOrAfter="${iso(now + (o.notOnOrAfter ?? 300) * 1000)}"><saml:AudienceRestriction><saml:Audience>${o.audience ?? `${box.url}/auth/upstream/${provider}/saml/metadata`}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
      `<saml:AuthnStatement AuthnInstant="${iso(now)}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
      (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
      `</saml:Assertion>`
    );
  }

  /** A Response's XML around `inner` (an Assertion, signed or not, or several). */
  responseXml(box: Box, provider: string, o: Pick<ResponseOptions, 'requestId' | 'destination' | 'issuer'>, inner: string): string {
    return (
      `<samlp:Response xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="_r${randomBytes(12).toString('hex')}" Version="2.0"` +
      ` IssueInstant="${iso(Date.now())}" Destination="${o.destination ?? `${box.url}/auth/upstream/${provider}/saml/acs`}" InResponseTo="${o.requestId}">` +
      `<saml:Issuer>${o.issuer ?? this.entityId}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
      inner +
      `</samlp:Response>`
    );
  }

  /** The Response to `o.requestId`, as the SAMLResponse field carries it (base64). */
  response(box: Box, provider: string, o: ResponseOptions): string {
    const key = o.signingKey ?? this.key;
    let assertion = this.assertionXml(box, provider, o);
    if ((o.sign ?? 'assertion') === 'assertion') assertion = signSamlXml(assertion, 'Assertion', key);
    let xml = this.responseXml(box, provider, o, assertion);
    if (o.sign === 'response') xml = signSamlXml(xml, 'Response', key);
    if (o.nameIdAfterSigning !== undefined) xml = xml.replace(`>${o.nameId}</saml:NameID>`, `>${o.nameIdAfterSigning}</saml:NameID>`);
    return Buffer.from(xml).toString('base64');
  }
}

/** The AuthnRequest a redirect to the identity provider carries: its ID and XML. */
export function authnRequestOf(toIdp: JsonResponse): { id: string; xml: string; url: URL } {
  expect(toIdp.status, toIdp.text).to.equal(303);
  const url = new URL(toIdp.headers.get('location')!);
  const xml = decodeRedirectMessage(url.searchParams.get('SAMLRequest')!);
  return { id: /\sID="([^"]+)"/.exec(xml)![1]!, xml, url };
}

/** Presses provider `id`'s button on the box's sign-in page: the redirect to the identity provider. */
export async function startSaml(browser: FormAgent, id: string, returnTo = '/auth/signed-in'): Promise<JsonResponse> {
  const page = await browser.get(`/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
  return browser.post(`/auth/upstream/${id}/start`, { csrf: hiddenFields(page.text).csrf!, return_to: returnTo });
}

/** Posts a SAMLResponse to the ACS of provider `id` as the browser's form would. */
export function postResponse(browser: FormAgent, id: string, samlResponse: string): Promise<JsonResponse> {
  return browser.post(`/auth/upstream/${id}/saml/acs`, { SAMLResponse: samlResponse });
}
