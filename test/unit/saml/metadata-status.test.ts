// What a look at a SAML app's metadata came to, as its status says it (api/saml/metadata-status.ts):
// the status an admin and the Client's author read never names the address a name resolved to,
// and the certificate that expires first is the one the status warns of.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { AddressRefused, DocumentFetchError } from '../../../api/document-fetch.js';
import { selfSignedCertificate } from '../../../api/saml/certificate.js';
import { invalid, metadataSummary, unreachable } from '../../../api/saml/metadata-status.js';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const certificate = (until: string): string => selfSignedCertificate(keys, 'sp.example', new Date('2026-01-01T00:00:00Z'), new Date(until));

describe('SAML metadata status', function () {
  it('a refused address is said without the address the guard named', function () {
    const outcome = unreachable(new AddressRefused('10.1.2.3 is a private address (RFC 1918)'));
    expect(outcome).to.deep.include({ outcome: 'refused', reason: 'SamlMetadataUnreachable' });
    expect(JSON.stringify(outcome)).to.not.include('10.1.2.3');
  });

  it('any other failure of the fetch is said as the fetch said it; what is no DocumentFetchError, without its words', function () {
    expect(unreachable(new DocumentFetchError('it answered 500, not 200'))).to.deep.include({
      message: 'the metadata could not be fetched: it answered 500, not 200',
    });
    expect(unreachable(new TypeError('Invalid URL: https://10.0.0.1:x'))).to.deep.include({ message: 'the metadata could not be fetched' });
    expect(invalid('no SPSSODescriptor')).to.deep.equal({
      outcome: 'refused',
      reason: 'SamlMetadataInvalid',
      message: 'the SP metadata (saml.metadata.url) cannot be read: no SPSSODescriptor',
    });
  });

  it('names the endpoints with their bindings, and the certificate that expires first', function () {
    const summary = metadataSummary({
      entityId: 'https://sp.example/saml',
      consumers: [{ url: 'https://sp.example/acs', index: undefined, isDefault: true }],
      signingCertificates: [certificate('2031-01-01T00:00:00Z')],
      encryptionCertificates: [certificate('2029-06-01T00:00:00Z')],
      logoutUrls: ['https://sp.example/slo'],
      soapLogoutUrls: ['https://sp.example/soap'],
    });
    expect(summary).to.deep.equal({
      entityId: 'https://sp.example/saml',
      consumers: [{ url: 'https://sp.example/acs', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', isDefault: true }],
      logout: [
        { url: 'https://sp.example/slo', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect' },
        { url: 'https://sp.example/soap', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:SOAP' },
      ],
      certificatesExpire: '2029-06-01T00:00:00.000Z',
    });
    const none = { entityId: 'e', consumers: [], signingCertificates: [], encryptionCertificates: [], logoutUrls: [], soapLogoutUrls: [] };
    expect(metadataSummary(none).certificatesExpire).to.equal(null);
  });
});
