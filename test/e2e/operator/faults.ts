// Faults: the operator killed mid-reconcile, kube-apiserver restarted under
// it, two replicas on one Lease.
import { expect } from 'chai';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { boxSql, OPERATOR_NAMESPACE, readyBox, readyOf, sql, startOperator, suite, token, waitReady } from './suite.js';

const NS = 'faults';

function clients(prefix: string, n: number): string {
  const items = Array.from({ length: n }, (_, i) => ({
    apiVersion: 'boxauth.io/v1alpha1',
    kind: 'Client',
    metadata: { name: `${prefix}-${i}`, namespace: NS },
    spec: { grant_types: ['client_credentials'] },
  }));
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

async function leaseHolder(): Promise<string> {
  return (
    await suite.cluster.k(['get', 'lease', 'boxauth-operator', '-n', OPERATOR_NAMESPACE, '-o', 'jsonpath={.spec.holderIdentity}'])
  ).trim();
}

export function describeFaults(): void {
  describe('faults', function () {
    let api: Box;

    before(async function () {
      this.timeout(120_000);
      await suite.cluster.k(['create', 'namespace', NS]);
      ({ api } = await readyBox(NS));
    });

    it('loses and duplicates nothing when the operator is killed mid-reconcile', async function () {
      const n = 20;
      const billingReady = await readyOf('client', 'team-a', 'billing');
      const before = await suite.operator.metric('boxauth_operator_reconciles_total', { controller: 'client', result: 'ok' });
      await suite.cluster.k(['apply', '-f', '-'], clients('crash', n));
      // Kill it (SIGKILL: no goodbye) while it is busy with the new Clients.
      await eventually(
        'reconciles under way',
        async () =>
          (await suite.operator.metric('boxauth_operator_reconciles_total', { controller: 'client', result: 'ok' })) >= before + 3,
        20_000,
        20,
      );
      await suite.operator.kill('SIGKILL');
      const readyAtKill = (await suite.cluster.json(['get', 'clients', '-n', NS])).items.filter((c: any) =>
        c.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
      ).length;
      expect(readyAtKill, 'the kill came too late to interrupt anything').to.be.below(n);
      // The same pod restarted: same identity, so it takes its Lease back at once.
      suite.operator = await startOperator('operator-1');
      for (let i = 0; i < n; i++) await waitReady('client', NS, `crash-${i}`);
      // What was ready stayed ready: a restart does not flap conditions.
      expect(await readyOf('client', 'team-a', 'billing')).to.deep.equal(billingReady);
      const secrets = (await suite.cluster.json(['get', 'secrets', '-n', NS, '-l', 'boxauth.io/client'])).items;
      expect(secrets).to.have.length(n);
      const schema = (await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.schema;
      const [{ count }] = await boxSql(
        NS,
        `SELECT count(*)::int AS count FROM ${schema}.clients WHERE managed_by LIKE 'Client faults/crash-%'`,
      );
      expect(count).to.equal(n);
      for (const secret of secrets) {
        const id = secret.metadata.labels['boxauth.io/client'];
        const value = Buffer.from(secret.data['client-secret'], 'base64').toString('utf8');
        expect((await token(api, id, value)).status, id).to.equal(200);
      }
    });

    it('recovers by itself when kube-apiserver restarts under it', async function () {
      const pid = suite.operator.pid;
      const relistsBefore = await suite.operator.metric('boxauth_operator_informer_relists_total');
      await suite.cluster.restartApiserver();
      await suite.cluster.k(['apply', '-f', '-'], clients('after-restart', 1));
      await waitReady('client', NS, 'after-restart-0', 60_000);
      expect(suite.operator.running).to.equal(true);
      expect(suite.operator.pid).to.equal(pid);
      // It noticed: its caches were filled again from a new list.
      expect(await suite.operator.metric('boxauth_operator_informer_relists_total')).to.be.above(relistsBefore);
      const secret = await suite.cluster.secretValue(NS, 'after-restart-0-client-secret', 'client-secret');
      expect((await token(api, 'after-restart-0', secret)).status).to.equal(200);
    });

    it('runs two replicas with one acting; the standby takes over when the leader dies', async function () {
      const first = suite.operator;
      const second = await startOperator('operator-2');
      try {
        await eventually('the second replica to stand by', async () =>
          second.hasLogged('standing by: another replica holds the leader Lease'),
        );
        expect(await leaseHolder()).to.equal('operator-1');
        expect((await fetch(`http://127.0.0.1:${second.healthPort}/readyz`)).status).to.equal(200);
        await suite.cluster.k(['apply', '-f', '-'], clients('two-replicas-a', 1));
        await waitReady('client', NS, 'two-replicas-a-0');
        expect(await second.metric('boxauth_operator_reconciles_total')).to.equal(0);
        expect(await second.metric('boxauth_operator_leader')).to.equal(0);

        await first.kill('SIGKILL'); // no release: the standby waits out the Lease (4 s here)
        suite.operator = second;
        await eventually('the standby to lead', async () => (await leaseHolder()) === 'operator-2', 20_000);
        await suite.cluster.k(['apply', '-f', '-'], clients('two-replicas-b', 1));
        await waitReady('client', NS, 'two-replicas-b-0');
        expect(await second.metric('boxauth_operator_reconciles_total')).to.be.above(0);
        expect(await second.metric('boxauth_operator_leader')).to.equal(1);
      } catch (err) {
        await second.kill('SIGKILL');
        throw err;
      }
    });

    it('on SIGTERM finishes, releases the Lease and exits 0', async function () {
      const code = await suite.operator.kill('SIGTERM');
      expect(code).to.equal(0);
      expect(await leaseHolder()).to.equal('');
      suite.operator = await startOperator('operator-3');
      await eventually('the new replica to lead at once', async () => (await leaseHolder()) === 'operator-3', 3_000);
    });

    it('a restarted leader writes nothing to what has not changed', async function () {
      const steady = (kind: string, spec: object): object => ({
        apiVersion: 'boxauth.io/v1alpha1',
        kind,
        metadata: { name: 'steady', namespace: NS },
        spec,
      });
      await suite.cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            steady('Client', { grant_types: ['client_credentials'] }),
            steady('AccessPolicy', { engine: 'allow', link: [{ id: 'steady', resourceType: 'Client' }] }),
          ],
        }),
      );
      await waitReady('client', NS, 'steady');
      await waitReady('accesspolicy', NS, 'steady');
      const role: string = (await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.database.role;
      const roleRow = `SELECT xmin::text AS x FROM pg_authid WHERE rolname = $1`;
      const [before] = await sql(roleRow, [role]);
      expect(await suite.operator.kill('SIGTERM')).to.equal(0);
      const next = await startOperator('operator-4');
      suite.operator = next;
      await eventually(
        'the new leader has looked at every object, and resynced',
        async () =>
          (await next.metric('boxauth_operator_reconciles_total', { controller: 'box', result: 'ok' })) >= 2 &&
          (await next.metric('boxauth_operator_reconciles_total', { controller: 'client', result: 'ok' })) >= 2 &&
          (await next.metric('boxauth_operator_reconciles_total', { controller: 'accesspolicy', result: 'ok' })) >= 2,
        30_000,
      );
      const text = await (await fetch(`http://127.0.0.1:${next.healthPort}/metrics`)).text();
      const writes = text
        .split('\n')
        .filter(
          (l) => /^boxauth_operator_api_requests_total\{.*verb="(create|update|patch|delete)"/.test(l) && !l.includes('resource="leases"'),
        )
        .filter((l) => Number(l.slice(l.lastIndexOf(' ') + 1)) > 0);
      expect(writes, 'write requests of the new leader besides its Lease').to.deep.equal([]);
      // Nor in the database: the box's role is not altered again (its password set anew) by a new process.
      expect(await sql(roleRow, [role])).to.deep.equal([before]);
    });

    it("drops the box's database and role when a Box with reclaimPolicy Delete is deleted", async function () {
      const { database, role } = (await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.database;
      await suite.cluster.k(['delete', 'box', 'auth', '-n', NS, '--wait=true', '--timeout=30s']);
      expect(
        await sql('SELECT datname AS n FROM pg_database WHERE datname = $1 UNION ALL SELECT rolname FROM pg_roles WHERE rolname = $2', [
          database,
          role,
        ]),
      ).to.deep.equal([]);
      // Its Clients no longer have a box: they say so.
      await eventually('BoxNotFound', async () => {
        const c = await suite.cluster.json(['get', 'client', 'crash-0', '-n', NS]);
        return c.status.conditions.find((x: any) => x.type === 'Ready').reason === 'BoxNotFound';
      });
    });
  });
}
