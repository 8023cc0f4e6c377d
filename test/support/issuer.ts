// A workload token issuer of the test's own: an HTTPS server (a certificate of a
// test CA, test/support/tls.ts) publishing OIDC discovery and a JWKS, and
// tokens signed with its key by jose — Kubernetes-shaped, with any claims.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { SignJWT, exportJWK, type JWTPayload } from 'jose';
import { freePort } from './ports.js';
import { testCa } from './tls.js';

export class TestIssuer {
  fetches = 0;
  private constructor(
    readonly url: string,
    readonly caPem: string,
    private readonly key: crypto.KeyObject,
    readonly kid: string,
    private readonly server: https.Server,
  ) {}

  static async start(): Promise<TestIssuer> {
    const ca = testCa(fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-issuer-')));
    const { certFile, keyFile } = ca.issue('tls');
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const kid = 'test-key-1';
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
    let issuer: TestIssuer | undefined = undefined;
    const server = https.createServer({ key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) }, (req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks` }));
      } else if (req.url === '/jwks') {
        issuer!.fetches++;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    issuer = new TestIssuer(url, ca.pem, privateKey, kid, server);
    return issuer;
  }

  /** A ServiceAccount-shaped token of this issuer; `claims` override the defaults. */
  token(audience: string, namespace: string, name: string, claims: JWTPayload = {}, key: crypto.KeyObject = this.key): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: this.url,
      aud: [audience],
      sub: `system:serviceaccount:${namespace}:${name}`,
      iat: now,
      nbf: now,
      exp: now + 600,
      'kubernetes.io': { namespace, serviceaccount: { name, uid: 'uid-of-test-issuer-sa' } },
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: this.kid })
      .sign(key);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
