// Workload identity through the operator: a Client resource bound to a
// ServiceAccount, a box run from the operator's Deployment with the credentials
// a kubelet gives its pod, and a token obtained with `kubectl create token`
// through openid-client. Then what keeps tenants apart (a Client may bind only
// ServiceAccounts of namespaces its Box allows) and what TokenReview needs (the
// operator puts the box's ServiceAccount among the subjects of the chart's one
// binding of system:auth-delegator, under the chart's RBAC, and takes it out again).
// And what that RBAC does not let a stolen operator token do (kubectl auth can-i).
import { expect } from 'chai';
import fs from 'node:fs';
import * as oauth from 'openid-client';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { baseUrlOf } from '../../../operator/controllers/box-manifests.js';
import { assertionAuth, assertionRequest, claimsOf } from '../../support/assertion.js';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { boxSql, readyBox, readyOf, runBoxApi, suite, token, waitReady } from './suite.js';

const NS = 'tenant-a'; // the box's namespace
const OTHER = 'tenant-b'; // another tenant's
/** The chart's ClusterRoleBinding of system:auth-delegator (release boxauth), whose subjects the operator keeps. */
const BINDING = 'boxauth-operator-token-review';
const SUBJECT = { kind: 'ServiceAccount', name: 'auth', namespace: NS };
const NOT_ALLOWED = 'ServiceAccountNamespaceNotAllowed';

/** The example's manifests, moved from namespace team-a to `namespace`. */
function example(file: string, namespace: string): any[] {
  const text = fs.readFileSync(`examples/workload/${file}`, 'utf8').replaceAll('namespace: team-a', `namespace: ${namespace}`);
  return parseAllDocuments(text).map((d) => d.toJS());
}

export function describeWorkload(): void {
  describe('workload identity', function () {
    let api: Box;
    let rootToken: string;
    let schema: string;

    const saToken = async (namespace: string, sa: string, audience = api.url): Promise<string> =>
      (await suite.cluster.k(['create', 'token', sa, '-n', namespace, '--audience', audience, '--duration', '10m'])).trim();

    const apply = (obj: unknown): Promise<string> => suite.cluster.k(['apply', '-f', '-'], JSON.stringify(obj));

    const patchBox = (spec: Record<string, unknown>): Promise<string> =>
      suite.cluster.k(['patch', 'box', 'auth', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })]);

    /** The box's pod again, after its Deployment changed (a kubelet would roll it). */
    async function restartApi(): Promise<void> {
      await api.stop();
      api = await runBoxApi(NS);
    }

    async function canReviewTokens(): Promise<string> {
      const r = await suite.cluster.kubectl([
        'auth',
        'can-i',
        'create',
        'tokenreviews.authentication.k8s.io',
        '--as',
        `system:serviceaccount:${NS}:auth`,
      ]);
      return r.stdout.trim();
    }

    /** Whether the box's ServiceAccount is among the subjects of the chart's binding. */
    const bindingExists = async (): Promise<boolean> =>
      ((await suite.cluster.json(['get', 'clusterrolebinding', BINDING])).subjects ?? []).some(
        (s: any) => s.kind === 'ServiceAccount' && s.name === 'auth' && s.namespace === NS,
      );

    before(async function () {
      this.timeout(180_000);
      const { cluster } = suite;
      for (const ns of [NS, OTHER]) await cluster.k(['create', 'namespace', ns]);
      await cluster.k(['create', 'serviceaccount', 'orders', '-n', OTHER]);
      ({ api, schema } = await readyBox(NS));
      rootToken = (await token(api, 'root', await cluster.secretValue(NS, 'auth-root-client', 'client-secret'))).token!;
    });

    it("runs the box API as a ServiceAccount of the Box's own, with its token mounted", async function () {
      const box = await suite.cluster.json(['get', 'box', 'auth', '-n', NS]);
      const sa = await suite.cluster.json(['get', 'serviceaccount', 'auth', '-n', NS]);
      expect(sa.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Box',
          name: 'auth',
          uid: box.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      const pod = (await suite.cluster.json(['get', 'deployment', 'auth', '-n', NS])).spec.template.spec;
      expect(pod).to.include({ serviceAccountName: 'auth', automountServiceAccountToken: true });
      expect(box.status.serviceAccount).to.equal('auth');
      expect(box.status).to.not.have.property('tokenReviewBinding');
      expect(await bindingExists()).to.equal(false);
    });

    it("refuses a ServiceAccount of the same name that is not the operator's, and runs as it when spec.serviceAccountName says so", async function () {
      const ns = 'tenant-c';
      await suite.cluster.k(['create', 'namespace', ns]);
      await suite.cluster.k(['create', 'serviceaccount', 'auth', '-n', ns]);
      const box = {
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Box',
        metadata: { name: 'auth', namespace: ns },
        spec: { reclaimPolicy: 'Delete' },
      };
      await apply(box);
      const refused = await eventually('ServiceAccountConflict', async () => {
        const ready = await readyOf('box', ns, 'auth');
        return ready?.reason === 'ServiceAccountConflict' && ready;
      });
      expect(refused.message).to.equal(
        `ServiceAccount ${ns}/auth exists and is not the operator's; set spec.serviceAccountName to run the box as it, or delete it`,
      );
      await apply({ ...box, spec: { ...box.spec, serviceAccountName: 'auth' } });
      await waitReady('box', ns, 'auth');
      expect((await suite.cluster.json(['get', 'deployment', 'auth', '-n', ns])).spec.template.spec.serviceAccountName).to.equal('auth');
      expect((await suite.cluster.json(['get', 'serviceaccount', 'auth', '-n', ns])).metadata).to.not.have.property('ownerReferences');
      await suite.cluster.k(['delete', 'box', 'auth', '-n', ns, '--wait=true', '--timeout=60s']);
    });

    it('examples/workload/app.yaml asks the box at the URL the operator gives the Box of examples/box.yaml', async function () {
      const exampleBox = parseYaml(fs.readFileSync('examples/box.yaml', 'utf8'));
      const url = baseUrlOf({ ...exampleBox, metadata: { ...exampleBox.metadata, namespace: 'team-a' } });
      const deployment = example('app.yaml', 'team-a').find((o) => o.kind === 'Deployment');
      const pod = deployment.spec.template.spec;
      expect(pod.containers[0].env.find((e: any) => e.name === 'BOX_URL').value).to.equal(url);
      expect(pod.volumes[0].projected.sources[0].serviceAccountToken.audience).to.equal(url);
    });

    it('kubectl create token → a token through openid-client for the example Client; the session names the ServiceAccount', async function () {
      for (const obj of [...example('app.yaml', NS).filter((o) => o.kind === 'ServiceAccount'), ...example('client.yaml', NS)])
        await apply(obj);
      await waitReady('client', NS, 'shipping');
      const client = await suite.cluster.json(['get', 'client', 'shipping', '-n', NS]);
      expect(client.status).to.not.have.property('secretName'); // a workload needs no secret, and gets none
      const uid = (await suite.cluster.k(['get', 'serviceaccount', 'shipping', '-n', NS, '-o', 'jsonpath={.metadata.uid}'])).trim();

      const podToken = await saToken(NS, 'shipping');
      const config = await oauth.discovery(
        new URL(api.url),
        'shipping',
        undefined,
        assertionAuth(() => podToken),
        {
          algorithm: 'oauth2',
          execute: [oauth.allowInsecureRequests],
        },
      );
      const tokens = await oauth.clientCredentialsGrant(config);
      expect(tokens.expires_in).to.equal(600);
      const session = (await api.json('GET', `/Session/${claimsOf(tokens.access_token).jti}`, undefined, rootToken)).body;
      expect(session.client.id).to.equal('shipping');
      expect(session.details.workload).to.include({
        issuer: 'https://kubernetes.default.svc.cluster.local',
        namespace: NS,
        serviceAccount: 'shipping',
        serviceAccountUid: uid,
      });
    });

    it("refuses a Client binding another namespace's ServiceAccount until the Box allows that namespace, and again when it stops", async function () {
      await apply({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Client',
        metadata: { name: 'intruder', namespace: NS },
        spec: { grant_types: ['client_credentials'], auth: { workload: { serviceAccounts: [{ namespace: OTHER, name: 'orders' }] } } },
      });
      const refused = await eventually(NOT_ALLOWED, async () => {
        const ready = await readyOf('client', NS, 'intruder');
        return ready?.reason === NOT_ALLOWED && ready;
      });
      expect(refused.status).to.equal('False');
      expect(refused.message).to.equal(
        `auth.workload binds ServiceAccount ${OTHER}/orders, but Box auth lets its Clients bind ServiceAccounts ` +
          `of namespace ${NS} only: a cluster admin may add "${OTHER}" to the Box's spec.workloadNamespaces, or bind ServiceAccounts of ` +
          `namespace ${NS}; until then this client has no record in the box`,
      );
      const events = await suite.cluster.json([
        'get',
        'events',
        '-n',
        NS,
        '--field-selector',
        'involvedObject.name=intruder,involvedObject.kind=Client',
      ]);
      expect(events.items.map((e: any) => `${e.type} ${e.reason}`)).to.include(`Warning ${NOT_ALLOWED}`);
      expect(await boxSql(NS, `SELECT id FROM ${schema}.clients WHERE id = 'intruder'`)).to.deep.equal([]);
      const otherToken = await saToken(OTHER, 'orders');
      const denied = await assertionRequest(api, otherToken);
      expect(denied.status).to.equal(401);
      expect(denied.body.error_description).to.equal(`ServiceAccount ${OTHER}/orders is not bound to any client`);

      // A cluster admin allows the namespace: the Client is written, the token accepted.
      await patchBox({ workloadNamespaces: [OTHER] });
      await waitReady('client', NS, 'intruder');
      const granted = await assertionRequest(api, otherToken);
      expect(granted.status, granted.text).to.equal(200);
      const accessToken = granted.body.access_token as string;
      expect((await api.json('GET', '/Client/intruder', undefined, accessToken)).status).to.equal(403); // a valid token, no policy

      // ... and takes it back: the record goes, and the token it got stops working.
      await patchBox({ workloadNamespaces: null });
      await eventually(NOT_ALLOWED, async () => (await readyOf('client', NS, 'intruder'))?.reason === NOT_ALLOWED);
      await eventually(
        'the record removed',
        async () => (await boxSql(NS, `SELECT id FROM ${schema}.clients WHERE id = 'intruder'`)).length === 0,
      );
      expect((await api.json('GET', '/Client/intruder', undefined, accessToken)).status).to.equal(401);
      expect((await assertionRequest(api, otherToken)).status).to.equal(401);
      await waitReady('client', NS, 'shipping'); // its own namespace is always allowed
    });

    it('"*" allows every namespace', async function () {
      await patchBox({ workloadNamespaces: ['*'] });
      await waitReady('client', NS, 'intruder');
      expect((await assertionRequest(api, await saToken(OTHER, 'orders'))).status).to.equal(200);
      await suite.cluster.k(['delete', 'client', 'intruder', '-n', NS, '--wait=true', '--timeout=30s']);
      await patchBox({ workloadNamespaces: null });
    });

    it("clusterIssuer tokenreview: binds system:auth-delegator to the box's ServiceAccount, and the API server reviews the tokens", async function () {
      expect(await canReviewTokens()).to.equal('no');
      await patchBox({ clusterIssuer: 'tokenreview' });
      await waitReady('box', NS, 'auth');
      const binding = await suite.cluster.json(['get', 'clusterrolebinding', BINDING]);
      expect(binding.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' });
      expect(binding.subjects).to.deep.include(SUBJECT);
      expect((await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.tokenReviewBinding).to.equal(BINDING);
      await eventually('the ServiceAccount to be allowed TokenReviews', async () => (await canReviewTokens()) === 'yes');

      await restartApi(); // its Deployment now says BOXAUTH_CLUSTER_ISSUER=tokenreview
      const ok = await assertionRequest(api, await saToken(NS, 'shipping'));
      expect(ok.status, ok.text).to.equal(200);
      // The API server, not the box, judged this one (the box's own check would say "wrong audience").
      const wrong = await assertionRequest(api, await saToken(NS, 'shipping', 'https://somewhere.else'));
      expect(wrong.status).to.equal(401);
      expect(wrong.body.error_description).to.match(/^the cluster's API server does not accept the token/);
    });

    it('removes the binding when no issuer needs TokenReview any more, and when the Box is deleted', async function () {
      await patchBox({ clusterIssuer: 'auto' });
      await eventually('the binding removed', async () => !(await bindingExists()));
      expect(await canReviewTokens()).to.equal('no');
      await restartApi();
      expect((await assertionRequest(api, await saToken(NS, 'shipping'))).status).to.equal(200);

      // A tokenreview trusted issuer needs it as well.
      await patchBox({ trustedIssuers: [{ issuer: 'https://other-cluster.example', mode: 'tokenreview' }] });
      await eventually('the binding back', bindingExists);
      await api.stop();
      await suite.cluster.k(['delete', 'box', 'auth', '-n', NS, '--wait=true', '--timeout=60s']);
      expect(await bindingExists()).to.equal(false);
    });
  });
}
