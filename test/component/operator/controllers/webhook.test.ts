// The Webhook controller: Webhook resources become the box's Webhook records, validated as the
// REST API validates them, with the signing secret of spec.secretRef sealed under the box's factor
// key (what the box signs with) and never in the record; a secret that is no Standard Webhooks
// secret, or a URL no box would send to, leaves no record.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { webhooks } from '../../../../api/store/webhooks.js';
import { webhookSecret } from '../../../../api/webhooks/signing.js';
import { boxNames, FACTOR_KEY_FILE } from '../../../../operator/controllers/box-manifests.js';
import type { WebhookResource } from '../../../../operator/controllers/webhook.js';
import { SECRETS, WEBHOOKS } from '../../../../operator/kube.js';
import { secretValue, type SecretObject } from '../../../../operator/secrets.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
const SIGNING = `whsec_${randomBytes(32).toString('base64')}`;
const hook = (name: string, spec: Partial<WebhookResource['spec']> = {}): WebhookResource => ({
  metadata: { name, namespace: NS },
  spec: {
    url: 'https://hooks.example/boxauth',
    events: ['io.boxauth.session.closed'],
    secretRef: { name: 'hook-secret' },
    ...spec,
  },
});

describe('Webhook controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  let factorKey: Buffer;
  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    const box = await h.readyBox(NS);
    const secret = h.kube.object<SecretObject>(SECRETS, NS, boxNames(box).secrets.factorKey);
    factorKey = Buffer.from(secretValue(secret, FACTOR_KEY_FILE)!, 'base64');
  });

  async function reconciled(obj: WebhookResource): Promise<WebhookResource> {
    h.kube.put(WEBHOOKS, obj);
    await h.reconcile(h.webhooks, NS, obj.metadata.name);
    return h.object<WebhookResource>(WEBHOOKS, NS, obj.metadata.name)!;
  }
  const storedSecret = async (id: string): Promise<string | undefined> =>
    webhookSecret(factorKey, id, (await webhooks.read(db.pool, id))!.secretSealed ?? null);

  it("writes the record, managed by the resource, its signing secret sealed under the box's factor key and not in the record", async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    const obj = await reconciled(hook('ops'));
    expect(ready(obj)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    const stored = (await webhooks.read(db.pool, 'ops'))!;
    expect(stored.managedBy).to.equal('Webhook team-a/ops');
    expect(stored.resource).to.deep.include({ resourceType: 'Webhook', id: 'ops', url: 'https://hooks.example/boxauth' });
    expect(stored.resource).to.not.have.property('secretRef');
    expect(JSON.stringify(stored.resource)).to.not.include('whsec_');
    expect(await storedSecret('ops')).to.equal(SIGNING);
    const version = stored.resource.meta!.versionId;
    await h.webhooks.reconcileKey(`${NS}/ops`, true); // the periodic resync writes nothing
    expect((await webhooks.read(db.pool, 'ops'))!.resource.meta!.versionId).to.equal(version);
  });

  it('waits for a missing Secret (SecretNotFound), and takes it once it is there', async function () {
    const obj = await reconciled(hook('ops'));
    expect(ready(obj)).to.deep.include({ status: 'False', reason: 'SecretNotFound' });
    expect(await webhooks.read(db.pool, 'ops')).to.equal(undefined);
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    expect(h.webhooks.usingSecret(NS, 'hook-secret')).to.deep.equal(['ops']);
    await h.reconcile(h.webhooks, NS, 'ops');
    expect(ready(h.object(WEBHOOKS, NS, 'ops'))).to.deep.include({ status: 'True', reason: 'Reconciled' });
  });

  it('refuses a secret that is no Standard Webhooks secret (InvalidSecret) without repeating it, and removes the record', async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    await reconciled(hook('ops'));
    await h.kube.patch(SECRETS, NS, 'hook-secret', { stringData: { 'signing-secret': 'not-a-webhook-secret' } });
    await h.reconcile(h.webhooks, NS, 'ops');
    const obj = h.object<WebhookResource>(WEBHOOKS, NS, 'ops')!;
    expect(ready(obj)).to.deep.include({ status: 'False', reason: 'InvalidSecret' });
    expect(JSON.stringify(obj.status)).to.not.include('not-a-webhook-secret');
    expect(await webhooks.read(db.pool, 'ops')).to.equal(undefined);
  });

  it('refuses a URL no box sends to (UrlRefused), and a spec the REST API would refuse (InvalidSpec)', async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    expect(ready(await reconciled(hook('creds', { url: 'https://user:pw@hooks.example/' })))).to.deep.include({ reason: 'UrlRefused' });
    expect(ready(await reconciled(hook('odd', { events: ['io.boxauth.no.such'] as never })))).to.deep.include({
      reason: 'InvalidSpec',
    });
    expect(await webhooks.read(db.pool, 'creds')).to.equal(undefined);
    expect(await webhooks.read(db.pool, 'odd')).to.equal(undefined);
  });

  it('on deletion removes its record', async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    await reconciled(hook('ops'));
    await h.kube.delete(WEBHOOKS, NS, 'ops');
    await h.reconcile(h.webhooks, NS, 'ops');
    expect(await webhooks.read(db.pool, 'ops')).to.equal(undefined);
  });
});
