// oauth2-proxy deciding `make bench`'s question over HTTP (built by
// scripts/peers-build.sh oauth2-proxy): its auth-only endpoint, /oauth2/auth, as
// NGINX's auth_request and Traefik's forwardAuth call it, with the box as its
// OIDC issuer and --skip-jwt-bearer-tokens, so the bench's bearer JWT is what it
// decides on (202 allows). Its defaults otherwise: request and auth logging on.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { onFreePorts } from '../../support/ports.js';
import { forwardAuthRequest } from '../decisions.js';
import type { BoxTrust, HttpDecider } from './deciders.js';
import { logTail, startProcess, waitReady } from './process.js';

/** oauth2-proxy on a free port; again on a new one when another process took it before oauth2-proxy listened. */
export function startOauth2Proxy(bin: string, trust: BoxTrust, jwt: string, logDir: string): Promise<HttpDecider> {
  return onFreePorts(1, ([port]) => startOn(port, bin, trust, jwt, logDir));
}

async function startOn(port: number, bin: string, trust: BoxTrust, jwt: string, logDir: string): Promise<HttpDecider> {
  const logFile = path.join(logDir, 'oauth2-proxy.log');
  const baseUrl = `http://127.0.0.1:${port}`;
  const args = [
    `--http-address=127.0.0.1:${port}`,
    '--provider=oidc',
    `--oidc-issuer-url=${trust.issuer}`,
    // Its own client at the box is only for browser sign-ins, which this bench does not make.
    '--client-id=bench-oauth2-proxy',
    `--client-secret=${randomBytes(16).toString('hex')}`,
    // A bearer JWT is accepted when its audience is the client id or one of these.
    `--oidc-extra-audience=${trust.audience}`,
    '--skip-jwt-bearer-tokens=true',
    '--email-domain=*',
    `--cookie-secret=${randomBytes(16).toString('hex')}`,
    '--cookie-secure=false',
    '--upstream=static://202',
    `--redirect-url=${baseUrl}/oauth2/callback`,
    // Behind a gateway, which sends the original request in X-Forwarded-*.
    '--reverse-proxy=true',
  ];
  const server = startProcess(bin, args, {}, logFile);
  try {
    await waitReady(server, `${baseUrl}/ping`, 30_000, 'oauth2-proxy');
    const { path: _forwardAuth, ...asked } = forwardAuthRequest(jwt);
    const request = { ...asked, path: '/oauth2/auth' };
    const res = await fetch(`${baseUrl}${request.path}`, { headers: request.headers });
    if (res.status !== 202) {
      throw new Error(`oauth2-proxy answered ${res.status} to the bench's request; the end of ${logFile}:\n${logTail(logFile)}`);
    }
    return {
      key: 'oauth2-proxy',
      title: `oauth2-proxy ${path.basename(path.dirname(bin)).replace('oauth2-proxy-', '')}, /oauth2/auth, JWT ES256`,
      door: 'http',
      baseUrl,
      request,
      pid: server.child.pid!,
      checks:
        "the JWT's ES256 signature, issuer, audience and expiry (go-oidc, the box's keys fetched once), then its email domain rule (*); no rule on the path or the method, no session: a revoked token stays valid until it expires",
      stop: () => server.stop(),
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
