// What a look at a SAML app's metadata came to, as its status says it (./app-status.ts): what
// the document says of the app, or why it was refused, never quoting the address a name resolved to.
import { X509Certificate } from 'node:crypto';
import { AddressRefused, DocumentFetchError } from '../document-fetch.js';
import type { SamlMetadataOutcome, SamlMetadataSummary } from '../store/saml-metadata-status.js';
import { BINDING_POST, BINDING_REDIRECT, BINDING_SOAP } from './names.js';

/** How long a refusal stands before the box looks again on its own (a fixed URL is also looked at when the Client changes). */
export const REFUSED_STANDS_SECONDS = 60;

/** What is shown of an SP's metadata as ./service-providers.ts reads it (its SpMetadata, named here by shape: it imports this module). */
interface ReadMetadata {
  entityId: string;
  consumers: { url: string; index: number | undefined; isDefault: boolean }[];
  signingCertificates: string[];
  encryptionCertificates: string[];
  logoutUrls: string[];
  soapLogoutUrls: string[];
}

/** What the admin console and the operator are shown of an SP's metadata. */
export function metadataSummary(sp: ReadMetadata): SamlMetadataSummary {
  const expiries = [...sp.signingCertificates, ...sp.encryptionCertificates].map((pem) => Date.parse(new X509Certificate(pem).validTo));
  return {
    entityId: sp.entityId,
    consumers: sp.consumers.map((c) => ({
      url: c.url,
      binding: BINDING_POST,
      ...(c.index !== undefined ? { index: c.index } : {}),
      isDefault: c.isDefault,
    })),
    logout: [
      ...sp.logoutUrls.map((url) => ({ url, binding: BINDING_REDIRECT })),
      ...sp.soapLogoutUrls.map((url) => ({ url, binding: BINDING_SOAP })),
    ],
    certificatesExpire: expiries.length ? new Date(Math.min(...expiries)).toISOString() : null,
  };
}

/**
 * A fetch that failed, as its status says it: what is wrong, without the address a name resolved
 * to (the guard's message names it; that is for the box's log, not for whoever named the URL).
 */
export function unreachable(err: unknown): SamlMetadataOutcome {
  const message =
    err instanceof AddressRefused
      ? 'the box does not fetch from the address the URL leads to (a special-use address or its own: BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES)'
      : err instanceof DocumentFetchError
        ? `the metadata could not be fetched: ${err.message}`
        : 'the metadata could not be fetched';
  return { outcome: 'refused', reason: 'SamlMetadataUnreachable', message };
}

/** A document fetched that is not an SP's metadata, as its status says it. */
export const invalid = (reason: string): SamlMetadataOutcome => ({
  outcome: 'refused',
  reason: 'SamlMetadataInvalid',
  message: `the SP metadata (saml.metadata.url) cannot be read: ${reason}`,
});
