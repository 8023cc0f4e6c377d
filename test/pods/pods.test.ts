// The release on real pods (issue 64): the chart installed from the release's chart repository into the
// one-node cluster of scripts/cluster-up.sh, with the release's image imported into its containerd; the
// operator as two pods, a Box whose pods become Ready through their own probes, an app Pod that gets a
// token with the ServiceAccount token the kubelet projects, and the box pods' security context as the
// kernel enforces it. Run by `make e2e-pods` (needs root; the cluster's binaries are built once).
// Each case builds on the ones before it: run the whole file.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { eventually, KUBE_BIN, run, type RunResult } from '../support/kube.js';
import { PodCluster } from '../support/pod-cluster.js';
import { serveFiles } from '../support/static-files.js';

const VERSION = `${(JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version}-pods-test`;
const IMAGE = `ghcr.io/boxauth/boxauth:${VERSION}`;
const OPERATOR_NAMESPACE = 'boxauth-system';
const BOX_NAMESPACE = 'team-a';
const APP_NAMESPACE = 'shop';
const BOX_URL = `http://auth.${BOX_NAMESPACE}.svc`;

// What the app does (examples/workload/token-client.mjs), once: a token for its projected ServiceAccount
// token as the client assertion (RFC 7523 §2.2), then the box's API with that token and with a forged one.
// Prints the statuses and the token endpoint's answer as JSON.
const APP_SCRIPT = `
const fs = require('fs');
const body = new URLSearchParams({
  grant_type: 'client_credentials',
  client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  client_assertion: fs.readFileSync('/var/run/secrets/boxauth/token', 'utf8').trim(),
});
(async () => {
  const res = await fetch('${BOX_URL}/auth/token', { method: 'POST', body });
  const answer = await res.json();
  const use = async (token) => (await fetch('${BOX_URL}/Client/shipping', { headers: { Authorization: 'Bearer ' + token } })).status;
  const out = { status: res.status, body: answer };
  if (answer.access_token) Object.assign(out, { withToken: await use(answer.access_token), forged: await use(answer.access_token.slice(0, -4) + 'AAAA') });
  console.log(JSON.stringify(out));
})();
`;

/** The pid, on the node, of the box API process (node dist/api/main.js) in the pod with this uid. */
function nodeProcessOfPod(uid: string): number {
  const pids = fs
    .readdirSync('/proc')
    .filter(
      (p) => /^[0-9]+$/.test(p) && readProc(p, 'cgroup').includes(`pod${uid}`) && readProc(p, 'cmdline').includes('dist/api/main.js'),
    );
  if (pids.length !== 1) throw new Error(`processes of node in pod ${uid}: ${pids.join(', ') || 'none'}`);
  return Number(pids[0]);
}

function readProc(pid: string, file: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return ''; // gone meanwhile
  }
}

/** The claims of a JWT (not verified: what a user reads with a JWT decoder). */
function claims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('the release on real pods (make e2e-pods)', function () {
  this.timeout(180_000);
  this.slow(30_000);
  let work: string;
  let release: string;
  let cluster: PodCluster;
  let databaseUrl: string;
  let failed = false;

  before(async function () {
    this.timeout(60 * 60_000); // the release's image, and the node's binaries the first time
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pods-'));
    release = path.join(work, 'release');
    const r = await run(projectPath('scripts', 'release.sh'), [VERSION], { env: { BOXAUTH_RELEASE_DIR: release }, timeoutMs: 30 * 60_000 });
    expect(r.code, r.stderr.slice(-4000)).to.equal(0);
    cluster = await PodCluster.start({
      dir: projectPath('.boxauth', 'e2e-pods'),
      port: Number(process.env.BOXAUTH_CLUSTER_PORT ?? 6446),
      images: [path.join(release, `boxauth-${VERSION}-image.oci.tar`)],
    });
    databaseUrl = await cluster.startPostgres();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(300_000);
    // A failed run keeps the cluster's state dir (logs of every pod and component) for a look.
    await cluster?.stop(failed);
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  /** `kubectl wait` until the condition holds, or the objects' state in the failure. */
  async function waitFor(namespace: string, what: string[], condition: string, timeout = '150s'): Promise<void> {
    const r = await cluster.kubectl(['-n', namespace, 'wait', `--for=${condition}`, `--timeout=${timeout}`, ...what]);
    if (r.code !== 0) {
      const state = await cluster.kubectl(['-n', namespace, 'get', 'all,events', '-o', 'wide']);
      expect.fail(`${what.join(' ')} not ${condition}: ${r.stderr}\n${state.stdout}`);
    }
  }

  /** The app Pod's APP_SCRIPT, run with kubectl exec. */
  async function appRequest(): Promise<{ status: number; body: any; withToken?: number; forged?: number }> {
    const r = await cluster.kubectl(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'node', '-e', APP_SCRIPT]);
    expect(r.code, r.stderr).to.equal(0);
    return JSON.parse(r.stdout) as { status: number; body: any };
  }

  /** The Client shipping, bound to this ServiceAccount of the app's namespace instead. */
  async function bindServiceAccount(name: string): Promise<void> {
    const patch = { spec: { auth: { workload: { serviceAccounts: [{ namespace: APP_NAMESPACE, name }] } } } };
    await cluster.k(['-n', BOX_NAMESPACE, 'patch', 'client', 'shipping', '--type=merge', '-p', JSON.stringify(patch)]);
  }

  describe('helm install from the chart repository', function () {
    it('runs the operator as two pods of the release image, one of them holding the Lease', async function () {
      this.timeout(300_000);
      await cluster.k(['create', 'namespace', OPERATOR_NAMESPACE]);
      await cluster.k([
        '-n',
        OPERATOR_NAMESPACE,
        'create',
        'secret',
        'generic',
        'boxauth-database',
        `--from-literal=DATABASE_URL=${databaseUrl}`,
      ]);
      const helmEnv = {
        KUBECONFIG: cluster.kubeconfig,
        HELM_CACHE_HOME: path.join(work, 'helm-cache'),
        HELM_CONFIG_HOME: path.join(work, 'helm-config'),
        HELM_DATA_HOME: path.join(work, 'helm-data'),
      };
      const helm = async (args: string[]): Promise<RunResult> => {
        const r = await run(path.join(KUBE_BIN, 'helm'), args, { env: helmEnv, timeoutMs: 240_000 });
        expect(r.code, `helm ${args.join(' ')}: ${r.stderr}`).to.equal(0);
        return r;
      };
      const repo = await serveFiles(path.join(release, 'charts'), (url) => url.slice(1));
      try {
        await helm(['repo', 'add', 'boxauth', `http://${repo.url}`]);
        // The chart's own PostgreSQL image cannot be pulled here: the database is the Secret's (install.md 1a).
        await helm([
          'install',
          'boxauth',
          'boxauth/boxauth',
          '--version',
          VERSION,
          '-n',
          OPERATOR_NAMESPACE,
          '--set',
          'postgresql.enabled=false',
          '--set',
          'database.existingSecret=boxauth-database',
        ]);
      } finally {
        await repo.close();
      }
      await waitFor(OPERATOR_NAMESPACE, ['deployment/boxauth-operator'], 'condition=Available');
      const pods = await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=operator']);
      const running = pods.items.filter((p: any) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp);
      expect(running.map((p: any) => p.spec.containers[0].image)).to.deep.equal([IMAGE, IMAGE]);
      const holder = await eventually(
        'the Lease boxauth-operator held',
        async () => (await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'lease', 'boxauth-operator'])).spec.holderIdentity as string,
        60_000,
        500,
      );
      expect(running.map((p: any) => p.metadata.name)).to.include(holder);
    });

    it('turns a Box into a Deployment whose two pods become Ready through their probes', async function () {
      this.timeout(300_000);
      await cluster.k(['create', 'namespace', BOX_NAMESPACE]);
      await cluster.k(['create', 'namespace', APP_NAMESPACE]);
      await cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Box',
          metadata: { name: 'auth', namespace: BOX_NAMESPACE },
          spec: { replicas: 2, workloadNamespaces: [APP_NAMESPACE] },
        }),
      );
      await eventually(
        'the Deployment auth written',
        async () => (await cluster.kubectl(['-n', BOX_NAMESPACE, 'get', 'deployment/auth'])).code === 0,
        120_000,
        500,
      );
      await waitFor(BOX_NAMESPACE, ['deployment/auth'], 'condition=Available', '240s');
      await waitFor(BOX_NAMESPACE, ['box/auth'], 'condition=Ready');
      const pods = await cluster.json(['-n', BOX_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/instance=auth']);
      expect(pods.items).to.have.length(2);
      for (const pod of pods.items) {
        expect(pod.spec.containers[0].readinessProbe?.httpGet, 'a readiness probe over HTTP').to.be.an('object');
        expect(pod.status.conditions.find((c: any) => c.type === 'Ready')?.status).to.equal('True');
        expect(pod.status.containerStatuses[0]).to.include({ ready: true, restartCount: 0 });
      }
    });
  });

  describe('an app Pod in another namespace', function () {
    it('gets a token with the ServiceAccount token the kubelet projects, and the box takes it', async function () {
      this.timeout(300_000);
      await cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            {
              apiVersion: 'boxauth.io/v1alpha1',
              kind: 'Client',
              metadata: { name: 'shipping', namespace: BOX_NAMESPACE },
              spec: {
                grant_types: ['client_credentials'],
                auth: {
                  client_credentials: { token_format: 'jwt', access_token_expiration: 600 },
                  workload: { serviceAccounts: [{ namespace: APP_NAMESPACE, name: 'shipping' }] },
                },
              },
            },
            { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'shipping', namespace: APP_NAMESPACE } },
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'app', namespace: APP_NAMESPACE },
              spec: {
                serviceAccountName: 'shipping',
                automountServiceAccountToken: false,
                securityContext: { runAsNonRoot: true, runAsUser: 1000 },
                containers: [
                  {
                    name: 'app',
                    image: IMAGE, // it has node, as examples/workload's node:20-alpine
                    command: ['sleep', 'infinity'],
                    volumeMounts: [{ name: 'boxauth-token', mountPath: '/var/run/secrets/boxauth', readOnly: true }],
                  },
                ],
                volumes: [
                  {
                    name: 'boxauth-token',
                    projected: { sources: [{ serviceAccountToken: { audience: BOX_URL, expirationSeconds: 600, path: 'token' } }] },
                  },
                ],
              },
            },
          ],
        }),
      );
      await waitFor(BOX_NAMESPACE, ['client/shipping'], 'condition=Ready');
      await waitFor(APP_NAMESPACE, ['pod/app'], 'condition=Ready');
      const projected = await cluster.kubectl(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'cat', '/var/run/secrets/boxauth/token']);
      expect(claims(projected.stdout.trim())).to.include({ sub: `system:serviceaccount:${APP_NAMESPACE}:shipping` });
      expect(claims(projected.stdout.trim()).aud).to.deep.equal([BOX_URL]);

      const answer = await appRequest();
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body.token_type).to.match(/^bearer$/i);
      expect(claims(answer.body.access_token as string)).to.include({ iss: BOX_URL });
      expect(answer.withToken, 'the box authenticates the token (no policy grants it the record: 403)').to.equal(403);
      expect(answer.forged, 'a token with a forged signature').to.equal(401);
    });

    it('is refused once the Client no longer binds its ServiceAccount', async function () {
      this.timeout(300_000);
      await bindServiceAccount('billing');
      const refused = await eventually(
        'the token request refused',
        async () => {
          const answer = await appRequest();
          return answer.status !== 200 && answer;
        },
        120_000,
        1000,
      );
      expect(refused.status).to.equal(401);
      expect(refused.body).to.include({ error: 'invalid_client' });
    });
  });

  describe("the box pods' security context, as the kernel enforces it", function () {
    it('runs the box as uid 10001 on a root filesystem it cannot write', async function () {
      const exec = (args: string[]): Promise<RunResult> => cluster.kubectl(['-n', BOX_NAMESPACE, 'exec', 'deployment/auth', '--', ...args]);
      const id = await exec(['id', '-u']);
      expect(id.stdout.trim(), id.stderr).to.equal('10001');
      const write = await exec(['touch', '/app/written-by-an-attacker']);
      expect(write.code).to.not.equal(0);
      expect(write.stderr).to.include('Read-only file system');
      const writeRoot = await exec(['touch', '/written-by-an-attacker']);
      expect(writeRoot.stderr).to.include('Read-only file system');
    });
  });

  describe('a box pod deleted, and one killed', function () {
    const boxPods = async (): Promise<any[]> =>
      (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/instance=auth'])).items;
    const ready = (pod: any): boolean => pod.status.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True';

    before(async function () {
      this.timeout(180_000);
      // The binding back (the case before took it away).
      await bindServiceAccount('shipping');
      await eventually('the token request granted again', async () => (await appRequest()).status === 200, 120_000, 1000);
    });

    /** The Deployment back at two Ready pods, none of them `gone`. */
    async function healed(gone: string): Promise<void> {
      await eventually(
        'two Ready box pods again',
        async () => {
          const pods = (await boxPods()).filter((p) => !p.metadata.deletionTimestamp);
          return pods.length === 2 && pods.every(ready) && pods.every((p) => p.metadata.name !== gone);
        },
        180_000,
        1000,
      );
      const deployment = await cluster.json(['-n', BOX_NAMESPACE, 'get', 'deployment/auth']);
      expect(deployment.status).to.include({ readyReplicas: 2, availableReplicas: 2 });
    }

    it('serves from the other replica while a deleted pod is replaced', async function () {
      this.timeout(300_000);
      const [victim] = await boxPods();
      await cluster.k(['-n', BOX_NAMESPACE, 'delete', 'pod', victim.metadata.name, '--wait=false']);
      for (let i = 0; i < 5; i++) {
        const answer = await appRequest();
        expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      }
      await healed(victim.metadata.name);
      expect((await appRequest()).status).to.equal(200);
    });

    it('serves from the other replica while a SIGKILLed container is restarted', async function () {
      this.timeout(300_000);
      const [victim] = await boxPods();
      // The box's node process, found on the node by its pod's cgroup (the kubelet's cgroupfs driver
      // names it pod<uid>): what an out-of-memory kill or a crash does to it.
      const pid = nodeProcessOfPod(victim.metadata.uid as string);
      process.kill(pid, 'SIGKILL');
      await eventually(
        'the kubelet sees the container die',
        async () => {
          const pod = (await boxPods()).find((p) => p.metadata.name === victim.metadata.name);
          return pod && (!ready(pod) || pod.status.containerStatuses[0].restartCount > 0);
        },
        60_000,
        250,
      );
      for (let i = 0; i < 5; i++) {
        const answer = await appRequest();
        expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      }
      await eventually(
        'the container restarted and Ready',
        async () => {
          const pod = (await boxPods()).find((p) => p.metadata.name === victim.metadata.name);
          return pod && ready(pod) && pod.status.containerStatuses[0].restartCount === 1;
        },
        180_000,
        1000,
      );
      const deployment = await cluster.json(['-n', BOX_NAMESPACE, 'get', 'deployment/auth']);
      expect(deployment.status).to.include({ readyReplicas: 2, availableReplicas: 2 });
    });
  });
});
