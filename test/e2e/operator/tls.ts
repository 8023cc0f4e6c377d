// HTTPS through the operator: a Box whose spec.tls names a kubernetes.io/tls
// Secret (made with `kubectl create secret tls` from a certificate of a test CA)
// waits for it, then serves HTTPS from its Deployment, run as a kubelet would
// (the Secret mounted as files, and updated in place when it changes): the
// issuer is https, and a replaced certificate is served by the same process.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import type { Box } from '../../support/box.js';
import { eventually } from '../../support/kube.js';
import { freePort } from '../../support/ports.js';
import { presentedName, testCa, type TestCa } from '../../support/tls.js';
import { readyOf, runBoxApi, suite, waitReady } from './suite.js';

const NS = 'tls-a';
const ISSUER = `https://auth.${NS}.svc`; // the default base URL with spec.tls

export function describeTls(): void {
  describe('HTTPS (spec.tls)', function () {
    let ca: TestCa;
    let api: Box;

    /** Creates or replaces the Secret auth-tls with a certificate of the test CA whose subject CN is `cn`. */
    async function tlsSecret(cn: string): Promise<void> {
      const { certFile, keyFile } = ca.issue(cn, `/CN=${cn}`);
      const secret = await suite.cluster.k([
        'create',
        'secret',
        'tls',
        'auth-tls',
        '-n',
        NS,
        `--cert=${certFile}`,
        `--key=${keyFile}`,
        '--dry-run=client',
        '-o',
        'json',
      ]);
      await suite.cluster.k(['apply', '-f', '-'], secret);
    }

    const deployment = (): Promise<any> => suite.cluster.json(['get', 'deployment', 'auth', '-n', NS]);

    before(async function () {
      await suite.cluster.k(['create', 'namespace', NS]);
      ca = testCa(fs.mkdtempSync(path.join(suite.cluster.dir, 'tls-ca-')));
    });

    after(async function () {
      await api?.stop();
      await suite.cluster.kubectl(['delete', 'box', 'auth', '-n', NS, '--wait=true', '--timeout=60s']);
    });

    it('waits for its Secret (TLSSecretNotReady) with no Deployment, then is Ready at an https URL', async function () {
      const box = {
        apiVersion: 'boxauth.io/v1alpha1',
        kind: 'Box',
        metadata: { name: 'auth', namespace: NS },
        spec: { port: await freePort(), tls: { secretName: 'auth-tls' }, reclaimPolicy: 'Delete' },
      };
      await suite.cluster.k(['apply', '-f', '-'], JSON.stringify(box));
      const waiting = await eventually('TLSSecretNotReady', async () => {
        const ready = await readyOf('box', NS, 'auth');
        return ready?.reason === 'TLSSecretNotReady' && ready;
      });
      expect(waiting.message).to.equal(
        `Secret ${NS}/auth-tls (spec.tls.secretName) does not exist; ` +
          "the box's Deployment is not made or changed until it holds a certificate and its key",
      );
      expect((await suite.cluster.kubectl(['get', 'deployment', 'auth', '-n', NS])).code).to.not.equal(0);

      await tlsSecret('first');
      await waitReady('box', NS, 'auth', 60_000);
      expect((await suite.cluster.json(['get', 'box', 'auth', '-n', NS])).status.url).to.equal(ISSUER);
      // Both doors of the decision point serve TLS now; the gRPC port's appProtocol stays grpc (HTTP/2 to gateways).
      const service = await suite.cluster.json(['get', 'service', 'auth', '-n', NS]);
      expect(service.spec.ports.map((p: any) => [p.name, p.port, p.targetPort, p.appProtocol])).to.deep.equal([
        ['https', 443, 'https', 'https'],
        ['grpc-authz', 9001, 'grpc-authz', 'grpc'],
      ]);
    });

    it('answers over HTTPS from its Deployment, trusted through the CA, with an https issuer', async function () {
      api = await runBoxApi(NS, { dispatcher: ca.dispatcher });
      expect(api.url).to.match(/^https:\/\/127\.0\.0\.1:/);
      const discovery = await api.request('GET', '/.well-known/openid-configuration');
      expect(discovery.status).to.equal(200);
      expect(discovery.body.issuer).to.equal(ISSUER);
      expect(discovery.body.token_endpoint).to.equal(`${ISSUER}/auth/token`);
      expect(await presentedName(api.port, ca.pem)).to.equal('first');
      const untrusted = await fetch(`${api.url}/healthz`).then(
        () => 'answered',
        (err: Error) => String((err.cause as Error | undefined)?.message ?? err.message),
      );
      expect(untrusted).to.not.equal('answered'); // a client without the CA does not trust it
    });

    it('serves a replaced certificate from the same process, with the pod template unchanged', async function () {
      const pid = api.process!.pid;
      const before = await deployment();
      await tlsSecret('second');
      await eventually('the new certificate', async () => (await presentedName(api.port, ca.pem)) === 'second', 30_000, 250);
      expect(api.process!.pid).to.equal(pid);
      expect(api.process!.exitCode).to.equal(null);
      expect((await api.request('GET', '/.well-known/openid-configuration')).body.issuer).to.equal(ISSUER);
      await waitReady('box', NS, 'auth'); // the operator looked at the new Secret...
      const after = await deployment();
      expect(after.metadata.generation).to.equal(before.metadata.generation); // ...and rolled nothing
      expect(after.spec.template).to.deep.equal(before.spec.template);
    });
  });
}
