// Workload identity against a real kube-apiserver: apps authenticate with their
// ServiceAccount tokens (`kubectl create token`) as RFC 7523 client assertions.
import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as oauth from 'openid-client';
import { JWT_BEARER } from '../../api/credentials/workload/assertion.js';
import { assertionAuth, assertionRequest, claimsOf } from '../support/assertion.js';
import { Box, eventually, sleep } from '../support/box.js';
import { Cluster } from '../support/cluster.js';
import { TestIssuer } from '../support/issuer.js';

describe('workload identity (kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: Cluster;
  let issuer: TestIssuer;
  let box: Box;
  let root: string;
  let ordersUid: string;

  const saToken = async (ns: string, sa: string, audience: string): Promise<string> =>
    (await cluster.kubectl('create', 'token', sa, '-n', ns, '--audience', audience, '--duration', '10m')).trim();

  before(async function () {
    // Each kept as soon as it runs, so that after() stops it even when the other failed to start.
    const started = await Promise.allSettled([Cluster.start().then((c) => (cluster = c)), TestIssuer.start().then((i) => (issuer = i))]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    await cluster.apply(`
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: v1
kind: Namespace
metadata: {name: boxauth}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: orders, namespace: apps}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: stranger, namespace: apps}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: box-api, namespace: boxauth}
---
# What the chart grants the box API: TokenReview for clusters whose issuer it cannot reach.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: boxauth-box-api-auth-delegator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: ServiceAccount, name: box-api, namespace: boxauth}]
`);
    ordersUid = (await cluster.kubectl('get', 'sa', 'orders', '-n', 'apps', '-o', 'jsonpath={.metadata.uid}')).trim();
    box = await startBox();
    root = await box.rootToken();
    const put = await box.json(
      'PUT',
      '/Client/orders',
      {
        grant_types: ['client_credentials'],
        auth: {
          client_credentials: { token_format: 'jwt', access_token_expiration: 300 },
          workload: { serviceAccounts: [{ namespace: 'apps', name: 'orders', uid: ordersUid }] },
        },
      },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    await box.json(
      'PUT',
      '/Client/test-issued',
      {
        grant_types: ['client_credentials'],
        auth: { workload: { issuer: issuer.url, serviceAccounts: [{ namespace: 'remote', name: 'app' }] } },
      },
      root,
    );
  });
  after(async function () {
    await box?.stop();
    await issuer?.stop();
    await cluster?.stop();
  });

  /** A box running "in" the cluster: the pod's service-account token, the cluster CA and API URL. */
  async function startBox(env: Record<string, string> = {}): Promise<Box> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-pod-'));
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, await saToken('boxauth', 'box-api', 'https://kubernetes.default.svc.cluster.local'));
    return Box.start({
      env: {
        BOXAUTH_KUBE_API_URL: cluster.url,
        BOXAUTH_KUBE_TOKEN_FILE: tokenFile,
        BOXAUTH_KUBE_CA_FILE: cluster.caFile,
        BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([issuer.trusted]),
        ...env,
      },
    });
  }

  const tokenRequest = (assertion: string, clientId?: string) => assertionRequest(box, assertion, clientId);

  async function refused(assertion: string, pattern: RegExp, clientId?: string): Promise<void> {
    const res = await tokenRequest(assertion, clientId);
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
    expect(res.body.error_description).to.match(pattern);
  }

  it('kubectl create token → a token from the box through openid-client; the session names the ServiceAccount', async function () {
    const saJwt = await saToken('apps', 'orders', box.url);
    const config = await oauth.discovery(
      new URL(box.url),
      'orders',
      undefined,
      assertionAuth(() => saJwt),
      {
        algorithm: 'oauth2',
        execute: [oauth.allowInsecureRequests],
      },
    );
    const tokens = await oauth.clientCredentialsGrant(config);
    expect(tokens.expires_in).to.equal(300);
    // Introspection takes the same assertion, as discovery says (its own tokens: no policy needed).
    expect(config.serverMetadata().introspection_endpoint_auth_methods_supported).to.include('private_key_jwt');
    expect(await oauth.tokenIntrospection(config, tokens.access_token)).to.include({ active: true, client_id: 'orders' });
    const { jti } = claimsOf(tokens.access_token);
    const session = (await box.json('GET', `/Session/${jti}`, undefined, root)).body;
    expect(session.client.id).to.equal('orders');
    expect(session.details.workload).to.include({
      namespace: 'apps',
      serviceAccount: 'orders',
      serviceAccountUid: ordersUid,
      issuer: 'https://kubernetes.default.svc.cluster.local',
    });
    // Without client_id the ServiceAccount picks its client; JSON bodies work too.
    const json = await box.json('POST', '/auth/token', {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER,
      client_assertion: saJwt,
    });
    expect(json.status, json.text).to.equal(200);
    // The token endpoint as the audience works as well as the base URL.
    expect((await tokenRequest(await saToken('apps', 'orders', `${box.url}/auth/token`))).status).to.equal(200);
  });

  it('refuses a wrong audience', async function () {
    await refused(await saToken('apps', 'orders', 'https://somewhere.else'), /wrong audience.*project the token with audience/);
  });

  it('refuses a ServiceAccount that is not bound', async function () {
    await refused(await saToken('apps', 'stranger', box.url), /ServiceAccount apps\/stranger is not bound to any client/);
    await refused(await saToken('apps', 'stranger', box.url), /ServiceAccount apps\/stranger is not bound to client 'orders'/, 'orders');
  });

  it('refuses a ServiceAccount deleted and re-created under the same name (uid changed)', async function () {
    await cluster.kubectl('create', 'sa', 'recreated', '-n', 'apps');
    const uid = (await cluster.kubectl('get', 'sa', 'recreated', '-n', 'apps', '-o', 'jsonpath={.metadata.uid}')).trim();
    await box.json(
      'PUT',
      '/Client/pinned',
      { grant_types: ['client_credentials'], auth: { workload: { serviceAccounts: [{ namespace: 'apps', name: 'recreated', uid }] } } },
      root,
    );
    expect((await tokenRequest(await saToken('apps', 'recreated', box.url))).status).to.equal(200);
    await cluster.kubectl('delete', 'sa', 'recreated', '-n', 'apps');
    await cluster.kubectl('create', 'sa', 'recreated', '-n', 'apps');
    await refused(await saToken('apps', 'recreated', box.url), /uid changed/);
  });

  it('refuses an expired token, a token signed by another key, alg none, and an untrusted issuer', async function () {
    const audience = box.url;
    expect((await tokenRequest(await issuer.token(audience, 'remote', 'app'))).status).to.equal(200); // the test issuer is trusted
    const past = Math.floor(Date.now() / 1000) - 3600;
    await refused(await issuer.token(audience, 'remote', 'app', { iat: past - 600, nbf: past - 600, exp: past }), /expired/);
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await refused(await issuer.token(audience, 'remote', 'app', {}, privateKey), /signature does not verify/);
    // A token of our own key claiming to be the cluster's issuer.
    await refused(
      await issuer.token(audience, 'apps', 'orders', { iss: 'https://kubernetes.default.svc.cluster.local' }, privateKey),
      /does not publish|does not verify/,
    );
    const real = await saToken('apps', 'orders', audience);
    const [, payload] = real.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    await refused(none, /not signed/);
    const untrusted = await issuer.token(audience, 'apps', 'orders', { iss: 'https://evil.example' });
    await refused(untrusted, /issuer 'https:\/\/evil\.example' is not trusted/);
    await refused('not-a-jwt', /not a JWT/);
  });

  it("the issuer's keys are not fetched per request (1,000 token requests)", async function () {
    const metric = async (): Promise<number> => {
      const text = await box.metrics();
      return text
        .split('\n')
        .filter((l) => l.startsWith('boxauth_jwks_fetches_total{'))
        .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    };
    const saJwt = await saToken('apps', 'orders', box.url);
    const testJwt = await issuer.token(box.url, 'remote', 'app');
    // The keys of both issuers are fetched by now (this suite's first tokens, or these), and counted.
    expect((await tokenRequest(saJwt)).status).to.equal(200);
    expect((await tokenRequest(testJwt)).status).to.equal(200);
    const before = await metric();
    expect(before, 'boxauth_jwks_fetches_total of both issuers').to.be.at.least(2);
    const fetchedBefore = issuer.fetches;
    expect(fetchedBefore).to.be.at.least(1);
    for (let i = 0; i < 500; i++) {
      const [a, b] = await Promise.all([tokenRequest(saJwt), tokenRequest(testJwt)]);
      expect(a.status).to.equal(200);
      expect(b.status).to.equal(200);
    }
    expect((await metric()) - before).to.equal(0);
    expect(issuer.fetches - fetchedBefore).to.equal(0);
  });

  it('after the API server rotates its signing key, new tokens verify without restarting the box', async function () {
    expect((await tokenRequest(await saToken('apps', 'orders', box.url))).status).to.equal(200);
    await cluster.rotateSigningKey();
    const fresh = await saToken('apps', 'orders', box.url);
    expect(JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid).to.be.a('string');
    // Keys are fetched again on an unknown kid, at most every 10 s.
    const deadline = Date.now() + 20_000;
    let status = 0;
    while (Date.now() < deadline && (status = (await tokenRequest(fresh)).status) !== 200) await sleep(1000);
    expect(status).to.equal(200);
  });

  it('TokenReview mode: the API server vouches for the token', async function () {
    const reviewing = await startBox({ BOXAUTH_CLUSTER_ISSUER: 'tokenreview' });
    try {
      const t = await reviewing.rootToken();
      await reviewing.json(
        'PUT',
        '/Client/orders',
        { grant_types: ['client_credentials'], auth: { workload: { serviceAccounts: [{ namespace: 'apps', name: 'orders' }] } } },
        t,
      );
      const ok = await assertionRequest(reviewing, await saToken('apps', 'orders', reviewing.url));
      expect(ok.status, ok.text).to.equal(200);
      const wrong = await assertionRequest(reviewing, await saToken('apps', 'orders', 'https://other'));
      expect(wrong.status).to.equal(401);
      expect(wrong.body.error_description).to.match(/does not accept the token/);
    } finally {
      await reviewing.stop();
    }
  });

  it("another cluster's ServiceAccounts: a box outside this cluster binds them by issuer and subject (federated)", async function () {
    // This box does not run in the cluster: the cluster is "another cluster" to it, trusted by its
    // issuer, its keys fetched from its API server's /openid/v1/jwks through the box's guard.
    const elsewhere = await Box.start({
      env: {
        BOXAUTH_CLUSTER_ISSUER: 'off',
        BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([
          {
            issuer: 'https://kubernetes.default.svc.cluster.local',
            jwksUri: `${cluster.url}/openid/v1/jwks`,
            caBundle: fs.readFileSync(cluster.caFile, 'utf8'),
            allowedAddresses: ['127.0.0.1'],
          },
        ]),
      },
    });
    try {
      const t = await elsewhere.rootToken();
      const put = await elsewhere.json(
        'PUT',
        '/Client/remote-orders',
        {
          grant_types: ['client_credentials'],
          auth: {
            workload: {
              federated: [{ issuer: 'https://kubernetes.default.svc.cluster.local', subject: 'system:serviceaccount:apps:orders' }],
            },
          },
        },
        t,
      );
      expect(put.status, put.text).to.equal(201);
      const ok = await assertionRequest(elsewhere, await saToken('apps', 'orders', elsewhere.url));
      expect(ok.status, `${ok.text}\n${elsewhere.logs.filter((l) => l.includes('issuer')).join('\n')}`).to.equal(200);
      const stranger = await assertionRequest(elsewhere, await saToken('apps', 'stranger', elsewhere.url), 'remote-orders');
      expect(stranger.status).to.equal(401);
      expect(stranger.body.error_description).to.match(
        /subject 'system:serviceaccount:apps:stranger' of issuer .* is not bound to client 'remote-orders'/,
      );
    } finally {
      await elsewhere.stop();
    }
  });

  it("a federated binding never accepts the box's own cluster's tokens (those are bound by serviceAccounts, under workloadNamespaces)", async function () {
    const put = await box.json(
      'PUT',
      '/Client/sideways',
      {
        grant_types: ['client_credentials'],
        auth: {
          workload: {
            federated: [{ issuer: 'https://kubernetes.default.svc.cluster.local', subjectPattern: 'system:serviceaccount:apps:*' }],
          },
        },
      },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    await refused(await saToken('apps', 'stranger', box.url), /is not bound to any ServiceAccount/, 'sideways');
  });

  it('logs the reason of a refusal, never the token', async function () {
    const bad = await saToken('apps', 'stranger', box.url);
    await tokenRequest(bad);
    const logs = await eventually('the refusal in the log', async () => {
      const all = box.logs.join('\n');
      return all.includes('ServiceAccount apps/stranger is not bound to any client') && all;
    });
    expect(logs).not.to.include(bad);
    expect(logs).not.to.include(bad.split('.')[2]!);
  });
});
