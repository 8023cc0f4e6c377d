// Transaction Tokens (draft-ietf-oauth-transaction-tokens-10): the box as Transaction Token
// Service. A gateway-facing `frontend` trades alice's access token for a Txn-Token, `orders`
// replaces it with a narrower one, and every workload verifies it with the box's JWKS alone; and
// the attacks: no policy, a widened scope, a changed context, a forged or expired Txn-Token, a
// Txn-Token used as an access token.
import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { Box, basic } from '../support/box.js';
import { allowExchange, EXCHANGE } from '../support/exchange-chain.js';
import { userToken } from '../support/user-token.js';

const TXN = 'urn:ietf:params:oauth:token-type:txn_token';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

/** A workload that may ask the box for Txn-Tokens. */
const workload: Record<string, unknown> = {
  grant_types: ['client_credentials', EXCHANGE],
  scope: ['orders:read', 'orders:write', 'trade', 'openid'],
};

describe('Transaction Tokens (draft-ietf-oauth-transaction-tokens-10)', function () {
  let box: Box;
  let root: string;
  let aliceId: number;
  let alice: string;
  const secrets: Record<string, string> = {};

  const ask = (client: string, params: Record<string, string>) =>
    box.form(
      '/auth/token',
      { grant_type: EXCHANGE, requested_token_type: TXN, ...params },
      { Authorization: basic(client, secrets[client]!) },
    );

  /** frontend's request for a Txn-Token for alice's call. */
  const fromAlice = (extra: Record<string, string> = {}) =>
    ask('frontend', {
      subject_token: alice,
      subject_token_type: ACCESS_TOKEN,
      audience: box.url,
      scope: 'trade',
      request_context: JSON.stringify({ req_ip: '192.0.2.7', authn: 'pwd' }),
      request_details: JSON.stringify({ action: 'BUY', ticker: 'MSFT', quantity: '100' }),
      ...extra,
    });

  before(async function () {
    box = await Box.start({ movableClock: true });
    root = await box.rootToken();
    for (const id of ['frontend', 'orders', 'stranger', 'lax']) secrets[id] = (await box.addClient(id, workload, { policy: false })).secret;
    const created = await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password' }, root);
    expect(created.status, created.text).to.equal(201);
    aliceId = created.body.id;
    alice = await userToken(box, aliceId, 'frontend', undefined, 'trade orders:read');
    // frontend may turn the tokens of its own users into Txn-Tokens, BUY or SELL only; orders may replace Txn-Tokens.
    await allowExchange(box, root, 'frontend-txn', 'frontend', {
      exchange: {
        requested_token_type: TXN,
        subject: { kind: 'box', client_id: 'frontend' },
        txn: { replacing: false, request_details: { action: '#^(BUY|SELL)$' } },
      },
    });
    await allowExchange(box, root, 'orders-txn', 'orders', { exchange: { requested_token_type: TXN, txn: { replacing: true } } });
    // lax has an `allow` policy, as a client has for its other exchanges: that says nothing of Txn-Tokens.
    const lax = await box.json('PUT', '/AccessPolicy/lax-allow', { engine: 'allow', link: [{ id: 'lax', resourceType: 'Client' }] }, root);
    expect(lax.status, lax.text).to.be.oneOf([200, 201]);
  });

  after(async function () {
    await box?.stop();
  });

  describe('frontend trades alice’s access token for a Txn-Token', function () {
    let txn: string;

    it('answers as §11.4 says: token_type N_A, issued_token_type txn_token, no refresh token', async function () {
      const res = await fromAlice();
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ token_type: 'N_A', issued_token_type: TXN });
      expect(res.body).not.to.have.property('refresh_token');
      txn = res.body.access_token as string;
    });

    it('is a txntoken+jwt a workload verifies with the box’s JWKS alone, with the draft’s claims', async function () {
      expect(decodeProtectedHeader(txn).typ).to.equal('txntoken+jwt');
      const jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(txn, jwks, { audience: box.url, typ: 'txntoken+jwt' });
      expect(payload).to.include({ sub: String(aliceId), scope: 'trade', req_wl: 'frontend', iss: box.url });
      expect(payload.txn).to.match(/^[0-9a-f-]{36}$/);
      expect(payload.rctx).to.deep.equal({ req_ip: '192.0.2.7', authn: 'pwd' });
      expect(payload.tctx).to.deep.equal({ action: 'BUY', ticker: 'MSFT', quantity: '100' });
      // Minutes, not hours (§6): the default is five.
      expect(payload.exp! - payload.iat!).to.equal(300);
    });

    it('each request is its own transaction: a new txn each time', async function () {
      const again = await fromAlice();
      expect(again.status, again.text).to.equal(200);
      expect(decodeJwt(again.body.access_token as string).txn).not.to.equal(decodeJwt(txn).txn);
    });

    it('orders replaces it with a narrower one: same txn and sub, tctx added to, req_wl names both', async function () {
      const res = await ask('orders', {
        subject_token: txn,
        subject_token_type: TXN,
        scope: 'trade',
        request_details: JSON.stringify({ order_id: 'o-1' }),
      });
      expect(res.status, res.text).to.equal(200);
      const before = decodeJwt(txn);
      const after = decodeJwt(res.body.access_token as string);
      expect(after).to.include({ txn: before.txn, sub: before.sub, aud: before.aud, scope: 'trade', req_wl: 'frontend,orders' });
      expect(after.tctx).to.deep.equal({ action: 'BUY', ticker: 'MSFT', quantity: '100', order_id: 'o-1' });
      expect(after.rctx).to.deep.equal(before.rctx);
      // Never beyond the Txn-Token it replaces.
      expect(after.exp).to.be.at.most(before.exp!);
    });

    describe('attacks', function () {
      it('a replacement that widens scope: invalid_scope', async function () {
        const res = await ask('orders', { subject_token: txn, subject_token_type: TXN, scope: 'trade orders:write' });
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_scope');
      });

      it('a replacement that changes an asserted tctx value: invalid_request, naming it', async function () {
        const res = await ask('orders', {
          subject_token: txn,
          subject_token_type: TXN,
          scope: 'trade',
          request_details: JSON.stringify({ quantity: '100000' }),
        });
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error_description).to.include('tctx.quantity is already asserted');
      });

      it('a forged Txn-Token (sub changed, signature kept) is no subject_token', async function () {
        const [h, p, s] = txn.split('.');
        const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
        const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'bob' })).toString('base64url')}.${s}`;
        const res = await ask('orders', { subject_token: forged, subject_token_type: TXN, scope: 'trade' });
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error_description).to.include('signature is invalid');
      });

      it('a Txn-Token passed off as an access token gets no Txn-Token', async function () {
        const res = await ask('orders', { subject_token: txn, subject_token_type: ACCESS_TOKEN, scope: 'trade' });
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error_description).to.include('a Txn-Token is not an access token');
      });

      it('a Txn-Token as Bearer: refused at userinfo, on the box’s API, and inactive at introspection', async function () {
        const userinfo = await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${txn}` } });
        expect(userinfo.status, userinfo.text).to.equal(401);
        const api = await box.request('GET', '/Client', { headers: { Authorization: `Bearer ${txn}` } });
        expect(api.status, api.text).to.equal(401);
        expect(api.text).to.include('a Txn-Token is not an access token');
        const introspected = await box.form('/auth/introspect', { token: txn }, { Authorization: basic('root', box.rootSecret) });
        expect(introspected.body).to.deep.equal({ active: false });
      });

      it('a Txn-Token as subject for an access token (a plain exchange): refused', async function () {
        const res = await box.form(
          '/auth/token',
          { grant_type: EXCHANGE, subject_token: txn, subject_token_type: TXN },
          { Authorization: basic('orders', secrets.orders!) },
        );
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
      });
    });
  });

  describe('who may ask, and with which context (deny by default)', function () {
    it('a client with no policy gets no Txn-Token', async function () {
      const own = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', scope: 'trade' },
        { Authorization: basic('stranger', secrets.stranger!) },
      );
      const res = await ask('stranger', {
        subject_token: own.body.access_token as string,
        subject_token_type: ACCESS_TOKEN,
        scope: 'trade',
      });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.include("no AccessPolicy linked to client 'stranger' allows this Txn-Token request");
    });

    it('an `allow` policy linked to the client, written for its other exchanges, gives none either', async function () {
      const own = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', scope: 'trade' },
        { Authorization: basic('lax', secrets.lax!) },
      );
      const res = await ask('lax', { subject_token: own.body.access_token as string, subject_token_type: ACCESS_TOKEN, scope: 'trade' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.include('allows this Txn-Token request');
    });

    it('a context the policy does not allow (request_details.action WITHDRAW): refused', async function () {
      const res = await fromAlice({ request_details: JSON.stringify({ action: 'WITHDRAW' }) });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.include("no AccessPolicy linked to client 'frontend'");
    });

    it('a scope beyond the subject token’s: invalid_scope (§13.6)', async function () {
      const res = await fromAlice({ scope: 'trade orders:write' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal('invalid_scope');
    });

    it('another Trust Domain as audience: invalid_target', async function () {
      const res = await fromAlice({ audience: 'https://elsewhere.example' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal('invalid_target');
    });

    it('request_details that is no JSON object: invalid_request naming it', async function () {
      const res = await fromAlice({ request_details: '["BUY"]' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.include('request_details must be a JSON object');
    });

    it('no scope: invalid_request (§11.1: it names the purpose of the transaction)', async function () {
      const res = await fromAlice({ scope: '' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.include('scope is required');
    });
  });

  describe('frontend → orders → payments: each gate’s policies read request.txn', function () {
    let first: string;
    let replaced: string;

    before(async function () {
      for (const app of ['orders', 'payments']) {
        const put = await box.json('PUT', `/App/${app}`, { urls: [`https://${app}.example`] }, root);
        expect(put.status, put.text).to.equal(201);
      }
      // orders takes calls of a BUY transaction frontend started (matcho); payments only once orders has added the order (CEL).
      const orders = await box.json(
        'PUT',
        '/AccessPolicy/orders-buys',
        { app: 'orders', engine: 'matcho', matcho: { txn: { tctx: { action: 'BUY' }, req_wl: ['frontend'] } } },
        root,
      );
      expect(orders.status, orders.text).to.equal(201);
      const payments = await box.json(
        'PUT',
        '/AccessPolicy/payments-orders',
        {
          app: 'payments',
          engine: 'cel',
          cel: "'trade' in request.txn.scope && has(request.txn.tctx.order_id) && request.txn.req_wl == ['frontend', 'orders']",
        },
        root,
      );
      expect(payments.status, payments.text).to.equal(201);
      first = (await fromAlice()).body.access_token as string;
      const res = await ask('orders', {
        subject_token: first,
        subject_token_type: TXN,
        scope: 'trade',
        request_details: JSON.stringify({ order_id: 'o-2' }),
      });
      expect(res.status, res.text).to.equal(200);
      replaced = res.body.access_token as string;
    });

    it('orders lets frontend’s call of the transaction through (matcho on request.txn)', async function () {
      const res = await gate(box, 'orders', { 'Txn-Token': first });
      expect(res.status, res.text).to.equal(200);
    });

    it('without a Txn-Token, orders refuses the same call', async function () {
      expect((await gate(box, 'orders', {})).status).not.to.equal(200);
    });

    it('payments refuses frontend’s Txn-Token, and takes orders’ replacement (CEL on request.txn)', async function () {
      expect((await gate(box, 'payments', { 'Txn-Token': first })).status).not.to.equal(200);
      const res = await gate(box, 'payments', { 'Txn-Token': replaced });
      expect(res.status, res.text).to.equal(200);
    });

    it('a forged Txn-Token (tctx changed, signature kept) is refused at the gate: 401, naming it', async function () {
      const [h, p, sig] = first.split('.');
      const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
      const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, tctx: { action: 'BUY', quantity: '1e9' } })).toString('base64url')}.${sig}`;
      const res = await gate(box, 'orders', { 'Txn-Token': forged });
      expect(res.status, res.text).to.equal(401);
      expect(res.text).to.include('Txn-Token refused');
    });

    it('a Txn-Token as Bearer at the gate is no access token: 401', async function () {
      const res = await gate(box, 'orders', { Authorization: `Bearer ${first}`, 'Txn-Token': first });
      expect(res.status, res.text).to.equal(401);
    });

    it('once alice’s grant is closed, her transaction’s Txn-Tokens are refused at the gate', async function () {
      const mine = await userToken(box, aliceId, 'frontend', undefined, 'trade');
      const txn = (await fromAlice({ subject_token: mine })).body.access_token as string;
      expect((await gate(box, 'orders', { 'Txn-Token': txn })).status).to.equal(200);
      const revoked = await box.form('/auth/revoke', { token: mine }, { Authorization: basic('frontend', secrets.frontend!) });
      expect(revoked.status, revoked.text).to.equal(200);
      const res = await gate(box, 'orders', { 'Txn-Token': txn });
      expect(res.status, res.text).to.equal(401);
      expect(res.text).to.include('closed session');
    });
  });

  describe('the decision point hands an App a Txn-Token (App upstream.txnToken)', function () {
    let caller: string;

    before(async function () {
      const put = await box.json(
        'PUT',
        '/App/shop',
        { urls: ['https://shop.example'], audience: 'https://shop.example', upstream: { txnToken: { scope: 'trade' } } },
        root,
      );
      expect(put.status, put.text).to.equal(201);
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/shop-frontend',
        { app: 'shop', engine: 'allow', link: [{ id: 'frontend', resourceType: 'Client' }] },
        root,
      );
      expect(policy.status, policy.text).to.equal(201);
      const own = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', scope: 'trade', audience: 'https://shop.example' },
        { Authorization: basic('frontend', secrets.frontend!) },
      );
      caller = own.body.access_token as string;
    });

    it('an allowed request carries a new Txn-Token upstream, verified with the box’s JWKS: the request in tctx, the App as req_wl', async function () {
      const res = await gate(box, 'shop', { Authorization: `Bearer ${caller}` });
      expect(res.status, res.text).to.equal(200);
      const txn = res.headers.get('txn-token')!;
      const jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(txn, jwks, { audience: box.url, typ: 'txntoken+jwt' });
      expect(payload).to.include({ sub: 'frontend', scope: 'trade', req_wl: 'shop' });
      expect(payload.tctx).to.deep.equal({ method: 'post', host: 'shop.example', path: '/charge' });
      // The App's services read it as any Txn-Token: at orders' gate, its policy looks for a BUY, and this is none.
      expect((await gate(box, 'orders', { 'Txn-Token': txn })).status).not.to.equal(200);
    });

    it('a request that already carries a Txn-Token keeps it: no new one', async function () {
      const first = (await fromAlice()).body.access_token as string;
      const res = await gate(box, 'shop', { Authorization: `Bearer ${caller}`, 'Txn-Token': first });
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('txn-token')).to.equal(null);
    });
  });

  describe('lifetime (the box’s clock moved on)', function () {
    it('an expired Txn-Token is not replaced (§13.15), nor taken at a gate', async function () {
      const issued = await fromAlice();
      expect(issued.status, issued.text).to.equal(200);
      const txn = issued.body.access_token as string;
      box.advanceClock(301);
      const late = await ask('orders', { subject_token: txn, subject_token_type: TXN, scope: 'trade' });
      expect(late.status, late.text).to.equal(400);
      expect(late.body.error_description).to.include('the Txn-Token has expired');
      const res = await gate(box, 'orders', { 'Txn-Token': txn });
      expect(res.status, res.text).to.equal(401);
      expect(res.text).to.include('the Txn-Token has expired');
    });
  });
});

/** A forward-auth check at `app`, as Traefik sends it. */
function gate(box: Box, app: string, headers: Record<string, string>) {
  return box.request('GET', `/authz/forward-auth/${app}`, {
    headers: {
      'X-Forwarded-Method': 'POST',
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': `${app}.example`,
      'X-Forwarded-Uri': '/charge',
      ...headers,
    },
  });
}
