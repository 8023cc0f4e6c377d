import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import {
  authenticationConfiguration,
  kubeconfigUsers,
  setCredentialsCommand,
  setupText,
  type Setup,
} from '../../../../api/cli/kube/setup.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const setup: Setup = {
  box: 'https://auth.example:8443',
  client: 'kubectl',
  caFile: '/etc/box ca.pem',
  caPem: PEM,
  name: 'ann',
  extraArgs: ['--device'],
};

describe('kube-login setup', function () {
  it("the API server's jwt authenticator: the box as issuer with its CA, the client as audience, email and groups unprefixed", function () {
    expect(authenticationConfiguration(setup)).to.deep.equal({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AuthenticationConfiguration',
      jwt: [
        {
          issuer: { url: 'https://auth.example:8443', certificateAuthority: PEM, audiences: ['kubectl'] },
          claimMappings: { username: { claim: 'email', prefix: '' }, groups: { claim: 'groups', prefix: '' } },
        },
      ],
    });
    expect(authenticationConfiguration({ ...setup, caPem: undefined }).jwt[0]!.issuer).to.not.have.property('certificateAuthority');
  });

  it('the kubeconfig user runs boxauth kube-login, interactive when it can be', function () {
    expect(kubeconfigUsers(setup).users[0]).to.deep.equal({
      name: 'ann',
      user: {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: 'boxauth',
          args: ['kube-login', '--box=https://auth.example:8443', '--client=kubectl', '--ca-file=/etc/box ca.pem', '--device'],
          interactiveMode: 'IfAvailable',
          provideClusterInfo: false,
        },
      },
    });
  });

  it('the kubectl one-liner writes the same user, quoted for the shell', function () {
    expect(setCredentialsCommand(setup)).to.equal(
      'kubectl config set-credentials ann --exec-api-version=client.authentication.k8s.io/v1 --exec-command=boxauth ' +
        '--exec-arg=kube-login --exec-arg=--box=https://auth.example:8443 --exec-arg=--client=kubectl ' +
        "'--exec-arg=--ca-file=/etc/box ca.pem' --exec-arg=--device --exec-interactive-mode=IfAvailable",
    );
    expect(setCredentialsCommand({ ...setup, name: "it's" })).to.include(`'it'\\''s'`);
  });

  it('prints both as one YAML stream, instructions as comments; --only prints one document', function () {
    const docs = parseAllDocuments(setupText(setup)).map((d) => d.toJS());
    expect(docs).to.deep.equal([kubeconfigUsers(setup), authenticationConfiguration(setup)]);
    expect(setupText(setup)).to.include(setCredentialsCommand(setup));
    expect(parseAllDocuments(setupText(setup, 'auth-config')).map((d) => d.toJS())).to.deep.equal([authenticationConfiguration(setup)]);
    expect(parseAllDocuments(setupText(setup, 'user')).map((d) => d.toJS())).to.deep.equal([kubeconfigUsers(setup)]);
  });
});
