// A SAML app's metadata status (api/saml/app-status.ts): the box fetches the metadata at an app's URL
// on its own, before anybody signs in, and records what it made of it; GET /Client/<id>/$saml
// shows it. A box of two API workers fetches each app's document once (the work is claimed in one
// statement); a URL at a loopback address is refused by the box's guard, and the refusal is the
// status, without the address. The test's HTTPS server (test/support/client-documents.ts) counts
// the requests it gets.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { Box, eventually } from '../support/box.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa } from '../support/tls.js';
import { certificateBody, selfSignedCertificate } from '../../api/saml/certificate.js';
import { SAML_NS } from '../../api/saml/xml.js';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EXPIRES = new Date('2030-01-01T00:00:00Z');
const cert = selfSignedCertificate(keys, 'remote.example', new Date('2026-01-01T00:00:00Z'), EXPIRES);
const metadataOf = (app: string): string =>
  `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" entityID="https://${app}.example/saml">` +
  `<md:SPSSODescriptor protocolSupportEnumeration="${SAML_NS.protocol}">` +
  `<md:KeyDescriptor><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
  `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://${app}.example/saml/slo"/>` +
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://${app}.example/saml/acs" index="0"/>` +
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://${app}.example/saml/acs2" index="1"/>` +
  '</md:SPSSODescriptor></md:EntityDescriptor>';
const XML = { 'Content-Type': 'application/samlmetadata+xml' };
const APPS = ['wiki', 'crm', 'hr', 'intranet'];

describe("SAML IdP: an app's metadata status", function () {
  this.timeout(120_000);
  let docs: ClientDocuments;
  let dev: Box;
  let strict: Box;

  before(async function () {
    const ca = testCa();
    docs = await clientDocuments(ca);
    for (const app of APPS) docs.serve(`/${app}.xml`, { body: metadataOf(app), headers: XML });
    docs.serve('/broken.xml', { body: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"/>', headers: XML });
    const env = { NODE_EXTRA_CA_CERTS: ca.caFile, BOXAUTH_CLIENT_METADATA_TIMEOUT_MS: '2000' };
    [dev, strict] = await Promise.all([
      Box.start({ env: { ...env, BOXAUTH_WORKERS: '2', BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' } }),
      Box.start({ env }),
    ]);
  });
  after(async function () {
    await Promise.all([dev?.stop(), strict?.stop(), docs?.close()]);
  });

  const samlApp = async (box: Box, id: string, saml: Record<string, unknown>): Promise<void> => {
    const res = await box.json('PUT', `/Client/${id}`, { grant_types: [], saml }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
  };
  const view = async (box: Box, id: string): Promise<any> => {
    const res = await box.json('GET', `/Client/${id}/$saml`, undefined, await box.rootToken());
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  it('fetches an app’s metadata without any sign-in, once for two workers, and the REST read shows it', async function () {
    await Promise.all(
      APPS.map((app) => samlApp(dev, app, { metadata: { url: `${docs.origin}/${app}.xml` }, nameIdFormat: 'emailAddress' })),
    );
    const views = await eventually(
      'every app read',
      async () => {
        const all = await Promise.all(APPS.map((app) => view(dev, app)));
        return all.every((v) => v.metadata.status?.outcome === 'read') && all;
      },
      20_000,
    );
    // Two workers heard of each new client and looked for work: each document was fetched once.
    for (const app of APPS) expect(docs.hits(`/${app}.xml`), app).to.equal(1);
    const wiki = views[0];
    expect(wiki).to.deep.include({ client: 'wiki', nameIdFormat: 'emailAddress', idpInitiated: false, encryptAssertions: false });
    expect(wiki.metadata).to.deep.include({ source: 'url', url: `${docs.origin}/wiki.xml` });
    expect(wiki.metadata.status.url).to.equal(`${docs.origin}/wiki.xml`);
    expect(Date.parse(wiki.metadata.status.fetchedAt)).to.be.closeTo(Date.now(), 60_000);
    expect(wiki.sp).to.deep.equal({
      entityId: 'https://wiki.example/saml',
      consumers: [
        { url: 'https://wiki.example/saml/acs', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', index: 0, isDefault: false },
        { url: 'https://wiki.example/saml/acs2', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', index: 1, isDefault: false },
      ],
      logout: [{ url: 'https://wiki.example/saml/slo', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect' }],
      certificatesExpire: EXPIRES.toISOString(),
    });
    expect(wiki.idp).to.deep.equal({
      metadataUrl: `${dev.url}/auth/saml/metadata`,
      entityId: `${dev.url}/auth/saml/metadata`,
      ssoUrl: `${dev.url}/auth/saml/sso`,
      sloUrl: `${dev.url}/auth/saml/slo`,
    });
  });

  it('looks again when the URL changes, and records a document that is no SP’s metadata as SamlMetadataInvalid', async function () {
    await samlApp(dev, 'changing', { metadata: { url: `${docs.origin}/hr.xml` } });
    await eventually('read', async () => (await view(dev, 'changing')).metadata.status?.outcome === 'read', 20_000);
    const root = await dev.rootToken();
    const res = await dev.json(
      'PUT',
      '/Client/changing',
      { grant_types: [], saml: { metadata: { url: `${docs.origin}/broken.xml` } } },
      root,
    );
    expect(res.status, res.text).to.equal(200);
    const refused = await eventually(
      'refused',
      async () => {
        const v = await view(dev, 'changing');
        return v.metadata.status?.url === `${docs.origin}/broken.xml` && v;
      },
      20_000,
    );
    expect(refused.metadata.status).to.deep.include({ outcome: 'refused', reason: 'SamlMetadataInvalid' });
    expect(refused.metadata.status.message).to.match(/^the SP metadata \(saml.metadata.url\) cannot be read: /);
    expect(refused.sp).to.equal(undefined); // what the old URL said is not shown as the new one's
    expect(docs.hits('/broken.xml')).to.equal(1);
  });

  it('SSRF: a URL at a loopback address is never fetched, and the status says it was refused, without the address', async function () {
    await samlApp(strict, 'remote', { metadata: { url: `${docs.origin}/intranet.xml` } });
    const before = docs.hits('/intranet.xml');
    const v = await eventually(
      'refused',
      async () => {
        const got = await view(strict, 'remote');
        return got.metadata.status && got;
      },
      20_000,
    );
    expect(v.metadata.status).to.deep.include({ outcome: 'refused', reason: 'SamlMetadataUnreachable' });
    expect(v.metadata.status.message).to.include('does not fetch from the address');
    expect(v.metadata.status.message).to.not.match(/127\.0\.0\.1|::1/);
    expect(docs.hits('/intranet.xml')).to.equal(before);
  });

  it('shows an app with inline metadata as its document says, and answers 404 for a client that is no SAML app', async function () {
    await samlApp(dev, 'inline', { metadata: { xml: metadataOf('inline') }, idpInitiated: true });
    const v = await view(dev, 'inline');
    expect(v.metadata).to.deep.equal({ source: 'inline' });
    expect(v.idpInitiated).to.equal(true);
    expect(v.sp.entityId).to.equal('https://inline.example/saml');
    const root = await dev.rootToken();
    expect(
      (await dev.json('PUT', '/Client/plain', { grant_types: ['client_credentials'], secret: 'a-long-secret-1' }, root)).status,
    ).to.equal(201);
    expect((await dev.json('GET', '/Client/plain/$saml', undefined, root)).status).to.equal(404);
  });
});
