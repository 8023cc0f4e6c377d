// The periodic resync of a box's records: looked at in one query per kind at the Box's recheck,
// and reconciled again only when their row changed behind the operator's back. A thousand boxes
// of twenty records must not cost twenty thousand reconciles a minute (docs/kubernetes/operator.md).
import { expect } from 'chai';
import type { Controller } from '../../../operator/controller.js';
import type { AccessPolicyResource } from '../../../operator/controllers/accesspolicy.js';
import type { ClientResource } from '../../../operator/controllers/client.js';
import { ACCESS_POLICIES, CLIENTS } from '../../../operator/kube.js';
import { clients } from '../../../api/store/clients.js';
import { accessPolicies } from '../../../api/store/policies.js';
import { eventually } from '../../support/box.js';
import { settle } from '../../support/clock.js';
import { OperatorHarness, ready, recordsDatabase } from '../../support/operator.js';

const NS = 'team-a';
const CLIENT_NAMES = ['c-0', 'c-1', 'c-2'];
const POLICY_NAMES = ['p-0', 'p-1'];

describe("the periodic resync of a box's records", function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  let controllers: Controller<any>[];

  /** Reconciles done (result ok) by controller. */
  async function done(): Promise<Record<string, number>> {
    const values = (await h.metrics.reconciles.get()).values.filter((v) => v.labels.result === 'ok');
    return Object.fromEntries(values.map((v) => [String(v.labels.controller), v.value]));
  }

  /** Every key handed out and worked on. */
  async function idle(): Promise<void> {
    await eventually('the queues to empty', async () => {
      await settle();
      return controllers.every((c) => c.queue.length === 0 && c.queue.active === 0);
    });
  }

  /** A resync of the namespace, as the manager's timer makes it: every controller's, the Box's recheck worked on here. */
  async function resync(): Promise<void> {
    for (const c of controllers) c.resync();
    await h.boxes.reconcileKey(`${NS}/auth`, true);
    await idle();
  }

  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    await h.readyBox(NS);
    await h.reconcile(h.boxes, NS, 'auth'); // with the Secrets its first reconcile made: in place as this process left it
    for (const name of CLIENT_NAMES)
      h.kube.put(CLIENTS, { metadata: { name, namespace: NS }, spec: { grant_types: ['client_credentials'] } });
    for (const name of POLICY_NAMES) {
      h.kube.put(ACCESS_POLICIES, {
        metadata: { name, namespace: NS },
        spec: { engine: 'allow', link: [{ id: 'c-0', resourceType: 'Client' }] },
      });
    }
    controllers = [h.clients, h.policies];
    for (const c of controllers) c.start(1);
    await idle();
    // The generated Secrets' events, as the manager passes them on: each Client looked at once more with its Secret.
    for (const name of CLIENT_NAMES) h.clients.enqueue(NS, name);
    await idle();
    for (const name of CLIENT_NAMES) expect(ready(h.object<ClientResource>(CLIENTS, NS, name))?.status, name).to.equal('True');
    for (const name of POLICY_NAMES)
      expect(ready(h.object<AccessPolicyResource>(ACCESS_POLICIES, NS, name))?.status, name).to.equal('True');
  });
  afterEach(() => Promise.all(controllers.map((c) => c.stop())));

  it('reconciles none of them while their rows are as the operator left them', async function () {
    const before = await done();
    await resync();
    await resync();
    const after = await done();
    expect(after.client).to.equal(before.client);
    expect(after.accesspolicy).to.equal(before.accesspolicy);
  });

  it('reconciles, and restores, those changed or deleted in the database, and only those', async function () {
    await db.pool.query(`UPDATE clients SET resource = jsonb_set(resource, '{grant_types}', '["implicit"]') WHERE id = 'c-1'`);
    await db.pool.query(`DELETE FROM access_policies WHERE id = 'p-0'`);
    const before = await done();
    await resync();
    const after = await done();
    expect(after.client! - before.client!).to.equal(1);
    expect(after.accesspolicy! - before.accesspolicy!).to.equal(1);
    expect((await clients.read(db.pool, 'c-1'))!.resource.grant_types).to.deep.equal(['client_credentials']);
    expect((await accessPolicies.read(db.pool, 'p-0'))!.managedBy).to.equal('AccessPolicy team-a/p-0');
    expect(h.kube.eventsAbout(NS, 'c-1')).to.include('Normal DriftRepaired');
  });
});
