// A SAML app's metadata URL through the operator (docs/guides/saml-apps.md): a Client applied with
// kubectl whose spec.saml.metadata.url is at the test's HTTPS server; the box, run from its
// Deployment as a kubelet would, fetches it on its own (nobody signs in), and the operator sets
// SamlMetadataReady from what the box recorded: True, then False with the box's message once the
// URL breaks, while the Client stays Ready. The same manifest applied again writes no status.
import { expect } from 'chai';
import { eventually } from '../../support/kube.js';
import { clientDocuments, type ClientDocuments } from '../../support/client-documents.js';
import { testCa } from '../../support/tls.js';
import { readyBox, readyOf, suite, waitReady } from './suite.js';

const NS = 'saml-apps';
const METADATA =
  '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://wiki.example/saml">' +
  '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
  '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://wiki.example/acs" index="0"/>' +
  '</md:SPSSODescriptor></md:EntityDescriptor>';

export function describeSamlApps(): void {
  describe('SAML apps: SamlMetadataReady from what the box fetched', function () {
    let docs: ClientDocuments;
    let manifest: string;

    const samlReady = async (): Promise<any> =>
      (await suite.cluster.json(['get', 'client', 'wiki', '-n', NS])).status?.conditions?.find((c: any) => c.type === 'SamlMetadataReady');

    before(async function () {
      this.timeout(120_000);
      const ca = testCa();
      docs = await clientDocuments(ca);
      // Read again after a second (the box's least caching time set to 0 below), so that a broken URL shows within a pass.
      docs.serve('/wiki.xml', {
        body: METADATA,
        headers: { 'Content-Type': 'application/samlmetadata+xml', 'Cache-Control': 'max-age=1' },
      });
      await suite.cluster.k(['create', 'namespace', NS]);
      // The test's server is at a loopback address, which a box in production never fetches from: this one may.
      await readyBox(NS, {
        NODE_EXTRA_CA_CERTS: ca.caFile,
        BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32',
        BOXAUTH_CLIENT_METADATA_MIN_CACHE_SECONDS: '0',
      });
      manifest = JSON.stringify({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Client',
        metadata: { name: 'wiki', namespace: NS },
        spec: { grant_types: [], saml: { metadata: { url: `${docs.origin}/wiki.xml` } } },
      });
    });
    after(async function () {
      await docs?.close();
    });

    it('True once the box read the metadata, without any sign-in', async function () {
      await suite.cluster.k(['apply', '-f', '-'], manifest);
      await waitReady('client', NS, 'wiki');
      const read = await eventually(
        'SamlMetadataReady True',
        async () => ((await samlReady())?.status === 'True' ? samlReady() : undefined),
        60_000,
      );
      expect(read).to.deep.include({
        reason: 'SamlMetadataRead',
        message:
          `the box read the SAML metadata at ${docs.origin}/wiki.xml: entity ID https://wiki.example/saml, 1 AssertionConsumerService, ` +
          'SingleLogoutService none, no certificate',
      });
    });

    it('the same manifest applied again writes no status, through several resyncs', async function () {
      const before = (await suite.cluster.json(['get', 'client', 'wiki', '-n', NS])).metadata.resourceVersion;
      await suite.cluster.k(['apply', '-f', '-'], manifest);
      // Every Client of the cluster reconciled twice over by the resyncs (BOXAUTH_OPERATOR_RESYNC_SECONDS=2), this one with them.
      const clients = (await suite.cluster.json(['get', 'clients', '-A'])).items.length;
      const passes = await suite.operator.metric('boxauth_operator_reconciles_total', { controller: 'client' });
      await eventually(
        'two resyncs',
        async () => (await suite.operator.metric('boxauth_operator_reconciles_total', { controller: 'client' })) >= passes + 2 * clients,
        30_000,
      );
      expect((await suite.cluster.json(['get', 'client', 'wiki', '-n', NS])).metadata.resourceVersion).to.equal(before);
    });

    it('False with the box’s message once the URL breaks; the Client stays Ready', async function () {
      docs.serve('/wiki.xml', { status: 404, body: 'gone' });
      const broken = await eventually(
        'SamlMetadataReady False',
        async () => ((await samlReady())?.status === 'False' ? samlReady() : undefined),
        60_000,
      );
      expect(broken).to.deep.include({
        reason: 'SamlMetadataUnreachable',
        message: 'the metadata could not be fetched: it answered 404, not 200',
      });
      expect(await readyOf('client', NS, 'wiki')).to.deep.include({ status: 'True', reason: 'Reconciled' });
    });
  });
}
