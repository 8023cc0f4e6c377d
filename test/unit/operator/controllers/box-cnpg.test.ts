// A Box naming a CloudNativePG Cluster (spec.database.cluster), on an API
// server in memory with CloudNativePG's objects put there as CloudNativePG
// makes them, and the box's database work faked (boxdb.ts as the Cluster's
// owner is tested against PostgreSQL and PgBouncer in
// test/component/operator/boxdb-owner.test.ts): what the API pods are given,
// what status.database says, and what a person reads when something is missing.
import { expect } from 'chai';
import { NotOwned, ownDatabaseNames } from '../../../../operator/boxdb.js';
import type { BoxResource } from '../../../../operator/controllers/box.js';
import { databaseStatus, declaredDatabase } from '../../../../operator/controllers/box/status.js';
import { BOXES, CNPG_CLUSTERS, CNPG_POOLERS, DEPLOYMENTS, SECRETS, SERVICES, type KObject } from '../../../../operator/kube.js';
import { secretValue, type SecretObject } from '../../../../operator/secrets.js';
import { FakeBoxDatabases, OperatorHarness, ready, SETTINGS } from '../../../support/operator.js';

const NS = 'team-a';
/** A password with what a URL must escape: the pods' URLs must still carry it exactly. */
const PASSWORD = 'p@ss/w:rd%?#';
const box = (database: Record<string, unknown>, spec: BoxResource['spec'] = {}): BoxResource => ({
  metadata: { name: 'auth', namespace: NS },
  spec: { database, ...spec },
});

/** The objects CloudNativePG makes for Cluster `pg` (and Pooler `pg-pooler`), as it writes them (pkg/specs). */
function cloudNativePg(h: OperatorHarness, { pooler = true, password = PASSWORD } = {}): void {
  h.kube.put(CNPG_CLUSTERS, { metadata: { name: 'pg', namespace: NS }, spec: { instances: 3 } });
  h.kube.put(SECRETS, appSecret('pg-app', 'app', password, { dbname: 'app', host: 'pg-rw', port: '5432' }));
  h.kube.put(SERVICES, service('pg-rw', 'postgres'));
  if (!pooler) return;
  h.kube.put(CNPG_POOLERS, { metadata: { name: 'pg-pooler', namespace: NS }, spec: { cluster: { name: 'pg' }, type: 'rw' } });
  h.kube.put(SERVICES, service('pg-pooler', 'pgbouncer'));
}

function appSecret(name: string, username: string, password: string, more: Record<string, string> = {}): SecretObject {
  const data = Object.fromEntries(Object.entries({ username, password, ...more }).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { metadata: { name, namespace: NS }, type: 'kubernetes.io/basic-auth', data };
}

const service = (name: string, port: string): KObject => ({
  metadata: { name, namespace: NS },
  spec: { ports: [{ name: port, port: 5432, targetPort: port, protocol: 'TCP' }] },
});

describe('Box controller, with a CloudNativePG Cluster', function () {
  let h: OperatorHarness;
  beforeEach(() => {
    h = new OperatorHarness();
  });

  const current = (): BoxResource => h.object<BoxResource>(BOXES, NS, 'auth')!;
  const database = (key: string): string | undefined => secretValue(h.object<SecretObject>(SECRETS, NS, 'auth-database'), key);
  const env = (): { name: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[] =>
    (h.object<KObject>(DEPLOYMENTS, NS, 'auth') as any).spec.template.spec.containers[0].env;
  const configHash = (): string =>
    (h.object<KObject>(DEPLOYMENTS, NS, 'auth') as any).spec.template.metadata.annotations['boxauth.io/config-hash'];
  const escaped = encodeURIComponent(PASSWORD);

  async function notReady(reason: string): Promise<{ message: string }> {
    const failure = await h.failedReconcile(h.boxes, NS, 'auth');
    expect(failure).to.include({ reason });
    const condition = ready(current())!;
    expect(condition).to.include({ status: 'False', reason });
    expect(h.kube.objects(DEPLOYMENTS, NS), 'no Deployment without its database').to.deep.equal([]);
    return condition;
  }

  it('sends the queries through the Pooler and the change feed to the -rw Service, as the application role', async function () {
    cloudNativePg(h);
    await h.readyBox(NS, { database: { cluster: { name: 'pg', pooler: 'pg-pooler' } } });
    expect(database('DATABASE_URL')).to.equal(`postgres://app:${escaped}@pg-pooler.team-a.svc:5432/app`);
    expect(database('DATABASE_DIRECT_URL')).to.equal(`postgres://app:${escaped}@pg-rw.team-a.svc:5432/app`);
    expect(new URL(database('DATABASE_URL')!).password).to.equal(escaped); // decodes to the Secret's password
    expect(database('password'), "the Cluster's password is in the URLs only").to.equal(undefined);
    expect(env().filter((e) => e.name.includes('DATABASE'))).to.deep.equal([
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'auth-database', key: 'DATABASE_URL' } } },
      { name: 'BOXAUTH_DATABASE_DIRECT_URL', valueFrom: { secretKeyRef: { name: 'auth-database', key: 'DATABASE_DIRECT_URL' } } },
    ]);
    // The operator goes to the primary itself, as the owner of the application database: no role of its own.
    expect(h.databases.accesses.get(NS)).to.deep.equal({ kind: 'owner', url: database('DATABASE_DIRECT_URL') });
    expect(current().status!.database).to.deep.equal({
      source: 'Cluster',
      cluster: 'pg',
      pooler: 'pg-pooler',
      secret: 'pg-app',
      host: 'pg-pooler.team-a.svc:5432',
      directHost: 'pg-rw.team-a.svc:5432',
      database: 'app',
      role: 'app',
      isolation: 'Database',
      reachable: true,
    });
  });

  it('without a Pooler, gives the pods the -rw Service alone, and drops the direct URL a Pooler needed', async function () {
    cloudNativePg(h);
    await h.readyBox(NS, { database: { cluster: { name: 'pg', pooler: 'pg-pooler' } } });
    await h.kube.patch(BOXES, NS, 'auth', { spec: { database: { cluster: { name: 'pg', pooler: null } } } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(database('DATABASE_URL')).to.equal(`postgres://app:${escaped}@pg-rw.team-a.svc:5432/app`);
    expect(database('DATABASE_DIRECT_URL')).to.equal(undefined);
    expect(env().map((e) => e.name))
      .to.include('DATABASE_URL')
      .and.not.include('BOXAUTH_DATABASE_DIRECT_URL');
    expect(current().status!.database).to.deep.include({ host: 'pg-rw.team-a.svc:5432', reachable: true });
    expect(current().status!.database).to.not.have.any.keys('pooler', 'directHost');
  });

  it('rolls the pods and follows with its own connection when the application password changes', async function () {
    cloudNativePg(h);
    await h.readyBox(NS, { database: { cluster: { name: 'pg', pooler: 'pg-pooler' } } });
    const hash = configHash();
    const secret = h.object<SecretObject>(SECRETS, NS, 'pg-app')!;
    expect(h.boxes.boxesUsing(secret), 'the Secret informer enqueues the Box').to.deep.equal(['auth']);
    await h.kube.patch(SECRETS, NS, 'pg-app', { metadata: { labels: { 'cnpg.io/reload': 'true' } } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(configHash(), 'what the pods do not read does not roll them').to.equal(hash);
    await h.kube.patch(SECRETS, NS, 'pg-app', { stringData: { password: 'rotated' } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(database('DATABASE_URL')).to.equal('postgres://app:rotated@pg-pooler.team-a.svc:5432/app');
    expect(configHash(), 'a new password rolls the pods').to.not.equal(hash);
    expect(h.databases.accesses.get(NS)).to.deep.equal({ kind: 'owner', url: 'postgres://app:rotated@pg-rw.team-a.svc:5432/app' });
  });

  it("uses the Secret and database of the Cluster's bootstrap when it names them", async function () {
    h.kube.put(CNPG_CLUSTERS, {
      metadata: { name: 'pg', namespace: NS },
      spec: { bootstrap: { initdb: { database: 'boxauth', owner: 'boxauth', secret: { name: 'boxauth-credentials' } } } },
    });
    h.kube.put(SECRETS, appSecret('boxauth-credentials', 'boxauth', 'their-own-password'));
    h.kube.put(SERVICES, service('pg-rw', 'postgres'));
    const auth = await h.readyBox(NS, { database: { cluster: { name: 'pg' } } });
    expect(database('DATABASE_URL')).to.equal('postgres://boxauth:their-own-password@pg-rw.team-a.svc:5432/boxauth');
    expect(auth.status!.database).to.deep.include({ secret: 'boxauth-credentials', database: 'boxauth', role: 'boxauth' });
    // Not <cluster>-app: the status says which Secret to watch.
    expect(h.boxes.boxesUsing(h.object<SecretObject>(SECRETS, NS, 'boxauth-credentials')!)).to.deep.equal(['auth']);
  });

  it('says what is missing, in the order CloudNativePG makes it, and becomes Ready once it is there', async function () {
    h.kube.put(BOXES, box({ cluster: { name: 'pg', pooler: 'pg-pooler' } }));
    const missing = await notReady('DatabaseClusterNotFound');
    expect(missing.message).to.equal(
      'Cluster team-a/pg (spec.database.cluster) does not exist; create it, or fix the name (CloudNativePG must be installed: docs/kubernetes/cloudnative-pg.md)',
    );
    expect(current().status!.database).to.deep.equal({ source: 'Cluster', cluster: 'pg', pooler: 'pg-pooler', reachable: false });
    expect(h.kube.eventsAbout(NS, 'auth')).to.include('Warning DatabaseClusterNotFound');

    h.kube.put(CNPG_CLUSTERS, { metadata: { name: 'pg', namespace: NS }, spec: {} });
    expect((await notReady('DatabaseClusterNotReady')).message).to.equal(
      'Cluster team-a/pg (spec.database.cluster): its application Secret pg-app does not exist yet; CloudNativePG makes it as it creates the Cluster (kubectl get cluster -n team-a pg)',
    );
    h.kube.put(SECRETS, appSecret('pg-app', 'app', PASSWORD));
    expect((await notReady('DatabaseClusterNotReady')).message).to.include('its Service pg-rw does not exist yet');
    h.kube.put(SERVICES, service('pg-rw', 'postgres'));

    expect((await notReady('DatabasePoolerNotFound')).message).to.equal(
      'Pooler team-a/pg-pooler (spec.database.cluster.pooler) does not exist; create it, or fix the name (docs/kubernetes/cloudnative-pg.md)',
    );
    h.kube.put(CNPG_POOLERS, { metadata: { name: 'pg-pooler', namespace: NS }, spec: { cluster: { name: 'pg' } } });
    expect((await notReady('DatabasePoolerNotFound')).message).to.include('its Service pg-pooler does not exist yet');
    h.kube.put(SERVICES, service('pg-pooler', 'pgbouncer'));
    await h.reconcile(h.boxes, NS, 'auth');
    expect(ready(current())).to.include({ status: 'True', reason: 'Provisioned' });
  });

  it('refuses a Pooler of another Cluster, or one that reaches standbys (DatabasePoolerInvalid: Stalled)', async function () {
    cloudNativePg(h);
    h.kube.put(BOXES, box({ cluster: { name: 'pg', pooler: 'pg-pooler' } }));
    await h.kube.patch(CNPG_POOLERS, NS, 'pg-pooler', { spec: { cluster: { name: 'other' } } });
    expect((await notReady('DatabasePoolerInvalid')).message).to.equal(
      'Pooler team-a/pg-pooler (spec.database.cluster.pooler) serves Cluster other, not pg; name a Pooler of Cluster pg',
    );
    await h.kube.patch(CNPG_POOLERS, NS, 'pg-pooler', { spec: { cluster: { name: 'pg' }, type: 'ro' } });
    expect((await notReady('DatabasePoolerInvalid')).message).to.include('is of type ro: it reaches standbys');
    const stalled = current().status!.conditions!.find((c) => c.type === 'Stalled');
    expect(stalled).to.include({ status: 'True', reason: 'DatabasePoolerInvalid' });
  });

  it('reports an unreachable database as reachable: false, and a refusing one as reached', async function () {
    cloudNativePg(h);
    h.kube.put(BOXES, box({ cluster: { name: 'pg', pooler: 'pg-pooler' } }));
    h.databases.failure = Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432'), { code: 'ECONNREFUSED' });
    await h.failedReconcile(h.boxes, NS, 'auth');
    expect(ready(current())).to.include({ reason: 'ProvisioningFailed' });
    expect(current().status!.database).to.deep.include({ host: 'pg-pooler.team-a.svc:5432', reachable: false });
    h.databases.failure = new NotOwned('schema "box_team_a_x" exists with no comment');
    await h.reconcile(h.boxes, NS, 'auth');
    expect(ready(current())).to.include({ reason: 'DatabaseOwnedElsewhere' });
    expect(current().status!.database).to.deep.include({ reachable: true });
    h.databases.failure = undefined;
    await h.reconcile(h.boxes, NS, 'auth');
    expect(current().status!.database).to.deep.include({ reachable: true });
  });

  it("reclaimPolicy Delete drops the box's schema as the Cluster's owner, even once the Pooler is gone", async function () {
    cloudNativePg(h);
    await h.readyBox(NS, { database: { cluster: { name: 'pg', pooler: 'pg-pooler' } }, reclaimPolicy: 'Delete' });
    await h.kube.delete(CNPG_POOLERS, NS, 'pg-pooler');
    await h.kube.delete(BOXES, NS, 'auth');
    await h.reconcile(h.boxes, NS, 'auth');
    expect(h.databases.calls).to.include(`drop ${NS}`);
    expect(h.databases.accesses.get(NS)).to.deep.equal({ kind: 'owner', url: `postgres://app:${escaped}@pg-rw.team-a.svc:5432/app` });
    expect(h.object(BOXES, NS, 'auth')).to.equal(undefined);
  });

  it('lets a Box whose Cluster went first go, leaving the database as it is', async function () {
    cloudNativePg(h);
    await h.readyBox(NS, { database: { cluster: { name: 'pg' } }, reclaimPolicy: 'Delete' });
    await h.kube.delete(CNPG_CLUSTERS, NS, 'pg');
    await h.kube.delete(BOXES, NS, 'auth');
    await h.reconcile(h.boxes, NS, 'auth');
    expect(h.databases.calls).to.not.include(`drop ${NS}`);
    expect(h.object(BOXES, NS, 'auth')).to.equal(undefined);
  });
});

describe('status.database', function () {
  it('says where the database comes from before anything is read', function () {
    expect(declaredDatabase(box({}))).to.deep.equal({ source: 'Operator' });
    expect(declaredDatabase(box({ secretRef: { name: 'db' } }))).to.deep.equal({ source: 'Secret', secret: 'db' });
    expect(declaredDatabase(box({ cluster: { name: 'pg' } }))).to.deep.equal({ source: 'Cluster', cluster: 'pg' });
  });

  it('takes a server that answered with an SQL error as reached, one that did not let the operator in as not', function () {
    const at = { source: 'Operator' } as const;
    const failing = (code: string): Error => Object.assign(new Error(code), { code });
    expect(databaseStatus(at).reachable).to.equal(true);
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', '08006', '28P01', '3D000', '57P03']) {
      expect(databaseStatus(at, failing(code)).reachable, code).to.equal(false);
    }
    expect(databaseStatus(at, new Error('timeout exceeded when trying to connect')).reachable).to.equal(false);
    for (const code of ['42501', '40001']) expect(databaseStatus(at, failing(code)).reachable, code).to.equal(true);
    expect(databaseStatus(at, new NotOwned('not ours')).reachable).to.equal(true);
  });

  it("says the operator's own database, and where the pods reach it", async function () {
    const h = new OperatorHarness();
    const auth = await h.readyBox(NS);
    const own = ownDatabaseNames(NS, FakeBoxDatabases.NAME_KEY).database;
    expect(auth.status!.database).to.deep.include({
      source: 'Operator',
      host: 'db.example:5432',
      database: own,
      isolation: 'Database',
      reachable: true,
    });
  });

  it("sends the queries of boxes in the operator's database through its pooler, when it has one (the chart's CloudNativePG)", async function () {
    const h = new OperatorHarness(undefined, {
      ...SETTINGS,
      boxDatabaseHost: 'db-rw.boxauth-system.svc:5432',
      boxDatabasePoolerHost: 'db-pooler.boxauth-system.svc:5432',
    });
    const auth = await h.readyBox(NS);
    const database = h.object<SecretObject>(SECRETS, NS, 'auth-database');
    const { role, database: own } = ownDatabaseNames(NS, FakeBoxDatabases.NAME_KEY);
    const password = encodeURIComponent(secretValue(database, 'password')!);
    expect(secretValue(database, 'DATABASE_URL')).to.equal(`postgres://${role}:${password}@db-pooler.boxauth-system.svc:5432/${own}`);
    expect(secretValue(database, 'DATABASE_DIRECT_URL')).to.equal(`postgres://${role}:${password}@db-rw.boxauth-system.svc:5432/${own}`);
    const env = (h.object<KObject>(DEPLOYMENTS, NS, 'auth') as any).spec.template.spec.containers[0].env.map(
      (e: { name: string }) => e.name,
    );
    expect(env).to.include('BOXAUTH_DATABASE_DIRECT_URL');
    expect(auth.status!.database).to.deep.include({
      source: 'Operator',
      host: 'db-pooler.boxauth-system.svc:5432',
      directHost: 'db-rw.boxauth-system.svc:5432',
    });
  });
});
