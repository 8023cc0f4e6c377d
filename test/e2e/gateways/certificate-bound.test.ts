// A certificate-bound token (RFC 8705 §3) through a real NGINX: NGINX terminates mutual TLS with
// the client and forwards the certificate it verified to the box's forward-auth door in
// $ssl_client_escaped_cert, as docs/guides/guard-your-apps.md says; the box allows the token with
// its own certificate only. The doors' plain-HTTP behaviour is in
// test/integration/gate-certificates.test.ts.
import { expect } from 'chai';
import fs from 'node:fs';
import { Agent } from 'undici';
import { Box } from '../../support/box.js';
import { onFreePorts } from '../../support/ports.js';
import { testCa, type TestCa } from '../../support/tls.js';
import { nginxAround } from './configs.js';
import { startNginx, startUpstream, type Gateway, type Upstream } from './launch.js';

const APP = 'ledger';
const HEADER = 'X-SSL-Client-Cert';

describe('NGINX terminating mutual TLS in front of an app: certificate-bound tokens', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let box: Box;
  let upstream: Upstream;
  let nginx: Gateway;
  let bound: string;
  let appUrl: string;
  const agents: Agent[] = [];
  const clientFiles: Record<string, { certFile: string; keyFile: string }> = {};

  /** A client of the app through NGINX, presenting `cert` (or none) in TLS. */
  const client = (cert?: string): Agent => {
    const files = cert === undefined ? undefined : clientFiles[cert]!;
    const agent = new Agent({
      connect: { ca: ca.pem, ...(files ? { cert: fs.readFileSync(files.certFile), key: fs.readFileSync(files.keyFile) } : {}) },
    });
    agents.push(agent);
    return agent;
  };
  const get = async (dispatcher: Agent, headers: Record<string, string> = {}) => {
    const res = await fetch(`${appUrl}/entries`, { headers: { Authorization: `Bearer ${bound}`, ...headers }, dispatcher } as RequestInit);
    return { status: res.status, text: await res.text() };
  };

  before(async function () {
    ca = testCa();
    const served = ca.issue('served');
    for (const name of ['orders', 'billing']) clientFiles[name] = ca.issue(name, `/CN=${name}`, `DNS:${name}.example`, 'clientAuth');
    box = await Box.start({
      env: {
        BOXAUTH_CLIENT_CA_FILE: ca.caFile,
        BOXAUTH_CLIENT_CERT_HEADER: HEADER,
        // NGINX asks the box from 127.0.0.1.
        BOXAUTH_TRUSTED_PROXIES: '127.0.0.1',
      },
    });
    const root = await box.rootToken();
    upstream = await startUpstream();
    // The app's URL (its audience) names NGINX's port: all again on a new one when another process took it first.
    nginx = await onFreePorts(1, async ([port]) => {
      const url = `https://127.0.0.1:${port}`;
      appUrl = url;
      const puts: [string, Record<string, unknown>][] = [
        [
          '/Client/orders',
          {
            grant_types: ['client_credentials'],
            token_endpoint_auth_method: 'tls_client_auth',
            tls_client_auth_san_dns: 'orders.example',
            audience: [url],
          },
        ],
        [`/App/${APP}`, { urls: [url] }],
        ['/AccessPolicy/ledger-orders', { app: APP, engine: 'allow', link: [{ id: 'orders', resourceType: 'Client' }] }],
      ];
      for (const [path, body] of puts) {
        const res = await box.json('PUT', path, body, root);
        expect(res.status, res.text).to.be.oneOf([200, 201]); // 200: put again on another port
      }
      // The token, from the box's token endpoint behind a proxy that forwarded the client's certificate.
      const token = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', client_id: 'orders', audience: url },
        { [HEADER]: encodeURIComponent(fs.readFileSync(clientFiles.orders!.certFile, 'utf8')) },
      );
      expect(token.status, token.text).to.equal(200);
      bound = token.body.access_token as string;
      const boxAddress = new URL(box.url).host;
      return startNginx(
        port,
        (dir) =>
          nginxAround(
            dir,
            `
  upstream boxauth { server ${boxAddress}; }
  upstream app { server ${upstream.address}; }
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${served.certFile};
    ssl_certificate_key ${served.keyFile};
    ssl_client_certificate ${ca.caFile};
    ssl_verify_client optional;

    location / {
      auth_request /.boxauth-authz;
      proxy_pass http://app;
    }

    location = /.boxauth-authz {
      internal;
      proxy_pass http://boxauth/authz/forward-auth/${APP};
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header Host $http_host;
      proxy_set_header ${HEADER} $ssl_client_escaped_cert;
    }
  }
`,
          ),
        // startNginx's url is http: NGINX here speaks TLS only.
        async () => (await fetch(`${appUrl}/entries`, { dispatcher: client() } as RequestInit)).status === 401,
      );
    });
  });
  after(async function () {
    await nginx?.stop();
    await upstream?.stop();
    await box?.stop();
    await Promise.all(agents.map((a) => a.close()));
  });

  it('the token with its own certificate reaches the app', async function () {
    const res = await get(client('orders'));
    expect(res.status, res.text).to.equal(200);
    expect(upstream.received.at(-1)?.url).to.equal('/entries');
  });

  it('without a certificate, even with a header of its own naming the right one, or with another certificate: 401', async function () {
    const seen = upstream.received.length;
    const forged = await get(client(), { [HEADER]: encodeURIComponent(fs.readFileSync(clientFiles.orders!.certFile, 'utf8')) });
    expect(forged.status).to.equal(401);
    expect((await get(client('billing'))).status).to.equal(401);
    expect(upstream.received.length, 'the app saw none of them').to.equal(seen);
    // The certificate alone made the difference.
    expect((await get(client('orders'))).status).to.equal(200);
  });
});
