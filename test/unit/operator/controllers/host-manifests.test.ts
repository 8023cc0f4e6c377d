// The host's Deployment and who owns its replicas: a number the operator applies, or `auto`, which it leaves to
// the scaler (an HPA), never sending the field (docs/kubernetes/hosted-boxes.md, "Scaling the host with an HPA").
import { expect } from 'chai';
import { loadOperatorConfig } from '../../../../operator/config.js';
import { appliesReplicas, hostDeployment, replicasHandover, type HostSettings } from '../../../../operator/controllers/host-manifests.js';
import { ConfigError } from '../../../../api/config.js';

const settings = (replicas: HostSettings['replicas']): HostSettings => ({
  namespace: 'boxauth-system',
  image: 'boxauth:test',
  imagePullPolicy: 'Never',
  replicas,
  resources: {},
  url: 'http://boxauth-host.boxauth-system.svc:8080',
});

describe('the host Deployment: its replicas', function () {
  it('applies a number; with auto sends no spec.replicas at all, and the rest unchanged', function () {
    const fixed = hostDeployment(settings(3)).spec as Record<string, unknown>;
    const auto = hostDeployment(settings('auto')).spec as Record<string, unknown>;
    expect(fixed.replicas).to.equal(3);
    expect(auto).to.not.have.property('replicas');
    const { replicas: _dropped, ...rest } = fixed;
    expect(auto).to.deep.equal(rest);
  });

  it("knows when the operator's apply holds the replicas (managedFields), and hands them over at their value", function () {
    const owned = (manager: string, operation: string, spec: Record<string, unknown>) => ({
      metadata: { name: 'boxauth-host', managedFields: [{ manager, operation, fieldsV1: { 'f:spec': spec } }] },
    });
    expect(appliesReplicas(owned('boxauth-operator', 'Apply', { 'f:replicas': {}, 'f:selector': {} }))).to.equal(true);
    expect(appliesReplicas(owned('boxauth-operator', 'Apply', { 'f:selector': {} }))).to.equal(false);
    expect(appliesReplicas(owned('kube-controller-manager', 'Update', { 'f:replicas': {} }))).to.equal(false);
    expect(appliesReplicas(owned('boxauth-operator', 'Update', { 'f:replicas': {} }))).to.equal(false);
    expect(appliesReplicas({ metadata: { name: 'boxauth-host' } })).to.equal(false);
    expect(replicasHandover(settings('auto'), 4)).to.deep.equal({
      metadata: { name: 'boxauth-host', namespace: 'boxauth-system' },
      spec: { replicas: 4 },
    });
  });

  it('BOXAUTH_HOST_REPLICAS: 2 by default, 1 to 100, or auto', function () {
    expect(loadOperatorConfig({}).hostReplicas).to.equal(2);
    expect(loadOperatorConfig({ BOXAUTH_HOST_REPLICAS: '7' }).hostReplicas).to.equal(7);
    expect(loadOperatorConfig({ BOXAUTH_HOST_REPLICAS: 'auto' }).hostReplicas).to.equal('auto');
    for (const bad of ['0', '101', 'Auto', 'hpa'])
      expect(() => loadOperatorConfig({ BOXAUTH_HOST_REPLICAS: bad }), bad).to.throw(ConfigError, /^BOXAUTH_HOST_REPLICAS must be/);
  });
});
