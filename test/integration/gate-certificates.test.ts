// Certificate-bound access tokens (RFC 8705 §3, cnf x5t#S256) at the decision point's doors: the
// gateway terminates mutual TLS with the client and tells the box the certificate it saw — in
// BOXAUTH_CLIENT_CERT_HEADER at the HTTP doors (NGINX's URL-encoded PEM, Traefik's base64 DER),
// believed from a trusted proxy only, and in Envoy's attributes.source.certificate at the gRPC
// door. Here the test is the gateway: it speaks to the box from 127.0.0.2, the one trusted proxy,
// and anyone else from 127.0.0.1.
import { expect } from 'chai';
import { createHash, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { Agent } from 'undici';
import { Box } from '../support/box.js';
import { grpcCheck } from '../support/grpc-check.js';
import { testCa, type TestCa } from '../support/tls.js';

const APP = 'shop';
const AUDIENCE = 'https://shop.example';
const HEADER = 'ssl-client-cert';

describe('certificate-bound tokens at the decision point (RFC 8705 §3)', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let box: Box;
  /** The gateway's connections: from 127.0.0.2, the trusted proxy. */
  const gateway = new Agent({ localAddress: '127.0.0.2' });
  const pems: Record<string, string> = {};
  let bound: string;

  const thumbprint = (pem: string): string => createHash('sha256').update(new X509Certificate(pem).raw).digest('base64url');
  /** NGINX's $ssl_client_escaped_cert. */
  const escaped = (name: string): string => encodeURIComponent(pems[name]!);
  /** Traefik's X-Forwarded-Tls-Client-Cert (passTLSClientCert pem): the PEM body, no delimiters nor line breaks, URL-escaped. */
  const traefik = (name: string): string =>
    encodeURIComponent(
      pems[name]!.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '')
        .replace(/\s+/g, '')
        .trim(),
    );

  /** A request to the box from `from` (the gateway, or anyone else). */
  const from = async (who: 'gateway' | 'anyone', method: string, path: string, headers: Record<string, string>) => {
    box.dispatcher = who === 'gateway' ? gateway : undefined;
    try {
      return await box.request(method, path, { headers });
    } finally {
      box.dispatcher = undefined;
    }
  };
  /** Traefik's forwardAuth (or Caddy's forward_auth) asking about GET /orders at the shop, with the token and `extra`. */
  const forwardAuth = (who: 'gateway' | 'anyone', token: string, extra: Record<string, string> = {}) =>
    from(who, 'GET', `/authz/forward-auth/${APP}`, {
      'X-Forwarded-Method': 'GET',
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'shop.example',
      'X-Forwarded-Uri': '/orders',
      Authorization: `Bearer ${token}`,
      ...extra,
    });
  /** Envoy's HTTP service asking about GET /orders. */
  const httpDoor = (token: string, extra: Record<string, string> = {}) =>
    from('gateway', 'GET', `/authz/http/${APP}/orders`, { Host: 'shop.example', Authorization: `Bearer ${token}`, ...extra });
  /** Envoy's gRPC ext_authz, with the peer certificate it saw (include_peer_certificate). */
  const grpc = (token: string, certificate?: string) =>
    grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
      attributes: {
        request: {
          http: { method: 'GET', path: '/orders', host: 'shop.example', scheme: 'https', headers: { authorization: `Bearer ${token}` } },
        },
        context_extensions: { app: APP },
        ...(certificate !== undefined ? { source: { certificate } } : {}),
      },
    });

  /** What a refusal must never show: the thumbprint, or any of the certificate's bytes. */
  const expectNoKeyMaterial = (text: string): void => {
    for (const name of ['orders', 'billing']) {
      expect(text).to.not.include(thumbprint(pems[name]!));
      expect(text).to.not.include(traefik(name).slice(0, 40));
    }
  };

  before(async function () {
    ca = testCa();
    for (const name of ['orders', 'billing']) {
      const files = ca.issue(name, `/O=Example/CN=${name}`, `DNS:${name}.example`, 'clientAuth');
      pems[name] = fs.readFileSync(files.certFile, 'utf8');
    }
    box = await Box.start({
      env: { BOXAUTH_CLIENT_CA_FILE: ca.caFile, BOXAUTH_CLIENT_CERT_HEADER: HEADER, BOXAUTH_TRUSTED_PROXIES: '127.0.0.2' },
    });
    const root = await box.rootToken();
    const client = await box.json(
      'PUT',
      '/Client/orders',
      {
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'tls_client_auth',
        tls_client_auth_san_dns: 'orders.example',
        audience: [AUDIENCE],
      },
      root,
    );
    expect(client.status, client.text).to.equal(201);
    const app = await box.json('PUT', `/App/${APP}`, { urls: [AUDIENCE], audience: AUDIENCE }, root);
    expect(app.status, app.text).to.equal(201);
    const policy = await box.json(
      'PUT',
      '/AccessPolicy/shop-orders',
      { app: APP, engine: 'allow', link: [{ id: 'orders', resourceType: 'Client' }] },
      root,
    );
    expect(policy.status, policy.text).to.equal(201);
    // The client's token, through a proxy that terminated its mutual TLS: bound to its certificate.
    box.dispatcher = gateway;
    try {
      const res = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', client_id: 'orders', audience: AUDIENCE },
        { [HEADER]: escaped('orders') },
      );
      expect(res.status, res.text).to.equal(200);
      bound = res.body.access_token as string;
    } finally {
      box.dispatcher = undefined;
    }
  });
  after(async function () {
    await box?.stop();
    await gateway.close();
  });

  it("forward-auth: allowed with the certificate the gateway forwards (NGINX's or Traefik's form); without it, or with another, 401 naming the rule", async function () {
    const own = await forwardAuth('gateway', bound, { [HEADER]: escaped('orders') });
    expect(own.status, own.text).to.equal(200);
    const asTraefik = await forwardAuth('gateway', bound, { [HEADER]: traefik('orders') });
    expect(asTraefik.status, asTraefik.text).to.equal(200);

    const none = await forwardAuth('gateway', bound);
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.match(/invalid_token/);
    expect(none.text).to.match(/no client certificate: the access token is bound to one \(RFC 8705/);

    const other = await forwardAuth('gateway', bound, { [HEADER]: escaped('billing') });
    expect(other.status).to.equal(401);
    expect(other.headers.get('www-authenticate')).to.match(/invalid_token/);
    expect(other.text).to.match(/certificate not bound: the access token is bound to another client certificate/);
    for (const res of [none, other]) expectNoKeyMaterial(`${res.text} ${res.headers.get('www-authenticate')}`);
  });

  it("Envoy's HTTP service: allowed with the certificate forwarded, refused with another", async function () {
    const own = await httpDoor(bound, { [HEADER]: escaped('orders') });
    expect(own.status, own.text).to.equal(200);
    const other = await httpDoor(bound, { [HEADER]: escaped('billing') });
    expect(other.status).to.equal(401);
    expect(other.text).to.match(/certificate not bound/);
  });

  it('a forwarded certificate from anyone but a trusted proxy is refused (400), never believed, even the right one', async function () {
    const res = await forwardAuth('anyone', bound, { [HEADER]: escaped('orders') });
    expect(res.status, res.text).to.equal(400);
    expect(res.text).to.match(/believes only from its trusted proxies \(BOXAUTH_TRUSTED_PROXIES\): 127\.0\.0\.1 is not one/);
    // The same request from the gateway is allowed: the peer alone made the difference.
    expect((await forwardAuth('gateway', bound, { [HEADER]: escaped('orders') })).status).to.equal(200);
  });

  it("Envoy's gRPC ext_authz: attributes.source.certificate is the certificate; the right one allowed, another or none denied", async function () {
    const own = await grpc(bound, escaped('orders'));
    expect(own.status.code, JSON.stringify(own)).to.equal(0);
    for (const [certificate, rule] of [
      [escaped('billing'), /certificate not bound/],
      [undefined, /no client certificate/],
    ] as const) {
      const denied = await grpc(bound, certificate);
      expect(denied.status.code, JSON.stringify(denied)).to.equal(16); // UNAUTHENTICATED
      expect(denied.denied_response!.status.code).to.equal(401);
      expect(denied.status.message).to.match(rule);
      expectNoKeyMaterial(JSON.stringify(denied));
    }
    // A certificate header the client wrote is not Envoy's word: only the attribute is read.
    const written = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
      attributes: {
        request: {
          http: {
            method: 'GET',
            path: '/orders',
            host: 'shop.example',
            headers: { authorization: `Bearer ${bound}`, [HEADER]: escaped('orders') },
          },
        },
        context_extensions: { app: APP },
      },
    });
    expect(written.status.code).to.equal(16);
  });

  it('an unbound token at the doors needs no certificate, and a forwarded one changes nothing', async function () {
    const { secret } = await box.addClient('reader', { audience: [AUDIENCE] }, { policy: false });
    const root = await box.rootToken();
    await box.json(
      'PUT',
      '/AccessPolicy/shop-reader',
      { app: APP, engine: 'allow', link: [{ id: 'reader', resourceType: 'Client' }] },
      root,
    );
    const res = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_id: 'reader',
      client_secret: secret,
      audience: AUDIENCE,
    });
    expect(res.status, res.text).to.equal(200);
    const token = res.body.access_token as string;
    expect((await forwardAuth('gateway', token)).status).to.equal(200);
    expect((await forwardAuth('gateway', token, { [HEADER]: escaped('billing') })).status).to.equal(200);
    expect((await grpc(token, escaped('billing'))).status.code).to.equal(0);
  });
});
