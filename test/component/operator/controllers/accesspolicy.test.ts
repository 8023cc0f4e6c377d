// The AccessPolicy controller's decisions, on an API server in memory, with the
// box's records in a real PostgreSQL database: a policy is written only when
// the box could run it.
import { expect } from 'chai';
import { accessPolicies } from '../../../../api/store/policies.js';
import type { AccessPolicyResource } from '../../../../operator/controllers/accesspolicy.js';
import { ACCESS_POLICIES } from '../../../../operator/kube.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
// Specs the CRD would refuse too: the controller must not trust the API server's validation.
const policy = (name: string, spec: AccessPolicyResource['spec'] | Record<string, unknown>): AccessPolicyResource => ({
  metadata: { name, namespace: NS },
  spec: spec as AccessPolicyResource['spec'],
});

describe('AccessPolicy controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    await h.readyBox(NS);
  });

  async function reconciled(obj: AccessPolicyResource): Promise<AccessPolicyResource> {
    h.kube.put(ACCESS_POLICIES, obj);
    await h.reconcile(h.policies, NS, obj.metadata.name);
    return h.object<AccessPolicyResource>(ACCESS_POLICIES, NS, obj.metadata.name)!;
  }

  it('writes a policy the box can run, managed by the resource', async function () {
    const allow = await reconciled(policy('orders-allow', { engine: 'allow', link: [{ id: 'orders', resourceType: 'Client' }] }));
    expect(ready(allow)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    expect((await accessPolicies.read(db.pool, 'orders-allow'))!.managedBy).to.equal('AccessPolicy team-a/orders-allow');
  });

  it('refuses a JSON Schema that does not compile (InvalidPolicy), with a Warning Event, and writes nothing', async function () {
    const bad = await reconciled(policy('bad-schema', { engine: 'json-schema', schema: { type: 'no-such-type' } }));
    expect(ready(bad)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(ready(bad)!.message).to.match(/^schema: is not a usable JSON Schema: /);
    expect(h.kube.eventsAbout(NS, 'bad-schema')).to.deep.equal(['Warning InvalidPolicy']);
    expect(await accessPolicies.read(db.pool, 'bad-schema')).to.equal(undefined);
  });

  it('refuses a JSON Schema with what the engine would not apply ($data, an unknown format) as the REST API does (InvalidPolicy)', async function () {
    const data = await reconciled(
      policy('data-ref', { engine: 'json-schema', schema: { properties: { uri: { const: { $data: '1/x' } } } } }),
    );
    expect(ready(data)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(ready(data)!.message).to.include('"$data" (at /properties/uri/const)');
    const format = await reconciled(policy('odd-format', { engine: 'json-schema', schema: { properties: { uri: { format: 'emial' } } } }));
    expect(ready(format)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(ready(format)!.message).to.include('format "emial"');
    expect(await accessPolicies.ids(db.pool)).to.deep.equal([]);
  });

  it('refuses a CEL expression the REST API would refuse (InvalidPolicy), naming the field, and writes nothing', async function () {
    const good = await reconciled(
      policy('wiki-owner', { app: 'wiki', engine: 'cel', cel: 'request.resource.properties.owner == request.user.email' }),
    );
    expect(ready(good)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    const bad = await reconciled(policy('wiki-typo', { app: 'wiki', engine: 'cel', cel: 'request.user.emial == "a@example.com"' }));
    expect(ready(bad)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(ready(bad)!.message).to.match(/^cel: request\.user\.emial: no such field/);
    expect(h.kube.eventsAbout(NS, 'wiki-typo')).to.deep.equal(['Warning InvalidPolicy']);
    // A field of the other kind of request object: an app's policy cannot read the box API's `exchange`.
    const other = await reconciled(policy('wiki-exchange', { app: 'wiki', engine: 'cel', cel: 'request.exchange.audience == "x"' }));
    expect(ready(other)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(await accessPolicies.ids(db.pool)).to.deep.equal(['wiki-owner']);
  });

  it('shows a stored expression that no longer compiles (an upgrade made the checker stricter) as not Ready', async function () {
    // What an older version wrote and this one refuses: the same spec, reconciled again after the upgrade.
    const spec = { engine: 'cel', cel: 'request.body.size() > 0 && request.usr == null' } as const;
    await accessPolicies.write(
      db.pool,
      { resourceType: 'AccessPolicy', id: 'old-rule', ...spec },
      { managedBy: `AccessPolicy ${NS}/old-rule` },
    );
    const old = await reconciled(policy('old-rule', spec));
    expect(ready(old)).to.deep.include({ status: 'False', reason: 'InvalidPolicy' });
    expect(ready(old)!.message).to.match(/request\.usr: no such field/);
  });

  it("refuses a spec the REST API would refuse (InvalidSpec), and a name of the box's own policies (ReservedName)", async function () {
    const odd = await reconciled(policy('odd', { engine: 'no-such-engine' }));
    expect(ready(odd)).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
    expect(ready(await reconciled(policy('root-allow', { engine: 'allow' })))).to.deep.include({ status: 'False', reason: 'ReservedName' });
    expect(await accessPolicies.ids(db.pool)).to.deep.equal([]);
  });

  it('never moves a policy to another target: its app cannot change, be added or removed, nor by adopting a record', async function () {
    // An edit (the CRD's rules refuse it too, on an API server that checks them) and an adoption (no rule sees it).
    await reconciled(policy('wiki-staff', { app: 'wiki', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] }));
    await accessPolicies.write(
      db.pool,
      { resourceType: 'AccessPolicy', id: 'wiki-ops', app: 'wiki', engine: 'allow' },
      { managedBy: null },
    );
    for (const [name, spec] of [
      ['wiki-staff', { engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] }],
      ['wiki-staff', { app: 'other', engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] }],
      ['wiki-ops', { engine: 'allow' }],
    ] as const) {
      const moved = await reconciled(policy(name, spec));
      expect(ready(moved), name).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
      expect(ready(moved)!.message).to.match(/^spec\.app cannot change: the policy "[-a-z]+" guards app "wiki"/);
      expect((await accessPolicies.read(db.pool, name))!.resource.app, name).to.equal('wiki');
    }
  });

  it('on deletion removes its record, and leaves one it does not manage', async function () {
    await reconciled(policy('orders-allow', { engine: 'allow' }));
    await accessPolicies.write(
      db.pool,
      { resourceType: 'AccessPolicy', id: 'taken', engine: 'allow' },
      { managedBy: 'AccessPolicy team-b/taken' },
    );
    expect(ready(await reconciled(policy('taken', { engine: 'allow' })))).to.deep.include({ status: 'False', reason: 'OwnedElsewhere' });
    for (const name of ['orders-allow', 'taken']) {
      await h.kube.delete(ACCESS_POLICIES, NS, name);
      await h.reconcile(h.policies, NS, name);
      expect(h.object(ACCESS_POLICIES, NS, name), name).to.equal(undefined);
    }
    expect(await accessPolicies.ids(db.pool)).to.deep.equal(['taken']);
    expect((await accessPolicies.read(db.pool, 'taken'))!.managedBy).to.equal('AccessPolicy team-b/taken');
  });
});
