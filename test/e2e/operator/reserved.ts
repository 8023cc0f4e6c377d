// The records a box creates for itself (api/reserved.ts) are the box's: a
// Client or AccessPolicy resource of the same name is refused before anything
// is written, one an earlier operator had adopted is handed back to the box,
// and deleting the resource leaves the record. Otherwise whoever may write
// Clients in a namespace could point the admin UI's client at their own
// redirect URI and receive an admin's code.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { expect } from 'chai';
import { projectPath } from '../../../api/paths.js';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { boxSql, readyBox, readyOf, runBoxApi, suite, token } from './suite.js';

const NS = 'tenant-r';
const ATTACKER = 'https://attacker.example/cb';

export function describeReserved(): void {
  describe("the box's own records", function () {
    let api: Box;
    let schema: string;

    const apply = (obj: unknown): Promise<string> => suite.cluster.k(['apply', '-f', '-'], JSON.stringify(obj));
    const rootToken = async (): Promise<string> =>
      (await token(api, 'root', await suite.cluster.secretValue(NS, 'auth-root-client', 'client-secret'))).token!;
    const adminClient = async (): Promise<any> => (await api.json('GET', '/Client/boxauth-admin', undefined, await rootToken())).body;
    const owners = async (): Promise<string[]> =>
      (
        await boxSql(
          NS,
          `SELECT 'Client ' || id || ': ' || coalesce(managed_by, 'the box') AS o FROM ${schema}.clients WHERE id = 'boxauth-admin'
       UNION ALL SELECT 'AccessPolicy ' || id || ': ' || coalesce(managed_by, 'the box') FROM ${schema}.access_policies WHERE id = 'admins-allow'
       ORDER BY 1`,
        )
      ).map((r) => r.o);
    const theBoxs = ['AccessPolicy admins-allow: the box', 'Client boxauth-admin: the box'];

    async function restartApi(): Promise<void> {
      await api.stop();
      api = await runBoxApi(NS);
    }

    before(async function () {
      this.timeout(120_000);
      await suite.cluster.k(['create', 'namespace', NS]);
      ({ api, schema } = await readyBox(NS));
    });

    after(async function () {
      await api?.stop();
      await suite.cluster.kubectl(['delete', 'box', 'auth', '-n', NS, '--wait=true', '--timeout=60s']);
    });

    it('refuses a Client "boxauth-admin" and an AccessPolicy "admins-allow" (ReservedName) and writes nothing', async function () {
      const own = await adminClient();
      expect(own.auth.authorization_code.redirect_uri).to.equal(`${api.url}/admin/callback`);
      await apply({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Client',
        metadata: { name: 'boxauth-admin', namespace: NS },
        spec: { grant_types: ['authorization_code'], first_party: true, auth: { authorization_code: { redirect_uri: ATTACKER } } },
      });
      await apply({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'AccessPolicy',
        metadata: { name: 'admins-allow', namespace: NS },
        spec: { engine: 'allow' },
      });
      for (const [kind, name] of [
        ['client', 'boxauth-admin'],
        ['accesspolicy', 'admins-allow'],
      ] as const) {
        const ready = await eventually(`${kind} ${name} ReservedName`, async () => {
          const r = await readyOf(kind, NS, name);
          return r?.reason === 'ReservedName' && r;
        });
        expect(ready.status).to.equal('False');
        expect(ready.message).to.include(`"${name}"`).and.include('choose another name');
      }
      expect((await adminClient()).auth.authorization_code.redirect_uri).to.equal(`${api.url}/admin/callback`);
      expect(await owners()).to.deep.equal(theBoxs);
      // Not even a generated secret: a refused resource leaves no trace.
      expect((await suite.cluster.kubectl(['get', 'secret', 'boxauth-admin-client-secret', '-n', NS])).code).to.not.equal(0);
    });

    it('hands a record an earlier operator had adopted back to the box, and keeps it when the resource is deleted', async function () {
      await boxSql(NS, `UPDATE ${schema}.clients SET managed_by = 'Client ${NS}/boxauth-admin' WHERE id = 'boxauth-admin'`);
      await eventually('the record handed back', async () => (await owners()).join() === theBoxs.join(), 15_000);
      await boxSql(NS, `UPDATE ${schema}.access_policies SET managed_by = 'AccessPolicy ${NS}/admins-allow' WHERE id = 'admins-allow'`);
      await suite.cluster.k(['delete', 'client', 'boxauth-admin', '-n', NS, '--wait=true', '--timeout=30s']);
      await suite.cluster.k(['delete', 'accesspolicy', 'admins-allow', '-n', NS, '--wait=true', '--timeout=30s']);
      expect(await owners()).to.deep.equal(theBoxs);
    });

    it('lets the box start again with its own records', async function () {
      await restartApi();
      expect((await adminClient()).auth.authorization_code.redirect_uri).to.equal(`${api.url}/admin/callback`);
      expect(await owners()).to.deep.equal(theBoxs);
    });

    it("starts its API again when another process took the Box's port meanwhile: the Box moved to a free one", async function () {
      await api.stop();
      const taken = api.port;
      const other = net.createServer((socket) => socket.destroy()); // another program's port: no answer to /readyz
      await new Promise<void>((resolve) => other.listen(taken, resolve));
      try {
        await restartApi();
      } finally {
        other.close();
      }
      expect(api.port).to.not.equal(taken);
      const { spec } = await suite.cluster.json(['get', 'box', 'auth', '-n', NS]);
      expect(spec).to.include({ port: api.port, baseUrl: `http://127.0.0.1:${api.port}` });
      expect((await adminClient()).auth.authorization_code.redirect_uri).to.equal(`http://127.0.0.1:${api.port}/admin/callback`);
    });

    it('runs under make box (run-box.js) on metrics and gRPC ports it picks, and stops with it', async function () {
      await api.stop();
      const child = spawn(process.execPath, [projectPath('dist', 'operator', 'run-box.js'), NS], {
        cwd: projectPath(),
        env: { PATH: process.env.PATH ?? '', KUBECONFIG: suite.cluster.kubeconfig },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let output = '';
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await eventually('make box serving', async () => output.includes(' is serving at ') || child.exitCode !== null, 60_000);
        expect(output).to.match(/metrics on \d+, gRPC decisions on \d+/);
        expect((await fetch(`${api.url}/healthz`)).status).to.equal(200);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited, output).to.equal(0);
    });
  });
}
