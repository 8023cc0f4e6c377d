// The Box controller's decisions, on an API server in memory and with the
// box's database work faked (what boxdb.ts does in PostgreSQL is tested by the
// operator's end-to-end suite): what a Box gets, when it is refused, and what
// its finalizer does.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { boxDbNames, NotOwned, ownDatabaseNames } from '../../../../operator/boxdb.js';
import { BOX_FINALIZER, type BoxResource } from '../../../../operator/controllers/box.js';
import type { Condition } from '../../../../operator/conditions.js';
import { Problem } from '../../../../operator/controller.js';
import {
  BOXES,
  CLUSTER_ROLE_BINDINGS,
  DEPLOYMENTS,
  KubeError,
  SECRETS,
  SERVICE_ACCOUNTS,
  SERVICES,
  type KObject,
} from '../../../../operator/kube.js';
import { secretValue, type SecretObject } from '../../../../operator/secrets.js';
import { readCrdSchema } from '../../../../api/schema/resources.js';
import { passwordCheck } from '../../../../api/schema/password-policy.js';
import { PASSWORD_MIN_LENGTH } from '../../../../api/config.js';
import { FakeBoxDatabases, OperatorHarness, ready, SETTINGS } from '../../../support/operator.js';
import { testCa } from '../../../support/tls.js';

const NS = 'team-a';
const box = (spec: BoxResource['spec'] = {}, name = 'auth'): BoxResource => ({ metadata: { name, namespace: NS }, spec });
const names = (objects: KObject[]): string[] => objects.map((o) => o.metadata.name).sort();
/** A subject of another namespace's box, which no write of this box's may lose. */
const OTHER_SUBJECT = { kind: 'ServiceAccount', name: 'auth', namespace: 'team-b' };
const tokenReviewBinding = (subjects: object[]): KObject => ({
  metadata: { name: SETTINGS.tokenReviewBinding },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
  subjects,
});
const available = (obj: BoxResource): Condition | undefined => obj.status?.conditions?.find((c) => c.type === 'Available');

describe('Box controller', function () {
  let h: OperatorHarness;
  beforeEach(() => {
    h = new OperatorHarness();
  });

  const current = (name = 'auth'): BoxResource => h.object<BoxResource>(BOXES, NS, name)!;
  const subjects = (): unknown =>
    (h.kube.object(CLUSTER_ROLE_BINDINGS, undefined, SETTINGS.tokenReviewBinding) as { subjects?: unknown })?.subjects;

  it('provisions a Box: finalizer, database, Secrets, ServiceAccount, Service, Deployment; then Ready=True Provisioned', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    const auth = current();
    expect(auth.metadata.finalizers).to.deep.equal([BOX_FINALIZER]);
    expect(names(h.kube.objects(SECRETS, NS))).to.deep.equal([
      'auth-admin',
      'auth-database',
      'auth-factor-key',
      'auth-root-client',
      'auth-signing-key',
    ]);
    for (const secret of h.kube.objects(SECRETS, NS)) {
      expect(secret.metadata.ownerReferences, secret.metadata.name).to.deep.equal([
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Box',
          name: 'auth',
          uid: auth.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const database = h.kube.object<SecretObject>(SECRETS, NS, 'auth-database');
    const password = secretValue(database, 'password')!;
    expect(h.databases.passwords.get(NS)).to.equal(password).and.have.length.above(20);
    // A database of its own (BOXAUTH_OPERATOR_BOX_ISOLATION's default): database, role and schema of one name, not the namespace's.
    const { role, schema, database: own } = ownDatabaseNames(NS, FakeBoxDatabases.NAME_KEY);
    expect([schema, own]).to.deep.equal([role, role]);
    expect(role).to.match(/^box_[0-9a-f]{32}$/);
    expect(secretValue(database, 'DATABASE_URL')).to.equal(`postgres://${role}:${encodeURIComponent(password)}@db.example:5432/${own}`);
    expect(names(h.kube.objects(SERVICE_ACCOUNTS, NS))).to.deep.equal(['auth']);
    expect(names(h.kube.objects(SERVICES, NS))).to.deep.equal(['auth']);
    expect(names(h.kube.objects(DEPLOYMENTS, NS))).to.deep.equal(['auth']);
    expect(h.kube.objects(CLUSTER_ROLE_BINDINGS)).to.deep.equal([]); // no TokenReview: no auth-delegator
    expect(ready(auth)).to.deep.include({ status: 'True', reason: 'Provisioned', observedGeneration: 1 });
    expect(auth.status).to.deep.include({
      url: 'http://auth.team-a.svc',
      grpcAuthz: 'auth.team-a.svc:9001',
      schema,
      deployment: 'auth',
      service: 'auth',
      serviceAccount: 'auth',
      availableReplicas: 0,
    });
    expect(available(auth)).to.deep.include({ status: 'False', reason: 'NoPodsAvailable' });
    expect(h.kube.eventsAbout(NS, 'auth')).to.deep.equal(['Normal Provisioned']);
  });

  it('leaves a box that lives in a schema of the shared database there, and says so and how to move it', async function () {
    h.databases.inSharedSchema.add(NS);
    const auth = await h.readyBox(NS);
    const { role, schema } = boxDbNames(NS, 'boxauth');
    const password = encodeURIComponent(secretValue(h.kube.object<SecretObject>(SECRETS, NS, 'auth-database'), 'password')!);
    expect(secretValue(h.kube.object<SecretObject>(SECRETS, NS, 'auth-database'), 'DATABASE_URL')).to.equal(
      `postgres://${role}:${password}@db.example:5432/boxauth`,
    );
    expect(auth.status!.database).to.deep.include({ database: 'boxauth', role, isolation: 'Schema' });
    expect(ready(auth)!.message).to.match(
      new RegExp(
        `^schema ${schema} of database boxauth, shared with other boxes, where the box was made \\(it stays there: .*docs/guides/upgrading.md says how to move it\\), Secrets`,
      ),
    );

    // A new box of the same operator gets a database of its own; with BOXAUTH_OPERATOR_BOX_ISOLATION=Schema, a schema, said plainly.
    const other = await h.readyBox('team-b');
    expect(other.status!.database).to.deep.include({
      isolation: 'Database',
      database: ownDatabaseNames('team-b', FakeBoxDatabases.NAME_KEY).database,
    });
    expect(ready(other)!.message).to.match(/^database box_[0-9a-f]{32} of its own, Secrets/);
    const shared = await new OperatorHarness(undefined, { ...SETTINGS, boxIsolation: 'Schema' }).readyBox('team-c');
    expect(shared.status!.database).to.deep.include({ isolation: 'Schema', database: 'boxauth' });
    expect(ready(shared)!.message).to.match(/^schema box_team_c_[0-9a-f]{16}, Secrets/);
  });

  it('reports its API pods as Available from the Deployment: MinimumReplicasAvailable, ScaledToZero', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    await h.kube.patch(DEPLOYMENTS, NS, 'auth', { status: { availableReplicas: 1 } }, undefined, 'status');
    await h.reconcile(h.boxes, NS, 'auth');
    expect(available(current())).to.deep.include({ status: 'True', reason: 'MinimumReplicasAvailable' });
    expect(current().status!.availableReplicas).to.equal(1);
    await h.kube.patch(BOXES, NS, 'auth', { spec: { replicas: 0 } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(available(current())).to.deep.include({ status: 'False', reason: 'ScaledToZero' });
  });

  it('refuses a second Box in the namespace (DuplicateBox) and makes nothing for it', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    await h.clock.advance(1000); // creationTimestamp has whole seconds: the second Box is the younger
    h.kube.put(BOXES, box({}, 'second'));
    await h.reconcile(h.boxes, NS, 'second');
    const second = current('second');
    expect(ready(second)).to.deep.include({ status: 'False', reason: 'DuplicateBox' });
    expect(ready(second)!.message).to.equal(
      'namespace team-a already has Box auth; a namespace holds one box: delete this one or use another namespace',
    );
    expect(Object.keys(second.status!).sort()).to.deep.equal(['conditions', 'observedGeneration']);
    expect(second.metadata.finalizers).to.equal(undefined);
    expect(names(h.kube.objects(SECRETS, NS)).filter((n) => n.startsWith('second'))).to.deep.equal([]);
    expect(h.databases.calls).to.deep.equal(['ensure team-a']); // the first Box's only
    expect(h.kube.eventsAbout(NS, 'second')).to.deep.equal(['Warning DuplicateBox']);
    expect(ready(current())).to.deep.include({ status: 'True' });
  });

  it('with the image pinned, refuses a Box whose spec.image names another (ImageNotAllowed), making and changing nothing', async function () {
    const imageOf = (): string => h.object<any>(DEPLOYMENTS, NS, 'auth')!.spec.template.spec.containers[0].image;
    // Unpinned (the default), a Box writer chooses the image.
    await h.readyBox(NS, { image: 'registry.example/anything:1' });
    expect(imageOf()).to.equal('registry.example/anything:1');

    h = new OperatorHarness(undefined, { ...SETTINGS, pinImage: true });
    h.kube.put(BOXES, box({ image: 'attacker.example/boxauth:evil' }));
    await h.reconcile(h.boxes, NS, 'auth');
    const refused = current();
    expect(ready(refused)).to.deep.include({ status: 'False', reason: 'ImageNotAllowed' });
    expect(ready(refused)!.message).to.equal(
      'spec.image is attacker.example/boxauth:evil, but this operator runs boxes on boxauth:test only (BOXAUTH_OPERATOR_PIN_BOX_IMAGE): remove spec.image',
    );
    expect(refused.status!.conditions!.find((c) => c.type === 'Stalled')).to.deep.include({ status: 'True', reason: 'ImageNotAllowed' });
    expect(refused.metadata.finalizers).to.equal(undefined);
    expect([...h.kube.objects(SECRETS, NS), ...h.kube.objects(DEPLOYMENTS, NS), ...h.kube.objects(SERVICE_ACCOUNTS, NS)]).to.deep.equal([]);
    expect(h.databases.calls).to.deep.equal([]);
    expect(h.kube.eventsAbout(NS, 'auth')).to.deep.equal(['Warning ImageNotAllowed']);

    // The pinned image itself may be named; the box runs it.
    await h.kube.patch(BOXES, NS, 'auth', { spec: { image: SETTINGS.image } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(ready(current())).to.deep.include({ status: 'True', reason: 'Provisioned' });
    expect(imageOf()).to.equal(SETTINGS.image);

    // A running box whose spec.image turns to another is refused; its Deployment stays as it was.
    const before = h.object(DEPLOYMENTS, NS, 'auth');
    await h.kube.patch(BOXES, NS, 'auth', { spec: { image: 'registry.example/anything:1' } });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(ready(current())).to.deep.include({ status: 'False', reason: 'ImageNotAllowed' });
    expect(h.object(DEPLOYMENTS, NS, 'auth')).to.deep.equal(before);
  });

  it('reports a missing or unusable spec.database Secret (DatabaseSecretNotFound, DatabaseSecretInvalid) and retries', async function () {
    h.kube.put(BOXES, box({ database: { secretRef: { name: 'pg' } } }));
    const missing = await h.failedReconcile(h.boxes, NS, 'auth');
    expect(missing).to.be.instanceOf(Problem).and.include({ reason: 'DatabaseSecretNotFound' });
    expect(ready(current())).to.deep.include({ status: 'False', reason: 'DatabaseSecretNotFound' });
    await h.kube.create(SECRETS, NS, { metadata: { name: 'pg' }, stringData: { DATABASE_URL: 'mysql://nope' } });
    const invalid = await h.failedReconcile(h.boxes, NS, 'auth');
    expect(invalid).to.include({ reason: 'DatabaseSecretInvalid' });
    expect(ready(current())!.message).to.equal('Secret team-a/pg key "DATABASE_URL" must hold a postgres:// URL');
    expect(h.databases.calls).to.deep.equal([]);
    expect(h.kube.eventsAbout(NS, 'auth')).to.deep.equal(['Warning DatabaseSecretNotFound', 'Warning DatabaseSecretInvalid']);
  });

  it("leaves a schema or role that is not the namespace's alone (DatabaseOwnedElsewhere), without a retry loop", async function () {
    h.databases.failure = new NotOwned('schema "box_team_a_0123" exists with no comment: …');
    h.kube.put(BOXES, box());
    expect(await h.reconcile(h.boxes, NS, 'auth')).to.equal(undefined); // no throw: the periodic resync looks again
    expect(ready(current())).to.deep.include({
      status: 'False',
      reason: 'DatabaseOwnedElsewhere',
      message: 'schema "box_team_a_0123" exists with no comment: …',
    });
    expect(h.kube.objects(DEPLOYMENTS, NS)).to.deep.equal([]);
  });

  it('reports any other failure as ProvisioningFailed, keeping what the status said, and retries', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    const stop = h.kube.failWhen((r) => r.verb === 'apply' && r.type === DEPLOYMENTS);
    await h.kube.patch(BOXES, NS, 'auth', { spec: { replicas: 2 } });
    const failure = await h.failedReconcile(h.boxes, NS, 'auth');
    stop();
    expect(failure.message).to.equal('failure injected by the test');
    expect(ready(current())).to.deep.include({
      status: 'False',
      reason: 'ProvisioningFailed',
      message: 'failure injected by the test; retrying',
    });
    expect(current().status!.url).to.equal('http://auth.team-a.svc');
  });

  it("refuses a ServiceAccount of its name that is not the operator's (ServiceAccountConflict)", async function () {
    await h.kube.create(SERVICE_ACCOUNTS, NS, { metadata: { name: 'auth' } });
    h.kube.put(BOXES, box());
    const failure = await h.failedReconcile(h.boxes, NS, 'auth');
    expect(failure).to.include({ reason: 'ServiceAccountConflict' });
    const { message } = ready(current())!;
    expect(message).to.match(/^ServiceAccount team-a\/auth exists and is not the operator's; set spec\.serviceAccountName/);
    expect(h.kube.object(SERVICE_ACCOUNTS, NS, 'auth')!.metadata.ownerReferences).to.equal(undefined);
  });

  it('takes over what a deleted Box of the same name left, and keeps using its database password', async function () {
    const left = { apiVersion: 'boxauth.io/v1alpha1', kind: 'Box', name: 'auth', uid: 'the-deleted-box', controller: true };
    await h.kube.create(SECRETS, NS, {
      metadata: { name: 'auth-database', ownerReferences: [left] },
      stringData: { password: 'the-old-password' },
    });
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    expect(h.kube.object(SECRETS, NS, 'auth-database')!.metadata.ownerReferences![0]!.uid).to.equal(current().metadata.uid);
    expect(h.databases.passwords.get(NS)).to.equal('the-old-password');
  });

  it('generates a new signing key when spec.jwtAlg changes (SigningKeyReplaced)', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    const before = secretValue(h.kube.object(SECRETS, NS, 'auth-signing-key'), 'signing-key.pem');
    await h.kube.patch(BOXES, NS, 'auth', { spec: { jwtAlg: 'RS256' } });
    await h.reconcile(h.boxes, NS, 'auth');
    const key = h.kube.object(SECRETS, NS, 'auth-signing-key')!;
    expect(key.metadata.annotations).to.deep.equal({ 'boxauth.io/jwt-alg': 'RS256' });
    expect(secretValue(key, 'signing-key.pem')).to.match(/^-----BEGIN PRIVATE KEY-----/);
    expect(secretValue(key, 'signing-key.pem')).to.not.equal(before);
    expect(h.kube.eventsAbout(NS, 'auth')).to.include('Normal SigningKeyReplaced');
  });

  it('generates the factor key once, hands it to the API pods, and never replaces it (an admin-made one is used as it is)', async function () {
    h.kube.put(BOXES, box());
    await h.reconcile(h.boxes, NS, 'auth');
    const key = secretValue(h.kube.object(SECRETS, NS, 'auth-factor-key'), 'factor-key')!;
    expect(Buffer.from(key, 'base64')).to.have.length(32);
    const env: { name: string }[] = h.object<any>(DEPLOYMENTS, NS, 'auth')!.spec.template.spec.containers[0].env;
    expect(env.find((e) => e.name === 'BOXAUTH_FACTOR_KEY')).to.deep.equal({
      name: 'BOXAUTH_FACTOR_KEY',
      valueFrom: { secretKeyRef: { name: 'auth-factor-key', key: 'factor-key' } },
    });
    // Neither a new signing key nor another reconcile touches it.
    await h.kube.patch(BOXES, NS, 'auth', { spec: { jwtAlg: 'RS256' } });
    await h.reconcile(h.boxes, NS, 'auth');
    await h.reconcile(h.boxes, NS, 'auth');
    expect(secretValue(h.kube.object(SECRETS, NS, 'auth-factor-key'), 'factor-key')).to.equal(key);

    const mine = Buffer.alloc(32, 7).toString('base64');
    h.kube.put(SECRETS, { metadata: { name: 'other-factor-key', namespace: NS }, stringData: { 'factor-key': mine } });
    h.kube.put(BOXES, box({}, 'other'));
    await h.reconcile(h.boxes, NS, 'other');
    expect(secretValue(h.kube.object(SECRETS, NS, 'other-factor-key'), 'factor-key')).to.equal(mine);
  });

  describe('spec.tls', function () {
    const TLS = { tls: { secretName: 'auth-tls' } };
    let caDir: string;
    /** tls.crt and tls.key of a certificate for the box, and of its renewal. */
    let first: Record<string, string>;
    let renewed: Record<string, string>;

    before(function () {
      caDir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-tls-'));
      const ca = testCa(caDir);
      const pem = (files: { certFile: string; keyFile: string }): Record<string, string> => ({
        'tls.crt': fs.readFileSync(files.certFile, 'utf8'),
        'tls.key': fs.readFileSync(files.keyFile, 'utf8'),
      });
      first = pem(ca.issue('first'));
      renewed = pem(ca.issue('renewed'));
    });
    after(() => fs.rmSync(caDir, { recursive: true, force: true }));

    const tlsSecret = (data: Record<string, string>): Promise<KObject> =>
      h.kube.create(SECRETS, NS, { metadata: { name: 'auth-tls' }, type: 'kubernetes.io/tls', stringData: data });
    const template = (ns = NS): any => h.object<any>(DEPLOYMENTS, ns, 'auth')!.spec.template;
    const envOf = (ns = NS): Record<string, string> =>
      Object.fromEntries(template(ns).spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]));

    it('mounts the Secret read-only and serves HTTPS from it: BOXAUTH_TLS_*, https base URL, probes and Service', async function () {
      await tlsSecret(first);
      await h.readyBox(NS, TLS);
      const pod = template().spec;
      const api = pod.containers[0];
      expect(pod.volumes).to.deep.include({ name: 'tls', secret: { secretName: 'auth-tls' } });
      expect(api.volumeMounts).to.deep.include({ name: 'tls', mountPath: '/etc/boxauth/tls', readOnly: true });
      expect(envOf()).to.include({
        BOXAUTH_TLS_CERT_FILE: '/etc/boxauth/tls/tls.crt',
        BOXAUTH_TLS_KEY_FILE: '/etc/boxauth/tls/tls.key',
        BOXAUTH_BASE_URL: 'https://auth.team-a.svc',
      });
      // The gRPC decision port serves TLS too (the same certificate): it stays `grpc`, as Gateway API has no TLS twin of it.
      expect(api.ports).to.deep.equal([
        { name: 'https', containerPort: 8080, protocol: 'TCP' },
        { name: 'grpc-authz', containerPort: 9001, protocol: 'TCP' },
        { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
      ]);
      expect(envOf()).to.include({ BOXAUTH_METRICS_PORT: '9464', BOXAUTH_GRPC_PORT: '9001' });
      expect(api.readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
      expect(api.livenessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
      expect(h.object<any>(SERVICES, NS, 'auth')!.spec.ports).to.deep.equal([
        { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP', appProtocol: 'https' },
        { name: 'grpc-authz', port: 9001, targetPort: 'grpc-authz', protocol: 'TCP', appProtocol: 'grpc' },
      ]);
      expect(current().status!.url).to.equal('https://auth.team-a.svc');

      await h.readyBox('team-b'); // without spec.tls: plain HTTP, nothing mounted
      expect(envOf('team-b')).to.not.have.property('BOXAUTH_TLS_CERT_FILE');
      expect(envOf('team-b').BOXAUTH_BASE_URL).to.equal('http://auth.team-b.svc');
      expect(template('team-b').spec.volumes).to.deep.equal([{ name: 'tmp', emptyDir: {} }]);
      expect(template('team-b').spec.containers[0].readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'http', scheme: 'HTTP' });
      expect(h.object<any>(SERVICES, 'team-b', 'auth')!.spec.ports).to.deep.equal([
        { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' },
        { name: 'grpc-authz', port: 9001, targetPort: 'grpc-authz', protocol: 'TCP', appProtocol: 'grpc' },
      ]);
    });

    it('waits for a Secret with a usable pair (TLSSecretNotReady), leaving the Deployment as it is, and recovers', async function () {
      await h.readyBox(NS);
      const before = h.object(DEPLOYMENTS, NS, 'auth');
      await h.kube.patch(BOXES, NS, 'auth', { spec: TLS });
      expect(await h.reconcile(h.boxes, NS, 'auth')).to.equal(undefined); // no backoff loop: the Secret brings the Box back
      const why = (): string => ready(current())!.message;
      expect(ready(current())).to.deep.include({ status: 'False', reason: 'TLSSecretNotReady' });
      expect(why()).to.equal(
        'Secret team-a/auth-tls (spec.tls.secretName) does not exist; ' +
          "the box's Deployment is not made or changed until it holds a certificate and its key",
      );
      expect(h.object(DEPLOYMENTS, NS, 'auth')).to.deep.equal(before);
      expect(current().status!.url).to.equal('http://auth.team-a.svc'); // what still serves

      const secret = await tlsSecret({ 'tls.crt': first['tls.crt']! });
      expect(h.boxes.boxesUsing(secret)).to.deep.equal(['auth']); // the Secret informer enqueues the Box
      await h.reconcile(h.boxes, NS, 'auth');
      expect(why()).to.match(/^Secret team-a\/auth-tls \(spec\.tls\.secretName\) has no tls\.key; /);
      await h.kube.patch(SECRETS, NS, 'auth-tls', { stringData: { 'tls.key': renewed['tls.key']! } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(why()).to.match(/^Secret team-a\/auth-tls \(spec\.tls\.secretName\) holds no certificate and key that make a pair \(/);
      expect(h.object(DEPLOYMENTS, NS, 'auth')).to.deep.equal(before);

      await h.kube.patch(SECRETS, NS, 'auth-tls', { stringData: { 'tls.key': first['tls.key']! } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(ready(current())).to.deep.include({ status: 'True', reason: 'Provisioned' });
      expect(current().status!.url).to.equal('https://auth.team-a.svc');
      expect(envOf()).to.include({ BOXAUTH_TLS_CERT_FILE: '/etc/boxauth/tls/tls.crt', BOXAUTH_BASE_URL: 'https://auth.team-a.svc' });
      expect(h.kube.eventsAbout(NS, 'auth')).to.include('Warning TLSSecretNotReady').and.to.include('Normal Provisioned');
    });

    it('leaves the pod template alone when the certificate is renewed (the pods re-read the files), unlike its other Secrets', async function () {
      await tlsSecret(first);
      await h.readyBox(NS, TLS);
      const before = h.object(DEPLOYMENTS, NS, 'auth');
      const reads = (): number => h.kube.requests.filter((r) => r.verb === 'get' && r.name === 'auth-tls').length;
      const readsBefore = reads();
      await h.kube.patch(SECRETS, NS, 'auth-tls', { stringData: renewed });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(reads()).to.be.above(readsBefore); // the renewal was looked at...
      expect(h.object(DEPLOYMENTS, NS, 'auth')).to.deep.equal(before); // ...and the Deployment not even written
      expect(ready(current())).to.deep.include({ status: 'True', reason: 'Provisioned' });

      const configHash = (): string => template().metadata.annotations['boxauth.io/config-hash'];
      const hash = configHash();
      await h.kube.patch(SECRETS, NS, 'auth-admin', { stringData: { password: 'a-new-admin-password' } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(configHash()).to.not.equal(hash); // read through the environment, at start: the pods roll
    });
  });

  describe('spec.passwordMinLength', function () {
    const env = (): Record<string, string> =>
      Object.fromEntries(
        (h.object<any>(DEPLOYMENTS, NS, 'auth')!.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [
          e.name,
          e.value ?? '',
        ]),
      );
    const adminPassword = (): string => secretValue(h.kube.object<SecretObject>(SECRETS, NS, 'auth-admin'), 'password')!;

    it("is the pods' BOXAUTH_PASSWORD_MIN_LENGTH, 8 when unset, and the first admin's generated password keeps it", async function () {
      await h.readyBox(NS);
      expect(env().BOXAUTH_PASSWORD_MIN_LENGTH).to.equal('8');
      expect(adminPassword()).to.have.length(24);
      await h.readyBox('team-b', { passwordMinLength: 40 });
      const teamB = h.object<any>(DEPLOYMENTS, 'team-b', 'auth')!.spec.template.spec.containers[0].env as {
        name: string;
        value?: string;
      }[];
      expect(teamB).to.deep.include({ name: 'BOXAUTH_PASSWORD_MIN_LENGTH', value: '40' });
      const generated = secretValue(h.kube.object<SecretObject>(SECRETS, 'team-b', 'auth-admin'), 'password')!;
      expect(generated).to.have.length(40);
      expect((await passwordCheck({ passwordMinLength: 40, box: 'team-b/auth' }))(generated, 'admin@localhost')).to.equal(undefined);
    });

    it('the CRD takes 8 to 64, as the box does (BOXAUTH_PASSWORD_MIN_LENGTH)', function () {
      const field = (readCrdSchema('Box').spec as any).properties.passwordMinLength;
      expect(field).to.include({ type: 'integer', minimum: PASSWORD_MIN_LENGTH.least, maximum: PASSWORD_MIN_LENGTH.most, default: 8 });
    });
  });

  describe('spec.publicSubjects', function () {
    const env = (): Record<string, string> =>
      Object.fromEntries(
        h
          .object<any>(DEPLOYMENTS, NS, 'auth')!
          .spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
      );

    it('sets BOXAUTH_PUBLIC_SUBJECTS only when the Box says: unset, the box keeps what its database recorded', async function () {
      await h.readyBox(NS, { publicSubjects: 'opaque' as const });
      expect(env()).to.include({ BOXAUTH_PUBLIC_SUBJECTS: 'opaque' });
      await h.readyBox('team-b');
      expect(
        h.object<any>(DEPLOYMENTS, 'team-b', 'auth')!.spec.template.spec.containers[0].env.map((e: { name: string }) => e.name),
      ).to.not.include('BOXAUTH_PUBLIC_SUBJECTS');
    });
  });

  describe('spec.smtp', function () {
    const SMTP = {
      smtp: {
        url: 'smtp://mailer@mail.example.com:587',
        from: 'boxauth <no-reply@example.com>',
        passwordSecretRef: { name: 'smtp', key: 'password' },
        templates: { configMapRef: { name: 'mail-templates' } },
        signInCodes: 'second-factor' as const,
      },
    };
    const template = (): any => h.object<any>(DEPLOYMENTS, NS, 'auth')!.spec.template;
    const env = (): any[] => template().spec.containers[0].env;
    const smtpSecret = (data: Record<string, string>): Promise<KObject> =>
      h.kube.create(SECRETS, NS, { metadata: { name: 'smtp' }, type: 'Opaque', stringData: data });

    it('gives the pods the URL and From as values, the password from its Secret, the templates mounted', async function () {
      await smtpSecret({ password: 'hunter2' });
      await h.readyBox(NS, SMTP);
      expect(env().filter((e) => /^BOXAUTH_(SMTP|MAIL)_/.test(e.name))).to.deep.equal([
        { name: 'BOXAUTH_SMTP_URL', value: 'smtp://mailer@mail.example.com:587' },
        { name: 'BOXAUTH_SMTP_FROM', value: 'boxauth <no-reply@example.com>' },
        { name: 'BOXAUTH_SMTP_PASSWORD', valueFrom: { secretKeyRef: { name: 'smtp', key: 'password' } } },
        { name: 'BOXAUTH_MAIL_TEMPLATES', value: '/etc/boxauth/mail-templates' },
        { name: 'BOXAUTH_SMTP_SIGN_IN_CODES', value: 'second-factor' },
      ]);
      expect(JSON.stringify(h.object(DEPLOYMENTS, NS, 'auth'))).not.to.include('hunter2');
      expect(template().spec.volumes).to.deep.include({ name: 'mail-templates', configMap: { name: 'mail-templates' } });
      expect(template().spec.containers[0].volumeMounts).to.deep.include({
        name: 'mail-templates',
        mountPath: '/etc/boxauth/mail-templates',
        readOnly: true,
      });

      const configHash = (): string => template().metadata.annotations['boxauth.io/config-hash'];
      const hash = configHash();
      const secret = h.kube.object<SecretObject>(SECRETS, NS, 'smtp')!;
      expect(h.boxes.boxesUsing(secret)).to.deep.equal(['auth']); // the Secret informer enqueues the Box
      await h.kube.patch(SECRETS, NS, 'smtp', { stringData: { password: 'a-new-password' } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(configHash(), 'a new password rolls the pods').to.not.equal(hash);
    });

    it('the CRD refuses a url with a password in it (it belongs in the Secret), and a From of two lines', function () {
      const smtp = (readCrdSchema('Box').spec as any).properties.smtp.properties;
      const url = new RegExp(smtp.url.pattern);
      for (const ok of [
        'smtp://mail.example.com',
        'smtp://mailer@mail.example.com:587',
        'smtps://no-reply%40example.com@mail.example.com:465/',
      ])
        expect(url.test(ok), ok).to.equal(true);
      for (const bad of [
        'smtp://mailer:hunter2@mail.example.com',
        'http://mail.example.com',
        'smtp://a@b@mail.example.com',
        'smtp://mail.example.com/x?y',
      ])
        expect(url.test(bad), bad).to.equal(false);
      expect(new RegExp(smtp.from.pattern).test('a@example.com\nBcc: evil@x')).to.equal(false);
    });

    it('without spec.smtp, no mail variable at all', async function () {
      await h.readyBox(NS);
      expect(env().filter((e) => /^BOXAUTH_(SMTP|MAIL)_/.test(e.name))).to.deep.equal([]);
    });

    it('waits for the password Secret and its key (SMTPSecretNotReady), leaving the Deployment as it is, and recovers', async function () {
      await h.readyBox(NS);
      const before = h.object(DEPLOYMENTS, NS, 'auth');
      await h.kube.patch(BOXES, NS, 'auth', { spec: SMTP });
      expect(await h.reconcile(h.boxes, NS, 'auth')).to.equal(undefined);
      const why = (): string => ready(current())!.message;
      expect(ready(current())).to.deep.include({ status: 'False', reason: 'SMTPSecretNotReady' });
      expect(why()).to.equal(
        "Secret team-a/smtp (spec.smtp.passwordSecretRef) does not exist; the box's Deployment is not made or changed until it holds the SMTP password",
      );
      await smtpSecret({ pass: 'x' });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(why()).to.match(/^Secret team-a\/smtp \(spec\.smtp\.passwordSecretRef\) has no key password; /);
      expect(h.object(DEPLOYMENTS, NS, 'auth')).to.deep.equal(before);
      await h.kube.patch(SECRETS, NS, 'smtp', { stringData: { password: 'hunter2' } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(ready(current())).to.deep.include({ status: 'True', reason: 'Provisioned' });
      expect(env().map((e) => e.name)).to.include('BOXAUTH_SMTP_PASSWORD');
    });
  });

  describe("TokenReview: a place in the chart's one ClusterRoleBinding, never a binding of its own", function () {
    it("puts the box's ServiceAccount in while it has tokens reviewed, follows spec.serviceAccountName, takes it out after; others' stay", async function () {
      h.kube.put(CLUSTER_ROLE_BINDINGS, tokenReviewBinding([OTHER_SUBJECT]));
      h.kube.put(BOXES, box({ clusterIssuer: 'tokenreview' }));
      await h.reconcile(h.boxes, NS, 'auth');
      expect(ready(current())).to.deep.include({ status: 'True', reason: 'Provisioned' });
      expect(current().status).to.deep.include({ tokenReviewBinding: SETTINGS.tokenReviewBinding });
      expect(subjects()).to.deep.equal([OTHER_SUBJECT, { kind: 'ServiceAccount', name: 'auth', namespace: NS }]);
      await h.kube.patch(BOXES, NS, 'auth', { spec: { serviceAccountName: 'mine' } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(subjects()).to.deep.equal([OTHER_SUBJECT, { kind: 'ServiceAccount', name: 'mine', namespace: NS }]);
      await h.kube.patch(BOXES, NS, 'auth', { spec: { clusterIssuer: 'auto' } });
      await h.reconcile(h.boxes, NS, 'auth');
      expect(subjects()).to.deep.equal([OTHER_SUBJECT]);
      // The rights the chart gives it (get and update of that one binding) are all it used.
      const verbs = h.kube.requests.filter((r) => r.type === CLUSTER_ROLE_BINDINGS).map((r) => `${r.verb} ${r.name}`);
      expect([...new Set(verbs)].sort()).to.deep.equal([`get ${SETTINGS.tokenReviewBinding}`, `replace ${SETTINGS.tokenReviewBinding}`]);
    });

    it('retries a write that raced another (resourceVersion), keeping what the other wrote', async function () {
      h.kube.put(CLUSTER_ROLE_BINDINGS, tokenReviewBinding([]));
      h.kube.put(BOXES, box({ clusterIssuer: 'tokenreview' }));
      let raced = false;
      const release = h.kube.failWhen(
        (r) => {
          if (r.verb !== 'replace' || r.type !== CLUSTER_ROLE_BINDINGS || raced) return false;
          raced = true;
          // Another box's reconcile wrote first: this replace carries a stale resourceVersion.
          h.kube.put(CLUSTER_ROLE_BINDINGS, tokenReviewBinding([OTHER_SUBJECT]));
          return true;
        },
        new KubeError(409, 'Conflict', 'the object has been modified'),
      );
      await h.reconcile(h.boxes, NS, 'auth');
      release();
      expect(subjects()).to.deep.equal([OTHER_SUBJECT, { kind: 'ServiceAccount', name: 'auth', namespace: NS }]);
    });

    it("stalls with TokenReviewBindingMissing, creating nothing, when the chart's binding is not there", async function () {
      h.kube.put(BOXES, box({ clusterIssuer: 'tokenreview' }));
      expect((await h.failedReconcile(h.boxes, NS, 'auth')).message).to.include('may not create one');
      expect(ready(current())).to.deep.include({ status: 'False', reason: 'TokenReviewBindingMissing' });
      expect(ready(current())!.message).to.include(SETTINGS.tokenReviewBinding);
      expect(h.kube.objects(CLUSTER_ROLE_BINDINGS)).to.deep.equal([]);
    });
  });

  describe('finalizer', function () {
    async function deleted(spec: BoxResource['spec']): Promise<void> {
      h.kube.put(BOXES, box(spec));
      await h.reconcile(h.boxes, NS, 'auth');
      await h.kube.delete(BOXES, NS, 'auth');
      expect(current().metadata.deletionTimestamp).to.be.a('string'); // held by the finalizer
      await h.reconcile(h.boxes, NS, 'auth');
    }

    it('with reclaimPolicy Delete drops the database, takes its ServiceAccount out of the TokenReview binding, and lets the Box go', async function () {
      h.kube.put(CLUSTER_ROLE_BINDINGS, tokenReviewBinding([OTHER_SUBJECT]));
      await deleted({ reclaimPolicy: 'Delete', clusterIssuer: 'tokenreview' });
      expect(h.databases.calls).to.deep.equal(['ensure team-a', 'drop team-a']);
      expect(subjects()).to.deep.equal([OTHER_SUBJECT]);
      expect(h.object(BOXES, NS, 'auth')).to.equal(undefined);
    });

    it('with reclaimPolicy Retain (the default) hands the records to the REST API and keeps the database', async function () {
      await deleted({});
      expect(h.databases.calls).to.deep.equal(['ensure team-a', 'releaseRecords team-a', 'forget team-a']);
      expect(h.object(BOXES, NS, 'auth')).to.equal(undefined);
    });

    it('lets the Box go, reclaiming nothing, when the Secret of spec.database is gone (its namespace being deleted)', async function () {
      await h.kube.create(SECRETS, NS, {
        metadata: { name: 'pg' },
        stringData: { DATABASE_URL: 'postgres://admin:pw@db.team-a:5432/boxes' },
      });
      h.kube.put(BOXES, box({ reclaimPolicy: 'Delete', database: { secretRef: { name: 'pg' } } }));
      await h.reconcile(h.boxes, NS, 'auth');
      expect(ready(current())).to.deep.include({ status: 'True' });
      await h.kube.delete(SECRETS, NS, 'pg'); // a namespace's deletion takes Secrets at once; the Box waits for its finalizer
      await h.kube.delete(BOXES, NS, 'auth');
      await h.reconcile(h.boxes, NS, 'auth');
      expect(h.object(BOXES, NS, 'auth')).to.equal(undefined);
      expect(h.databases.calls).to.deep.equal(['ensure team-a', 'forget team-a']);
    });

    it('reclaims nothing for a duplicate Box', async function () {
      h.kube.put(BOXES, box());
      await h.reconcile(h.boxes, NS, 'auth');
      await h.clock.advance(1000);
      h.kube.put(BOXES, { metadata: { name: 'second', namespace: NS, finalizers: [BOX_FINALIZER] }, spec: { reclaimPolicy: 'Delete' } });
      await h.kube.delete(BOXES, NS, 'second');
      await h.reconcile(h.boxes, NS, 'second');
      expect(h.databases.calls).to.deep.equal(['ensure team-a']);
      expect(h.object(BOXES, NS, 'second')).to.equal(undefined);
      expect(ready(current())).to.deep.include({ status: 'True' });
    });
  });
});
