// An upstream SAML identity provider's metadata as the box reads it (api/people/upstream/saml-metadata.ts):
// the configured entity found (alone or in an EntitiesDescriptor), its HTTP-Redirect sign-on address
// and signing certificates; anything else is the box's set-up ('misconfigured'), never a guess. And the
// box's own SP metadata, read back by the same schema.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { UpstreamError } from '../../../../api/people/upstream/profile.js';
import { readIdpMetadata, spMetadata, spUrls } from '../../../../api/people/upstream/saml-metadata.js';
import { certificateBody, selfSignedCertificate } from '../../../../api/saml/certificate.js';
import { readSamlXml } from '../../../../api/saml/xml.js';
import type { IdentityProvider } from '../../../../api/types.js';

const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const certificatePem = selfSignedCertificate(pair, 'idp.example', new Date('2026-01-01T00:00:00Z'), new Date('2036-01-01T00:00:00Z'));
const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';

function entity(entityId: string, opts: { binding?: string; use?: string } = {}): string {
  return (
    `<md:EntityDescriptor xmlns:md="${MD}" xmlns:ds="${DS}" entityID="${entityId}">` +
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    `<md:KeyDescriptor${opts.use ? ` use="${opts.use}"` : ''}><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(certificatePem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
    `<md:SingleSignOnService Binding="${opts.binding ?? 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect'}" Location="https://idp.example/sso"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>`
  );
}

async function misconfiguration(xml: string, entityId: string): Promise<string> {
  try {
    await readIdpMetadata(xml, { entityId });
  } catch (err) {
    expect(err).to.be.instanceOf(UpstreamError);
    expect((err as UpstreamError).failure).to.equal('misconfigured');
    return (err as UpstreamError).message;
  }
  throw new Error('read');
}

describe('people/upstream/saml-metadata: the IdP metadata read, the SP metadata written', function () {
  this.timeout(30_000);

  it('reads the entity, its sign-on address and its signing certificate (a KeyDescriptor without use signs)', async () => {
    const read = await readIdpMetadata(entity('https://idp.example'), { entityId: 'https://idp.example' });
    expect(read.signOnUrl).to.equal('https://idp.example/sso');
    expect(read.certificates).to.have.length(1);
    expect(certificateBody(read.certificates[0]!)).to.equal(certificateBody(certificatePem));
  });

  it('finds the configured entity among several', async () => {
    const xml = `<md:EntitiesDescriptor xmlns:md="${MD}">${entity('https://other.example')}${entity('https://idp.example')}</md:EntitiesDescriptor>`;
    expect((await readIdpMetadata(xml, { entityId: 'https://idp.example' })).signOnUrl).to.equal('https://idp.example/sso');
  });

  it('refuses another entity, no Redirect sign-on, no signing certificate, or a document the schema refuses', async () => {
    expect(await misconfiguration(entity('https://other.example'), 'https://idp.example')).to.include('no entity');
    const postOnly = entity('https://idp.example', { binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST' });
    expect(await misconfiguration(postOnly, 'https://idp.example')).to.include('HTTP-Redirect');
    expect(await misconfiguration(entity('https://idp.example', { use: 'encryption' }), 'https://idp.example')).to.include(
      'signing certificate',
    );
    expect(await misconfiguration(`<md:EntityDescriptor xmlns:md="${MD}"/>`, 'https://idp.example')).to.include('the metadata');
  });

  it('writes SP metadata the OASIS schema takes: the entity ID, the ACS, the keys for signing and encryption', async () => {
    const provider: IdentityProvider = {
      resourceType: 'IdentityProvider',
      id: 'corp',
      type: 'saml',
      saml: { entityId: 'https://idp.example', metadata: { xml: '<x/>' } },
    };
    const xml = spMetadata('https://box.example', provider, [{ privateKey: pair.privateKey, certificatePem }], '_md');
    const doc = await readSamlXml(xml, 'metadata');
    const { entityId, acsUrl } = spUrls('https://box.example', 'corp');
    expect(doc.documentElement.getAttribute('entityID')).to.equal(entityId);
    expect(xml).to.include(`Location="${acsUrl}"`).and.include('use="signing"').and.include('use="encryption"');
  });
});
