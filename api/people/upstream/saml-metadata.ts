// The two metadata documents of a SAML provider: the identity provider's, which the box reads (its
// entity ID, where people sign in with the HTTP-Redirect binding, the certificates its signatures
// verify with), and the box's own as its service provider, which an administrator pastes into the
// identity provider (the SP entity ID, the ACS URL, the box's certificate for the signed
// AuthnRequests and for Assertions encrypted to the box).
//
// An identity provider's metadata at a URL is fetched as every document someone else names is
// (api/document-fetch.ts, under its clientDocumentRules): https, the special-use ranges of RFC 6890
// and the box's own addresses refused in the lookup the connection uses (DNS rebinding cannot
// pass), unless the operator allows them (BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES), no redirect
// followed, a time limit on the whole exchange, at most 1 MiB of XML. It is read against the OASIS
// metadata schema (api/saml/xml.ts readSamlXml) and kept METADATA_CACHE_MS.
import { X509Certificate } from 'node:crypto';
import { DocumentFetchError, DocumentRefused, fetchSamlMetadataDocument, type FetchRules } from '../../document-fetch.js';
import { certificateBody } from '../../saml/certificate.js';
import { signSamlXml, type SamlSigningKey } from '../../saml/sign.js';
import { SAML_NS, SamlRefusal, childElements, onlyChild, readSamlXml, textOf } from '../../saml/xml.js';
import type { IdentityProvider } from '../../types.js';
import { UpstreamError } from './profile.js';
import type { SamlSettings } from './saml.js';
import { BINDING_POST, BINDING_REDIRECT, NAMEID_FORMATS, xmlEscaped } from '../../saml/names.js';

/** What the box uses of an identity provider's metadata. */
export interface IdpMetadata {
  entityId: string;
  /** SingleSignOnService with the HTTP-Redirect binding. */
  signOnUrl: string;
  /** The certificates (PEM) its signatures verify with: KeyDescriptors for signing, or for no use in particular. */
  certificates: string[];
}

const METADATA_CACHE_MS = 10 * 60 * 1000;

/** The box's addresses as the service provider of IdentityProvider `id`. */
export function spUrls(baseUrl: string, id: string): { entityId: string; acsUrl: string } {
  const base = `${baseUrl.replace(/\/$/, '')}/auth/upstream/${encodeURIComponent(id)}/saml`;
  // The entity ID is where the SP metadata is served: an administrator (or the IdP) can fetch what it names.
  return { entityId: `${base}/metadata`, acsUrl: `${base}/acs` };
}

const misconfigured = (why: string): UpstreamError => new UpstreamError('misconfigured', why);

/** PEM of a base64 X509Certificate element's text, refused unless node:crypto reads it as a certificate. */
function pemOf(body: string): string {
  const b64 = body.replace(/\s+/g, '');
  const pem = `-----BEGIN CERTIFICATE-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  try {
    new X509Certificate(pem);
  } catch {
    throw misconfigured('the metadata holds a certificate that is not one');
  }
  return pem;
}

/** The identity provider's metadata, read: its EntityDescriptor must be the configured entity's. */
export async function readIdpMetadata(xml: string, settings: Pick<SamlSettings, 'entityId'>): Promise<IdpMetadata> {
  try {
    const doc = await readSamlXml(xml, 'metadata');
    const root = doc.documentElement;
    const entities =
      root.localName === 'EntitiesDescriptor' ? childElements(root, SAML_NS.metadata, 'EntityDescriptor') : [root as Element];
    const entity = entities.find((e) => e.localName === 'EntityDescriptor' && e.getAttribute('entityID') === settings.entityId);
    if (!entity) throw misconfigured(`the metadata describes no entity ${settings.entityId}`);
    const idp = onlyChild(entity, SAML_NS.metadata, 'IDPSSODescriptor');
    const signOn = childElements(idp, SAML_NS.metadata, 'SingleSignOnService').find((s) => s.getAttribute('Binding') === BINDING_REDIRECT);
    const signOnUrl = signOn?.getAttribute('Location') ?? '';
    if (!/^https?:\/\//.test(signOnUrl)) throw misconfigured('the metadata names no SingleSignOnService with the HTTP-Redirect binding');
    const certificates = childElements(idp, SAML_NS.metadata, 'KeyDescriptor')
      .filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing' || k.getAttribute('use') === '')
      .flatMap((k) => childElements(k, SAML_NS.dsig, 'KeyInfo'))
      .flatMap((k) => childElements(k, SAML_NS.dsig, 'X509Data'))
      .flatMap((d) => childElements(d, SAML_NS.dsig, 'X509Certificate'))
      .map((c) => pemOf(textOf(c)));
    if (certificates.length === 0) throw misconfigured('the metadata names no signing certificate');
    return { entityId: settings.entityId, signOnUrl, certificates };
  } catch (err) {
    if (err instanceof SamlRefusal) throw misconfigured(`the metadata: ${err.reason}`);
    throw err;
  }
}

/**
 * The metadata at `url`, fetched as every document someone else names (api/document-fetch.ts): its
 * text, or an UpstreamError: 'misconfigured' when the box refuses the URL or what it serves (its
 * address, the box itself, too large, not XML), said to the administrator; 'unavailable' when the
 * server did not answer it, which may pass.
 */
async function fetchMetadata(url: string, rules: FetchRules): Promise<string> {
  try {
    return (await fetchSamlMetadataDocument(url, rules)).body;
  } catch (err) {
    if (err instanceof DocumentRefused) throw misconfigured(`the metadata URL is refused: ${err.message}`);
    if (err instanceof DocumentFetchError) throw new UpstreamError('unavailable', `the metadata URL: ${err.message}`);
    throw err;
  }
}

const cached = new Map<string, { source: string; until: number; metadata: Promise<IdpMetadata> }>();

/** The metadata of `provider` (a saml provider), read once per source and, from a URL, again after METADATA_CACHE_MS. */
export function idpMetadata(provider: IdentityProvider, rules: FetchRules, now = Date.now()): Promise<IdpMetadata> {
  const settings = provider.saml;
  if (!settings) return Promise.reject(misconfigured('no saml settings'));
  const source = JSON.stringify([settings.entityId, settings.metadata.url ?? null, settings.metadata.xml ?? null]);
  // By box (its URL) and provider: a host's boxes may each name a provider `corp`, fetched under their own rules.
  const key = `${rules.boxUrl}\n${provider.id}`;
  const hit = cached.get(key);
  if (hit && hit.source === source && hit.until > now) return hit.metadata;
  const metadata = settings.metadata.url
    ? fetchMetadata(settings.metadata.url, rules).then((xml) => readIdpMetadata(xml, settings))
    : readIdpMetadata(settings.metadata.xml ?? '', settings);
  const entry = { source, until: settings.metadata.url ? now + METADATA_CACHE_MS : Infinity, metadata };
  cached.set(key, entry);
  // A failure is not kept: the next sign-in asks again.
  metadata.catch(() => cached.get(key) === entry && cached.delete(key));
  return metadata;
}

/** The box's SP metadata for `provider`: `keys` (the one that signs first), and signed with it. */
export function spMetadata(baseUrl: string, provider: IdentityProvider, keys: readonly SamlSigningKey[], id: string): string {
  const { entityId, acsUrl } = spUrls(baseUrl, provider.id);
  const keyInfo = (key: SamlSigningKey): string =>
    `<ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(key.certificatePem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>`;
  const descriptors = (use: string): string =>
    keys.map((key) => `<md:KeyDescriptor use="${use}">${keyInfo(key)}</md:KeyDescriptor>`).join('');
  const format = provider.saml?.nameIdFormat;
  const xml =
    `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" ID="${id}" entityID="${xmlEscaped(entityId)}">` +
    `<md:SPSSODescriptor AuthnRequestsSigned="true" WantAssertionsSigned="true" protocolSupportEnumeration="${SAML_NS.protocol}">` +
    descriptors('signing') +
    descriptors('encryption') +
    (format ? `<md:NameIDFormat>${NAMEID_FORMATS[format]}</md:NameIDFormat>` : '') +
    `<md:AssertionConsumerService Binding="${BINDING_POST}" Location="${xmlEscaped(acsUrl)}" index="0" isDefault="true"/>` +
    `</md:SPSSODescriptor></md:EntityDescriptor>`;
  return signSamlXml(xml, 'EntityDescriptor', keys[0]!);
}
