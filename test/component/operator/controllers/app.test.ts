// The App controller: App resources become the box's app records (what the
// decision point guards), validated as the REST API validates them.
import { expect } from 'chai';
import { apps } from '../../../../api/store/apps.js';
import type { AppResource } from '../../../../operator/controllers/app.js';
import { APPS } from '../../../../operator/kube.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
// Specs the CRD would refuse too: the controller must not trust the API server's validation.
const app = (name: string, spec: AppResource['spec'] | Record<string, unknown>): AppResource => ({
  metadata: { name, namespace: NS },
  spec: spec as AppResource['spec'],
});

describe('App controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    await h.readyBox(NS);
  });

  async function reconciled(obj: AppResource): Promise<AppResource> {
    h.kube.put(APPS, obj);
    await h.reconcile(h.apps, NS, obj.metadata.name);
    return h.object<AppResource>(APPS, NS, obj.metadata.name)!;
  }

  it('writes the app record, managed by the resource, and Ready=True Reconciled', async function () {
    const wiki = await reconciled(app('wiki', { urls: ['https://wiki.example.com'], signIn: { client: 'wiki' } }));
    expect(ready(wiki)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    const stored = (await apps.read(db.pool, 'wiki'))!;
    expect(stored.managedBy).to.equal('App team-a/wiki');
    expect(stored.resource).to.deep.include({ resourceType: 'App', id: 'wiki', urls: ['https://wiki.example.com'] });
  });

  it('refuses a spec the REST API would refuse (InvalidSpec), and writes nothing', async function () {
    const odd = await reconciled(app('odd', { urls: 'https://not-a-list.example' }));
    expect(ready(odd)).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
    expect(await apps.read(db.pool, 'odd')).to.equal(undefined);
  });

  it("refuses an audience that is the box's or another App's (AudienceTaken), and writes nothing", async function () {
    await reconciled(app('wiki', { urls: ['https://wiki.example.com'] }));
    const copy = await reconciled(app('copy', { urls: ['https://copy.example.com'], audience: 'https://wiki.example.com' }));
    expect(ready(copy)).to.deep.include({ status: 'False', reason: 'AudienceTaken' });
    expect(ready(copy)?.message).to.include('App "wiki"');
    expect(h.kube.eventsAbout(NS, 'copy')).to.deep.equal(['Warning AudienceTaken']);
    const boxUrl = `http://auth.${NS}.svc`;
    const own = await reconciled(app('own', { urls: [boxUrl] }));
    expect(ready(own)).to.deep.include({ status: 'False', reason: 'AudienceTaken' });
    expect(await apps.read(db.pool, 'copy')).to.equal(undefined);
    expect(await apps.read(db.pool, 'own')).to.equal(undefined);
  });

  it('on deletion removes its record', async function () {
    await reconciled(app('wiki', { urls: ['https://wiki.example.com'] }));
    await h.kube.delete(APPS, NS, 'wiki');
    await h.reconcile(h.apps, NS, 'wiki');
    expect(await apps.read(db.pool, 'wiki')).to.equal(undefined);
  });
});
