// kubectl apply -f examples/ → the operator → an API process started from the
// Deployment it wrote → tokens for the declared clients, through openid-client.
// Then what a cluster admin does next: server-side apply, rotate a Secret,
// change a policy, delete a client; and what the operator defends against:
// REST writes to its records, drift in the database, a second box.
import { expect } from 'chai';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oauth from 'openid-client';
import { providerSecret } from '../../../api/people/upstream/secret.js';
import { webhookSecret } from '../../../api/webhooks/signing.js';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { freePort } from '../../support/ports.js';
import { basic, boxSql, ownNamesOf, readyOf, runBoxApi, servedHere, suite, token, waitReady } from './suite.js';

const NS = 'team-a';
/** A box's schema, named by the operator: in a database of its own (its default), the database's name. */
const schemaOf = async (namespace: string): Promise<string> => (await ownNamesOf(namespace)).schema;

export function describeExamples(): void {
  describe('kubectl apply -f examples/', function () {
    let api: Box;
    let rootToken: string;
    let ordersSecret: string;
    let schema: string;

    before(async function () {
      this.timeout(180_000);
      const { cluster } = suite;
      await cluster.k(['create', 'namespace', NS]);
      const applied = await cluster.k(['apply', '-n', NS, '-f', 'examples/']);
      expect(applied).to.include('box.boxauth.io/auth created').and.include('client.boxauth.io/orders created');
      for (const what of [
        ['box/auth'],
        ['clients', '--all'],
        ['accesspolicies', '--all'],
        ['apps', '--all'],
        ['identityproviders', '--all'],
        ['webhooks', '--all'],
        ['hooks', '--all'],
      ]) {
        await cluster.k(['wait', '--for=condition=Ready', ...what, '-n', NS, '--timeout=60s']);
      }
      await servedHere(NS);
      api = await runBoxApi(NS);
      expect(api.env.BOXAUTH_PORT).to.equal(String(api.port)); // the Box's port, in its Deployment
      schema = (await cluster.json(['get', 'box', 'auth', '-n', NS])).status.schema;
      const root = await token(api, 'root', await cluster.secretValue(NS, 'auth-root-client', 'client-secret'));
      rootToken = root.token!;
      ordersSecret = await cluster.secretValue(NS, 'orders-client-secret', 'client-secret');
    });

    it('shows every resource Ready in kubectl get, with reason and grants', async function () {
      const table = await suite.cluster.k(['get', 'clients', '-n', NS]);
      const [header, ...rows] = table.trim().split('\n');
      expect(header).to.match(/^NAME\s+READY\s+REASON\s+GRANTS\s+AGE$/);
      expect(rows).to.have.length(3);
      for (const row of rows) expect(row).to.match(/^\S+\s+True\s+Reconciled\s+\["/);
      expect(await suite.cluster.k(['get', 'box', '-n', NS])).to.match(/auth\s+True\s+Provisioned\s+False\s+http:\/\/127\.0\.0\.1:\d+/);
      // Where gateways call the gRPC decision point: in the wide table only.
      const [wideHeader, wideRow] = (await suite.cluster.k(['get', 'box', '-n', NS, '-o', 'wide'])).trim().split('\n');
      expect(wideHeader).to.match(
        /^NAME\s+READY\s+REASON\s+AVAILABLE\s+URL\s+GRPC-AUTHZ\s+DATABASE\s+DB-REACHABLE\s+SERVING\s+HOST\s+AGE$/,
      );
      expect(wideRow).to.match(/\shttp:\/\/127\.0\.0\.1:\d+\s+auth\.team-a\.svc:9001\s+127\.0\.0\.1:\d+\s+true\s+Dedicated\s+\S+$/);
    });

    it('writes the box API Deployment and Service, owned by the Box, with all configuration in env', async function () {
      const box = await suite.cluster.json(['get', 'box', 'auth', '-n', NS]);
      const deployment = await suite.cluster.json(['get', 'deployment', 'auth', '-n', NS]);
      const service = await suite.cluster.json(['get', 'service', 'auth', '-n', NS]);
      for (const obj of [deployment, service]) {
        expect(obj.metadata.ownerReferences).to.deep.equal([
          {
            apiVersion: 'boxauth.io/v1alpha1',
            kind: 'Box',
            name: 'auth',
            uid: box.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
      }
      expect(deployment.spec.replicas).to.equal(2);
      const container = deployment.spec.template.spec.containers[0];
      expect(container.command).to.deep.equal(['node', 'dist/api/main.js']);
      const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom.secretKeyRef.name]));
      expect(env).to.include({
        BOXAUTH_BOX: 'team-a/auth',
        DATABASE_URL: 'auth-database',
        BOXAUTH_SIGNING_KEY: 'auth-signing-key',
        BOXAUTH_FACTOR_KEY: 'auth-factor-key',
        BOXAUTH_ROOT_CLIENT_SECRET: 'auth-root-client',
        BOXAUTH_ADMIN_PASSWORD: 'auth-admin',
        BOXAUTH_JWT_ALG: 'ES256',
        BOXAUTH_METRICS_PORT: '9464',
        BOXAUTH_GRPC_PORT: '9001',
      });
      // Prometheus scrapes the pods' port `metrics` (the chart's PodMonitor); the Service leaves it out. Gateways
      // call the decision point's gRPC door through the Service: it carries that port, after the API's.
      expect(container.ports[0]).to.include({ name: 'http', containerPort: box.spec.port });
      expect(container.ports).to.deep.include({ name: 'metrics', containerPort: 9464, protocol: 'TCP' });
      expect(container.ports).to.deep.include({ name: 'grpc-authz', containerPort: 9001, protocol: 'TCP' });
      expect(service.spec.ports).to.deep.equal([
        { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' },
        { name: 'grpc-authz', port: 9001, targetPort: 'grpc-authz', protocol: 'TCP', appProtocol: 'grpc' },
      ]);
      expect(box.status).to.include({
        url: api.url,
        grpcAuthz: 'auth.team-a.svc:9001',
        schema: await schemaOf(NS),
        deployment: 'auth',
        service: 'auth',
      });
    });

    it("issues a token to the declared client through openid-client; jose verifies it with the box's JWKS", async function () {
      const config = await oauth.discovery(new URL(api.url), 'orders', undefined, oauth.ClientSecretBasic(ordersSecret), {
        algorithm: 'oauth2',
        execute: [oauth.allowInsecureRequests],
      });
      const tokens = await oauth.clientCredentialsGrant(config, { audience: 'https://orders.internal' });
      expect(tokens.expires_in).to.equal(600);
      expect(tokens.refresh_token).to.be.a('string');
      const { payload, protectedHeader } = await jwtVerify(
        tokens.access_token,
        createRemoteJWKSet(new URL(`${api.url}/.well-known/jwks.json`)),
        { issuer: api.url, audience: 'https://orders.internal' },
      );
      expect(payload.sub).to.equal('orders');
      expect(protectedHeader.alg).to.equal('ES256');
      // A token for https://orders.internal is not one for the box's own API (RFC 9068 §4); one without an audience is.
      expect((await api.json('GET', '/Client/orders', undefined, tokens.access_token)).status).to.equal(401);
      const forTheBox = await oauth.clientCredentialsGrant(config, { scope: 'orders:read' });
      expect((await api.json('GET', '/Client/orders', undefined, forTheBox.access_token)).status).to.equal(200);
      // The Client resource's allow-lists hold, as the REST API's do.
      for (const [parameters, error] of [
        [{ audience: 'https://payments.internal' }, 'invalid_target'],
        [{ scope: 'admin' }, 'invalid_scope'],
      ] as const) {
        const refused = await api.form(
          '/auth/token',
          { grant_type: 'client_credentials', ...parameters },
          { Authorization: basic('orders', ordersSecret) },
        );
        expect(refused.body.error).to.equal(error);
      }
    });

    it('guards the App of examples/app.yaml: its policies decide at the forward-auth door, deny by default', async function () {
      const billing = await api.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: 'https://orders.internal' },
        { Authorization: basic('billing', 'change-me-billing-secret') },
      );
      expect(billing.status, billing.text).to.equal(200);
      const ask = (method: string, uri: string, bearer?: string) =>
        api.request('GET', '/authz/forward-auth/orders-api', {
          headers: {
            'X-Forwarded-Method': method,
            'X-Forwarded-Proto': 'https',
            'X-Forwarded-Host': 'orders.internal',
            'X-Forwarded-Uri': uri,
            ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
          },
        });
      expect((await ask('GET', '/orders/1', billing.body.access_token)).status).to.equal(200);
      expect((await ask('POST', '/orders', billing.body.access_token)).status).to.equal(403);
      expect((await ask('GET', '/health')).status).to.equal(200);
      expect((await ask('GET', '/orders/1')).status).to.equal(401);
      expect(await suite.cluster.k(['get', 'apps.boxauth.io', '-n', NS])).to.match(/orders-api\s+True\s+Reconciled/);
    });

    it("takes a client's secret from the Secret in spec.secretRef, and its policy from the AccessPolicy", async function () {
      const billing = await token(api, 'billing', 'change-me-billing-secret');
      expect(billing.status).to.equal(200);
      expect((await api.json('GET', '/Client/billing', undefined, billing.token)).status).to.equal(200);
      expect((await api.json('GET', '/AccessPolicy', undefined, billing.token)).status).to.equal(403);
    });

    it('serves the IdentityProviders of examples/identityprovider.yaml, their secrets sealed and never shown', async function () {
      expect(await suite.cluster.k(['get', 'identityproviders', '-n', NS])).to.match(/corp-sso\s+oidc\s+True\s+Reconciled/);
      const got = await api.json('GET', '/IdentityProvider/corp-sso', undefined, rootToken);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.include({ resourceType: 'IdentityProvider', id: 'corp-sso', type: 'oidc', displayName: 'Corp SSO' });
      expect(got.body.meta.managedBy).to.equal('IdentityProvider team-a/corp-sso');
      expect(got.body).to.not.have.property('secretRef');
      expect(got.body).to.not.have.property('secret');
      const all = await api.json('GET', '/IdentityProvider', undefined, rootToken);
      expect(all.body.entry.map((e: { resource: { id: string } }) => e.resource.id).sort()).to.deep.equal(['corp-ldap', 'corp-sso']);
      expect(JSON.stringify(all.body)).to.not.include('change-me-corp-sso-secret').and.not.include('change-me-ldap-bind-password');
      // Sealed under the box's own factor key, the one its pods open it with.
      const [row] = await boxSql<{ secret_sealed: Buffer }>(
        NS,
        `SELECT secret_sealed FROM ${schema}.identity_providers WHERE id = 'corp-sso'`,
      );
      expect(row!.secret_sealed.toString('latin1')).to.not.include('change-me');
      const factorKey = Buffer.from(await suite.cluster.secretValue(NS, 'auth-factor-key', 'factor-key'), 'base64');
      expect(providerSecret(factorKey, 'corp-sso', row!.secret_sealed)).to.equal('change-me-corp-sso-secret');
    });

    it('serves the Webhook of examples/webhook.yaml, its signing secret sealed and never shown', async function () {
      expect(await suite.cluster.k(['get', 'webhooks', '-n', NS])).to.match(
        /offboarding\s+https:\/\/offboarding\.example\.com\S*\s+True\s+Reconciled/,
      );
      const got = await api.json('GET', '/Webhook/offboarding', undefined, rootToken);
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.include({
        resourceType: 'Webhook',
        id: 'offboarding',
        url: 'https://offboarding.example.com/hooks/boxauth',
      });
      expect(got.body.meta.managedBy).to.equal('Webhook team-a/offboarding');
      expect(JSON.stringify(got.body)).to.not.include('whsec_');
      const [row] = await boxSql<{ secret_sealed: Buffer }>(NS, `SELECT secret_sealed FROM ${schema}.webhooks WHERE id = 'offboarding'`);
      expect(row!.secret_sealed.toString('latin1')).to.not.include('whsec_');
      const factorKey = Buffer.from(await suite.cluster.secretValue(NS, 'auth-factor-key', 'factor-key'), 'base64');
      expect(webhookSecret(factorKey, 'offboarding', row!.secret_sealed)).to.equal(
        'whsec_Y2hhbmdlLW1lLWNoYW5nZS1tZS1jaGFuZ2UtbWUtY2hhbmdlLW1l',
      );
    });

    it('serves the Hook of examples/hook.yaml as written: disabled until its Service runs, its secret never shown', async function () {
      expect(await suite.cluster.k(['get', 'hooks', '-n', NS])).to.match(/licence\s+\S*tokenIssuing\S*\s+Fail\s+True\s+Reconciled/);
      const got = await api.json('GET', '/Hook/licence', undefined, rootToken);
      expect(got.status, got.text).to.equal(200);
      expect(got.body).to.deep.include({
        resourceType: 'Hook',
        id: 'licence',
        moments: ['tokenIssuing', 'idTokenIssuing'],
        service: { name: 'licence-hook', port: 443, path: '/token' },
        disabled: true,
      });
      expect(got.body.meta.managedBy).to.equal('Hook team-a/licence');
      expect(JSON.stringify(got.body)).to.not.include('whsec_');
    });

    it('makes the REST API refuse changes to a record a resource manages, naming the resource', async function () {
      const put = await api.json('PUT', '/Client/orders', { grant_types: ['client_credentials'], secret: 'hijacked-secret' }, rootToken);
      expect(put.status).to.equal(409);
      expect(put.body.error_description).to.include('Client team-a/orders');
      const del = await api.json('DELETE', '/AccessPolicy/orders-allow', undefined, rootToken);
      expect(del.status).to.equal(409);
      expect(del.body.error_description).to.include('AccessPolicy team-a/orders-allow');
      expect((await token(api, 'orders', ordersSecret)).status).to.equal(200);
    });

    it('accepts kubectl apply --server-side of the same manifests', async function () {
      const generations = await suite.cluster.k(['get', 'clients', '-n', NS, '-o', 'jsonpath={.items[*].metadata.generation}']);
      const r = await suite.cluster.kubectl(['apply', '--server-side', '-n', NS, '-f', 'examples/']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.include('client.boxauth.io/orders serverside-applied');
      expect(await suite.cluster.k(['get', 'clients', '-n', NS, '-o', 'jsonpath={.items[*].metadata.generation}'])).to.equal(generations);
      for (const name of ['orders', 'billing', 'dashboard']) await waitReady('client', NS, name);
    });

    // How fast (the issue asks for 5 s) is measured by `make bench-operator`, not asserted here.
    it('applies a rotated Secret: the new secret works, the old one no longer', async function () {
      await suite.cluster.k([
        'patch',
        'secret',
        'billing-credentials',
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ stringData: { 'client-secret': 'rotated-billing-secret' } }),
      ]);
      await eventually(
        'the rotated secret to work',
        async () => (await token(api, 'billing', 'rotated-billing-secret')).status === 200,
        30_000,
        50,
      );
      expect((await token(api, 'billing', 'change-me-billing-secret')).error).to.equal('invalid_client');
    });

    it('reports a missing Secret as Ready=False with a reason, a message and a Warning Event, and recovers', async function () {
      const client = {
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Client',
        metadata: { name: 'late', namespace: NS },
        spec: { grant_types: ['client_credentials'], secretRef: { name: 'late-credentials' } },
      };
      await suite.cluster.k(['apply', '-f', '-'], JSON.stringify(client));
      const failing = await eventually('Ready=False SecretNotFound', async () => {
        const ready = await readyOf('client', NS, 'late');
        return ready?.reason === 'SecretNotFound' && ready;
      });
      expect(failing).to.include({ status: 'False', message: 'Secret team-a/late-credentials (spec.secretRef) does not exist; create it' });
      const events = await suite.cluster.json([
        'get',
        'events',
        '-n',
        NS,
        '--field-selector',
        'involvedObject.name=late,involvedObject.kind=Client',
      ]);
      expect(events.items.map((e: any) => `${e.type} ${e.reason}`)).to.include('Warning SecretNotFound');
      await suite.cluster.k([
        'create',
        'secret',
        'generic',
        'late-credentials',
        '-n',
        NS,
        '--from-literal=client-secret=late-but-long-enough',
      ]);
      await waitReady('client', NS, 'late');
      const ready = await readyOf('client', NS, 'late');
      expect(ready.lastTransitionTime >= failing.lastTransitionTime).to.equal(true);
      expect((await token(api, 'late', 'late-but-long-enough')).status).to.equal(200);
      // Resyncs (every 2 s here) rewrite nothing: the transition time stays.
      await new Promise((r) => setTimeout(r, 4_500));
      expect((await readyOf('client', NS, 'late')).lastTransitionTime).to.equal(ready.lastTransitionTime);
    });

    it('makes a policy change take effect', async function () {
      const billing = (await token(api, 'billing', 'rotated-billing-secret')).token;
      expect((await api.json('GET', '/AccessPolicy', undefined, billing)).status).to.equal(403);
      await suite.cluster.k([
        'patch',
        'accesspolicy',
        'billing-read-clients',
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { matcho: { 'request-method': 'get', uri: '#^/(Client|AccessPolicy)(/.*)?$' } } }),
      ]);
      await eventually(
        'the policy change',
        async () => (await api.json('GET', '/AccessPolicy', undefined, billing)).status === 200,
        10_000,
      );
    });

    it('repairs records changed or deleted in the database behind its back, at the next resync', async function () {
      await boxSql(NS, `DELETE FROM ${schema}.access_policies WHERE id = 'orders-allow'`);
      await boxSql(NS, `UPDATE ${schema}.clients SET resource = jsonb_set(resource, '{grant_types}', '["implicit"]') WHERE id = 'orders'`);
      await eventually(
        'the records restored',
        async () => {
          const [policy] = await boxSql(NS, `SELECT managed_by FROM ${schema}.access_policies WHERE id = 'orders-allow'`);
          const [client] = await boxSql(NS, `SELECT resource->'grant_types' AS g FROM ${schema}.clients WHERE id = 'orders'`);
          return policy?.managed_by === 'AccessPolicy team-a/orders-allow' && client?.g[0] === 'client_credentials';
        },
        15_000,
      );
      const orders = await token(api, 'orders', ordersSecret);
      expect(orders.status).to.equal(200);
      await eventually(
        'the restored policy in the API',
        async () => (await api.json('GET', '/Client/orders', undefined, orders.token)).status === 200,
        5_000,
      );
      const events = await suite.cluster.json(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=orders-allow']);
      expect(events.items.map((e: any) => e.reason)).to.include('DriftRepaired');
    });

    it('keeps a Client of one box namespace unknown to another box (kubectl apply --server-side there)', async function () {
      const { cluster } = suite;
      await cluster.k(['create', 'namespace', 'team-b']);
      const port = await freePort();
      const manifests = [
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Box',
          metadata: { name: 'auth', namespace: 'team-b' },
          spec: { replicas: 1, port, baseUrl: `http://127.0.0.1:${port}`, jwtAlg: 'EdDSA' },
        },
        {
          apiVersion: 'boxauth.io/v1alpha1',
          kind: 'Client',
          metadata: { name: 'inventory', namespace: 'team-b' },
          spec: { grant_types: ['client_credentials'] },
        },
      ];
      const r = await cluster.kubectl(
        ['apply', '--server-side', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }),
      );
      expect(r.code, r.stderr).to.equal(0);
      await waitReady('box', 'team-b', 'auth');
      await waitReady('client', 'team-b', 'inventory');
      const teamB = await runBoxApi('team-b');
      const inventorySecret = await cluster.secretValue('team-b', 'inventory-client-secret', 'client-secret');
      expect((await token(teamB, 'inventory', inventorySecret)).status).to.equal(200);
      expect((await token(teamB, 'orders', ordersSecret)).error).to.equal('invalid_client');
      expect((await token(api, 'inventory', inventorySecret)).error).to.equal('invalid_client');
      expect((await cluster.json(['get', 'box', 'auth', '-n', 'team-b'])).status.schema).to.equal(await schemaOf('team-b'));
    });

    it('removes the record when the Client is deleted: its tokens and its secret stop working', async function () {
      const before = await token(api, 'orders', ordersSecret);
      expect((await api.json('GET', '/Client/orders', undefined, before.token)).status).to.equal(200);
      await suite.cluster.k(['delete', 'client', 'orders', '-n', NS, '--wait=true', '--timeout=30s']);
      expect((await suite.cluster.kubectl(['get', 'client', 'orders', '-n', NS])).code).to.not.equal(0);
      expect(await boxSql(NS, `SELECT id FROM ${schema}.clients WHERE id = 'orders'`)).to.deep.equal([]);
      expect((await api.json('GET', '/Client/billing', undefined, before.token)).status).to.equal(401);
      expect((await token(api, 'orders', ordersSecret)).error).to.equal('invalid_client');
    });
  });
}
