// The Helm chart: lint, and what it renders is accepted by the API server
// (server-side dry run), with default and production values.
import { expect } from 'chai';
import { OPERATOR_NAMESPACE, suite } from './suite.js';

export function describeChart(): void {
  describe('the Helm chart', function () {
    it('passes helm lint with default and production values', async function () {
      for (const args of [[], ['-f', 'charts/boxauth/values-production.yaml']]) {
        const r = await suite.cluster.helm(['lint', 'charts/boxauth', '--strict', ...args]);
        expect(r.code, r.stdout + r.stderr).to.equal(0);
      }
    });

    for (const [name, args] of [
      ['default', ['--include-crds']],
      ['production', ['-f', 'charts/boxauth/values-production.yaml']],
    ] as const) {
      it(`renders objects the API server accepts (${name} values, kubectl apply --dry-run=server)`, async function () {
        const r = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '-n', OPERATOR_NAMESPACE, ...args]);
        expect(r.code, r.stderr).to.equal(0);
        const applied = await suite.cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], r.stdout);
        expect(applied.code, applied.stderr).to.equal(0);
        expect(applied.stdout).to.include('deployment.apps/boxauth-operator');
        if (name === 'default') expect(applied.stdout).to.include('statefulset.apps/boxauth-postgresql');
        else expect(applied.stdout).to.not.include('statefulset');
      });
    }

    it('runs the operator and the box API non-root on a read-only root filesystem', async function () {
      const r = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '-n', OPERATOR_NAMESPACE]);
      expect(r.stdout).to.include('readOnlyRootFilesystem: true').and.include('runAsNonRoot: true');
      const deployment = await suite.cluster.json(['get', 'deployment', '-n', 'team-a', 'auth']);
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot).to.equal(true);
      expect(pod.containers[0].securityContext).to.deep.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    });
  });
}
