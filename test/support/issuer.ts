// A workload token issuer of the test's own: an HTTPS server (a certificate of a
// test CA, test/support/tls.ts) publishing OIDC discovery and a JWKS, and
// tokens signed with its key by jose — Kubernetes-shaped, with any claims.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SignJWT, exportJWK, type JWTPayload } from 'jose';
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

  /**
   * `jwksHost`: the host its discovery document names for its keys (default 127.0.0.1, where it
   * listens); another loopback address (127.0.0.2) reaches it too, as the server then listens on them all.
   */
  static async start(options: { jwksHost?: string } = {}): Promise<TestIssuer> {
    const ca = testCa(fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-issuer-')));
    const jwksHost = options.jwksHost ?? '127.0.0.1';
    const { certFile, keyFile } = ca.issue('tls', '/CN=127.0.0.1', `IP:127.0.0.1,IP:${jwksHost},DNS:localhost`);
    // Its own port 0, read back once listening (the URLs below are built per request, after that).
    let port = 0;
    let url = '';
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const kid = 'test-key-1';
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
    let issuer: TestIssuer | undefined = undefined;
    const server = https.createServer({ key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) }, (req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ issuer: url, jwks_uri: `https://${jwksHost}:${port}/jwks` }));
      } else if (req.url === '/jwks') {
        issuer!.fetches++;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, jwksHost === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0', resolve));
    port = (server.address() as AddressInfo).port;
    url = `https://127.0.0.1:${port}`;
    issuer = new TestIssuer(url, ca.pem, privateKey, kid, server);
    return issuer;
  }

  /**
   * This issuer as a Box's spec.trustedIssuers entry (BOXAUTH_TRUSTED_ISSUERS): its CA, and its
   * address allowed, since the box's guard refuses loopback addresses otherwise.
   */
  get trusted(): { issuer: string; caBundle: string; allowedAddresses: string[] } {
    return { issuer: this.url, caBundle: this.caPem, allowedAddresses: ['127.0.0.1'] };
  }

  /** A token of this issuer with exactly `claims` (and iat, nbf, exp ten minutes on, unless given). */
  jwt(claims: JWTPayload, key: crypto.KeyObject = this.key): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.url, iat: now, nbf: now, exp: now + 600, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: this.kid })
      .sign(key);
  }

  /** A ServiceAccount-shaped token of this issuer; `claims` override the defaults. */
  token(audience: string, namespace: string, name: string, claims: JWTPayload = {}, key: crypto.KeyObject = this.key): Promise<string> {
    return this.jwt(
      {
        aud: [audience],
        sub: `system:serviceaccount:${namespace}:${name}`,
        'kubernetes.io': { namespace, serviceaccount: { name, uid: 'uid-of-test-issuer-sa' } },
        ...claims,
      },
      key,
    );
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
