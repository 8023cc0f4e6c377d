// spec.serving: Hosted on a real kube-apiserver: the operator writes the box
// into its host's registry (with its own database role), makes the host, and
// turns the box's Service into an ExternalName to it; an unchanged Box writes
// nothing; a Box that asks for a pod's own is refused; and a box moves both ways
// only once the other side serves it. (The host's pods run in make e2e-pods.)
import { expect } from 'chai';
import { eventually } from '../../support/kube.js';
import { OPERATOR_NAMESPACE, readyOf, suite, waitReady } from './suite.js';

interface Registry {
  boxes: { box: string; hostnames: string[]; env: Record<string, string> }[];
}

export function describeHosting(): void {
  describe('hosted boxes (spec.serving: Hosted)', function () {
    this.timeout(120_000);
    const box = (namespace: string, spec: Record<string, unknown> = {}) => ({
      apiVersion: 'boxauth.io/v1alpha1',
      kind: 'Box',
      metadata: { name: 'auth', namespace },
      spec: { reclaimPolicy: 'Delete', ...spec },
    });
    const apply = (obj: unknown): Promise<string> => suite.cluster.k(['apply', '-f', '-'], JSON.stringify(obj));
    const registrySecret = async (): Promise<any> => suite.cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'secret', 'boxauth-host-boxes']);
    const registry = async (): Promise<Registry> =>
      JSON.parse(Buffer.from((await registrySecret()).data['boxes.json'] as string, 'base64').toString('utf8')) as Registry;
    const entryOf = async (namespace: string) => (await registry()).boxes.find((b) => b.box === `${namespace}/auth`);
    const serviceOf = (namespace: string): Promise<any> => suite.cluster.json(['-n', namespace, 'get', 'service', 'auth']);
    const deploymentThere = async (namespace: string): Promise<boolean> =>
      (await suite.cluster.kubectl(['-n', namespace, 'get', 'deployment', 'auth'])).code === 0;
    const reasonOf = async (namespace: string): Promise<string | undefined> => (await readyOf('box', namespace, 'auth'))?.reason;

    before(async function () {
      for (const ns of ['hosted-a', 'hosted-b', 'hosted-c', 'hosted-move']) await suite.cluster.k(['create', 'namespace', ns]);
    });

    it('writes a hosted box into the host registry with its own role, makes the host, and points its Service there', async function () {
      await apply(box('hosted-a', { serving: 'Hosted' }));
      await waitReady('box', 'hosted-a', 'auth', 60_000);
      const status = (await suite.cluster.json(['-n', 'hosted-a', 'get', 'box', 'auth'])).status;
      expect(status.host).to.equal(`${OPERATOR_NAMESPACE}/boxauth-host`);
      expect(await reasonOf('hosted-a')).to.equal('Hosted');
      const entry = await entryOf('hosted-a');
      expect(entry?.hostnames).to.include('auth.hosted-a.svc');
      expect(entry?.env.BOXAUTH_BASE_URL).to.equal('http://auth.hosted-a.svc');
      // Its own role (the one of its schema), never the operator's.
      const databaseUser = decodeURIComponent(new URL(entry!.env.DATABASE_URL!).username);
      expect(databaseUser).to.match(/^box_hosted_a_/);
      expect(entry?.env.BOXAUTH_FACTOR_KEY, 'Secret references resolved').to.match(/^[A-Za-z0-9+/=]{40,}$/);
      const service = await serviceOf('hosted-a');
      expect(service.spec.type).to.equal('ExternalName');
      expect(service.spec.externalName).to.equal(`boxauth-host.${OPERATOR_NAMESPACE}.svc.cluster.local`);
      expect(await deploymentThere('hosted-a')).to.equal(false);
      const host = await suite.cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'deployment', 'boxauth-host']);
      expect(host.spec.template.spec.containers[0].env).to.deep.include({
        name: 'BOXAUTH_HOSTED_BOXES',
        value: '/etc/boxauth/host/boxes.json',
      });
      expect((await suite.cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'service', 'boxauth-host'])).spec.ports[0].port).to.equal(80);
    });

    it('adds a second box to the same registry, and writes nothing when an unchanged Box is applied again', async function () {
      await apply(box('hosted-b', { serving: 'Hosted' }));
      await waitReady('box', 'hosted-b', 'auth', 60_000);
      expect((await registry()).boxes.map((b) => b.box)).to.include.members(['hosted-a/auth', 'hosted-b/auth']);
      const version = (await registrySecret()).metadata.resourceVersion;
      const boxVersion = (await suite.cluster.json(['-n', 'hosted-b', 'get', 'box', 'auth'])).metadata.resourceVersion;
      await apply(box('hosted-b', { serving: 'Hosted' }));
      await suite.cluster.k(['-n', 'hosted-b', 'annotate', 'box', 'auth', 'touched=1', '--overwrite']); // an event, a reconcile
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect((await registrySecret()).metadata.resourceVersion).to.equal(version);
      const after = await suite.cluster.json(['-n', 'hosted-b', 'get', 'box', 'auth']);
      expect(Number(after.metadata.resourceVersion)).to.be.greaterThan(Number(boxVersion)); // the annotation, and nothing of ours
      expect(after.status.conditions.find((c: any) => c.type === 'Ready').reason).to.equal('Hosted');
    });

    it('refuses to host a box that asks for a pod of its own (NotHostable), and makes nothing for it', async function () {
      await apply(box('hosted-c', { serving: 'Hosted', port: 9090 }));
      const ready = await eventually('NotHostable', async () => {
        const r = await readyOf('box', 'hosted-c', 'auth');
        return r?.reason === 'NotHostable' && r;
      });
      expect(ready.status).to.equal('False');
      expect(ready.message).to.include('spec.port 9090');
      expect(await entryOf('hosted-c')).to.equal(undefined);
    });

    it('moves a dedicated box to the host only once the host answers for it, and back once its pods do', async function () {
      this.timeout(180_000);
      await apply(box('hosted-move'));
      await waitReady('box', 'hosted-move', 'auth', 60_000);
      const clusterIp = (await serviceOf('hosted-move')).spec.clusterIP;
      await apply(box('hosted-move', { serving: 'Hosted' }));
      // No host pod runs here: the box stays on its Deployment and Service, its entry written ahead.
      await eventually('MovingToHost', async () => (await reasonOf('hosted-move')) === 'MovingToHost');
      expect(await entryOf('hosted-move')).to.not.equal(undefined);
      expect(await deploymentThere('hosted-move')).to.equal(true);
      expect((await serviceOf('hosted-move')).spec.clusterIP).to.equal(clusterIp);
      // Back to Dedicated before the move ended: the entry goes, nothing else changed.
      await apply(box('hosted-move'));
      await eventually(
        'Provisioned again',
        async () => (await reasonOf('hosted-move')) === 'Provisioned' && !(await entryOf('hosted-move')),
      );
      expect((await serviceOf('hosted-move')).spec.clusterIP).to.equal(clusterIp);

      // A hosted box moved back: the host serves it until its Deployment has an available pod.
      await apply(box('hosted-a'));
      await eventually('MovingFromHost', async () => (await reasonOf('hosted-a')) === 'MovingFromHost');
      expect((await serviceOf('hosted-a')).spec.type).to.equal('ExternalName');
      expect(await entryOf('hosted-a')).to.not.equal(undefined);
      await suite.cluster.k([
        '-n',
        'hosted-a',
        'patch',
        'deployment',
        'auth',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { availableReplicas: 1, readyReplicas: 1, replicas: 1 } }),
      ]);
      await eventually('Provisioned on its own pods', async () => (await reasonOf('hosted-a')) === 'Provisioned', 60_000);
      const service = await serviceOf('hosted-a');
      expect(service.spec.type).to.equal('ClusterIP');
      expect(await entryOf('hosted-a')).to.equal(undefined);
    });

    after(async function () {
      this.timeout(120_000);
      for (const ns of ['hosted-a', 'hosted-b', 'hosted-c', 'hosted-move']) {
        await suite.cluster.kubectl(['delete', 'box', 'auth', '-n', ns, '--wait=true', '--timeout=60s']);
      }
    });
  });
}
