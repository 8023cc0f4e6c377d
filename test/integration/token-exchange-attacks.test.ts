// Token exchange (RFC 8693) under attack: each test is an attack that worked
// once. Who attacks: a stranger with curl and a client id; an app a person
// signed in to, holding the person's token (or the short-lived JWT the decision
// point gave it); a service that received an exchanged token.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic } from '../support/box.js';
import { TestIssuer } from '../support/issuer.js';
import { ACCESS_TOKEN, EXCHANGE, JWT, allowExchange as allowing, introspect as introspecting } from '../support/exchange-chain.js';
import { userToken } from '../support/user-token.js';

const ORDERS = 'https://orders.example';
const PAYMENTS = 'https://payments.example';

describe('token exchange (RFC 8693): attacks', function () {
  let box: Box;
  let root: string;
  let issuer: TestIssuer;
  let aliceId: number;
  const secrets: Record<string, string> = {};

  const allowExchange = (id: string, client: string, matcho: Record<string, unknown>): Promise<void> =>
    allowing(box, root, id, client, matcho);

  const introspect = (token: string): Promise<Record<string, unknown>> => introspecting(box, token);

  before(async function () {
    issuer = await TestIssuer.start();
    box = await Box.start({ env: { BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([issuer.trusted]) } });
    root = await box.rootToken();
    const alice = await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password' }, root);
    expect(alice.status, alice.text).to.equal(201);
    aliceId = alice.body.id;
    secrets.orders = (
      await box.addClient(
        'orders',
        {
          grant_types: ['client_credentials', EXCHANGE],
          audience: [ORDERS, PAYMENTS],
          auth: { token_exchange: { token_format: 'jwt', access_token_expiration: 600 } },
        },
        { policy: false },
      )
    ).secret;
    // orders passes on alice's tokens from web, meant for it, to payments.
    await allowExchange('orders-from-web', 'orders', { exchange: { subject: { kind: 'box', client_id: 'web', aud: ORDERS } } });
  });

  after(async function () {
    await box?.stop();
    await issuer?.stop();
  });

  it('a client bound to ServiceAccounts is not a public client: client_id alone does not exchange as it', async function () {
    // The docs' `orders`: no secret, its pods authenticate with their ServiceAccount tokens.
    const put = await box.json(
      'PUT',
      '/Client/orders-wl',
      {
        grant_types: ['client_credentials', EXCHANGE],
        audience: [PAYMENTS],
        auth: { workload: { issuer: issuer.url, serviceAccounts: [{ namespace: 'shop', name: 'orders' }] } },
      },
      root,
    );
    expect(put.status, put.text).to.be.oneOf([200, 201]);
    await allowExchange('orders-wl-from-web', 'orders-wl', { exchange: { subject: { kind: 'box', client_id: 'web', aud: ORDERS } } });
    const forOrders = await userToken(box, aliceId, 'web', ORDERS);
    const params = { grant_type: EXCHANGE, subject_token: forOrders, subject_token_type: ACCESS_TOKEN, audience: PAYMENTS };
    // A stranger who caught a token meant for orders names orders' client and sends no ServiceAccount token.
    const stranger = await box.form('/auth/token', { ...params, client_id: 'orders-wl' });
    expect(stranger.status, stranger.text).to.equal(401);
    expect(stranger.body.error).to.equal('invalid_client');
    // orders' own pod, with its ServiceAccount token, still may.
    const pod = await box.form('/auth/token', {
      ...params,
      client_id: 'orders-wl',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await issuer.token(box.url, 'shop', 'orders', { 'kubernetes.io': undefined }),
    });
    expect(pod.status, pod.text).to.equal(200);
  });

  it("an app cannot launder a person's token through a public client into that client's rights on the box's API", async function () {
    // A public client (a single-page app: no secret) that may do anything on the box's API for
    // its users (an allow policy) and lists the grant; the docs say an allow policy may make any exchange.
    const spa = await box.json(
      'PUT',
      '/Client/spa',
      { grant_types: ['authorization_code', EXCHANGE], auth: { authorization_code: { redirect_uri: 'https://spa.example/cb' } } },
      root,
    );
    expect(spa.status, spa.text).to.be.oneOf([200, 201]);
    const allow = await box.json(
      'PUT',
      '/AccessPolicy/spa-allow',
      { engine: 'allow', link: [{ id: 'spa', resourceType: 'Client' }] },
      root,
    );
    expect(allow.status, allow.text).to.be.oneOf([200, 201]);
    // Alice may read the clients on the box's API; the app `kiosk` she signed in to may not do that for her.
    const mine = await box.json(
      'PUT',
      '/AccessPolicy/alice-reads-clients',
      { engine: 'matcho', link: [{ id: String(aliceId), resourceType: 'User' }], matcho: { 'request-method': 'get', uri: '/Client' } },
      root,
    );
    expect(mine.status, mine.text).to.be.oneOf([200, 201]);
    await box.addClient(
      'kiosk',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: 'https://kiosk.example/cb' } } },
      { policy: false },
    );
    const atKiosk = await userToken(box, aliceId, 'kiosk');
    expect((await box.json('GET', '/Client', undefined, atKiosk)).status).to.equal(403);
    // kiosk, holding alice's token, names the public client and exchanges it.
    const asSpa = (subject: string) =>
      box.form('/auth/token', { grant_type: EXCHANGE, client_id: 'spa', subject_token: subject, subject_token_type: ACCESS_TOKEN });
    const res = await asSpa(atKiosk);
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
    expect(res.body.error_description).to.match(/authenticate/);
    // spa's own users' tokens it may still exchange: that adds nobody's rights to anyone's.
    const own = await asSpa(await userToken(box, aliceId, 'spa'));
    expect(own.status, own.text).to.equal(200);
  });

  it('a service holding an exchanged token cannot sign the person out of the app it came from', async function () {
    const atWeb = await userToken(box, aliceId, 'web', ORDERS);
    const res = await box.form(
      '/auth/token',
      { grant_type: EXCHANGE, subject_token: atWeb, subject_token_type: ACCESS_TOKEN, audience: PAYMENTS },
      { Authorization: basic('orders', secrets.orders!) },
    );
    expect(res.status, res.text).to.equal(200);
    // payments got the exchanged token, and "signs out" with it (DELETE /Session needs no policy).
    const out = await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${res.body.access_token}` } });
    expect(out.status, out.text).to.equal(200);
    expect((await introspect(res.body.access_token)).active).to.equal(false);
    // alice's own sign-in at web is hers to end, not payments'.
    expect((await introspect(atWeb)).active).to.equal(true);
    // Her own sign-out still ends what was exchanged from it.
    const again = await box.form(
      '/auth/token',
      { grant_type: EXCHANGE, subject_token: atWeb, subject_token_type: ACCESS_TOKEN, audience: PAYMENTS },
      { Authorization: basic('orders', secrets.orders!) },
    );
    expect(again.status, again.text).to.equal(200);
    expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${atWeb}` } })).status).to.equal(200);
    expect((await introspect(again.body.access_token)).active).to.equal(false);
  });

  it('requested_token_type=jwt does not turn a client configured for opaque tokens into a JWT issuer', async function () {
    // Opaque tokens are checked at the box on every use: closing the grant stops them everywhere.
    // A JWT is verified offline too, where no close reaches it; and without an expiration, it never ends.
    secrets.opaque = (await box.addClient('opaque', { grant_types: ['client_credentials', EXCHANGE] }, { policy: false })).secret;
    await allowExchange('opaque-from-web', 'opaque', { exchange: { subject: { kind: 'box', client_id: 'web' } } });
    const atWeb = await userToken(box, aliceId, 'web', ORDERS);
    const ask = (extra: Record<string, string>) =>
      box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: atWeb, subject_token_type: ACCESS_TOKEN, ...extra },
        { Authorization: basic('opaque', secrets.opaque!) },
      );
    const res = await ask({ requested_token_type: JWT });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
    expect(res.body.error_description).to.match(/token_format/);
    const opaque = await ask({});
    expect(opaque.status, opaque.text).to.equal(200);
    expect(opaque.body.access_token).to.not.match(/^ey/);
    // A client configured for JWTs gets one when it asks.
    const jwt = await box.form(
      '/auth/token',
      { grant_type: EXCHANGE, subject_token: atWeb, subject_token_type: ACCESS_TOKEN, requested_token_type: JWT },
      { Authorization: basic('orders', secrets.orders!) },
    );
    expect(jwt.status, jwt.text).to.equal(200);
    expect(jwt.body.issued_token_type).to.equal(JWT);
  });

  it("an app's short-lived upstream JWT is not exchanged into a token that outlives it", async function () {
    // The decision point hands the app behind it a JWT of the caller's session that lives 30 s.
    const gated = await box.addClient(
      'gated',
      { grant_types: ['client_credentials'], audience: [ORDERS], auth: { client_credentials: { token_format: 'jwt' } } },
      { policy: false },
    );
    const app = await box.json('PUT', '/App/orders', { urls: [ORDERS], upstream: { token: { header: 'X-Jwt', lifetime: 30 } } }, root);
    expect(app.status, app.text).to.be.oneOf([200, 201]);
    const gate = await box.json(
      'PUT',
      '/AccessPolicy/orders-app-gated',
      { app: 'orders', engine: 'allow', link: [{ id: 'gated', resourceType: 'Client' }] },
      root,
    );
    expect(gate.status, gate.text).to.be.oneOf([200, 201]);
    const cc = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', audience: ORDERS },
      { Authorization: basic('gated', gated.secret) },
    );
    expect(cc.status, cc.text).to.equal(200);
    const allowed = await box.request('GET', '/authz/http/orders/x', {
      headers: { Authorization: `Bearer ${cc.body.access_token}`, Host: 'orders.example' },
    });
    expect(allowed.status, allowed.text).to.equal(200);
    const upstream = allowed.headers.get('x-jwt')!;
    const upstreamExp = decodeJwt(upstream).exp!;
    // The app, which has an exchanging client of its own (orders, expiring its tokens in 600 s), exchanges it.
    await allowExchange('orders-from-gated', 'orders', { exchange: { subject: { kind: 'box', client_id: 'gated' } } });
    const res = await box.form(
      '/auth/token',
      { grant_type: EXCHANGE, subject_token: upstream, subject_token_type: JWT, audience: PAYMENTS },
      { Authorization: basic('orders', secrets.orders!) },
    );
    expect(res.status, res.text).to.equal(200);
    expect(decodeJwt(res.body.access_token).exp).to.be.at.most(upstreamExp);
    expect(res.body.expires_in).to.be.at.most(30);
  });
});
