// The operator against a real kube-apiserver + etcd (scripts/kube-up.sh, as
// controller-runtime's envtest runs them), driven with the real kubectl. The
// operator is a real process authenticated with a token of the chart's
// ServiceAccount, under the chart's RBAC; box APIs are started from the
// Deployments it writes, as a kubelet would (with their ServiceAccount's
// token). The sections run in order on one cluster; the fault tests come last
// because they replace the operator.
import pg from 'pg';
import { createDatabase } from '../../support/postgres.js';
import { clusterDnsEnv, TestCluster } from '../../support/kube.js';
import { freePort } from '../../support/ports.js';
import { describeChart } from './chart.js';
import { describeCloudNativePg } from './cnpg.js';
import { describeCrds } from './crds.js';
import { describeExamples } from './examples.js';
import { describeFaults } from './faults.js';
import { describeHealth } from './health.js';
import { describeHosted } from './hosted.js';
import { describeReserved } from './reserved.js';
import { describeSamlApps } from './saml.js';
import { describeTenancy } from './tenancy.js';
import { describeTls } from './tls.js';
import { describeWorkload } from './workload.js';
import { chartObjects, OPERATOR_NAMESPACE, sql, startOperator, suite } from './suite.js';

// The admission policy is part of the operator's rights: what RBAC grants on Secrets, Services, Deployments and
// ServiceAccounts it narrows to the objects the operator made, so every test runs the operator under it.
const RBAC_KINDS = new Set([
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

describe('the operator on a real kube-apiserver', function () {
  this.timeout(120_000);
  this.slow(10_000);

  before(async function () {
    this.timeout(40 * 60_000); // the first run on a machine builds kube-apiserver, etcd, kubectl and helm
    suite.pods = [];
    suite.cluster = await TestCluster.start();
    const cluster = suite.cluster;
    await cluster.k(['create', 'namespace', OPERATOR_NAMESPACE]);
    const objects = await chartObjects(cluster);
    const rbac = objects.filter((o) => RBAC_KINDS.has(o.kind));
    await cluster.k(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbac }));
    suite.operatorKubeconfig = await cluster.serviceAccountKubeconfig(OPERATOR_NAMESPACE, 'boxauth-operator');
    // The chart's settings of the operator (Lease name, image, workers...), then the test's.
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.spec.template.spec.containers[0].name === 'operator');
    const chartEnv = Object.fromEntries(
      deployment.spec.template.spec.containers[0].env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]),
    );
    suite.databaseUrl = await createDatabase('op');
    suite.hostPort = await freePort();
    suite.operatorEnv = {
      ...chartEnv,
      BOXAUTH_DATA_DIR: cluster.dir,
      POD_NAMESPACE: OPERATOR_NAMESPACE,
      DATABASE_URL: suite.databaseUrl,
      BOXAUTH_OPERATOR_RESYNC_SECONDS: '2',
      BOXAUTH_OPERATOR_LEASE_SECONDS: '4',
      BOXAUTH_OPERATOR_BOX_IMAGE: 'boxauth:test',
      // The host's Service, as this machine has it: the host run from its Deployment on a port of its own (hosted.ts).
      BOXAUTH_OPERATOR_HOST_URL: `http://127.0.0.1:${suite.hostPort}`,
      // Service names (a CloudNativePG Cluster's -rw Service) resolve as in a pod: cnpg.ts.
      ...clusterDnsEnv(),
    };
    suite.operator = await startOperator('operator-1');
  });

  afterEach(function () {
    // A failure is easier to read with what the operator said just before it.
    if (this.currentTest?.state !== 'failed' || !suite.operator) return;
    const lines = suite.operator.logs.slice(-40).map((l) => JSON.stringify(l).slice(0, 400));
    process.stderr.write(`--- last operator log lines:\n${lines.join('\n')}\n---\n`);
  });

  after(async function () {
    this.timeout(120_000);
    for (const pod of suite.pods ?? []) await pod.stop().catch(() => undefined);
    await suite.operator?.kill('SIGTERM');
    await suite.cluster?.stop();
    if (suite.databaseUrl) {
      const url = new URL(suite.databaseUrl);
      const name = url.pathname.slice(1);
      // The boxes' databases and roles are the whole server's: those made for this database's boxes go with it.
      const boxDatabases = (
        await sql<{ d: string; r: string }>(`SELECT datname AS d, pg_get_userbyid(datdba) AS r FROM pg_database
          WHERE shobj_description(oid, 'pg_database') = 'boxauth owner: box ' || datname || ' of database ' || current_database()`)
      ).map((row) => row.d);
      const roles = (
        await sql<{ r: string }>(`SELECT DISTINCT r.rolname AS r FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
        WHERE NOT r.rolsuper AND n.nspname LIKE 'box\\_%'`)
      ).map((row) => row.r);
      url.pathname = '/postgres';
      const db = new pg.Client({ connectionString: url.toString() });
      await db.connect();
      try {
        for (const d of boxDatabases) await db.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(d)} WITH (FORCE)`);
        await db.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        for (const r of [...new Set([...roles, ...boxDatabases])]) await db.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(r)}`);
      } finally {
        await db.end();
      }
    }
  });

  describeCrds();
  describeExamples();
  describeChart();
  describeHealth();
  describeWorkload();
  describeReserved();
  describeTenancy();
  describeHosted();
  describeTls();
  describeCloudNativePg();
  describeSamlApps();
  describeFaults();
});
