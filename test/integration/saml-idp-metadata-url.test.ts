// A SAML app whose metadata is at a URL (Client.saml.metadata.url): fetched by the box through its
// guard for the documents clients name (api/document-fetch.ts), from the test's own HTTPS
// server (test/support/client-documents.ts, its CA given through NODE_EXTRA_CA_CERTS). A box
// allowed to fetch from loopback (development) reads it and signs a person in; a box as in
// production never fetches it there (SSRF), and the person gets no assertion.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { Box, eventually } from '../support/box.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { FormAgent } from '../support/form-agent.js';
import { testCa } from '../support/tls.js';
import { certificateBody, selfSignedCertificate } from '../../api/saml/certificate.js';
import { SAML_NS } from '../../api/saml/xml.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SP = 'https://remote.example/saml';
const ACS = 'https://remote.example/saml/acs';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const cert = selfSignedCertificate(keys, 'remote.example', new Date('2026-01-01T00:00:00Z'), new Date('2030-01-01T00:00:00Z'));
const METADATA =
  `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" entityID="${SP}">` +
  `<md:SPSSODescriptor protocolSupportEnumeration="${SAML_NS.protocol}">` +
  `<md:KeyDescriptor><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ACS}" index="0"/>` +
  '</md:SPSSODescriptor></md:EntityDescriptor>';

describe("SAML IdP: an SP's metadata by URL", function () {
  this.timeout(120_000);
  let docs: ClientDocuments;
  let dev: Box;
  let strict: Box;

  before(async function () {
    const ca = testCa();
    docs = await clientDocuments(ca);
    docs.serve('/metadata.xml', { body: METADATA, headers: { 'Content-Type': 'application/samlmetadata+xml' } });
    const env = { NODE_EXTRA_CA_CERTS: ca.caFile, BOXAUTH_CLIENT_METADATA_TIMEOUT_MS: '1000' };
    [dev, strict] = await Promise.all([
      Box.start({ env: { ...env, BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' } }),
      Box.start({ env }),
    ]);
    for (const box of [dev, strict]) {
      const root = await box.rootToken();
      expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
      const saml = { metadata: { url: `${docs.origin}/metadata.xml` }, idpInitiated: true };
      const res = await box.json('PUT', '/Client/remote', { grant_types: [], first_party: true, saml }, root);
      expect(res.status, res.text).to.equal(201);
      const policy = { engine: 'allow', link: [{ id: 'remote', resourceType: 'Client' }] };
      expect((await box.json('PUT', '/AccessPolicy/remote-people', policy, root)).status).to.equal(201);
    }
  });
  after(async function () {
    await Promise.all([dev?.stop(), strict?.stop(), docs?.close()]);
  });

  async function startedAt(box: Box) {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser.get(`/auth/saml/sso?sp=${encodeURIComponent(SP)}&RelayState=home`);
  }

  it('a box allowed loopback fetches the metadata and posts the app an assertion', async function () {
    const res = await startedAt(dev);
    expect(res.status, res.text.slice(0, 300)).to.equal(200);
    expect(res.text).to.include(`action="${ACS}"`);
    expect(res.text).to.include('name="SAMLResponse"');
    expect(docs.hits('/metadata.xml')).to.be.greaterThan(0);
  });

  it('SSRF: a box as in production never fetches metadata at a loopback address, and signs nobody in', async function () {
    const before = docs.hits('/metadata.xml');
    const res = await startedAt(strict);
    expect(res.status).to.equal(400);
    expect(res.text).to.not.include('SAMLResponse');
    expect(docs.hits('/metadata.xml')).to.equal(before);
    await eventually('the refusal logged', () => Promise.resolve(/saml_metadata_refused/.test(strict.logs.join('\n'))), 5000);
  });
});
