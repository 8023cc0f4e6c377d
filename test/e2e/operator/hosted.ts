// Hosted boxes (Box.spec.serving: Hosted, docs/kubernetes/hosted-boxes.md) from the operator's side: the
// host's registry Secret, Deployment and Service in the operator's namespace, a box's ExternalName Service,
// and the moves between a dedicated Deployment and the host without losing a token. The host runs as a
// kubelet would run it, from the Deployment the operator wrote, with the registry Secret mounted and kept up
// to date; the operator asks it at BOXAUTH_OPERATOR_HOST_URL (the port it runs on here).
import { expect } from 'chai';
import { Agent } from 'undici';
import { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { freePort } from '../../support/ports.js';
import { onPickedPort, OPERATOR_NAMESPACE, readyOf, runBoxApi, startOperator, suite, waitReady } from './suite.js';

const HOST = `${OPERATOR_NAMESPACE}/boxauth-host`;

export function describeHosted(): void {
  describe('hosted boxes', function () {
    let host: Box | undefined;
    // Every name to the host's port: the Host header picks the box, as the host's Service does in a cluster.
    const dispatcher = new Agent({
      connect: { lookup: (_h, _o, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }] as never, 4) },
    });

    const apply = (obj: unknown): Promise<string> => suite.cluster.k(['apply', '-f', '-'], JSON.stringify(obj));
    const box = (namespace: string, spec: Record<string, unknown>) => ({
      apiVersion: 'boxauth.io/v1alpha1',
      kind: 'Box',
      metadata: { name: 'auth', namespace },
      spec: { reclaimPolicy: 'Delete', ...spec },
    });
    const registrySecret = (): Promise<any> => suite.cluster.json(['get', 'secret', '-n', OPERATOR_NAMESPACE, 'boxauth-host-boxes']);
    const registry = async (): Promise<Map<string, any>> => {
      const secret = await suite.cluster.kubectl(['get', 'secret', '-n', OPERATOR_NAMESPACE, 'boxauth-host-boxes', '-o', 'json']);
      if (secret.code !== 0) return new Map();
      const text = Buffer.from(JSON.parse(secret.stdout).data['boxes.json'], 'base64').toString('utf8');
      return new Map(JSON.parse(text).boxes.map((e: any) => [e.box, e]));
    };
    const service = (namespace: string): Promise<any> => suite.cluster.json(['get', 'service', '-n', namespace, 'auth']);
    const deployments = async (namespace: string): Promise<string[]> =>
      (await suite.cluster.json(['get', 'deployments', '-n', namespace])).items.map((d: any) => d.metadata.name);
    /** Box `auth` of `namespace` through the host, as an app reaches it by its Service name. */
    const viaHost = async (namespace: string): Promise<Box> =>
      Box.remote(
        `http://auth.${namespace}.svc:${suite.hostPort}`,
        dispatcher,
        await suite.cluster.secretValue(namespace, 'auth-root-client', 'client-secret'),
      );
    const waitFor = async (namespace: string, reason: string): Promise<any> =>
      eventually(
        `Box ${namespace}/auth ${reason}`,
        async () => {
          const ready = await readyOf('box', namespace, 'auth');
          return ready?.reason === reason && ready;
        },
        60_000,
      );

    after(async function () {
      await host?.stop();
      await dispatcher.close();
    });

    it('serves a Hosted Box from the host: an ExternalName Service, an entry with its own variables, no Deployment', async function () {
      this.timeout(180_000);
      await suite.cluster.k(['create', 'namespace', 'hosted-a']);
      await apply(box('hosted-a', { serving: 'Hosted' }));
      const entry = await eventually('the registry entry of hosted-a/auth', async () => (await registry()).get('hosted-a/auth'), 60_000);
      expect(entry.hostnames).to.deep.equal(['auth.hosted-a.svc', 'auth.hosted-a.svc.cluster.local', 'auth.hosted-a']);
      // Its own database role, keys and secrets: the values of its own Secrets, which the host reads nowhere else.
      const databaseUrl = await suite.cluster.secretValue('hosted-a', 'auth-database', 'DATABASE_URL');
      expect(entry.env.DATABASE_URL).to.equal(databaseUrl);
      expect(new URL(databaseUrl).username).to.equal(await suite.cluster.secretValue('hosted-a', 'auth-database', 'username'));
      expect(entry.env.BOXAUTH_ROOT_CLIENT_SECRET).to.equal(
        await suite.cluster.secretValue('hosted-a', 'auth-root-client', 'client-secret'),
      );
      expect(entry.env.BOXAUTH_SIGNING_KEY).to.equal(await suite.cluster.secretValue('hosted-a', 'auth-signing-key', 'signing-key.pem'));
      expect(entry.env).to.include({ BOXAUTH_BOX: 'hosted-a/auth', BOXAUTH_BASE_URL: 'http://auth.hosted-a.svc' });
      expect(await deployments('hosted-a')).to.deep.equal([]);
      const svc = await eventually('the ExternalName Service', async () => {
        const s = await service('hosted-a');
        return s.spec.type === 'ExternalName' && s;
      });
      expect(svc.spec.externalName).to.equal(`boxauth-host.${OPERATOR_NAMESPACE}.svc.cluster.local`);
      expect(svc.spec.clusterIP).to.equal(undefined);
      // The host, made on demand in the operator's namespace; until it answers for the box, the Box says so.
      const hostService = await suite.cluster.json(['get', 'service', '-n', OPERATOR_NAMESPACE, 'boxauth-host']);
      expect(hostService.spec.ports.map((p: any) => p.port)).to.deep.equal([80, 8080]);
      await waitFor('hosted-a', 'HostNotAnswering');

      // On the port the operator was told at the suite's start; when another process took it since, the operator is told another.
      host = await onPickedPort(
        async () => (await suite.cluster.runDeployment(OPERATOR_NAMESPACE, 'boxauth-host', { port: suite.hostPort })).box,
        async (port) => {
          await suite.operator.kill('SIGTERM');
          suite.hostPort = port;
          suite.operatorEnv.BOXAUTH_OPERATOR_HOST_URL = `http://127.0.0.1:${port}`;
          suite.operator = await startOperator('operator-1');
        },
      );
      suite.pods.push(host);
      await waitReady('box', 'hosted-a', 'auth', 120_000);
      const status = (await suite.cluster.json(['get', 'box', '-n', 'hosted-a', 'auth'])).status;
      expect(status.host).to.equal(HOST);
      expect(status.deployment).to.equal(undefined);
      expect(await readyOf('box', 'hosted-a', 'auth')).to.include({ reason: 'Hosted' });
      const a = await viaHost('hosted-a');
      expect((await a.json('GET', '/Client', undefined, await a.rootToken())).status).to.equal(200);
    });

    it('adds a second hosted box as an entry of its own; an unchanged set of boxes writes nothing', async function () {
      this.timeout(180_000);
      await suite.cluster.k(['create', 'namespace', 'hosted-b']);
      await apply(box('hosted-b', { serving: 'Hosted' }));
      await waitReady('box', 'hosted-b', 'auth', 120_000);
      const entries = await registry();
      expect([...entries.keys()]).to.deep.equal(['hosted-a/auth', 'hosted-b/auth']);
      expect(entries.get('hosted-b/auth').env.DATABASE_URL).to.not.equal(entries.get('hosted-a/auth').env.DATABASE_URL);
      const [a, b] = [await viaHost('hosted-a'), await viaHost('hosted-b')];
      expect((await b.json('GET', '/Client', undefined, await a.rootToken())).status).to.equal(401);

      const before = (await registrySecret()).metadata.resourceVersion;
      const hostDeployment = async (): Promise<string> =>
        (await suite.cluster.json(['get', 'deployment', '-n', OPERATOR_NAMESPACE, 'boxauth-host'])).metadata.resourceVersion;
      const deploymentBefore = await hostDeployment();
      // A new generation of each Box that changes nothing a host serves (replicas are the host's), and the resyncs after it.
      for (const ns of ['hosted-a', 'hosted-b']) {
        await suite.cluster.k(['patch', 'box', 'auth', '-n', ns, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
        await waitReady('box', ns, 'auth');
      }
      const resyncs = Number(suite.operatorEnv.BOXAUTH_OPERATOR_RESYNC_SECONDS) * 3 * 1000;
      await new Promise((resolve) => setTimeout(resolve, resyncs));
      expect((await registrySecret()).metadata.resourceVersion).to.equal(before);
      expect(await hostDeployment()).to.equal(deploymentBefore);
    });

    it("leaves the host's replicas to an HPA with BOXAUTH_HOST_REPLICAS=auto: a count set by another survives reconciles", async function () {
      this.timeout(180_000);
      const get = (): Promise<any> =>
        suite.cluster.json(['get', 'deployment', '-n', OPERATOR_NAMESPACE, 'boxauth-host', '--show-managed-fields']);
      const replicas = async (): Promise<number> => (await get()).spec.replicas;
      // What the HPA does: a write of the scale subresource (this cluster runs no controller-manager to act on one).
      const scale = (n: number): Promise<string> =>
        suite.cluster.k(['scale', 'deployment', 'boxauth-host', '-n', OPERATOR_NAMESPACE, `--replicas=${n}`]);
      const restart = async (env: Record<string, string>): Promise<void> => {
        expect(await suite.operator.kill('SIGTERM')).to.equal(0);
        suite.operator = await startOperator('operator-1', env);
      };
      const settled = async (n: number, ms = 3 * Number(suite.operatorEnv.BOXAUTH_OPERATOR_RESYNC_SECONDS) * 1000): Promise<void> => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        expect(await replicas()).to.equal(n);
      };
      // A number (the chart's 2): the operator's apply takes the count back from the scaler.
      expect(await replicas()).to.equal(2);
      await scale(5);
      await eventually('the operator setting the replicas back to 2', async () => (await replicas()) === 2, 30_000);

      // auto: the count the host had is kept (not reset to a Deployment's default of 1) while the field changes hands.
      await restart({ BOXAUTH_HOST_REPLICAS: 'auto' });
      await eventually('the operator applying the host without replicas', async () => {
        const fields = (await get()).metadata.managedFields as { manager: string; operation: string; fieldsV1: any }[];
        return fields.some((f) => f.manager === 'boxauth-operator' && f.operation === 'Apply' && !f.fieldsV1['f:spec']?.['f:replicas']);
      });
      await settled(2);
      await scale(5);
      await settled(5);
      // A full apply of the host (its applied digest gone) leaves the scaler's count too.
      await suite.cluster.k(['annotate', 'deployment', 'boxauth-host', '-n', OPERATOR_NAMESPACE, 'boxauth.io/applied-']);
      await eventually('the host applied again', async () => (await get()).metadata.annotations?.['boxauth.io/applied'] !== undefined);
      expect(await replicas()).to.equal(5);

      // Back to a number: the operator's again.
      await restart({});
      await eventually('the operator setting the replicas to 2 again', async () => (await replicas()) === 2, 30_000);
    });

    it('moves a box from its Deployment to the host and back, its tokens valid throughout', async function () {
      this.timeout(300_000);
      const ns = 'hosted-move';
      await suite.cluster.k(['create', 'namespace', ns]);
      const picked = await freePort();
      await apply(box(ns, { port: picked, baseUrl: `http://127.0.0.1:${picked}` }));
      await waitReady('box', ns, 'auth', 60_000);
      const clusterIp = (await service(ns)).spec.clusterIP;
      expect(clusterIp).to.be.a('string');
      const dedicated = await runBoxApi(ns);
      const port = dedicated.port; // the picked one, or another when that was taken
      const token = await dedicated.rootToken();

      // To the host: the Deployment serves until the host answers for the box, then goes.
      await suite.cluster.k(['patch', 'box', 'auth', '-n', ns, '--type=merge', '-p', '{"spec":{"serving":"Hosted","port":8080}}']);
      await waitReady('box', ns, 'auth', 120_000);
      expect(await readyOf('box', ns, 'auth')).to.include({ reason: 'Hosted' });
      expect((await service(ns)).spec).to.include({ type: 'ExternalName' });
      expect((await service(ns)).spec.clusterIP).to.equal(undefined);
      expect(await deployments(ns)).to.deep.equal([]);
      expect((await registry()).get(`${ns}/auth`).hostnames).to.include(`127.0.0.1:${port}`);
      await dedicated.stop();
      const hosted = await viaHost(ns);
      expect((await hosted.json('GET', '/Client', undefined, token)).status, 'a token of the dedicated box at the host').to.equal(200);
      const hostToken = await hosted.rootToken();

      // Back: the host serves the box until its Deployment has an available pod; then the Service, then the entry.
      await suite.cluster.k([
        'patch',
        'box',
        'auth',
        '-n',
        ns,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { serving: 'Dedicated', port } }),
      ]);
      await waitFor(ns, 'MovingToDedicated');
      expect(await deployments(ns)).to.deep.equal(['auth']);
      expect((await service(ns)).spec.type).to.equal('ExternalName');
      expect((await registry()).has(`${ns}/auth`)).to.equal(true);
      const back = await runBoxApi(ns);
      // What the Deployment controller would write once the pod is ready (this cluster runs none).
      await suite.cluster.k([
        'patch',
        'deployment',
        'auth',
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1}}',
      ]);
      await waitReady('box', ns, 'auth', 60_000);
      expect(await readyOf('box', ns, 'auth')).to.include({ reason: 'Provisioned' });
      const svc = await service(ns);
      expect(svc.spec.type).to.equal('ClusterIP');
      expect(svc.spec.clusterIP).to.be.a('string');
      expect(svc.spec.externalName).to.equal(undefined);
      expect(svc.spec.selector).to.include({ 'app.kubernetes.io/instance': 'auth' });
      await eventually('the entry gone from the registry', async () => !(await registry()).has(`${ns}/auth`));
      for (const t of [token, hostToken]) expect((await back.json('GET', '/Client', undefined, t)).status).to.equal(200);
      await back.stop();
    });

    it('refuses a Hosted Box with a field a host cannot serve (NotHostable), and changes nothing', async function () {
      const ns = 'hosted-refused';
      await suite.cluster.k(['create', 'namespace', ns]);
      await apply(box(ns, { serving: 'Hosted', tls: { secretName: 'auth-tls' } }));
      const ready = await waitFor(ns, 'NotHostable');
      expect(ready.status).to.equal('False');
      expect(ready.message)
        .to.match(/^spec\.tls: /)
        .and.include('set spec.serving to Dedicated');
      const stalled = (await suite.cluster.json(['get', 'box', '-n', ns, 'auth'])).status.conditions.find((c: any) => c.type === 'Stalled');
      expect(stalled).to.include({ status: 'True', reason: 'NotHostable' });
      expect((await registry()).has(`${ns}/auth`)).to.equal(false);
      expect((await suite.cluster.kubectl(['get', 'service', '-n', ns, 'auth'])).code).to.not.equal(0);
    });
  });
}
