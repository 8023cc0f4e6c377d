import { expect } from 'chai';
import { execCredential, execInfo, rfc3339 } from '../../../../api/cli/kube/exec-credential.js';

const info = (value: unknown): NodeJS.ProcessEnv => ({ KUBERNETES_EXEC_INFO: JSON.stringify(value) });

describe('kubectl exec credentials', function () {
  it('an ExecCredential carries the token and its expiry in RFC 3339, in the version kubectl asked for', function () {
    expect(execCredential('client.authentication.k8s.io/v1', 'eyJ.a.b', 1_700_000_000)).to.deep.equal({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'eyJ.a.b', expirationTimestamp: '2023-11-14T22:13:20Z' },
    });
    expect(rfc3339(0)).to.equal('1970-01-01T00:00:00Z');
  });

  it('KUBERNETES_EXEC_INFO says whether a person is there; without it a person ran the command', function () {
    expect(execInfo({})).to.deep.equal({ apiVersion: 'client.authentication.k8s.io/v1', interactive: true });
    const call = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } };
    expect(execInfo(info(call)).interactive).to.equal(false);
    expect(execInfo(info({ ...call, spec: { interactive: true } })).interactive).to.equal(true);
    expect(execInfo(info({ ...call, spec: {} })).interactive).to.equal(false);
  });

  it('answers in v1beta1 to a kubeconfig that asks for it, and in v1 otherwise', function () {
    const v1beta1 = { apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', spec: {} };
    expect(execInfo(info(v1beta1)).apiVersion).to.equal('client.authentication.k8s.io/v1beta1');
    expect(execInfo(info({ ...v1beta1, apiVersion: 'client.authentication.k8s.io/v9' })).apiVersion).to.equal(
      'client.authentication.k8s.io/v1',
    );
    expect(() => execInfo({ KUBERNETES_EXEC_INFO: '{' })).to.throw('KUBERNETES_EXEC_INFO is not JSON');
  });
});
