// The box as a SAML 2.0 service provider of an IdentityProvider of type saml: the AuthnRequest it
// sends (HTTP-Redirect, signed with the box's key: SAML Bindings §3.4.4.1), and the Response that
// comes back to its ACS (HTTP-POST) read and checked in the order the attacks require — the
// schema before any signature (api/saml/xml.ts), an EncryptedAssertion decrypted with the box's
// key (api/saml/encryption.ts), exactly one Assertion, the one a signature of the provider covers
// (api/saml/verify.ts), then the profile's rules (./saml.ts), and the Assertion's ID spent once in
// the box's replay ledger (api/store/dpop-proofs.ts: one table for every "seen once" of the box).
import { createHash } from 'node:crypto';
import type { Pool } from '../../db/pool.js';
import { decodePostMessage, encodeRedirectMessage } from '../../saml/bindings.js';
import { BINDING_POST, NAMEID_FORMATS, xmlEscaped } from '../../saml/names.js';
import { decryptAssertions } from '../../saml/encryption.js';
import { signRedirectQuery, type SamlSigningKey } from '../../saml/sign.js';
import { verifiedResponse, type VerifiedResponse } from '../../saml/verify.js';
import { SAML_NS, SamlRefusal, readSamlXml } from '../../saml/xml.js';
import { recordProofs } from '../../store/dpop-proofs.js';
import type { IdentityProvider } from '../../types.js';
import { UpstreamError } from './profile.js';
import { spUrls, type IdpMetadata } from './saml-metadata.js';
import { answeredRequest, statusOf } from './saml.js';

/** An AuthnRequest's ID: an xs:ID (an NCName: never a digit first), unguessable (it binds the Response to the browser's request). */

/** Where to send the browser: the provider's sign-on address with the signed AuthnRequest `requestId` (HTTP-Redirect). */
export function authnRequestUrl(
  baseUrl: string,
  provider: IdentityProvider,
  idp: IdpMetadata,
  requestId: string,
  key: SamlSigningKey,
  now: Date,
): URL {
  const { entityId, acsUrl } = spUrls(baseUrl, provider.id);
  const format = provider.saml?.nameIdFormat;
  const xml =
    `<samlp:AuthnRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${requestId}" Version="2.0"` +
    ` IssueInstant="${now.toISOString().replace(/\.\d{3}Z$/, 'Z')}" Destination="${xmlEscaped(idp.signOnUrl)}"` +
    ` AssertionConsumerServiceURL="${xmlEscaped(acsUrl)}" ProtocolBinding="${BINDING_POST}">` +
    `<saml:Issuer>${xmlEscaped(entityId)}</saml:Issuer>` +
    `<samlp:NameIDPolicy${format ? ` Format="${NAMEID_FORMATS[format]}"` : ''} AllowCreate="true"/>` +
    `</samlp:AuthnRequest>`;
  const url = new URL(idp.signOnUrl);
  const query = signRedirectQuery({ SAMLRequest: encodeRedirectMessage(xml) }, key);
  url.search = url.search ? `${url.search.slice(1)}&${query}` : query;
  return url;
}

/**
 * The Response posted to the ACS (base64, as the form carried it), read and its signature checked
 * against the provider's certificates: the Response and the one Assertion a signature covers. A
 * Response without success is the provider's refusal ('refused'); anything else wrong, 'invalid'.
 */
export async function verifiedSamlResponse(
  posted: string,
  idp: IdpMetadata,
  keys: readonly Pick<SamlSigningKey, 'privateKey'>[],
): Promise<VerifiedResponse> {
  try {
    const arrived = await readSamlXml(decodePostMessage(posted), 'protocol');
    const root = arrived.documentElement;
    if (root.namespaceURI !== SAML_NS.protocol || root.localName !== 'Response')
      throw new UpstreamError('invalid', 'the message is no Response');
    // Read unsigned, only to say why: a Response without success carries no Assertion to check.
    const status = statusOf(root);
    if (status !== 'urn:oasis:names:tc:SAML:2.0:status:Success')
      throw new UpstreamError('refused', `the identity provider answered ${status ?? 'no status'}`);
    // A Response's signature covers the EncryptedAssertion: it is checked on the Response as it arrived.
    const doc = await decryptedWithAny(arrived, keys);
    return verifiedResponse(doc, idp.certificates, arrived);
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    if (err instanceof SamlRefusal) throw new UpstreamError('invalid', `the Response: ${err.reason}`);
    // The libraries' own errors (a decryption that fails) may quote the document: only their kind is said.
    throw new UpstreamError('invalid', `the Response could not be read (${err instanceof Error ? err.name : 'failed'})`);
  }
}

/** `doc` with its Assertions decrypted by the first of `keys` that decrypts them (an IdP may still encrypt to the key before a rotation). */
async function decryptedWithAny(doc: Document, keys: readonly Pick<SamlSigningKey, 'privateKey'>[]): Promise<Document> {
  for (const [i, key] of keys.entries()) {
    try {
      return await decryptAssertions(doc, key.privateKey);
    } catch (err) {
      if (!(err instanceof SamlRefusal) || i === keys.length - 1) throw err;
    }
  }
  throw new SamlRefusal('the box has no key to decrypt with');
}

/** The request a verified Response answers: its InResponseTo (an unsolicited Response answers none, and is refused). */
export function requestAnswered(verified: VerifiedResponse): string {
  const id = answeredRequest(verified.response);
  if (!id) throw new UpstreamError('invalid', 'the Response answers no request of the box (IdP-initiated sign-ins are not taken)');
  return id;
}

/**
 * Spends the Assertion `id` of the provider `idpEntityId` in the replay ledger until `until`:
 * true the first time anywhere in the box (every process shares the table), false after.
 */
export async function firstUseOfAssertion(pool: Pool, idpEntityId: string, id: string, until: Date): Promise<boolean> {
  const digest = createHash('sha256').update(`saml-assertion\0${idpEntityId}\0${id}`).digest();
  const [fresh] = await recordProofs(pool, [{ digest, expiresAt: until }]);
  return fresh === true;
}
