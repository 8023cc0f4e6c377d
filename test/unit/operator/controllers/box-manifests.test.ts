// What a Box's workload identity settings make of its pods' identity: which
// namespaces its Clients may bind, when the API server must be reachable, and
// the ClusterRoleBinding that lets the pods review tokens. And where the pods
// and the Service serve the decision point's gRPC door, which gateways call.
import { expect } from 'chai';
import {
  allowsWorkloadNamespace,
  apiDeployment,
  apiService,
  grpcAuthzAddress,
  needsApiServer,
  tokenReviewSubject,
  usesTokenReview,
} from '../../../../operator/controllers/box-manifests.js';
import type { BoxResource, BoxSpec } from '../../../../operator/controllers/box.js';

const box = (spec: BoxSpec = {}, name = 'auth'): BoxResource => ({
  apiVersion: 'boxauth.io/v1alpha1',
  kind: 'Box',
  metadata: { name, namespace: 'team-a', uid: 'u-1' },
  spec,
});

describe('box manifests: workload identity', function () {
  it('lets Clients bind ServiceAccounts of the box\'s namespace, of those listed, or of any with "*"', function () {
    expect(allowsWorkloadNamespace(box(), 'team-a')).to.equal(true);
    expect(allowsWorkloadNamespace(box(), 'team-b')).to.equal(false);
    expect(allowsWorkloadNamespace(box({ workloadNamespaces: ['team-b'] }), 'team-b')).to.equal(true);
    expect(allowsWorkloadNamespace(box({ workloadNamespaces: ['team-b'] }), 'team-a')).to.equal(true);
    expect(allowsWorkloadNamespace(box({ workloadNamespaces: ['team-b'] }), 'team-c')).to.equal(false);
    expect(allowsWorkloadNamespace(box({ workloadNamespaces: ['*'] }), 'team-c')).to.equal(true);
  });

  it("mounts the pod's token when an issuer needs the API server; binds auth-delegator only for TokenReview", function () {
    const pod = (b: BoxResource): any =>
      (apiDeployment(b, { image: 'i', imagePullPolicy: 'Never', secretVersions: [] }).spec as any).template.spec;
    expect(needsApiServer(box())).to.equal(true);
    expect(usesTokenReview(box())).to.equal(false);
    expect(usesTokenReview(box({ clusterIssuer: 'tokenreview' }))).to.equal(true);
    const reviewedElsewhere = box({ clusterIssuer: 'off', trustedIssuers: [{ issuer: 'https://other.example', mode: 'tokenreview' }] });
    expect(needsApiServer(reviewedElsewhere)).to.equal(true);
    expect(usesTokenReview(reviewedElsewhere)).to.equal(true);
    expect(needsApiServer(box({ clusterIssuer: 'off' }))).to.equal(false);
    expect(pod(box())).to.include({ serviceAccountName: 'auth', automountServiceAccountToken: true });
    expect(pod(box({ clusterIssuer: 'off', serviceAccountName: 'mine' }))).to.include({
      serviceAccountName: 'mine',
      automountServiceAccountToken: false,
    });
  });

  it("names the pods' ServiceAccount, its own or spec.serviceAccountName, as the subject of system:auth-delegator", function () {
    expect(tokenReviewSubject(box())).to.deep.equal({ kind: 'ServiceAccount', name: 'auth', namespace: 'team-a' });
    expect(tokenReviewSubject(box({ serviceAccountName: 'mine' }))).to.deep.equal({
      kind: 'ServiceAccount',
      name: 'mine',
      namespace: 'team-a',
    });
  });
});

describe("box manifests: the decision point's gRPC port", function () {
  const container = (b: BoxResource): any =>
    (apiDeployment(b, { image: 'i', imagePullPolicy: 'Never', secretVersions: [] }).spec as any).template.spec.containers[0];

  it("is the pods' port grpc-authz, set in their env, with the API port still first (what runs a pod locally answers there)", function () {
    const api = container(box({ port: 8443 }));
    expect(api.ports.map((p: any) => [p.name, p.containerPort])).to.deep.equal([
      ['http', 8443],
      ['grpc-authz', 9001],
      ['metrics', 9464],
    ]);
    expect(api.env).to.deep.include({ name: 'BOXAUTH_GRPC_PORT', value: '9001' });
  });

  it('is on the Service as grpc-authz, 9001, appProtocol grpc (HTTP/2 to Istio and Envoy Gateway), beside the API', function () {
    for (const [spec, api] of [
      [{}, { name: 'http', port: 80 }],
      [{ tls: { secretName: 'auth-tls' } }, { name: 'https', port: 443 }],
    ] as const) {
      const ports = (apiService(box(spec)).spec as any).ports;
      expect(ports[0]).to.include(api);
      expect(ports[1]).to.deep.equal({ name: 'grpc-authz', port: 9001, targetPort: 'grpc-authz', protocol: 'TCP', appProtocol: 'grpc' });
      expect(ports).to.have.length(2); // metrics are not for clients
    }
    expect(grpcAuthzAddress(box({}, 'gate'))).to.equal('gate.team-a.svc:9001');
  });
});

describe('box manifests: branding', function () {
  const container = (b: BoxResource): { env: { name: string; value?: string }[] } =>
    (apiDeployment(b, { image: 'i', imagePullPolicy: 'Never', secretVersions: [] }).spec as any).template.spec.containers[0];
  it("gives the pods the Box's branding as BOXAUTH_BRAND_*, and none of a field not set", function () {
    const env = container(
      box({ branding: { displayName: 'ACME Corp', primaryColor: '#8a1c1c', supportUrl: 'https://help.acme.example/' } }),
    ).env;
    const brand = env.filter((e) => e.name.startsWith('BOXAUTH_BRAND_'));
    expect(brand).to.deep.equal([
      { name: 'BOXAUTH_BRAND_NAME', value: 'ACME Corp' },
      { name: 'BOXAUTH_BRAND_PRIMARY_COLOR', value: '#8a1c1c' },
      { name: 'BOXAUTH_BRAND_SUPPORT_URL', value: 'https://help.acme.example/' },
    ]);
    expect(container(box()).env.filter((e) => e.name.startsWith('BOXAUTH_BRAND_'))).to.deep.equal([]);
  });

  it("gives the pods Box.spec.tracing as the OpenTelemetry SDK's variables, and none without it (traces off)", function () {
    const otel = (b: BoxResource): { name: string; value?: string }[] => container(b).env.filter((e) => e.name.startsWith('OTEL_'));
    expect(
      otel(box({ tracing: { endpoint: 'http://otel-collector.observability:4318', sampler: 'parentbased_traceidratio', ratio: 0.01 } })),
    ).to.deep.equal([
      { name: 'OTEL_TRACES_EXPORTER', value: 'otlp' },
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
      { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
      { name: 'OTEL_TRACES_SAMPLER_ARG', value: '0.01' },
    ]);
    expect(otel(box({ tracing: { endpoint: 'http://c:4318' } })).map((e) => e.name)).to.deep.equal([
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]);
    expect(otel(box())).to.deep.equal([]);
  });
});
