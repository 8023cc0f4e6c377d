// The release on real pods (issue 64): the chart installed from the release's chart repository into the
// one-node cluster of scripts/cluster-up.sh, with the release's image and the previous release's
// (scripts/release-image.sh) imported into its containerd; the operator as two pods, a Box whose pods
// become Ready through their own probes, an app Pod that gets a token with the ServiceAccount token the
// kubelet projects (and later rotates), the boxes upgraded from the previous release's image to this
// one while the app fetches tokens, the box pods' security context as the kernel enforces it, box pods
// deleted and killed, two teams' boxes hosted in one host (one host pod killed under load), and the
// operator's leader killed mid-reconcile, and a Hook whose code runs as a Service of the cluster (the Go
// hook of test/hooks/go in a Pod). Run by `make e2e-pods`, part of
// `make test` (needs root; the cluster's binaries are built once). Each case builds on the ones before
// it: run the whole file.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { goHook } from '../support/hook-servers.js';
import { eventually, KUBE_BIN, KUBECTL_CLIENT, run, type RunResult } from '../support/kube.js';
import { NODE_IP, PodCluster } from '../support/pod-cluster.js';
import { serveFiles } from '../support/static-files.js';
import { testCa, type TestCa } from '../support/tls.js';

const VERSION = `${(JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version}-pods-test`;
const IMAGE = `ghcr.io/boxauth/boxauth:${VERSION}`;
const OPERATOR_NAMESPACE = 'boxauth-system';
const BOX_NAMESPACE = 'team-a';
const APP_NAMESPACE = 'shop';
const BOX_URL = `http://auth.${BOX_NAMESPACE}.svc`;
const PROJECTED_TOKEN = '/var/run/secrets/boxauth/token';
const CLI = projectPath('bin', 'boxauth.js');
// The box people sign in to kubectl with: HTTPS (the API server trusts only https issuers), in a namespace
// of its own (one Box per namespace), published at an address of the Services' range (scripts/cluster-lib.sh)
// chosen before the cluster starts, since the API server's AuthenticationConfiguration names it.
const LOGIN_NAMESPACE = 'people';
// Where the README's quick start applies examples/ (it says team-a, which the journeys above use).
const QUICK_START_NAMESPACE = 'quick-start';
const LOGIN_IP = `${NODE_IP.split('.').slice(0, 2).join('.')}.2.53`;
const LOGIN_URL = `https://${LOGIN_IP}`;
// The previous release (scripts/previous-release), whose image the boxes run before the upgrade.
const PREVIOUS_COMMIT = fs
  .readFileSync(projectPath('scripts', 'previous-release'), 'utf8')
  .split('\n')
  .find((l) => /^[0-9a-f]{40}$/.test(l.trim()))!
  .trim();
const PREVIOUS_IMAGE = `boxauth:release-${PREVIOUS_COMMIT.slice(0, 12)}`;
// The Go hook of test/hooks/go, a static program that is its image's one file (CLUSTER_BINARY_IMAGES).
const HOOK_IMAGE = 'boxauth.test/hook:1';

// What the app does (examples/workload/token-client.mjs), once: a token for its projected ServiceAccount
// token as the client assertion (RFC 7523 §2.2), then the box's API with that token and with a forged one.
// Prints the statuses and the token endpoint's answer as JSON.
const APP_SCRIPT = `
const fs = require('fs');
const body = new URLSearchParams({
  grant_type: 'client_credentials',
  client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  client_assertion: fs.readFileSync('${PROJECTED_TOKEN}', 'utf8').trim(),
});
(async () => {
  const res = await fetch('${BOX_URL}/auth/token', { method: 'POST', body });
  const answer = await res.json();
  const use = async (token) => (await fetch('${BOX_URL}/Client/shop', { headers: { Authorization: 'Bearer ' + token } })).status;
  const out = { status: res.status, body: answer };
  if (answer.access_token) Object.assign(out, { withToken: await use(answer.access_token), forged: await use(answer.access_token.slice(0, -4) + 'AAAA') });
  console.log(JSON.stringify(out));
})();
`;

// The app fetching tokens in a loop (two at a time, the projected token read for each) until its stdin
// closes; then prints how many it got, every failure, and every token it was given, as JSON. A line on
// stderr after its first token says it runs.
const LOOP_SCRIPT = `
const fs = require('fs');
const out = { ok: 0, failures: [], tokens: [] };
let stop = false;
process.stdin.on('end', () => { stop = true; }).resume();
async function once() {
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: fs.readFileSync('${PROJECTED_TOKEN}', 'utf8').trim(),
  });
  const at = new Date().toISOString();
  try {
    const res = await fetch('${BOX_URL}/auth/token', { method: 'POST', body, signal: AbortSignal.timeout(10000) });
    const text = await res.text();
    if (res.status !== 200) return out.failures.push({ at, status: res.status, body: text.slice(0, 300) });
    if (out.ok++ === 0) console.error('first token');
    out.tokens.push(JSON.parse(text).access_token);
  } catch (err) {
    out.failures.push({ at, error: String(err), cause: String(err.cause ?? '') });
  }
}
(async () => {
  await Promise.all([0, 1].map(async () => { while (!stop) { await once(); await new Promise((r) => setTimeout(r, 20)); } }));
  console.log(JSON.stringify(out));
})();
`;

// Each token on stdin (one per line) used on the box's API; prints how many times each status came back.
const CHECK_SCRIPT = `
let input = '';
process.stdin.on('data', (d) => { input += d; }).on('end', async () => {
  const tokens = input.split('\\n').filter(Boolean);
  const statuses = {};
  for (let i = 0; i < tokens.length; i += 8) {
    await Promise.all(tokens.slice(i, i + 8).map(async (t) => {
      const s = (await fetch('${BOX_URL}/Client/shop', { headers: { Authorization: 'Bearer ' + t } })).status;
      statuses[s] = (statuses[s] ?? 0) + 1;
    }));
  }
  console.log(JSON.stringify(statuses));
});
`;

// The app: its ServiceAccount, and a Pod of it whose token is the one the kubelet projects for the box's
// audience (examples/workload), for the least lifetime a Pod may ask (600 s), so that the kubelet
// rotates it during the run.
const APP_OBJECTS = {
  apiVersion: 'v1',
  kind: 'List',
  items: [
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
};

/** The pid, on the node, of the one process of the pod with this uid whose command line has `command` in it. */
function nodeProcessOfPod(uid: string, command = 'dist/api/main.js'): number {
  const pids = fs
    .readdirSync('/proc')
    .filter((p) => /^[0-9]+$/.test(p) && readProc(p, 'cgroup').includes(`pod${uid}`) && readProc(p, 'cmdline').includes(command));
  if (pids.length !== 1) throw new Error(`processes of ${command} in pod ${uid}: ${pids.join(', ') || 'none'}`);
  return Number(pids[0]);
}

function readProc(pid: string, file: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return ''; // gone meanwhile
  }
}

/**
 * How the test (on the host) reaches the sign-in box: every connection goes to `port`, where nsforward
 * publishes the box's address; the certificate is checked against the CA and the box's address.
 */
function through(port: number, ca: TestCa): Agent {
  const connector = buildConnector({ ca: ca.pem, checkServerIdentity: (_host, cert) => tls.checkServerIdentity(LOGIN_IP, cert) });
  return new Agent({ connect: (options, callback) => connector({ ...options, hostname: '127.0.0.1', port: String(port) }, callback) });
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
  let firstProjected = ''; // the app Pod's projected token as the kubelet first wrote it
  let ca: TestCa; // the CA of the sign-in box's certificate
  let loginCert: { certFile: string; keyFile: string };
  let setupDocs: any[]; // what `boxauth kube-login setup` printed: Ann's kubeconfig user, the AuthenticationConfiguration

  before(async function () {
    this.timeout(60 * 60_000); // the release's image, and the node's binaries the first time
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pods-'));
    release = path.join(work, 'release');
    // The image of this machine's architecture only: the node runs no other (the release test checks the arm64 one).
    const r = await run(projectPath('scripts', 'release.sh'), [VERSION], {
      env: { BOXAUTH_RELEASE_DIR: release, BOXAUTH_IMAGE_ARCHES: process.arch === 'arm64' ? 'arm64' : 'amd64' },
      timeoutMs: 30 * 60_000,
    });
    expect(r.code, r.stderr.slice(-4000)).to.equal(0);
    const previous = await run(projectPath('scripts', 'release-image.sh'), [PREVIOUS_COMMIT], { timeoutMs: 30 * 60_000 });
    expect(previous.code, previous.stderr.slice(-4000)).to.equal(0);
    // The admin's half of kubectl sign-in first: the API server starts trusting the box that will serve there.
    ca = testCa(fs.mkdtempSync(path.join(work, 'tls-')));
    loginCert = ca.issue('login', `/CN=${LOGIN_IP}`, `IP:${LOGIN_IP}`);
    const setup = await run(process.execPath, [
      CLI,
      'kube-login',
      'setup',
      '--box',
      LOGIN_URL,
      '--client',
      'kubectl',
      '--ca-file',
      ca.caFile,
      '--name',
      'ann',
      '--device',
    ]);
    expect(setup.code, setup.stderr).to.equal(0);
    setupDocs = parseAllDocuments(setup.stdout).map((d) => d.toJS());
    const authConfig = path.join(work, 'auth-config.yaml');
    fs.writeFileSync(authConfig, stringify(setupDocs[1]));
    cluster = await PodCluster.start({
      dir: projectPath('.boxauth', 'e2e-pods'),
      ...(process.env.BOXAUTH_CLUSTER_PORT ? { port: Number(process.env.BOXAUTH_CLUSTER_PORT) } : {}),
      images: [path.join(release, `boxauth-${VERSION}-image.oci.tar`), previous.stdout.trim()],
      binaries: { [HOOK_IMAGE]: goHook() },
      authConfig,
    });
    databaseUrl = await cluster.startPostgres();
    // The app Pod first, so that the kubelet's rotation of its token (the last case, 8 minutes after it
    // starts) comes while the other cases run rather than after them.
    await cluster.k(['create', 'namespace', APP_NAMESPACE]);
    await cluster.k(['apply', '-f', '-'], JSON.stringify(APP_OBJECTS));
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(300_000);
    // A failed run keeps the cluster's state dir (logs of every pod and component) for a look.
    await cluster?.stop(failed);
    await ca?.dispatcher.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  /** What a failure message shows of a namespace: its objects, the Services' endpoints, and its events. */
  async function stateOf(namespace: string): Promise<string> {
    return (await cluster.kubectl(['-n', namespace, 'get', 'all,endpointslices,events', '-o', 'wide'])).stdout;
  }

  /** `kubectl wait` until the condition holds, or the objects' state in the failure. */
  async function waitFor(namespace: string, what: string[], condition: string, timeout = '150s'): Promise<void> {
    const r = await cluster.kubectl(['-n', namespace, 'wait', `--for=${condition}`, `--timeout=${timeout}`, ...what]);
    if (r.code !== 0) expect.fail(`${what.join(' ')} not ${condition}: ${r.stderr}\n${await stateOf(namespace)}`);
  }

  /** Until the operator has written `what` (kubectl wait fails at once on an object not there yet). */
  async function written(namespace: string, what: string): Promise<void> {
    await eventually(`${what} written`, async () => (await cluster.kubectl(['-n', namespace, 'get', what])).code === 0, 120_000, 500);
  }

  /** kubectl apply of these objects, as one List. */
  async function apply(...items: object[]): Promise<string> {
    return cluster.k(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  }

  /** The app Pod's APP_SCRIPT, run with kubectl exec. */
  async function appRequest(): Promise<{ status: number; body: any; withToken?: number; forged?: number }> {
    const r = await cluster.kubectl(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'node', '-e', APP_SCRIPT]);
    expect(r.code, r.stderr).to.equal(0);
    return JSON.parse(r.stdout) as { status: number; body: any };
  }

  const helmEnv = (): Record<string, string> => ({
    KUBECONFIG: cluster.kubeconfig,
    HELM_CACHE_HOME: path.join(work, 'helm-cache'),
    HELM_CONFIG_HOME: path.join(work, 'helm-config'),
    HELM_DATA_HOME: path.join(work, 'helm-data'),
  });
  async function helm(args: string[]): Promise<RunResult> {
    const r = await run(path.join(KUBE_BIN, 'helm'), args, { env: helmEnv(), timeoutMs: 240_000 });
    expect(r.code, `helm ${args.join(' ')}: ${r.stderr}`).to.equal(0);
    return r;
  }

  const boxPods = async (): Promise<any[]> =>
    (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/instance=auth'])).items;
  const ready = (pod: any): boolean => pod.status.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True';

  /** The Client shop, bound to this ServiceAccount of the app's namespace instead. */
  async function bindServiceAccount(name: string): Promise<void> {
    const patch = { spec: { auth: { workload: { serviceAccounts: [{ namespace: APP_NAMESPACE, name }] } } } };
    await cluster.k(['-n', BOX_NAMESPACE, 'patch', 'client', 'shop', '--type=merge', '-p', JSON.stringify(patch)]);
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
      const repo = await serveFiles(path.join(release, 'charts'), (url) => url.slice(1));
      try {
        await helm(['repo', 'add', 'boxauth', `http://${repo.url}`]);
        // The chart's own PostgreSQL image cannot be pulled here: the database is the Secret's (install.md 1a).
        // The boxes run the previous release's image until the upgrade below.
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
          '--set',
          `boxImage.repository=${PREVIOUS_IMAGE.split(':')[0]}`,
          '--set',
          `boxImage.tag=${PREVIOUS_IMAGE.split(':')[1]}`,
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

    it("turns a Box into a Deployment whose two pods (the previous release's) become Ready through their probes", async function () {
      this.timeout(300_000);
      await cluster.k(['create', 'namespace', BOX_NAMESPACE]);
      await cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Box',
          metadata: { name: 'auth', namespace: BOX_NAMESPACE },
          spec: { replicas: 2, workloadNamespaces: [APP_NAMESPACE] },
        }),
      );
      await written(BOX_NAMESPACE, 'deployment/auth');
      await waitFor(BOX_NAMESPACE, ['deployment/auth'], 'condition=Available', '240s');
      await waitFor(BOX_NAMESPACE, ['box/auth'], 'condition=Ready');
      const pods = await cluster.json(['-n', BOX_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/instance=auth']);
      expect(pods.items).to.have.length(2);
      for (const pod of pods.items) {
        expect(pod.spec.containers[0].image).to.equal(PREVIOUS_IMAGE);
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
              // Not "shipping": that is the Client of examples/workload, applied below as the guide says.
              metadata: { name: 'shop', namespace: BOX_NAMESPACE },
              spec: {
                grant_types: ['client_credentials'],
                auth: {
                  client_credentials: { token_format: 'jwt', access_token_expiration: 600 },
                  workload: { serviceAccounts: [{ namespace: APP_NAMESPACE, name: 'shipping' }] },
                },
              },
            },
          ],
        }),
      );
      await waitFor(BOX_NAMESPACE, ['client/shop'], 'condition=Ready');
      await waitFor(APP_NAMESPACE, ['pod/app'], 'condition=Ready');
      firstProjected = (await cluster.k(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'cat', PROJECTED_TOKEN])).trim();
      expect(claims(firstProjected)).to.include({ sub: `system:serviceaccount:${APP_NAMESPACE}:shipping` });
      expect(claims(firstProjected).aud).to.deep.equal([BOX_URL]);

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

  describe("the boxes upgraded from the previous release's image while the app fetches tokens", function () {
    before(async function () {
      this.timeout(180_000);
      // The binding back (the case before took it away).
      await bindServiceAccount('shipping');
      await eventually('the token request granted again', async () => (await appRequest()).status === 200, 120_000, 1000);
    });

    interface LoopResult {
      ok: number;
      failures: { at: string; status?: number; error?: string; cause?: string }[];
      tokens: string[];
    }

    /**
     * `action` while the app fetches tokens in a loop (LOOP_SCRIPT), and a few seconds after it; then every
     * token the app got used on the box: each must be taken (403: authenticated, no policy grants it).
     */
    async function whileFetching(action: () => Promise<void>): Promise<LoopResult> {
      const loop = spawn(path.join(KUBE_BIN, 'kubectl'), ['-n', APP_NAMESPACE, 'exec', '-i', 'app', '--', 'node', '-e', LOOP_SCRIPT], {
        env: { ...process.env, KUBECONFIG: cluster.kubeconfig },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      loop.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      loop.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => loop.once('exit', resolve));
      try {
        await eventually('the loop to have a first token', async () => stderr.includes('first token'), 60_000, 200);
        await action();
        await new Promise((resolve) => setTimeout(resolve, 3000)); // a few requests to the new pods only
      } finally {
        loop.stdin.end();
      }
      expect(await exited, stderr).to.equal(0);
      const result = JSON.parse(stdout) as LoopResult;
      expect(result.ok).to.be.above(20);
      const checked = await cluster.kubectl(
        ['-n', APP_NAMESPACE, 'exec', '-i', 'app', '--', 'node', '-e', CHECK_SCRIPT],
        result.tokens.join('\n'),
      );
      expect(checked.code, checked.stderr).to.equal(0);
      expect(JSON.parse(checked.stdout), 'statuses of the tokens on the box API (403: authenticated, no policy)').to.deep.equal({
        403: result.tokens.length,
      });
      return result;
    }

    /** The box's Deployment rolled out: two Ready pods of `image`. */
    async function rolledOut(image: string): Promise<void> {
      const rollout = await cluster.kubectl(['-n', BOX_NAMESPACE, 'rollout', 'status', 'deployment/auth', '--timeout=300s']);
      expect(rollout.code, rollout.stderr).to.equal(0);
      const pods = (await boxPods()).filter((p) => !p.metadata.deletionTimestamp);
      expect(pods.map((p) => p.spec.containers[0].image)).to.deep.equal([image, image]);
      expect(pods.every(ready)).to.equal(true);
    }

    it('loses no token while helm upgrade rolls the box pods to this image', async function () {
      this.timeout(600_000);
      const result = await whileFetching(async () => {
        // The admin's upgrade: the boxes follow the operator's own image again (the chart's default).
        await helm([
          'upgrade',
          'boxauth',
          path.join(release, 'charts', `boxauth-${VERSION}.tgz`),
          '-n',
          OPERATOR_NAMESPACE,
          '--reuse-values',
          '--set',
          'boxImage.repository=',
          '--set',
          'boxImage.tag=',
        ]);
        await eventually(
          "the operator's new leader writes this image into the box's Deployment",
          async () =>
            (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'deployment/auth'])).spec.template.spec.containers[0].image === IMAGE,
          240_000,
          1000,
        );
        await rolledOut(IMAGE);
      });
      // A release before BOXAUTH_SHUTDOWN_DELAY_MS closes its clients' keep-alive connections at SIGTERM:
      // a request sent on one at that moment fails ("other side closed"), at most one per connection of
      // the app (two) to each old pod (two). From a release that has it, none may fail.
      const previousDrains =
        (await run('git', ['grep', '-q', 'BOXAUTH_SHUTDOWN_DELAY_MS', PREVIOUS_COMMIT, '--', 'api/config.ts'])).code === 0;
      if (previousDrains) expect(result.failures, `${result.ok} tokens, and these failures`).to.deep.equal([]);
      else {
        expect(result.failures.length, JSON.stringify(result.failures)).to.be.at.most(4);
        for (const failure of result.failures) expect(failure.cause, JSON.stringify(failure)).to.match(/other side closed|ECONNRESET/);
      }
    });

    it("fails no request while this release's box pods are replaced (kubectl rollout restart)", async function () {
      this.timeout(600_000);
      const result = await whileFetching(async () => {
        await cluster.k(['-n', BOX_NAMESPACE, 'rollout', 'restart', 'deployment/auth']);
        await rolledOut(IMAGE);
      });
      expect(result.failures, `${result.ok} tokens, and these failures`).to.deep.equal([]);
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
      // A Ready one: a pod the rollout restart before replaced may still be listed, on its way out.
      const [victim] = (await boxPods()).filter((p) => !p.metadata.deletionTimestamp && ready(p));
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
      // A Ready one: the pod the case before deleted may still be listed, terminating, its process gone.
      const [victim] = (await boxPods()).filter((p) => !p.metadata.deletionTimestamp && ready(p));
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
  describe('two teams hosted in one host (docs/kubernetes/hosted-boxes.md)', function () {
    const TEAMS = ['hosted-a', 'hosted-b'] as const;
    const urlOf = (team: string): string => `http://auth.${team}.svc`;
    const boxes: Record<string, Box> = {};
    let forward: { port: number; close: () => Promise<void> } | undefined;
    const hostPods = async (): Promise<any[]> => {
      const selector = (await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'deployment/boxauth-host'])).spec.selector.matchLabels;
      const labels = Object.entries(selector as Record<string, string>).map(([k, v]) => `${k}=${v}`);
      return (await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'pods', '-l', labels.join(',')])).items;
    };
    const secretOf = async (team: string, name: string, key: string): Promise<string> =>
      Buffer.from(await cluster.k(['-n', team, 'get', 'secret', name, '-o', `jsonpath={.data.${key}}`]), 'base64').toString('utf8');

    before(async function () {
      this.timeout(400_000);
      for (const team of TEAMS) {
        await cluster.k(['create', 'namespace', team]);
        await cluster.k(
          ['apply', '-f', '-'],
          JSON.stringify({
            apiVersion: 'boxauth.io/v1alpha1',
            kind: 'Box',
            metadata: { name: 'auth', namespace: team },
            spec: { serving: 'Hosted' },
          }),
        );
      }
      for (const team of TEAMS) await waitFor(team, ['box/auth'], 'condition=Ready', '300s');
      // The host's Service, reached from here as an Ingress would: the Host header picks the box.
      const service = await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'service', 'boxauth-host']);
      forward = await cluster.forward(`${service.spec.clusterIP}:80`);
      const port = forward.port;
      const dispatcher = new Agent({
        connect: { lookup: (_h, _o, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }] as never, 4) },
      });
      for (const team of TEAMS) {
        // Requests go to the forwarded port, with the box's own name as their Host (the port aside).
        const box = Box.remote(`http://auth.${team}.svc:${port}`, dispatcher, await secretOf(team, 'auth-root-client', 'client-secret'));
        boxes[team] = box;
      }
    });
    after(async () => {
      await forward?.close();
    });

    it('gives each hosted box an ExternalName Service and no pod of its own', async function () {
      for (const team of TEAMS) {
        const service = await cluster.json(['-n', team, 'get', 'service', 'auth']);
        expect(service.spec.type).to.equal('ExternalName');
        expect(service.spec.externalName).to.equal(`boxauth-host.${OPERATOR_NAMESPACE}.svc.cluster.local`);
        expect((await cluster.json(['-n', team, 'get', 'pods'])).items).to.deep.equal([]);
      }
      // Ready once each has prepared the boxes of its registry (a host's own /readyz).
      await eventually('two Ready host pods', async () => (await hostPods()).filter(ready).length === 2, 180_000, 1000);
    });

    it("signs each team's people in at its own issuer, and refuses the other team's tokens and cookies", async function () {
      this.timeout(120_000);
      const [a, b] = [boxes['hosted-a']!, boxes['hosted-b']!];
      for (const team of TEAMS) {
        const discovery = await eventually(
          `${team} answering through the host`,
          async () => {
            const res = await boxes[team]!.request('GET', '/.well-known/openid-configuration');
            return res.status === 200 && res.body;
          },
          120_000,
          500,
        );
        expect(discovery.issuer).to.equal(urlOf(team));
      }
      const person = new FormAgent(a);
      const password = await secretOf('hosted-a', 'auth-admin', 'password');
      expect((await person.signIn('admin@localhost', password)).status).to.equal(303);
      const signedIn = await person.get('/auth/account');
      expect(signedIn.status, signedIn.text.slice(0, 300)).to.equal(200);
      // The same browser at team b: its cookies are a's, and b knows none of them.
      const elsewhere = await person.at(b).get('/auth/account');
      expect(elsewhere.status).to.not.equal(200);
      // b's admin password does not sign in at a.
      const other = await secretOf('hosted-b', 'auth-admin', 'password');
      expect((await new FormAgent(a).signIn('admin@localhost', other)).status).to.not.equal(303);
      const tokenA = await a.rootToken();
      expect((await a.json('GET', '/Client', undefined, tokenA)).status).to.equal(200);
      expect((await b.json('GET', '/Client', undefined, tokenA)).status).to.equal(401);
      // From a Pod of the cluster, by the box's Service name (the ExternalName to the host).
      const script = `fetch('${urlOf('hosted-a')}/auth/token', { method: 'POST', headers: { Authorization: 'Basic ${Buffer.from(`root:${a.rootSecret}`).toString('base64')}' }, body: new URLSearchParams({ grant_type: 'client_credentials' }) }).then(async (r) => console.log(r.status))`;
      const inCluster = await cluster.kubectl(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'node', '-e', script]);
      expect(inCluster.stdout.trim(), inCluster.stderr).to.equal('200');
    });

    it('keeps serving both teams while a host pod is killed under load, and loses no token it gave', async function () {
      this.timeout(300_000);
      const a = boxes['hosted-a']!;
      const basicA = Buffer.from(`root:${a.rootSecret}`).toString('base64');
      // Four loops of token requests to team a, by its Service name, from the app Pod, until stdin closes.
      const loopScript = `
const out = { ok: 0, failures: [], tokens: [] };
let stop = false;
process.stdin.on('end', () => { stop = true; }).resume();
async function once() {
  try {
    const res = await fetch('${urlOf('hosted-a')}/auth/token', { method: 'POST', headers: { Authorization: 'Basic ${basicA}' }, body: new URLSearchParams({ grant_type: 'client_credentials' }), signal: AbortSignal.timeout(10000) });
    const text = await res.text();
    if (res.status !== 200) return out.failures.push({ status: res.status, body: text.slice(0, 200) });
    if (out.ok++ === 0) console.error('first token');
    out.tokens.push(JSON.parse(text).access_token);
  } catch (err) { out.failures.push({ error: String(err), cause: String(err.cause ?? '') }); }
}
(async () => {
  await Promise.all([0, 1, 2, 3].map(async () => { while (!stop) { await once(); await new Promise((r) => setTimeout(r, 10)); } }));
  console.log(JSON.stringify(out));
})();`;
      const loop = spawn(path.join(KUBE_BIN, 'kubectl'), ['-n', APP_NAMESPACE, 'exec', '-i', 'app', '--', 'node', '-e', loopScript], {
        env: { ...process.env, KUBECONFIG: cluster.kubeconfig },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      loop.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      loop.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => loop.once('exit', resolve));
      let victim: any;
      try {
        await eventually('the loop to have a first token', async () => stderr.includes('first token'), 60_000, 200);
        [victim] = (await hostPods()).filter(ready);
        process.kill(nodeProcessOfPod(victim.metadata.uid as string), 'SIGKILL');
        await eventually(
          'the host pod restarted and Ready',
          async () => {
            const pod = (await hostPods()).find((p) => p.metadata.name === victim.metadata.name);
            return pod && ready(pod) && pod.status.containerStatuses[0].restartCount === 1;
          },
          180_000,
          1000,
        );
        // Team b, which had no request in flight, is served meanwhile and after.
        expect(await boxes['hosted-b']!.rootToken()).to.be.a('string');
        await new Promise((resolve) => setTimeout(resolve, 3000));
      } finally {
        loop.stdin.end();
      }
      expect(await exited, stderr).to.equal(0);
      const result = JSON.parse(stdout) as {
        ok: number;
        failures: { status?: number; error?: string; cause?: string }[];
        tokens: string[];
      };
      expect(result.ok).to.be.above(20);
      // What was in flight on the killed pod fails as a connection does; no answer of a live pod is an error.
      for (const failure of result.failures) expect(failure.status, JSON.stringify(failure)).to.equal(undefined);
      // Every token it gave, the killed pod's too, is taken by the box (they are in its database).
      const introspect = async (token: string): Promise<boolean> =>
        (await a.form('/auth/introspect', { token }, { Authorization: `Basic ${basicA}` })).body.active === true;
      // A few at a time: the box's line in the host (BOXAUTH_HOST_BOX_CONCURRENCY) answers 503 past its queue.
      const taken: boolean[] = [];
      for (let i = 0; i < result.tokens.length; i += 16) taken.push(...(await Promise.all(result.tokens.slice(i, i + 16).map(introspect))));
      expect(taken.filter((t) => !t).length, `${result.tokens.length} tokens`).to.equal(0);
    });
  });

  describe("the operator's leader killed mid-reconcile", function () {
    const CLIENTS = 20;
    const crashClients = (): string =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: Array.from({ length: CLIENTS }, (_, i) => ({
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Client',
          metadata: { name: `crash-${i}`, namespace: BOX_NAMESPACE },
          spec: { grant_types: ['client_credentials'] },
        })),
      });
    const readyCount = async (): Promise<number> =>
      (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'clients'])).items.filter(
        (c: any) =>
          c.metadata.name.startsWith('crash-') && c.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
      ).length;
    /** Rows of the box's clients table for the crash-* Clients, as psql on the node counts them. */
    async function recordCount(): Promise<number> {
      const status = (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'box', 'auth'])).status;
      const [schema, database] = [status.schema as string, status.database.database as string];
      expect(schema).to.match(/^[a-z0-9_]+$/);
      // The box's own database (a new box's, BOXAUTH_OPERATOR_BOX_ISOLATION=Database), or the shared one.
      const r = await cluster.exec([
        '/usr/lib/postgresql/15/bin/psql',
        '-h',
        NODE_IP,
        '-U',
        'postgres',
        '-d',
        database,
        '-Atc',
        `SELECT count(*) FROM ${schema}.clients WHERE managed_by LIKE 'Client ${BOX_NAMESPACE}/crash-%'`,
      ]);
      expect(r.code, r.stderr).to.equal(0);
      return Number(r.stdout.trim());
    }
    const crashSecrets = async (): Promise<any[]> =>
      (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'secrets', '-l', 'boxauth.io/client'])).items.filter((s: any) =>
        (s.metadata.labels['boxauth.io/client'] as string).startsWith('crash-'),
      );

    it('converges once another replica leads: each Client once, its Secret once, nothing left after deletion', async function () {
      this.timeout(600_000);
      const lease = async (): Promise<string> =>
        (await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'lease', 'boxauth-operator'])).spec.holderIdentity ?? '';
      const leader = await lease();
      const pod = await cluster.json(['-n', OPERATOR_NAMESPACE, 'get', 'pod', leader]);
      await cluster.k(['apply', '-f', '-'], crashClients());
      // SIGKILL (no goodbye, no Lease released) once it is busy with them, before it is done.
      await eventually('reconciles under way', async () => (await readyCount()) >= 1, 60_000, 100);
      process.kill(nodeProcessOfPod(pod.metadata.uid as string, 'dist/operator/main.js'), 'SIGKILL');
      expect(await readyCount(), 'the kill came too late to interrupt anything').to.be.below(CLIENTS);
      for (let i = 0; i < CLIENTS; i++) await waitFor(BOX_NAMESPACE, [`client/crash-${i}`], 'condition=Ready', '240s');
      expect(await crashSecrets()).to.have.length(CLIENTS);
      expect(await recordCount()).to.equal(CLIENTS);

      // Deleted: the kube-controller-manager's garbage collector takes the Secrets (owned by their Client), the operator the records.
      await cluster.k(['-n', BOX_NAMESPACE, 'delete', 'clients', ...Array.from({ length: CLIENTS }, (_, i) => `crash-${i}`)]);
      await eventually(
        'no Secret and no record left',
        async () => (await crashSecrets()).length === 0 && (await recordCount()) === 0,
        120_000,
        1000,
      );
      // And the killed pod is back (its container restarted), standing by or leading.
      await waitFor(OPERATOR_NAMESPACE, ['deployment/boxauth-operator'], 'condition=Available');
    });
  });

  describe('kubectl signs in through a box of the cluster (docs/guides/kubectl-sign-in.md)', function () {
    let loginBox: Box;
    let forward: { port: number; close: () => Promise<void> } | undefined;
    const annKubeconfig = (): string => path.join(work, 'ann.kubeconfig');

    after(async function () {
      await forward?.close();
      await (loginBox?.dispatcher as Agent | undefined)?.close();
    });

    it('serves the box over HTTPS from its Secret, at the address the API server was told to trust', async function () {
      this.timeout(300_000);
      await cluster.k(['create', 'namespace', LOGIN_NAMESPACE]);
      await cluster.k([
        '-n',
        LOGIN_NAMESPACE,
        'create',
        'secret',
        'tls',
        'login-tls',
        `--cert=${loginCert.certFile}`,
        `--key=${loginCert.keyFile}`,
      ]);
      await cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            {
              apiVersion: 'boxauth.io/v1alpha1',
              kind: 'Box',
              metadata: { name: 'login', namespace: LOGIN_NAMESPACE },
              spec: { tls: { secretName: 'login-tls' }, baseUrl: LOGIN_URL },
            },
            // The guide's Client, declared: kubectl keeps no secret (generateSecret: false).
            {
              apiVersion: 'boxauth.io/v1alpha1',
              kind: 'Client',
              metadata: { name: 'kubectl', namespace: LOGIN_NAMESPACE },
              spec: { ...KUBECTL_CLIENT, generateSecret: false },
            },
          ],
        }),
      );
      await waitFor(LOGIN_NAMESPACE, ['box/login'], 'condition=Ready', '240s');
      await waitFor(LOGIN_NAMESPACE, ['client/kubectl'], 'condition=Ready');
      // Its public address: what an Ingress or a load balancer would be, a Service whose address was
      // chosen before the cluster started (the AuthenticationConfiguration names it).
      const selector = (await cluster.json(['-n', LOGIN_NAMESPACE, 'get', 'service', 'login'])).spec.selector;
      await cluster.k(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'login-public', namespace: LOGIN_NAMESPACE },
          spec: { clusterIP: LOGIN_IP, selector, ports: [{ name: 'https', port: 443, targetPort: 'https' }] },
        }),
      );
      forward = await cluster.forward(`${LOGIN_IP}:443`);
      const secret = Buffer.from(
        await cluster.k(['-n', LOGIN_NAMESPACE, 'get', 'secret', 'login-root-client', '-o', 'jsonpath={.data.client-secret}']),
        'base64',
      ).toString('utf8');
      loginBox = Box.remote(LOGIN_URL, through(forward.port, ca), secret);
      const discovery = await eventually(
        'the box answering at its public address',
        async () => {
          const res = await loginBox.request('GET', '/.well-known/openid-configuration');
          return res.status === 200 && res.body;
        },
        120_000,
        500,
      ).catch(async (err: Error) => expect.fail(`${err.message}\n${await stateOf(LOGIN_NAMESPACE)}`));
      expect(discovery).to.include({ issuer: LOGIN_URL });
      expect(discovery.jwks_uri.startsWith(`${LOGIN_URL}/`), discovery.jwks_uri).to.equal(true);

      const root = await loginBox.rootToken();
      const devs = await loginBox.json('POST', '/groups', { name: 'devs' }, root);
      expect(devs.status, devs.text).to.equal(201);
      const ann = await loginBox.json(
        'POST',
        '/users',
        { email: 'ann@example.com', password: 'ann-password-1', 'group-ids': [devs.body.id] },
        root,
      );
      expect(ann.status, ann.text).to.equal(201);
      // RBAC for the box group: the aggregated ClusterRole view (filled in by the kube-controller-manager) in the app's namespace.
      await cluster.k(['-n', APP_NAMESPACE, 'create', 'rolebinding', 'devs-view', '--clusterrole=view', '--group=devs']);
    });

    it("signs Ann in on kubectl's first command (--device), and the API server takes the box's ID token", async function () {
      this.timeout(300_000);
      // Ann's kubeconfig, inside the cluster's network namespace (where the box's address is): the cluster as
      // the admin's kubeconfig names it, the user as setup printed it with this checkout's boxauth.
      const admin = parse(fs.readFileSync(path.join(cluster.dir, 'kubeconfig.netns'), 'utf8'));
      const user = structuredClone(setupDocs[0].users[0]);
      user.user.exec.command = process.execPath;
      user.user.exec.args = [CLI, ...user.user.exec.args, `--cache-dir=${path.join(work, 'kube-cache')}`, '--timeout=120'];
      fs.writeFileSync(
        annKubeconfig(),
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: admin.clusters,
          users: [user],
          contexts: [{ name: 'ann', context: { cluster: admin.clusters[0].name, user: 'ann' } }],
          'current-context': 'ann',
        }),
      );

      // kubectl in a terminal (util-linux script gives it one), so that the plugin may ask Ann to sign in.
      const out = path.join(work, 'whoami.json');
      const terminal = spawn(
        projectPath('scripts', 'cluster-exec.sh'),
        ['script', '-qfec', `${path.join(KUBE_BIN, 'kubectl')} --kubeconfig=${annKubeconfig()} auth whoami -o json > ${out}`, '/dev/null'],
        { env: { PATH: process.env.PATH, HOME: work, ...cluster.env }, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let shown = '';
      terminal.stdout.on('data', (d: Buffer) => (shown += d.toString()));
      terminal.stderr.on('data', (d: Buffer) => (shown += d.toString()));
      const exited = new Promise<number | null>((resolve) => terminal.once('close', resolve));
      const asked = await eventually(
        'the plugin to show a code',
        async () => {
          if (terminal.exitCode !== null) expect.fail(`kubectl exited (${terminal.exitCode}) without asking:\n${shown}`);
          return /\(or open (https:\S+)\)/.exec(shown)?.[1];
        },
        60_000,
        200,
      ).catch(async (err: Error) => expect.fail(`${err.message}\n${shown}\n${await stateOf(LOGIN_NAMESPACE)}`));
      expect(asked.startsWith(`${LOGIN_URL}/auth/device/verify?user_code=`), shown).to.equal(true);

      // Ann, on her laptop's browser.
      const browser = new FormAgent(loginBox);
      expect((await browser.signIn('ann@example.com', 'ann-password-1')).status).to.equal(303);
      const page = await browser.get(new URL(asked).pathname + new URL(asked).search);
      expect(page.text).to.include('kubectl on your machine');
      const allowed = await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
      expect(allowed.text).to.include('Device connected');

      let review: any;
      if ((await exited) === 0) review = JSON.parse(fs.readFileSync(out, 'utf8'));
      else {
        // The API server takes the box's ID tokens once its authenticator has read the box's
        // discovery document, which it retries on its own schedule since it started (before the box
        // was there): until then it answers Unauthorized. Ann's ID token is in the plugin's cache, so
        // kubectl is only asked again, as Ann would.
        expect(shown).to.include('Unauthorized');
        review = await eventually(
          'the API server to take the box ID token',
          async () => {
            const r = await cluster.exec([
              path.join(KUBE_BIN, 'kubectl'),
              `--kubeconfig=${annKubeconfig()}`,
              'auth',
              'whoami',
              '-o',
              'json',
            ]);
            return r.code === 0 ? JSON.parse(r.stdout) : undefined;
          },
          120_000,
          2_000,
        );
      }
      expect(review.status.userInfo.username).to.equal('ann@example.com');
      expect(review.status.userInfo.groups).to.include.members(['devs', 'system:authenticated']);
    });

    it('lets Ann do what RBAC grants the box group devs, and nothing more', async function () {
      const kubectl = (...args: string[]): Promise<RunResult> =>
        cluster.exec([path.join(KUBE_BIN, 'kubectl'), `--kubeconfig=${annKubeconfig()}`, ...args]);
      const pods = await kubectl('-n', APP_NAMESPACE, 'get', 'pods', '-o', 'name');
      expect(pods.code, pods.stderr).to.equal(0);
      expect(pods.stdout).to.include('pod/app');
      const secrets = await kubectl('-n', BOX_NAMESPACE, 'get', 'secrets');
      expect(secrets.code).to.not.equal(0);
      expect(secrets.stderr).to.include('Forbidden').and.include('"ann@example.com"');
    });
  });

  describe('the workload identity guide (docs/guides/workload-identity.md), as written', function () {
    it('runs examples/workload: its Deployment gets tokens with its projected ServiceAccount token', async function () {
      this.timeout(300_000);
      await cluster.k([
        '-n',
        BOX_NAMESPACE,
        'create',
        'configmap',
        'token-client',
        `--from-file=${projectPath('examples', 'workload', 'token-client.mjs')}`,
      ]);
      // The files as they are, but for the image: node:20-alpine cannot be pulled here, and the release's
      // image has the same Node.js 20 (the code comes from the ConfigMap).
      const dir = projectPath('examples', 'workload');
      const docs = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJS()));
      const deployment = docs.find((d) => d.kind === 'Deployment');
      expect(deployment.spec.template.spec.containers[0].image).to.equal('node:20-alpine');
      deployment.spec.template.spec.containers[0].image = IMAGE;
      const applied = await cluster.k(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }));
      expect(applied).to.include('client.boxauth.io/shipping created').and.include('deployment.apps/shipping created');
      await waitFor(BOX_NAMESPACE, ['client/shipping'], 'condition=Ready');
      await waitFor(BOX_NAMESPACE, ['deployment/shipping'], 'condition=Available');
      // The app asks once a minute; a first request before the Client was reconciled may be refused.
      await eventually(
        'a token in the logs of deploy/shipping',
        async () => /got a token \(\d+ characters, valid 600 s\)/.test(await cluster.k(['-n', BOX_NAMESPACE, 'logs', 'deploy/shipping'])),
        150_000,
        2000,
      );
    });
  });

  describe("the README's quick start on a cluster (kubectl apply -f examples/)", function () {
    it('makes every resource of examples/ Ready, and the Client orders gets a token from the box pods', async function () {
      this.timeout(300_000);
      await cluster.k(['create', 'namespace', QUICK_START_NAMESPACE]);
      const applied = await cluster.k(['apply', '-n', QUICK_START_NAMESPACE, '-f', projectPath('examples')]);
      expect(applied).to.include('box.boxauth.io/auth created').and.include('client.boxauth.io/orders created');
      for (const kind of ['boxes', 'clients', 'accesspolicies', 'apps', 'identityproviders', 'webhooks', 'hooks']) {
        await waitFor(QUICK_START_NAMESPACE, [kind, '--all'], 'condition=Ready');
      }
      await written(QUICK_START_NAMESPACE, 'deployment/auth');
      await waitFor(QUICK_START_NAMESPACE, ['deployment/auth'], 'condition=Available', '240s');
      const service = await cluster.json(['-n', QUICK_START_NAMESPACE, 'get', 'service', 'auth']);
      const forward = await cluster.forward(`${service.spec.clusterIP}:80`);
      try {
        const secret = Buffer.from(
          await cluster.k(['-n', QUICK_START_NAMESPACE, 'get', 'secret', 'orders-client-secret', '-o', 'jsonpath={.data.client-secret}']),
          'base64',
        ).toString('utf8');
        // Available says the pods are Ready; kube-proxy may program the new Service a moment later,
        // and until then a connection to its ClusterIP is closed: asked again until one is answered.
        const res = await eventually(
          'the Service to answer',
          () =>
            fetch(`http://127.0.0.1:${forward.port}/auth/token`, {
              method: 'POST',
              headers: { Authorization: `Basic ${Buffer.from(`orders:${secret}`).toString('base64')}` },
              body: new URLSearchParams({ grant_type: 'client_credentials' }),
            }).catch(() => undefined),
          60_000,
          500,
        );
        const answer = (await res.json()) as { access_token?: string };
        expect(res.status, JSON.stringify(answer)).to.equal(200);
        expect(claims(answer.access_token!)).to.include({ iss: `http://auth.${QUICK_START_NAMESPACE}.svc`, client_id: 'orders' });
      } finally {
        await forward.close();
      }
    });
  });

  describe('a Hook whose code is a Service of the cluster (docs/guides/hooks.md)', function () {
    it("adds the hook's claim to the app's token, and is Ready", async function () {
      this.timeout(300_000);
      // The team's hook: the Go hook in a Pod, serving HTTPS with a certificate for its Service's name,
      // checking each call's signature with the secret the Hook names.
      const tls = ca.issue('licence-hook', `/CN=licence-hook.${BOX_NAMESPACE}.svc`, `DNS:licence-hook.${BOX_NAMESPACE}.svc`);
      await cluster.k([
        '-n',
        BOX_NAMESPACE,
        'create',
        'secret',
        'tls',
        'licence-hook-tls',
        `--cert=${tls.certFile}`,
        `--key=${tls.keyFile}`,
      ]);
      const signing = `whsec_${randomBytes(32).toString('base64')}`;
      await cluster.k(['-n', BOX_NAMESPACE, 'create', 'secret', 'generic', 'licence-hook', `--from-literal=signing-secret=${signing}`]);
      await apply(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'licence-hook', namespace: BOX_NAMESPACE, labels: { app: 'licence-hook' } },
          spec: {
            securityContext: { runAsNonRoot: true, runAsUser: 65534 },
            containers: [
              {
                name: 'hook',
                image: HOOK_IMAGE,
                env: [
                  { name: 'HOST', value: '0.0.0.0' },
                  { name: 'PORT', value: '8443' },
                  { name: 'CERT', value: '/tls/tls.crt' },
                  { name: 'KEY', value: '/tls/tls.key' },
                  { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'licence-hook', key: 'signing-secret' } } },
                ],
                ports: [{ name: 'https', containerPort: 8443 }],
                readinessProbe: { tcpSocket: { port: 'https' }, periodSeconds: 1 },
                volumeMounts: [{ name: 'tls', mountPath: '/tls', readOnly: true }],
              },
            ],
            volumes: [{ name: 'tls', secret: { secretName: 'licence-hook-tls' } }],
          },
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'licence-hook', namespace: BOX_NAMESPACE },
          spec: { selector: { app: 'licence-hook' }, ports: [{ name: 'https', port: 443, targetPort: 'https' }] },
        },
      );
      await waitFor(BOX_NAMESPACE, ['pod/licence-hook'], 'condition=Ready');
      const before = await appRequest();
      expect(before.status, JSON.stringify(before.body)).to.equal(200);
      expect(claims(before.body.access_token as string)).to.not.have.property('licence');

      // A Service's address is a private one: the box calls it once its allow-list says so (docs/operations/notices.md).
      const hookIp = (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'service', 'licence-hook'])).spec.clusterIP as string;
      const boxIp = (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'service', 'auth'])).spec.clusterIP as string;
      const forward = await cluster.forward(`${boxIp}:80`);
      const dispatcher = new Agent();
      try {
        const rootSecret = Buffer.from(
          await cluster.k(['-n', BOX_NAMESPACE, 'get', 'secret', 'auth-root-client', '-o', 'jsonpath={.data.client-secret}']),
          'base64',
        ).toString('utf8');
        const box = Box.remote(`http://127.0.0.1:${forward.port}`, dispatcher, rootSecret);
        const allowed = await box.json('PUT', '/settings/notices', { allowed_addresses: [`${hookIp}/32`] }, await box.rootToken());
        expect(allowed.status, allowed.text).to.equal(200);
      } finally {
        await forward.close();
        await dispatcher.close();
      }

      // The guide's Hook: the Service by name, port and path, its CA, the signing secret's Secret.
      await apply({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Hook',
        metadata: { name: 'licence', namespace: BOX_NAMESPACE },
        spec: {
          moments: ['tokenIssuing'],
          service: { name: 'licence-hook', port: 443, path: '/claims' },
          caBundle: Buffer.from(ca.pem).toString('base64'),
          matchConditions: [{ name: 'shop-only', expression: "request.client.id == 'shop'" }],
          secretRef: { name: 'licence-hook' },
        },
      });
      await waitFor(BOX_NAMESPACE, ['hook/licence'], 'condition=Ready');
      const status = (await cluster.json(['-n', BOX_NAMESPACE, 'get', 'hook', 'licence'])).status;
      expect(status.conditions.find((c: any) => c.type === 'Ready')).to.include({ status: 'True' });

      // The box pods hear of the Hook through the change feed: the next tokens carry the hook's claim.
      let last: Awaited<ReturnType<typeof appRequest>> | undefined;
      const answer = await eventually(
        "a token with the hook's claim",
        async () => {
          last = await appRequest();
          return last.status === 200 && claims(last.body.access_token as string).licence === 'gold' && last;
        },
        60_000,
        1000,
      ).catch(async (err: Error) =>
        expect.fail(`${err.message}; the last answer: ${JSON.stringify(last)}\n${await stateOf(BOX_NAMESPACE)}`),
      );
      const token = claims(answer.body.access_token as string);
      expect(token).to.include({ licence: 'gold', hook_lang: 'go', iss: BOX_URL });
      // What the hook may not state (docs/guides/hooks.md) is the box's.
      expect(token.sub).to.not.equal('admin');
      expect(token).to.not.have.property('email');
      expect(answer.withToken, 'the token with the claim is still one the box takes').to.equal(403);
    });
  });

  describe('the projected ServiceAccount token, rotated by the kubelet', function () {
    it('is replaced in the app Pod before it expires, and the box takes the new one', async function () {
      // The kubelet renews a projected token once 80% of its lifetime (600 s, the least a Pod may ask)
      // has passed: the cases above took most of that time; this waits for the rest.
      this.timeout(720_000);
      const read = async (): Promise<string> =>
        (await cluster.k(['-n', APP_NAMESPACE, 'exec', 'app', '--', 'cat', PROJECTED_TOKEN])).trim();
      const first = claims(firstProjected);
      const now = await eventually(
        'the kubelet to rotate the token',
        async () => {
          const current = await read();
          return current !== firstProjected && current;
        },
        660_000,
        5000,
      );
      const next = claims(now);
      expect(next).to.include({ sub: first.sub });
      expect(next.iat).to.be.above(first.iat as number);
      expect((next.exp as number) - (first.exp as number), 'a later expiry').to.be.above(0);
      const answer = await appRequest();
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    });
  });
});
