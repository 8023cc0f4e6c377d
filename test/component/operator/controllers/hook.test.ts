// The Hook controller: Hook resources become the box's Hook records, validated as the REST API
// validates them (matchConditions that compile, a caBundle of certificates, a URL that is not the
// box), with the signing secret of spec.secretRef sealed under the box's factor key and never in
// the record; a Hook with neither a secret nor boxToken is one no hook could check.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { hooks } from '../../../../api/store/hooks.js';
import { hookSecret } from '../../../../api/webhooks/signing.js';
import { boxNames, FACTOR_KEY_FILE } from '../../../../operator/controllers/box-manifests.js';
import type { HookResource } from '../../../../operator/controllers/hook.js';
import { HOOKS, SECRETS } from '../../../../operator/kube.js';
import { secretValue, type SecretObject } from '../../../../operator/secrets.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
const SIGNING = `whsec_${randomBytes(32).toString('base64')}`;
const resource = (name: string, spec: Partial<HookResource['spec']> = {}): HookResource => ({
  metadata: { name, namespace: NS },
  spec: {
    moments: ['tokenIssuing'],
    service: { name: 'licence', port: 8443, path: '/token' },
    matchConditions: [{ name: 'people', expression: 'has(request.user)' }],
    secretRef: { name: 'hook-secret' },
    ...spec,
  },
});

describe('Hook controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  let factorKey: Buffer;
  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    const box = await h.readyBox(NS);
    const secret = h.kube.object<SecretObject>(SECRETS, NS, boxNames(box).secrets.factorKey);
    factorKey = Buffer.from(secretValue(secret, FACTOR_KEY_FILE)!, 'base64');
  });

  async function reconciled(obj: HookResource): Promise<HookResource> {
    h.kube.put(HOOKS, obj);
    await h.reconcile(h.hooks, NS, obj.metadata.name);
    return h.object<HookResource>(HOOKS, NS, obj.metadata.name)!;
  }

  it('writes the record, managed by the resource, its signing secret sealed and not in the record; a resync writes nothing', async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'hook-secret' }, stringData: { 'signing-secret': SIGNING } });
    const obj = await reconciled(resource('licence'));
    expect(ready(obj)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    const stored = (await hooks.read(db.pool, 'licence'))!;
    expect(stored.managedBy).to.equal('Hook team-a/licence');
    expect(stored.resource).to.deep.include({ resourceType: 'Hook', id: 'licence', moments: ['tokenIssuing'] });
    expect(stored.resource).to.not.have.property('secretRef');
    expect(JSON.stringify(stored.resource)).to.not.include('whsec_');
    expect(hookSecret(factorKey, 'licence', stored.secretSealed ?? null)).to.equal(SIGNING);
    const version = stored.resource.meta!.versionId;
    await h.hooks.reconcileKey(`${NS}/licence`, true);
    expect((await hooks.read(db.pool, 'licence'))!.resource.meta!.versionId).to.equal(version);
  });

  it('takes boxToken alone; neither a secret nor boxToken is SecretRequired', async function () {
    expect(ready(await reconciled(resource('token-only', { secretRef: undefined, boxToken: true })))).to.deep.include({ status: 'True' });
    const none = await reconciled(resource('unchecked', { secretRef: undefined }));
    expect(ready(none)).to.deep.include({ status: 'False', reason: 'SecretRequired' });
    expect(await hooks.read(db.pool, 'unchecked')).to.equal(undefined);
  });

  it('refuses matchConditions that do not compile, and a caBundle without a certificate (HookRefused): no record', async function () {
    const obj = await reconciled(
      resource('bad', {
        secretRef: undefined,
        boxToken: true,
        matchConditions: [{ name: 'x', expression: 'request.nope == 1' }],
        caBundle: 'AAAA',
      }),
    );
    expect(ready(obj)).to.deep.include({ status: 'False', reason: 'HookRefused' });
    expect(ready(obj)!.message).to.include('matchConditions.x').and.include('caBundle');
    expect(await hooks.read(db.pool, 'bad')).to.equal(undefined);
  });
});
