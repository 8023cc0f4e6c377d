// A Box naming a CloudNativePG Cluster (spec.database.cluster), against
// CloudNativePG's own CRDs (from its Go module, scripts/test-tools-build.sh):
// the API server validates examples/cloudnative-pg/ with their schemas and
// CEL rules. No CloudNativePG controller runs here, so the test plays its
// part as CloudNativePG writes it (pkg/specs): the application role owning
// the application database (in the suite's PostgreSQL), the application
// Secret, the -rw Service and the Pooler's Service. This machine has no
// cluster DNS: the operator and the box pod resolve Service names to
// 127.0.0.1 (test/support/cluster-dns.ts), and each Service's port is where
// PostgreSQL listens. The Pooler's Service leads to PostgreSQL itself: what
// PgBouncer in transaction mode does to the box's connections is
// test/component/operator/boxdb-owner.test.ts's.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { boxDbNames, ownerMark } from '../../../operator/boxdb.js';
import type { Box } from '../../support/box.js';
import { clusterDnsEnv, eventually, TOOLS_BIN } from '../../support/kube.js';
import { chartObjects, OPERATOR_NAMESPACE, readyOf, runBoxApi, servedHere, suite, token, waitReady } from './suite.js';

const NS = 'team-cnpg';
/** What scripts/test-tools-build.sh fetched: CloudNativePG's CRDs at the pinned version. */
const CNPG_CRDS = path.join(TOOLS_BIN, '..', 'cnpg');
/** CloudNativePG's defaults for the Cluster of examples/cloudnative-pg/postgres.yaml (bootstrap.initdb). */
const APP = 'app';

export function describeCloudNativePg(): void {
  describe('a Box naming a CloudNativePG Cluster (examples/cloudnative-pg/)', function () {
    let server: URL;
    let password = 'first-app-password';
    let api: Box | undefined;
    const schema = boxDbNames(NS, APP).schema;

    /** SQL as the suite's superuser, in `database` (default: the suite's). */
    async function sql<T extends pg.QueryResultRow = any>(text: string, database?: string): Promise<T[]> {
      const url = new URL(suite.databaseUrl);
      if (database) url.pathname = `/${database}`;
      const db = new pg.Client({ connectionString: url.toString() });
      await db.connect();
      try {
        return (await db.query<T>(text)).rows;
      } finally {
        await db.end();
      }
    }

    const apply = (objects: unknown[]): Promise<string> =>
      suite.cluster.k(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    const deployment = (): Promise<any> => suite.cluster.json(['get', 'deployment', 'auth', '-n', NS]);
    const configHash = async (): Promise<string> => (await deployment()).spec.template.metadata.annotations['boxauth.io/config-hash'];
    /** What CloudNativePG writes into the application Secret (pkg/specs/secrets.go), with the port of this machine's PostgreSQL. */
    const appSecret = (): unknown => {
      const host = 'auth-db-rw';
      const uri = (h: string): string => `postgresql://${APP}:${password}@${h}:${server.port}/${APP}`;
      return {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/basic-auth',
        metadata: { name: 'auth-db-app', namespace: NS, labels: { 'cnpg.io/reload': 'true', 'cnpg.io/userType': 'app' } },
        stringData: {
          username: APP,
          user: APP,
          password,
          dbname: APP,
          host,
          port: server.port,
          pgpass: `${host}:${server.port}:${APP}:${APP}:${password}\n`,
          uri: uri(`${host}.${NS}`),
          'fqdn-uri': uri(`${host}.${NS}.svc.cluster.local`),
        },
      };
    };
    /** A Service as CloudNativePG makes it, on the port PostgreSQL listens at here. */
    const service = (name: string, portName: string, selector: Record<string, string>): unknown => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: NS },
      spec: { type: 'ClusterIP', selector, ports: [{ name: portName, port: Number(server.port), targetPort: portName, protocol: 'TCP' }] },
    });

    before(async function () {
      this.timeout(120_000);
      server = new URL(suite.databaseUrl);
      const crds = ['clusters', 'poolers'].map((kind) => path.join(CNPG_CRDS, `postgresql.cnpg.io_${kind}.yaml`));
      for (const file of crds) expect(fs.existsSync(file), `${file}: run make test-tools`).to.equal(true);
      // Server-side: the Cluster CRD is larger than what client-side apply may keep in its annotation.
      await suite.cluster.k(['apply', '--server-side', ...crds.flatMap((f) => ['-f', f])]);
      await suite.cluster.k(['wait', '--for=condition=Established', 'crd/clusters.postgresql.cnpg.io', 'crd/poolers.postgresql.cnpg.io']);
      await suite.cluster.k(['create', 'namespace', NS]);
      // CloudNativePG's initdb: the application role, LOGIN and nothing more, owning the application database.
      await sql(`DROP DATABASE IF EXISTS ${APP} WITH (FORCE)`);
      await sql(`DROP ROLE IF EXISTS ${APP}`);
      await sql(`CREATE ROLE ${APP} LOGIN PASSWORD '${password}'`);
      await sql(`CREATE DATABASE ${APP} OWNER ${APP}`);
    });

    after(async function () {
      await api?.stop();
      for (const ns of [NS, `${NS}-missing`]) {
        await suite.cluster.kubectl(['delete', 'box', 'auth', '-n', ns, '--wait=true', '--timeout=60s', '--ignore-not-found']);
      }
      await sql(`DROP DATABASE IF EXISTS ${APP} WITH (FORCE)`);
      await sql(`DROP ROLE IF EXISTS ${APP}`);
    });

    it("accepts the example Cluster (synchronous, failover quorum) and Pooler under CloudNativePG's own CRDs", async function () {
      const applied = await suite.cluster.k(['apply', '--server-side', '-n', NS, '-f', 'examples/cloudnative-pg/postgres.yaml']);
      expect(applied).to.include('cluster.postgresql.cnpg.io/auth-db serverside-applied');
      expect(applied).to.include('pooler.postgresql.cnpg.io/auth-db-pooler serverside-applied');
      const cluster = await suite.cluster.json(['get', 'cluster', 'auth-db', '-n', NS]);
      expect(cluster.spec.instances).to.equal(3);
      expect(cluster.spec.postgresql.synchronous).to.deep.include({
        method: 'any',
        number: 1,
        dataDurability: 'required',
        failoverQuorum: true,
      });
      expect((await suite.cluster.json(['get', 'pooler', 'auth-db-pooler', '-n', NS])).spec.pgbouncer.poolMode).to.equal('transaction');
      // The CRDs' own CEL rules are in force: a synchronous stanza asking for no standby is refused.
      const refused = await suite.cluster.kubectl(
        ['apply', '--server-side', '-f', '-'],
        JSON.stringify({
          ...cluster,
          metadata: { name: 'bad', namespace: NS },
          spec: { ...cluster.spec, postgresql: { synchronous: { method: 'any', number: 0 } } },
        }),
      );
      expect(refused.code).to.not.equal(0);
      expect(refused.stderr).to.include('The number of synchronous replicas should be greater than zero');
    });

    it("renders, with the chart's cloudnativePg values, a Cluster and Pooler the API server accepts, and the operator's URLs", async function () {
      const values = ['--set', 'postgresql.enabled=false', '--set', 'cloudnativePg.enabled=true'];
      const lint = await suite.cluster.helm(['lint', 'charts/boxauth', '--strict', ...values]);
      expect(lint.code, lint.stdout + lint.stderr).to.equal(0);
      const objects = await chartObjects(suite.cluster, values);
      const ofKind = (kind: string): any[] => objects.filter((o) => o.kind === kind && o.apiVersion === 'postgresql.cnpg.io/v1');
      const dryRun = await suite.cluster.kubectl(
        ['apply', '--server-side', '--dry-run=server', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...ofKind('Cluster'), ...ofKind('Pooler')] }),
      );
      expect(dryRun.code, dryRun.stderr).to.equal(0);
      expect(dryRun.stdout).to.include('cluster.postgresql.cnpg.io/boxauth-db serverside-applied');
      expect(dryRun.stdout).to.include('pooler.postgresql.cnpg.io/boxauth-db-pooler serverside-applied');
      const env = objects.find((o) => o.kind === 'Deployment').spec.template.spec.containers[0].env;
      expect(env).to.deep.include({ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'boxauth-db-app', key: 'uri' } } });
      expect(env).to.deep.include({
        name: 'BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST',
        value: `boxauth-db-pooler.${OPERATOR_NAMESPACE}.svc:5432`,
      });
      const both = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '--set', 'cloudnativePg.enabled=true']);
      expect(both.code).to.not.equal(0);
      expect(both.stderr).to.include('postgresql.enabled and cloudnativePg.enabled both ask for');
    });

    it('provisions the box in the Cluster: queries through the Pooler, the change feed to -rw, credentials of the application Secret', async function () {
      // CloudNativePG's part: the application Secret and the Services of the Cluster and of the Pooler.
      await apply([
        appSecret(),
        service('auth-db-rw', 'postgres', { 'cnpg.io/cluster': 'auth-db', 'cnpg.io/instanceRole': 'primary' }),
        service('auth-db-pooler', 'pgbouncer', { 'cnpg.io/poolerName': 'auth-db-pooler' }),
      ]);
      await suite.cluster.k(['apply', '--server-side', '-n', NS, '-f', 'examples/cloudnative-pg/box.yaml']);
      await servedHere(NS, 60_000);

      const env = (await deployment()).spec.template.spec.containers[0].env.filter((e: any) => /DATABASE/.test(e.name));
      expect(env).to.deep.equal([
        { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'auth-database', key: 'DATABASE_URL' } } },
        { name: 'BOXAUTH_DATABASE_DIRECT_URL', valueFrom: { secretKeyRef: { name: 'auth-database', key: 'DATABASE_DIRECT_URL' } } },
      ]);
      const at = (host: string): string => `postgres://${APP}:${password}@${host}.${NS}.svc:${server.port}/${APP}`;
      expect(await suite.cluster.secretValue(NS, 'auth-database', 'DATABASE_URL')).to.equal(at('auth-db-pooler'));
      expect(await suite.cluster.secretValue(NS, 'auth-database', 'DATABASE_DIRECT_URL')).to.equal(at('auth-db-rw'));

      const box = await suite.cluster.json(['get', 'box', 'auth', '-n', NS]);
      expect(box.status.schema).to.equal(schema);
      expect(box.status.database).to.deep.equal({
        source: 'Cluster',
        cluster: 'auth-db',
        pooler: 'auth-db-pooler',
        secret: 'auth-db-app',
        host: `auth-db-pooler.${NS}.svc:${server.port}`,
        directHost: `auth-db-rw.${NS}.svc:${server.port}`,
        database: APP,
        role: APP,
        isolation: 'Database',
        reachable: true,
      });
      const [header, row] = (await suite.cluster.k(['get', 'box', 'auth', '-n', NS, '-o', 'wide'])).trim().split('\n');
      expect(header).to.match(/\sGRPC-AUTHZ\s+DATABASE\s+DB-REACHABLE\s+SERVING\s+HOST\s+AGE$/);
      expect(row).to.match(new RegExp(`\\sauth-db-pooler\\.${NS}\\.svc:${server.port}\\s+true\\s+Dedicated\\s+\\S+$`));

      // The schema is the application role's, marked as the namespace's, and that role's search_path; the role is as it was.
      expect(
        await sql(
          `SELECT nspowner::regrole::text AS owner, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = '${schema}'`,
          APP,
        ),
      ).to.deep.equal([{ owner: APP, mark: ownerMark(NS) }]);
      const [role] = await sql(
        `SELECT rolsuper, rolcreaterole, shobj_description(oid, 'pg_authid') AS mark,
           (SELECT setconfig FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase WHERE s.setrole = r.oid AND d.datname = '${APP}') AS settings
         FROM pg_roles r WHERE rolname = '${APP}'`,
      );
      expect(role).to.deep.equal({ rolsuper: false, rolcreaterole: false, mark: null, settings: [`search_path=${schema}`] });
    });

    it("serves tokens from a pod run from its Deployment, as make box runs one, through the Pooler's Service", async function () {
      api = await runBoxApi(NS, { env: clusterDnsEnv() });
      expect(new URL(api.env.DATABASE_URL!).hostname).to.equal(`auth-db-pooler.${NS}.svc`);
      expect(new URL(api.env.BOXAUTH_DATABASE_DIRECT_URL!).hostname).to.equal(`auth-db-rw.${NS}.svc`);
      const root = await token(api, 'root', await suite.cluster.secretValue(NS, 'auth-root-client', 'client-secret'));
      expect(root.status).to.equal(200);
      expect(await sql(`SELECT id FROM ${schema}.clients WHERE id = 'root'`, APP)).to.deep.equal([{ id: 'root' }]);
    });

    it('rolls the pods when the application password changes, and keeps writing records with the new one', async function () {
      await api?.stop(); // its connections were made with the old password; a kubelet would replace it
      api = undefined;
      const hash = await configHash();
      // CloudNativePG's part: the role's password follows its Secret.
      password = 'rotated-app-password';
      await sql(`ALTER ROLE ${APP} PASSWORD '${password}'`);
      await apply([appSecret()]);
      await eventually('the Deployment rolled', async () => (await configHash()) !== hash, 20_000);
      expect(await suite.cluster.secretValue(NS, 'auth-database', 'DATABASE_URL')).to.include(`:${password}@auth-db-pooler.`);
      // The operator's own connection follows: a Client applied now is written into the schema.
      await apply([
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Client',
          metadata: { name: 'after-rotation', namespace: NS },
          spec: { grant_types: ['client_credentials'] },
        },
      ]);
      await waitReady('client', NS, 'after-rotation');
      expect((await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.database.reachable).to.equal(true);
      // What a pod of the rolled Deployment gets works, and lands in the box's schema by the role's setting alone.
      const url = new URL(await suite.cluster.secretValue(NS, 'auth-database', 'DATABASE_URL'));
      url.hostname = '127.0.0.1'; // the Service's address on this machine (cluster-dns.ts)
      const pod = new pg.Client({ connectionString: url.toString() });
      await pod.connect();
      try {
        const { rows } = await pod.query(`SELECT current_schema() AS s, count(*)::int AS n FROM clients WHERE id = 'after-rotation'`);
        expect(rows).to.deep.equal([{ s: schema, n: 1 }]);
      } finally {
        await pod.end();
      }
    });

    it('says when the Cluster it names does not exist (DatabaseClusterNotFound), and refuses naming a Secret too', async function () {
      const ns = `${NS}-missing`;
      await suite.cluster.k(['create', 'namespace', ns]);
      const box = (database: unknown): unknown => ({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Box',
        metadata: { name: 'auth', namespace: ns },
        spec: { database },
      });
      const both = await suite.cluster.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify(box({ secretRef: { name: 'db' }, cluster: { name: 'auth-db' } })),
      );
      expect(both.code).to.not.equal(0);
      expect(both.stderr).to.include('spec.database names either a Secret (secretRef) or a CloudNativePG Cluster (cluster), not both');
      // The Cluster of another namespace is not this one's: tenants share nothing.
      await apply([box({ cluster: { name: 'auth-db' } })]);
      const ready = await eventually('DatabaseClusterNotFound', async () => {
        const r = await readyOf('box', ns, 'auth');
        return r?.reason === 'DatabaseClusterNotFound' && r;
      });
      expect(ready).to.include({
        status: 'False',
        message: `Cluster ${ns}/auth-db (spec.database.cluster) does not exist; create it, or fix the name (CloudNativePG must be installed: docs/kubernetes/cloudnative-pg.md)`,
      });
      expect((await suite.cluster.json(['get', 'box', 'auth', '-n', ns])).status.database).to.deep.equal({
        source: 'Cluster',
        cluster: 'auth-db',
        reachable: false,
      });
      expect((await suite.cluster.kubectl(['get', 'deployment', 'auth', '-n', ns])).code).to.not.equal(0);
    });

    it("reclaimPolicy Delete drops the box's schema and leaves the Cluster's role, its search_path reset", async function () {
      await api?.stop();
      api = undefined;
      await suite.cluster.k(['patch', 'box', 'auth', '-n', NS, '--type=merge', '-p', '{"spec":{"reclaimPolicy":"Delete"}}']);
      await waitReady('box', NS, 'auth');
      await suite.cluster.k(['delete', 'box', 'auth', '-n', NS, '--wait=true', '--timeout=60s']);
      expect(await sql(`SELECT nspname FROM pg_namespace WHERE nspname = '${schema}'`, APP)).to.deep.equal([]);
      const [role] = await sql(
        `SELECT rolname, (SELECT count(*)::int FROM pg_db_role_setting s WHERE s.setrole = r.oid) AS settings FROM pg_roles r WHERE rolname = '${APP}'`,
      );
      expect(role).to.deep.equal({ rolname: APP, settings: 0 });
    });
  });
}
