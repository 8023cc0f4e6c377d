// The API server itself refuses what the CRDs' schemas and CEL rules forbid,
// with their messages, and fills in a Box's defaults.
import { expect } from 'chai';
import { suite } from './suite.js';

const manifest = (kind: string, name: string, spec: unknown): string =>
  JSON.stringify({ apiVersion: 'boxauth.io/v1alpha1', kind, metadata: { name, namespace: 'default' }, spec });

export function describeCrds(): void {
  describe('CRDs', function () {
    async function refused(kind: string, spec: unknown): Promise<string> {
      const r = await suite.cluster.kubectl(['apply', '-f', '-'], manifest(kind, 'invalid', spec));
      expect(r.code, r.stdout).to.not.equal(0);
      return r.stderr;
    }

    it('refuses a Hook that names two places or that no hook could check, and takes a good one with its defaults', async function () {
      expect(await refused('Hook', { moments: ['tokenIssuing'], url: 'https://h.example/x' })).to.include(
        'a hook must be able to check its calls',
      );
      expect(
        await refused('Hook', { moments: ['tokenIssuing'], url: 'https://h.example/x', service: { name: 'h' }, boxToken: true }),
      ).to.include('name where the hook is');
      expect(await refused('Hook', { moments: ['tokenIssuing'], url: 'http://h.example/x', boxToken: true })).to.include('spec.url');
      const good = JSON.stringify({
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Hook',
        metadata: { name: 'licence', namespace: 'default' },
        spec: { moments: ['tokenIssuing'], service: { name: 'licence' }, boxToken: true },
      });
      const applied = await suite.cluster.kubectl(['apply', '-f', '-'], good);
      expect(applied.code, applied.stderr).to.equal(0);
      const spec = JSON.parse((await suite.cluster.kubectl(['get', 'hook', 'licence', '-n', 'default', '-o', 'json'])).stdout).spec;
      expect(spec).to.include({ timeoutSeconds: 2, failurePolicy: 'Fail', maxInFlight: 32 });
      await suite.cluster.kubectl(['delete', 'hook', 'licence', '-n', 'default']);
    });

    it("refuses an implicit client without a redirect URI, with the CEL rule's message", async function () {
      expect(await refused('Client', { grant_types: ['implicit'] })).to.include('an implicit client needs auth.implicit.redirect_uri');
    });

    it('refuses a client_credentials client without a secret source', async function () {
      expect(await refused('Client', { grant_types: ['client_credentials'], generateSecret: false })).to.include(
        'a client_credentials client needs a secret source: set secretRef, leave generateSecret unset',
      );
    });

    it('refuses a client bound to ServiceAccounts without the client_credentials grant', async function () {
      const message = await refused('Client', {
        grant_types: ['implicit'],
        auth: {
          implicit: { redirect_uri: 'https://app.example/cb' },
          workload: { serviceAccounts: [{ namespace: 'apps', name: 'orders' }] },
        },
      });
      expect(message, message).to.match(/spec\.auth\.workload: .*auth\.workload needs the client_credentials grant in grant_types/);
    });

    it('refuses a Box whose API port would be its metrics port or its gRPC decision port', async function () {
      expect(await refused('Box', { port: 9464 })).to.include("9464 is the port of the box's metrics (BOXAUTH_METRICS_PORT) in its pod");
      expect(await refused('Box', { port: 9001 })).to.include(
        "9001 is the port of the box's gRPC decision point (BOXAUTH_GRPC_PORT, grpc-authz) in its pod",
      );
    });

    it('refuses what the schema forbids, naming the field', async function () {
      expect(await refused('Client', { grant_types: ['password'] })).to.match(/spec\.grant_types\[0\]: Unsupported value: "password"/);
      expect(
        await refused('Client', {
          grant_types: ['client_credentials'],
          auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 0 } },
        }),
      ).to.include('spec.auth.client_credentials.access_token_expiration: Invalid value: 0');
      expect(await refused('Client', { grant_types: ['client_credentials'], scope: ['orders read'] })).to.include('spec.scope[0]');
      expect(await refused('Client', { grant_types: ['client_credentials'], audience: ['x'.repeat(513)] })).to.include('spec.audience[0]');
      expect(await refused('AccessPolicy', { engine: 'matcho' })).to.include('engine matcho needs a matcho pattern');
      expect(await refused('Box', { jwtAlg: 'HS256' })).to.match(/spec\.jwtAlg: Unsupported value: "HS256"/);
      expect(await refused('Box', { baseUrl: 'ftp://x' })).to.include('spec.baseUrl');
      expect(await refused('Box', { workloadNamespaces: ['Team_A'] })).to.include('spec.workloadNamespaces[0]');
      expect(await refused('Box', { tracing: { endpoint: 'otel-collector:4318' } })).to.include('spec.tracing.endpoint');
      expect(await refused('Box', { tracing: { endpoint: 'http://c:4318', ratio: 2 } })).to.include('spec.tracing.ratio');
      expect(await refused('Box', { tracing: { sampler: 'always_on' } })).to.include('spec.tracing.endpoint');
    });

    it('gives a Box a default for every field, so spec: {} is a box', async function () {
      const r = await suite.cluster.k(
        ['create', '--dry-run=server', '-o', 'json', '-f', '-'],
        JSON.stringify({ apiVersion: 'boxauth.io/v1alpha1', kind: 'Box', metadata: { name: 'defaults', namespace: 'default' } }),
      );
      expect(JSON.parse(r).spec).to.deep.equal({
        serving: 'Dedicated',
        replicas: 1,
        port: 8080,
        registration: false,
        jwtAlg: 'ES256',
        admin: { email: 'admin@localhost' },
        logLevel: 'info',
        database: {},
        reclaimPolicy: 'Retain',
        clusterIssuer: 'auto',
        passwordMinLength: 8,
      });
    });

    it('answers to short names and the boxauth category', async function () {
      const r = await suite.cluster.kubectl(['get', 'bx,bac,bap', '-A']);
      expect(r.code, r.stderr).to.equal(0);
      expect((await suite.cluster.kubectl(['get', 'boxauth', '-A'])).code).to.equal(0);
    });
  });
}
