// The Client controller's decisions, on an API server in memory, with the
// box's records in a real PostgreSQL database (they are SQL: api/store): where
// a client's secret comes from, which clients are refused and why, and whose
// record the operator may write.
import { expect } from 'chai';
import { verifyHash } from '../../../../api/credentials/secrets.js';
import { clients } from '../../../../api/store/clients.js';
import { recordSamlMetadataOutcome } from '../../../../api/store/saml-metadata-status.js';
import type { Client } from '../../../../api/types.js';
import type { Condition } from '../../../../operator/conditions.js';
import { SAML_METADATA_PENDING_REQUEUE_MS, type ClientResource, type ClientSpec } from '../../../../operator/controllers/client.js';
import { RECORD_FINALIZER } from '../../../../operator/controllers/records.js';
import { BOXES, CLIENTS, SECRETS } from '../../../../operator/kube.js';
import { secretValue } from '../../../../operator/secrets.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
const client = (name: string, spec: Partial<ClientSpec> = {}, namespace = NS): ClientResource => ({
  metadata: { name, namespace },
  spec: { grant_types: ['client_credentials'], ...spec },
});
const workload = (...serviceAccounts: { namespace: string; name: string }[]): Partial<ClientSpec> => ({
  auth: { workload: { serviceAccounts } },
});

describe('Client controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  beforeEach(() => {
    h = new OperatorHarness(db.pool);
  });

  async function reconciled(obj: ClientResource): Promise<ClientResource> {
    h.kube.put(CLIENTS, obj);
    await h.reconcile(h.clients, obj.metadata.namespace!, obj.metadata.name);
    return h.object<ClientResource>(CLIENTS, obj.metadata.namespace!, obj.metadata.name)!;
  }

  describe('in a namespace with a ready Box', function () {
    beforeEach(() => h.readyBox(NS, { workloadNamespaces: ['team-b'] }));

    it("generates a Secret the Client owns, and stores its value as the client's secret", async function () {
      const orders = await reconciled(client('orders'));
      const secret = h.kube.object(SECRETS, NS, 'orders-client-secret')!;
      expect(secret.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Client',
          name: 'orders',
          uid: orders.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(secretValue(secret, 'client-id')).to.equal('orders');
      const stored = (await clients.read(db.pool, 'orders'))!;
      expect(stored.managedBy).to.equal('Client team-a/orders');
      expect(await verifyHash(stored.secretHash!, secretValue(secret, 'client-secret')!)).to.equal(true);
      expect(orders.metadata.finalizers).to.deep.equal([RECORD_FINALIZER]);
      expect(ready(orders)).to.deep.include({
        status: 'True',
        reason: 'Reconciled',
        message: 'Client orders is served by Box auth at http://auth.team-a.svc',
      });
      expect(orders.status!.secretName).to.equal('orders-client-secret');
      expect(h.kube.eventsAbout(NS, 'orders')).to.deep.equal(['Normal Reconciled']);
    });

    it('the same Client applied again changes nothing: the record keeps its version and hash, the Secret its value', async function () {
      h.kube.put(SECRETS, {
        metadata: { name: 'billing-credentials', namespace: NS },
        stringData: { 'client-secret': 'billing-secret-1' },
      });
      for (const obj of [client('orders'), client('billing', { secretRef: { name: 'billing-credentials' } })]) {
        await reconciled(obj);
        const first = (await clients.read(db.pool, obj.metadata.name))!;
        const generated = h.kube.object(SECRETS, NS, 'orders-client-secret')!;
        await reconciled(structuredClone(obj)); // kubectl apply -f of the same file: the manifest as it was
        const again = (await clients.read(db.pool, obj.metadata.name))!;
        expect(again.resource.meta, obj.metadata.name).to.deep.equal(first.resource.meta);
        expect(again.secretHash, obj.metadata.name).to.equal(first.secretHash);
        expect(h.kube.object(SECRETS, NS, 'orders-client-secret'), obj.metadata.name).to.deep.equal(generated);
      }
    });

    it('reads the Secret spec.secretRef names; a missing one is SecretNotFound, with a Warning Event', async function () {
      const billing = await reconciled(client('billing', { secretRef: { name: 'billing-credentials' } }));
      expect(ready(billing)).to.deep.include({
        status: 'False',
        reason: 'SecretNotFound',
        message: 'Secret team-a/billing-credentials (spec.secretRef) does not exist; create it',
      });
      expect(h.kube.eventsAbout(NS, 'billing')).to.deep.equal(['Warning SecretNotFound']);
      expect(await clients.read(db.pool, 'billing')).to.equal(undefined);
      await h.kube.create(SECRETS, NS, {
        metadata: { name: 'billing-credentials' },
        stringData: { 'client-secret': 'change-me-billing-secret' },
      });
      await h.reconcile(h.clients, NS, 'billing');
      expect(ready(h.object(CLIENTS, NS, 'billing'))).to.deep.include({ status: 'True', reason: 'Reconciled' });
      expect(await verifyHash((await clients.read(db.pool, 'billing'))!.secretHash!, 'change-me-billing-secret')).to.equal(true);
      expect(h.kube.object(SECRETS, NS, 'billing-credentials')!.metadata.ownerReferences).to.equal(undefined); // not the operator's
    });

    it('refuses a Secret without the key (SecretKeyNotFound) or with a secret under 8 characters (SecretTooShort)', async function () {
      await h.kube.create(SECRETS, NS, { metadata: { name: 'creds' }, stringData: { password: 'long-enough-secret', user: 'u' } });
      const billing = await reconciled(client('billing', { secretRef: { name: 'creds' } }));
      expect(ready(billing)).to.deep.include({
        status: 'False',
        reason: 'SecretKeyNotFound',
        message: 'Secret team-a/creds has no key "client-secret" (it has: password, user); set spec.secretRef.key or add the key',
      });
      await h.kube.patch(SECRETS, NS, 'creds', { stringData: { 'client-secret': 'short' } });
      await h.reconcile(h.clients, NS, 'billing');
      expect(ready(h.object(CLIENTS, NS, 'billing'))).to.deep.include({
        status: 'False',
        reason: 'SecretTooShort',
        message: 'the client secret in Secret team-a/creds key "client-secret" must be at least 8 characters',
      });
      expect(await clients.read(db.pool, 'billing')).to.equal(undefined);
    });

    it("will not take a Secret of the generated name that is not the operator's (SecretConflict)", async function () {
      await h.kube.create(SECRETS, NS, {
        metadata: { name: 'orders-client-secret' },
        stringData: { 'client-secret': 'someone-elses-secret' },
      });
      const orders = await reconciled(client('orders'));
      expect(ready(orders)).to.deep.include({
        status: 'False',
        reason: 'SecretConflict',
        message: "Secret team-a/orders-client-secret exists and is not the operator's; set spec.secretRef to use it, or delete it",
      });
      expect(h.kube.object(SECRETS, NS, 'orders-client-secret')!.metadata.ownerReferences).to.equal(undefined);
      expect(await clients.read(db.pool, 'orders')).to.equal(undefined);
    });

    it('takes over the generated Secret a deleted Client of the same name left, value and all', async function () {
      const left = { apiVersion: 'boxauth.io/v1alpha1', kind: 'Client', name: 'orders', uid: 'the-deleted-client', controller: true };
      await h.kube.create(SECRETS, NS, {
        metadata: { name: 'orders-client-secret', ownerReferences: [left] },
        stringData: { 'client-secret': 'the-secret-it-had' },
      });
      const orders = await reconciled(client('orders'));
      expect(ready(orders)).to.deep.include({ status: 'True' });
      expect(h.kube.object(SECRETS, NS, 'orders-client-secret')!.metadata.ownerReferences![0]!.uid).to.equal(orders.metadata.uid);
      expect(await verifyHash((await clients.read(db.pool, 'orders'))!.secretHash!, 'the-secret-it-had')).to.equal(true);
    });

    it('asks a client_credentials client without a secret source for one (SecretRequired)', async function () {
      const orders = await reconciled(client('orders', { generateSecret: false }));
      expect(ready(orders)).to.deep.include({ status: 'False', reason: 'SecretRequired' });
      expect(h.kube.objects(SECRETS, NS).map((s) => s.metadata.name)).to.not.include('orders-client-secret');
    });

    it('binds ServiceAccounts of namespaces its Box allows; refuses others, removing the record written before', async function () {
      const shipping = await reconciled(client('shipping', workload({ namespace: 'team-b', name: 'shipping' })));
      expect(ready(shipping)).to.deep.include({ status: 'True' });
      expect((await clients.read(db.pool, 'shipping'))!.secretHash).to.equal(null); // its ServiceAccount's token authenticates it
      await h.kube.patch(BOXES, NS, 'auth', { spec: { workloadNamespaces: null } });
      await h.reconcile(h.boxes, NS, 'auth');
      await h.reconcile(h.clients, NS, 'shipping');
      const refused = ready(h.object(CLIENTS, NS, 'shipping'))!;
      expect(refused).to.deep.include({ status: 'False', reason: 'ServiceAccountNamespaceNotAllowed' });
      expect(
        refused.message.startsWith(
          'auth.workload binds ServiceAccount team-b/shipping, ' +
            'but Box auth lets its Clients bind ServiceAccounts of namespace team-a only',
        ),
        refused.message,
      ).to.equal(true);
      expect(await clients.read(db.pool, 'shipping')).to.equal(undefined);
      expect(h.kube.eventsAbout(NS, 'shipping')).to.deep.equal(['Normal Reconciled', 'Warning ServiceAccountNamespaceNotAllowed']);
    });

    it("refuses the name of one of the box's own records (ReservedName) and writes nothing", async function () {
      const root = await reconciled(client('root'));
      expect(ready(root)).to.deep.include({ status: 'False', reason: 'ReservedName' });
      expect(await clients.read(db.pool, 'root')).to.equal(undefined);
      expect(h.kube.objects(SECRETS, NS).map((s) => s.metadata.name)).to.not.include('root-client-secret');
    });

    it('adopts a record created through the REST API (Adopted); refuses one another resource manages (OwnedElsewhere)', async function () {
      const legacyRecord: Client = { resourceType: 'Client', id: 'legacy', grant_types: ['client_credentials'] };
      await clients.write(db.pool, legacyRecord, { managedBy: null });
      await clients.write(db.pool, { ...legacyRecord, id: 'taken' }, { managedBy: 'Client team-b/taken' });
      const legacy = await reconciled(client('legacy'));
      expect(ready(legacy)).to.deep.include({ status: 'True' });
      expect((await clients.read(db.pool, 'legacy'))!.managedBy).to.equal('Client team-a/legacy');
      expect(h.kube.eventsAbout(NS, 'legacy')).to.include('Normal Adopted');
      expect(ready(await reconciled(client('taken')))).to.deep.include({
        status: 'False',
        reason: 'OwnedElsewhere',
        message: 'the Client record "taken" is managed by Client team-b/taken; delete that resource first',
      });
      expect((await clients.read(db.pool, 'taken'))!.managedBy).to.equal('Client team-b/taken');
    });

    it("writes a SAML app with its metadata and no secret; refuses metadata that is no SP's (InvalidSamlMetadata), writing nothing", async function () {
      const metadata =
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://wiki.example/saml">' +
        '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
        '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://wiki.example/acs" index="0"/>' +
        '</md:SPSSODescriptor></md:EntityDescriptor>';
      const wiki = await reconciled(client('wiki', { grant_types: [], saml: { metadata: { xml: metadata } } }));
      expect(ready(wiki)).to.deep.include({ status: 'True' });
      const stored = (await clients.read(db.pool, 'wiki'))!;
      expect(stored.resource.saml?.metadata.xml).to.equal(metadata);
      expect(stored.secretHash).to.equal(null);
      expect(h.kube.objects(SECRETS, NS).map((s) => s.metadata.name)).to.not.include('wiki-client-secret');

      const noAcs = metadata.replace(/<md:AssertionConsumerService[^>]*\/>/, '');
      for (const [name, xml] of [
        ['doctype', `<!DOCTYPE x [<!ENTITY e "e">]>${metadata}`],
        ['no-acs', noAcs],
        ['not-xml', 'not xml'],
      ]) {
        const refused = await reconciled(client(name!, { grant_types: [], saml: { metadata: { xml: xml! } } }));
        expect(ready(refused)).to.deep.include({ status: 'False', reason: 'InvalidSamlMetadata' });
        expect(ready(refused)!.message).to.match(/^the SP metadata \(saml.metadata.xml\) cannot be read: /);
        expect(await clients.read(db.pool, name!)).to.equal(undefined);
      }
    });

    it("sets SamlMetadataReady from what the box recorded of the metadata URL: Unknown, True, then False with the box's message", async function () {
      const url = 'https://portal.example/saml/metadata';
      const portal = client('portal', { grant_types: ['client_credentials'], saml: { metadata: { url } } });
      const samlReady = (): Condition | undefined =>
        h.object<ClientResource>(CLIENTS, NS, 'portal')!.status?.conditions?.find((c) => c.type === 'SamlMetadataReady');

      // Before the box fetched it: Unknown, and looked at again soon (not skipped as done).
      h.kube.put(CLIENTS, portal);
      expect(await h.reconcile(h.clients, NS, 'portal')).to.deep.equal({ requeueAfterMs: SAML_METADATA_PENDING_REQUEUE_MS });
      expect(ready(h.object(CLIENTS, NS, 'portal'))).to.deep.include({ status: 'True', reason: 'Reconciled' });
      expect(samlReady()).to.deep.include({
        status: 'Unknown',
        reason: 'SamlMetadataPending',
        message: `the box has not fetched the SAML metadata at ${url} yet`,
      });

      // The box read it (api/saml/app-status.ts records it): True, at the requeue.
      const summary = {
        entityId: 'https://portal.example/saml',
        consumers: [
          { url: 'https://portal.example/acs', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', index: 0, isDefault: true },
        ],
        logout: [{ url: 'https://portal.example/slo', binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect' }],
        certificatesExpire: '2030-01-01T00:00:00.000Z',
      };
      await recordSamlMetadataOutcome(db.pool, 'portal', url, { outcome: 'read', summary }, 3600);
      expect(await h.reconcile(h.clients, NS, 'portal')).to.equal(undefined);
      expect(samlReady()).to.deep.include({
        status: 'True',
        reason: 'SamlMetadataRead',
        message:
          `the box read the SAML metadata at ${url}: entity ID https://portal.example/saml, 1 AssertionConsumerService, ` +
          'SingleLogoutService HTTP-Redirect, its first certificate expires 2030-01-01T00:00:00.000Z',
      });

      // The URL breaks; the box records it, and the operator's periodic resync (a forced pass) reads it.
      const message = 'the metadata could not be fetched: it answered 404, not 200';
      await recordSamlMetadataOutcome(db.pool, 'portal', url, { outcome: 'refused', reason: 'SamlMetadataUnreachable', message }, 60);
      await h.clients.reconcileKey(`${NS}/portal`, true);
      expect(samlReady()).to.deep.include({ status: 'False', reason: 'SamlMetadataUnreachable', message });
      // The Client stays Ready to its other uses (its client_credentials grant).
      expect(ready(h.object(CLIENTS, NS, 'portal'))).to.deep.include({ status: 'True', reason: 'Reconciled' });

      // The same manifest applied again (the API server keeps the status), and a resync that finds nothing new: no status write.
      const writes = (): number => h.kube.requests.filter((r) => r.subresource === 'status' && r.name === 'portal').length;
      const before = writes();
      await reconciled(h.object<ClientResource>(CLIENTS, NS, 'portal')!);
      await h.clients.reconcileKey(`${NS}/portal`, true);
      expect(writes()).to.equal(before);

      // Metadata no longer at a URL: the condition goes.
      const metadata =
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://portal.example/saml">' +
        '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
        '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://portal.example/acs" index="0"/>' +
        '</md:SPSSODescriptor></md:EntityDescriptor>';
      await reconciled({
        ...portal,
        metadata: { ...portal.metadata, generation: 2 },
        spec: { ...portal.spec!, saml: { metadata: { xml: metadata } } },
      });
      expect(samlReady()).to.equal(undefined);
    });

    it('reports a spec the REST API would refuse as InvalidSpec', async function () {
      const bad = await reconciled(client('bad', { grant_types: ['implicit'] }));
      expect(ready(bad)).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
      expect(ready(bad)!.message).to.match(/^spec is not a valid Client: /);
    });

    it('on deletion removes the record, then lets the Client go', async function () {
      await reconciled(client('orders'));
      await h.kube.delete(CLIENTS, NS, 'orders');
      await h.reconcile(h.clients, NS, 'orders');
      expect(await clients.read(db.pool, 'orders')).to.equal(undefined);
      expect(h.object(CLIENTS, NS, 'orders')).to.equal(undefined);
    });
  });

  it('waits for a Box: BoxNotFound with a Warning Event; BoxNotReady without one (the Box reports its own)', async function () {
    const orders = await reconciled(client('orders', {}, 'team-c'));
    expect(ready(orders)).to.deep.include({ status: 'False', reason: 'BoxNotFound' });
    expect(h.kube.eventsAbout('team-c', 'orders')).to.deep.equal(['Warning BoxNotFound']);
    h.kube.put(BOXES, { metadata: { name: 'auth', namespace: 'team-c' }, spec: {} });
    await h.reconcile(h.clients, 'team-c', 'orders');
    expect(ready(h.object(CLIENTS, 'team-c', 'orders'))).to.deep.include({
      status: 'False',
      reason: 'BoxNotReady',
      message: 'Box auth is not ready yet',
    });
    expect(h.kube.eventsAbout('team-c', 'orders')).to.deep.equal(['Warning BoxNotFound']);
    expect(await clients.read(db.pool, 'orders')).to.equal(undefined);
  });
});
