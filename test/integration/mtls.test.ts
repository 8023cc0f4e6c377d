// Mutual TLS (RFC 8705): tls_client_auth and self_signed_tls_client_auth with the box terminating
// TLS itself and asking for client certificates, certificate-bound access tokens (cnf x5t#S256)
// checked by the box's API, and a forwarded-certificate header believed only from trusted proxies.
import { expect } from 'chai';
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { Agent, type Dispatcher } from 'undici';
import { Box } from '../support/box.js';
import { selfSignedClient, testCa, type TestCa } from '../support/tls.js';

const SPIFFE_ID = 'spiffe://cluster.local/ns/shop/sa/orders';

const thumbprint = (certFile: string): string =>
  createHash('sha256')
    .update(new X509Certificate(fs.readFileSync(certFile)).raw)
    .digest('base64url');

const claims = (jwt: string): Record<string, any> => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));

describe('Mutual TLS (RFC 8705)', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let stranger: TestCa;
  let box: Box;
  let plain: Dispatcher;
  const agents: Agent[] = [];
  const files: Record<string, { certFile: string; keyFile: string }> = {};

  /** A dispatcher that trusts the box's CA and presents `files[name]` as its client certificate. */
  const presenting = (name: string): Dispatcher => {
    const agent = new Agent({
      connect: { ca: ca.pem, cert: fs.readFileSync(files[name]!.certFile), key: fs.readFileSync(files[name]!.keyFile) },
    });
    agents.push(agent);
    return agent;
  };

  /** `box.form` through `dispatcher`. */
  const formWith = async (dispatcher: Dispatcher, path: string, body: Record<string, string>, headers: Record<string, string> = {}) => {
    box.dispatcher = dispatcher;
    try {
      return await box.form(path, body, headers);
    } finally {
      box.dispatcher = plain;
    }
  };
  const requestWith = async (dispatcher: Dispatcher, path: string, headers: Record<string, string>) => {
    box.dispatcher = dispatcher;
    try {
      return await box.request('GET', path, { headers });
    } finally {
      box.dispatcher = plain;
    }
  };
  const tokenFor = (client: string, cert: string) =>
    formWith(presenting(cert), '/auth/token', { grant_type: 'client_credentials', client_id: client });

  before(async function () {
    ca = testCa();
    stranger = testCa();
    const served = ca.issue('served');
    files.orders = ca.issue('orders', '/O=Example/CN=orders', `URI:${SPIFFE_ID}`, 'clientAuth');
    files.billing = ca.issue('billing', '/O=Example/CN=billing', 'DNS:billing.example', 'clientAuth');
    files.billingElsewhere = ca.issue('billing-elsewhere', '/O=Example/CN=billing', 'DNS:other.example', 'clientAuth');
    files.forged = stranger.issue('forged', '/O=Example/CN=orders', `URI:${SPIFFE_ID}`, 'clientAuth');
    files.own = selfSignedClient(ca.dir, 'own');
    files.unregistered = selfSignedClient(ca.dir, 'unregistered', '/CN=own');
    box = await Box.start({
      tls: { ...served, dispatcher: ca.dispatcher },
      env: {
        BOXAUTH_TLS_CLIENT_CERTIFICATES: 'request',
        BOXAUTH_CLIENT_CA_FILE: ca.caFile,
        BOXAUTH_CLIENT_CERT_HEADER: 'ssl-client-cert',
        // No request of this test comes from it: a forwarded certificate is anyone's here.
        BOXAUTH_TRUSTED_PROXIES: '192.0.2.10',
      },
    });
    plain = ca.dispatcher;
    const root = await box.rootToken();
    const jwt = { client_credentials: { token_format: 'jwt', access_token_expiration: 600 } };
    const ownKey = { ...createPublicKey(fs.readFileSync(files.own.keyFile)).export({ format: 'jwk' }), kid: 'own' };
    const clients: Record<string, unknown> = {
      orders: { token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_uri: SPIFFE_ID },
      'orders-refresh': {
        token_endpoint_auth_method: 'tls_client_auth',
        tls_client_auth_san_uri: SPIFFE_ID,
        auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 600, refresh_token: true } },
      },
      'billing-dn': { token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_subject_dn: 'CN=billing,O=Example' },
      'billing-san': { token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_dns: 'billing.example' },
      selfie: { token_endpoint_auth_method: 'self_signed_tls_client_auth', jwks: { keys: [ownKey] } },
    };
    for (const [id, fields] of Object.entries(clients)) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['client_credentials'], auth: jwt, ...(fields as object) }, root);
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async function () {
    await box?.stop();
    await Promise.all(agents.map((a) => a.close()));
  });

  it('says in its metadata which methods it takes and that it binds tokens (RFC 8705 §2.1.1, §2.2.1, §3.3)', async function () {
    const meta = (await box.request('GET', '/.well-known/oauth-authorization-server')).body;
    expect(meta.token_endpoint_auth_methods_supported).to.include.members(['tls_client_auth', 'self_signed_tls_client_auth']);
    expect(meta.tls_client_certificate_bound_access_tokens).to.equal(true);
  });

  it('tls_client_auth: a SPIFFE ID in a URI SAN authenticates; the token is bound to the certificate (cnf x5t#S256)', async function () {
    const res = await tokenFor('orders', 'orders');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.token_type).to.equal('Bearer');
    expect(claims(res.body.access_token).cnf).to.deep.equal({ 'x5t#S256': thumbprint(files.orders!.certFile) });
    const introspected = await formWith(presenting('orders'), '/auth/introspect', { token: res.body.access_token, client_id: 'orders' });
    expect(introspected.status, introspected.text).to.equal(200);
    expect(introspected.body.cnf).to.deep.equal({ 'x5t#S256': thumbprint(files.orders!.certFile) });
  });

  it('a refresh token of a certificate-bound grant is used with its certificate only (RFC 8705 §4)', async function () {
    const issued = await tokenFor('orders-refresh', 'orders');
    expect(issued.status, issued.text).to.equal(200);
    const refreshToken = issued.body.refresh_token as string;
    expect(refreshToken).to.be.a('string');
    // A thief with the refresh token and no certificate names the client: no token, bound or not.
    const stolen = await formWith(plain, '/auth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: 'orders-refresh',
    });
    expect(stolen.status, stolen.text).to.equal(400);
    expect(stolen.body.error).to.equal('invalid_grant');
    expect(stolen.body.error_description).to.match(/certificate-bound grant: present the client certificate/);
    const own = await formWith(presenting('orders'), '/auth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: 'orders-refresh',
    });
    expect(own.status, own.text).to.equal(200);
    expect(claims(own.body.access_token).cnf).to.deep.equal({ 'x5t#S256': thumbprint(files.orders!.certFile) });
  });

  it('a certificate-bound token is exchanged with its certificate only, never traded for an unbound one', async function () {
    const { secret } = await box.addClient('relay', {
      grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      auth: { token_exchange: { token_format: 'jwt' } },
    });
    const bound = (await tokenFor('orders', 'orders')).body.access_token as string;
    const exchange = {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: bound,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      client_id: 'relay',
      client_secret: secret,
    };
    for (const requested of ['urn:ietf:params:oauth:token-type:access_token', 'urn:ietf:params:oauth:token-type:txn_token']) {
      const stolen = await formWith(plain, '/auth/token', { ...exchange, requested_token_type: requested, scope: 'read' });
      expect(stolen.status, stolen.text).to.equal(400);
      expect(stolen.body.error_description).to.match(/subject_token is bound to a client certificate/);
    }
  });

  it("the box's API takes a bound token with its certificate only: none, or another, is 401 invalid_token (§3)", async function () {
    const token = (await tokenFor('orders', 'orders')).body.access_token as string;
    const auth = { Authorization: `Bearer ${token}` };
    const own = await requestWith(presenting('orders'), '/Client', auth);
    expect(own.status, own.text).to.not.equal(401);
    const none = await requestWith(plain, '/Client', auth);
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.match(/invalid_token/);
    expect(none.text).to.match(/no client certificate/);
    const other = await requestWith(presenting('billing'), '/Client', auth);
    expect(other.status).to.equal(401);
    expect(other.text).to.match(/certificate not bound/);
  });

  it('tls_client_auth: a certificate of a CA the box does not trust is refused, whatever its subject', async function () {
    const res = await tokenFor('orders', 'forged');
    expect(res.status).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
    expect(res.body.error_description).to.match(/not issued by a CA trusted for client certificates/);
  });

  it('tls_client_auth: the subject DN (RFC 4514, last RDN first) authenticates; another does not', async function () {
    expect((await tokenFor('billing-dn', 'billing')).status).to.equal(200);
    const wrong = await tokenFor('billing-dn', 'orders');
    expect(wrong.status).to.equal(401);
    expect(wrong.body.error_description).to.match(/subject DN does not match/);
  });

  it('tls_client_auth: with a SAN registered, the right DN and another SAN is refused', async function () {
    expect((await tokenFor('billing-san', 'billing')).status).to.equal(200);
    const res = await tokenFor('billing-san', 'billingElsewhere');
    expect(res.status).to.equal(401);
    expect(res.body.error_description).to.match(/no dNSName SAN/);
  });

  it('self_signed_tls_client_auth: a certificate of a registered key authenticates; one of no registered key, of the same name, is refused', async function () {
    const ok = await tokenFor('selfie', 'own');
    expect(ok.status, ok.text).to.equal(200);
    expect(claims(ok.body.access_token).cnf['x5t#S256']).to.equal(thumbprint(files.own!.certFile));
    const res = await tokenFor('selfie', 'unregistered');
    expect(res.status).to.equal(401);
    expect(res.body.error_description).to.match(/public key is none of the client's registered keys/);
  });

  it('a request without a certificate is client_id alone for a certificate client: refused', async function () {
    const res = await formWith(plain, '/auth/token', { grant_type: 'client_credentials', client_id: 'orders' });
    expect(res.status).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
  });

  it('a forwarded client-certificate header from an address that is not a trusted proxy is refused (400), never believed', async function () {
    const pem = fs.readFileSync(files.orders!.certFile, 'utf8');
    const res = await formWith(
      plain,
      '/auth/token',
      { grant_type: 'client_credentials', client_id: 'orders' },
      {
        'ssl-client-cert': encodeURIComponent(pem),
      },
    );
    expect(res.status).to.equal(400);
    expect(res.text).to.match(/BOXAUTH_TRUSTED_PROXIES/);
    // Nor does it stand in for a bound token's certificate.
    const token = (await tokenFor('orders', 'orders')).body.access_token as string;
    const api = await requestWith(plain, '/Client', { Authorization: `Bearer ${token}`, 'ssl-client-cert': encodeURIComponent(pem) });
    expect(api.status).to.equal(400);
  });
});
