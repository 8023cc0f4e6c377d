// Tenants share nothing in PostgreSQL: each namespace's box gets a database and
// a role of its own even where the names the operator derived before collided
// (a namespace crafted to match a long one), the operator touches no database,
// schema or role that is not recorded as the box's, reclaimPolicy Delete drops
// only what is, and a box an operator of the release before made in a schema of
// its shared database stays there.
import { expect } from 'chai';
import { boxDbNames, databaseOf, ownDatabaseMark } from '../../../operator/boxdb.js';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { oldBoxDbNames, oldTwin } from '../../support/old-names.js';
import { freePort } from '../../support/ports.js';
import { boxSql, ownNamesOf, readyOf, runBoxApi, sql, suite, waitReady } from './suite.js';

const LONG = 'tenancy-long-namespace-of-sixty-three-characters-0123456789abcd';
const OWNED_ELSEWHERE = 'DatabaseOwnedElsewhere';
const mark = (namespace: string): string => `boxauth owner: namespace=${namespace}`;

export function describeTenancy(): void {
  describe('tenancy in PostgreSQL', function () {
    let database: string;

    const box = (namespace: string, spec: Record<string, unknown> = {}) => ({
      apiVersion: 'boxauth.io/v1alpha1',
      kind: 'Box',
      metadata: { name: 'auth', namespace },
      spec: { reclaimPolicy: 'Delete', ...spec },
    });
    const apply = (obj: unknown): Promise<string> => suite.cluster.k(['apply', '-f', '-'], JSON.stringify(obj));
    const deleteBox = (namespace: string): Promise<string> =>
      suite.cluster.k(['delete', 'box', 'auth', '-n', namespace, '--wait=true', '--timeout=60s']);
    const schemaOf = async (namespace: string): Promise<string> =>
      (await suite.cluster.json(['get', 'box', 'auth', '-n', namespace])).status.schema;
    const schemaOwner = async (schema: string, database?: string): Promise<{ owner: string; mark: string | null } | undefined> =>
      (
        await sql(
          `SELECT nspowner::regrole::text AS owner, obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1`,
          [schema],
          database,
        )
      )[0];
    const databaseRow = async (name: string): Promise<{ owner: string; mark: string | null } | undefined> =>
      (
        await sql(
          `SELECT pg_get_userbyid(datdba) AS owner, shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1`,
          [name],
        )
      )[0];
    const role = async (name: string): Promise<{ password: string; mark: string | null } | undefined> =>
      (
        await sql(`SELECT rolpassword AS password, shobj_description(oid, 'pg_authid') AS mark FROM pg_authid WHERE rolname = $1`, [name])
      )[0];

    async function refused(namespace: string): Promise<string> {
      const ready = await eventually(OWNED_ELSEWHERE, async () => {
        const r = await readyOf('box', namespace, 'auth');
        return r?.reason === OWNED_ELSEWHERE && r;
      });
      expect(ready.status).to.equal('False');
      return ready.message;
    }

    before(async function () {
      database = databaseOf(suite.databaseUrl);
    });

    it('gives namespaces that shared a role under the old names a schema and a role each; each box sees only its own users', async function () {
      this.timeout(180_000);
      const twin = oldTwin(LONG, database, 'role');
      expect(oldBoxDbNames(twin, database).role).to.equal(oldBoxDbNames(LONG, database).role);
      const pods: Box[] = [];
      try {
        for (const ns of [LONG, twin]) {
          await suite.cluster.k(['create', 'namespace', ns]);
          const port = await freePort();
          await apply(box(ns, { port, baseUrl: `http://127.0.0.1:${port}` }));
        }
        for (const ns of [LONG, twin]) await waitReady('box', ns, 'auth', 60_000);
        const schemas = [await schemaOf(LONG), await schemaOf(twin)];
        const roles = [
          await suite.cluster.secretValue(LONG, 'auth-database', 'username'),
          await suite.cluster.secretValue(twin, 'auth-database', 'username'),
        ];
        expect(schemas[0]).to.not.equal(schemas[1]);
        expect(roles[0]).to.not.equal(roles[1]);
        // Each in a database of its own, owned by its role.
        expect((await schemaOwner(schemas[0]!, schemas[0]))?.owner).to.equal(roles[0]);
        expect((await schemaOwner(schemas[1]!, schemas[1]))?.owner).to.equal(roles[1]);
        expect((await databaseRow(schemas[0]!))?.owner).to.equal(roles[0]);

        for (const ns of [LONG, twin]) {
          const pod = await runBoxApi(ns);
          pods.push(pod);
          const created = await pod.json(
            'POST',
            '/users',
            { email: `someone@${ns.slice(0, 40)}.example`, password: 'a-long-password' },
            await pod.rootToken(),
          );
          expect(created.status, created.text).to.equal(201);
        }
        for (const [i, pod] of pods.entries()) {
          const emails = (await pod.json('GET', '/users', undefined, await pod.rootToken())).body.map((u: any) => u.email).sort();
          expect(emails).to.deep.equal(['admin@localhost', `someone@${[LONG, twin][i]!.slice(0, 40)}.example`]);
        }
      } finally {
        for (const pod of pods) await pod.stop();
        for (const ns of [LONG, twin]) await suite.cluster.kubectl(['delete', 'box', 'auth', '-n', ns, '--wait=true', '--timeout=60s']);
      }
    });

    it("refuses a database of its name that is not marked as the box's and leaves it as it is, until a person marks it", async function () {
      const ns = 'tenancy-squatted';
      const { database: name, role: roleName } = await ownNamesOf(ns);
      await sql(`CREATE DATABASE ${name}`);
      await sql(`CREATE TABLE precious (note text); INSERT INTO precious VALUES ('keep me')`, [], name);
      try {
        const before = await databaseRow(name);
        await suite.cluster.k(['create', 'namespace', ns]);
        await apply(box(ns));
        const message = await refused(ns);
        const boxMark = ownDatabaseMark({ database: name, schema: name, role: name }, database);
        expect(message).to.include(`database "${name}"`).and.include(`COMMENT ON DATABASE "${name}" IS '${boxMark}'`);
        expect(await databaseRow(name)).to.deep.equal(before);
        expect(await sql(`SELECT note FROM precious`, [], name)).to.deep.equal([{ note: 'keep me' }]);
        expect(await role(roleName)).to.equal(undefined);
        const events = await suite.cluster.json(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.kind=Box']);
        expect(events.items.map((e: any) => `${e.type} ${e.reason}`)).to.include(`Warning ${OWNED_ELSEWHERE}`);

        // What the message says to do, when the database is this box's after all: it becomes its role's.
        await sql(`COMMENT ON DATABASE ${name} IS '${boxMark}'`);
        await waitReady('box', ns, 'auth', 60_000);
        expect(await databaseRow(name)).to.deep.equal({ owner: roleName, mark: boxMark });
        expect(await sql(`SELECT note FROM precious`, [], name)).to.deep.equal([{ note: 'keep me' }]);
        await deleteBox(ns);
        expect(await databaseRow(name)).to.equal(undefined); // marked as its own: reclaimPolicy Delete dropped it
      } finally {
        await sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    });

    it("refuses a role of its name that is marked as another namespace's: its password stays", async function () {
      const ns = 'tenancy-role-taken';
      const { database: name, role: roleName } = await ownNamesOf(ns);
      await sql(`CREATE ROLE ${roleName} LOGIN PASSWORD 'their-own-password'; COMMENT ON ROLE ${roleName} IS '${mark('someone-else')}'`);
      try {
        const before = await role(roleName);
        await suite.cluster.k(['create', 'namespace', ns]);
        await apply(box(ns));
        expect(await refused(ns)).to.include(`role "${roleName}"`);
        expect(await role(roleName)).to.deep.equal(before);
        expect(await databaseRow(name)).to.equal(undefined);
        await deleteBox(ns); // its finalizer goes, the role stays
        expect(await role(roleName)).to.deep.equal(before);
      } finally {
        await sql(`DROP ROLE IF EXISTS ${roleName}`);
      }
    });

    it("reclaimPolicy Delete leaves a database that is marked as another's, and the role that owns it", async function () {
      const ns = 'tenancy-moved';
      await suite.cluster.k(['create', 'namespace', ns]);
      await apply(box(ns));
      await waitReady('box', ns, 'auth', 60_000);
      const { database: name, role: owner } = (await suite.cluster.json(['get', 'box', 'auth', '-n', ns])).status.database;
      await sql(`COMMENT ON DATABASE ${name} IS '${mark('someone-else')}'`);
      try {
        await deleteBox(ns);
        expect(await databaseRow(name)).to.deep.equal({ owner, mark: mark('someone-else') });
        expect((await sql(`SELECT to_regclass('${name}.clients')::text AS t`, [], name))[0].t).to.equal(`${name}.clients`);
        expect(await role(owner)).to.not.equal(undefined);
      } finally {
        await sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await sql(`DROP ROLE IF EXISTS ${owner}`);
      }
    });

    it('keeps a box an operator of the release before made in a schema of its shared database there, and says so', async function () {
      const ns = 'tenancy-before';
      const { schema, role: roleName } = boxDbNames(ns, database);
      // What that operator left: the role and the schema of one name, marked, the role's search_path the schema.
      await sql(
        `CREATE ROLE ${roleName} LOGIN NOINHERIT PASSWORD 'from-before'; COMMENT ON ROLE ${roleName} IS '${mark(ns)}';
         CREATE SCHEMA ${schema} AUTHORIZATION ${roleName}; COMMENT ON SCHEMA ${schema} IS '${mark(ns)}';
         ALTER ROLE ${roleName} IN DATABASE ${database} SET search_path = ${schema};
         CREATE TABLE ${schema}.precious (note text); INSERT INTO ${schema}.precious VALUES ('keep me')`,
      );
      await suite.cluster.k(['create', 'namespace', ns]);
      await apply(box(ns));
      await waitReady('box', ns, 'auth', 60_000);
      const status = (await suite.cluster.json(['get', 'box', 'auth', '-n', ns])).status;
      expect(status.schema).to.equal(schema);
      expect(status.database).to.deep.include({ database, role: roleName, isolation: 'Schema' });
      expect((await readyOf('box', ns, 'auth')).message).to.include(
        `schema ${schema} of database ${database}, shared with other boxes, where the box was made (it stays there`,
      );
      expect(new URL(await suite.cluster.secretValue(ns, 'auth-database', 'DATABASE_URL')).pathname).to.equal(`/${database}`);
      expect(await boxSql(ns, `SELECT note FROM ${schema}.precious`)).to.deep.equal([{ note: 'keep me' }]);
      expect((await sql(`SELECT to_regclass('${schema}.clients')::text AS t`))[0].t).to.equal(`${schema}.clients`); // migrated there
      await deleteBox(ns);
      expect(await schemaOwner(schema)).to.equal(undefined);
    });

    it('gives a Box re-created in the namespace the database a Box with reclaimPolicy Retain left', async function () {
      const ns = 'tenancy-again';
      await suite.cluster.k(['create', 'namespace', ns]);
      const client = {
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Client',
        metadata: { name: 'kept', namespace: ns },
        spec: { grant_types: ['client_credentials'] },
      };
      await apply(box(ns, { reclaimPolicy: 'Retain' }));
      await apply(client);
      await waitReady('client', ns, 'kept', 60_000);
      const schema = await schemaOf(ns);
      await deleteBox(ns);
      expect(await sql(`SELECT managed_by FROM ${schema}.clients WHERE id = 'kept'`, [], schema)).to.deep.equal([{ managed_by: null }]);
      await apply(box(ns)); // a new Box, the same namespace: the same names, provisioned again
      await waitReady('box', ns, 'auth', 60_000);
      expect(await schemaOf(ns)).to.equal(schema);
      await waitReady('client', ns, 'kept'); // adopted again from the retained database
      await deleteBox(ns);
      expect(await databaseRow(schema)).to.equal(undefined);
    });
  });
}
