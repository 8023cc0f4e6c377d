// Token exchange (RFC 8693) as a client library speaks it (oauth4webapi's generic
// grant), and as an attacker tries it: a three-hop delegation chain (web → orders →
// payments) whose tokens carry nested `act`; a CI job's OIDC token of a trusted
// issuer; every RFC error; exchanges no policy allows, that widen scope or audience,
// or race the close of the token they are made from.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import pg from 'pg';
import type { Transaction } from '../../api/db/pool.js';
import { generateKeyPair, signingKey } from '../../api/credentials/jwt.js';
import { mint } from '../../api/credentials/tokens.js';
import { closeGrants, findById, insertChildSessions, type SessionRow } from '../../api/store/sessions.js';
import { Box, basic } from '../support/box.js';
import {
  ACCESS_TOKEN,
  allowChain,
  allowExchange as allow,
  EXCHANGE,
  exchangingClient,
  introspect as introspecting,
  JWT,
  ORDERS,
  PAYMENTS,
} from '../support/exchange-chain.js';
import { TestIssuer } from '../support/issuer.js';
import { userToken } from '../support/user-token.js';

describe('token exchange (RFC 8693)', function () {
  let box: Box;
  let root: string;
  let issuer: TestIssuer;
  let aliceId: number;
  let as: oauth.AuthorizationServer;
  const secrets: Record<string, string> = {};

  /** A policy linked to `client` that allows the exchanges matching `matcho`. */
  const allowExchange = (id: string, client: string, matcho: Record<string, unknown>): Promise<void> =>
    allow(box, root, id, client, matcho);

  const exchange = async (
    client: string,
    params: Record<string, string>,
    DPoP?: oauth.DPoPHandle,
  ): Promise<oauth.TokenEndpointResponse> => {
    const res = await oauth.genericTokenEndpointRequest(
      as,
      { client_id: client },
      oauth.ClientSecretBasic(secrets[client]!),
      EXCHANGE,
      params,
      { [oauth.allowInsecureRequests]: true, ...(DPoP ? { DPoP } : {}) },
    );
    return oauth.processGenericTokenEndpointResponse(as, { client_id: client }, res);
  };

  const raw = (client: string, params: Record<string, string>) =>
    box.form('/auth/token', { grant_type: EXCHANGE, ...params }, { Authorization: basic(client, secrets[client]!) });

  const ownToken = async (client: string): Promise<string> => {
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(client, secrets[client]!) });
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  };

  const introspect = (token: string): Promise<Record<string, unknown>> => introspecting(box, token);

  before(async function () {
    issuer = await TestIssuer.start();
    // alice's sub is her row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
    box = await Box.start({ env: { BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([issuer.trusted]), BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    root = await box.rootToken();
    for (const id of ['web', 'orders', 'payments', 'stranger']) {
      secrets[id] = (await box.addClient(id, exchangingClient, { policy: false })).secret;
    }
    const alice = await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password' }, root);
    expect(alice.status, alice.text).to.equal(201);
    aliceId = alice.body.id;
    as = await oauth.processDiscoveryResponse(
      new URL(box.url),
      await oauth.discoveryRequest(new URL(box.url), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
    );
    // web may pass its users on to orders, acting itself; orders to payments, for tokens meant for orders.
    await allowChain(box, root);
  });

  after(async function () {
    await box?.stop();
    await issuer?.stop();
  });

  it('advertises the grant in discovery', function () {
    expect(as.grant_types_supported).to.include(EXCHANGE);
  });

  describe('a three-hop delegation chain: web → orders → payments', function () {
    let t1: string;
    let t2: oauth.TokenEndpointResponse;
    let t3: oauth.TokenEndpointResponse;

    before(async function () {
      // The token alice's sign-in gave web, with the scopes she consented to.
      t1 = await scopedUserToken(box, aliceId, 'web', 'orders:read orders:write openid');
    });

    it("web exchanges alice's token for one at orders that says web acts for her", async function () {
      t2 = await exchange('web', {
        subject_token: t1,
        subject_token_type: ACCESS_TOKEN,
        actor_token: await ownToken('web'),
        actor_token_type: ACCESS_TOKEN,
        audience: ORDERS,
        scope: 'orders:read orders:write',
      });
      expect(t2.token_type.toLowerCase()).to.equal('bearer');
      expect(t2.issued_token_type).to.equal(ACCESS_TOKEN);
      expect(t2.scope).to.equal('orders:read orders:write');
      const claims = decodeJwt(t2.access_token);
      expect(claims).to.include({ sub: String(aliceId), client_id: 'web', aud: ORDERS });
      expect(claims.act).to.deep.equal({ sub: 'web', client_id: 'web' });
    });

    it('orders exchanges it for one at payments: act is nested, the most recent actor outermost', async function () {
      t3 = await exchange('orders', {
        subject_token: t2.access_token,
        subject_token_type: ACCESS_TOKEN,
        actor_token: await ownToken('orders'),
        actor_token_type: ACCESS_TOKEN,
        audience: PAYMENTS,
        scope: 'orders:read',
        requested_token_type: JWT,
      });
      expect(t3.issued_token_type).to.equal(JWT);
      const claims = decodeJwt(t3.access_token);
      expect(claims).to.include({ sub: String(aliceId), client_id: 'orders', aud: PAYMENTS, scope: 'orders:read' });
      expect(claims.act).to.deep.equal({ sub: 'orders', client_id: 'orders', act: { sub: 'web', client_id: 'web' } });
      const seen = await introspect(t3.access_token);
      expect(seen).to.include({ active: true, sub: String(aliceId), client_id: 'orders' });
      expect(seen.act).to.deep.equal(claims.act);
    });

    it('a token meant for payments cannot be exchanged by orders again (its policy wants a token for orders)', async function () {
      const res = await raw('orders', {
        subject_token: t3.access_token,
        subject_token_type: ACCESS_TOKEN,
        actor_token: await ownToken('orders'),
        actor_token_type: ACCESS_TOKEN,
        audience: PAYMENTS,
      });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
      expect(res.body.error_description).to.match(/no AccessPolicy linked to client .orders. allows this exchange/);
    });

    it("at payments' gateway, the app's policies see act, and the JWT passed on names the chain", async function () {
      const app = await box.json('PUT', '/App/payments', { urls: [PAYMENTS], upstream: { token: { header: 'X-Jwt' } } }, root);
      expect(app.status, app.text).to.be.oneOf([200, 201]);
      const p = await box.json(
        'PUT',
        '/AccessPolicy/payments-via-orders',
        { app: 'payments', engine: 'matcho', matcho: { act: { client_id: 'orders', act: { client_id: 'web' } } } },
        root,
      );
      expect(p.status, p.text).to.be.oneOf([200, 201]);
      try {
        const ask = (token: string) =>
          box.request('GET', '/authz/http/payments/charge', { headers: { Authorization: `Bearer ${token}`, Host: 'payments.example' } });
        const allowed = await ask(t3.access_token);
        expect(allowed.status, allowed.text).to.equal(200);
        expect(decodeJwt(allowed.headers.get('x-jwt')!)).to.deep.include({
          sub: String(aliceId),
          client_id: 'orders',
          act: { sub: 'orders', client_id: 'orders', act: { sub: 'web', client_id: 'web' } },
        });
        // alice's token for payments straight from web, with nobody acting: not what the policy allows.
        const direct = await scopedUserToken(box, aliceId, 'web', 'orders:read', PAYMENTS);
        expect((await ask(direct)).status).to.equal(403);
      } finally {
        await box.json('DELETE', '/AccessPolicy/payments-via-orders', undefined, root);
        await box.json('DELETE', '/App/payments', undefined, root);
      }
    });

    it("the guide's act example pins iss: a trusted issuer's act naming orders does not pass it", async function () {
      // docs/guides/guard-your-apps.md: only what orders, a client of this box, forwards on a person's behalf.
      const actedForByOrders = { act: { client_id: 'orders', iss: 'nil?' } };
      await box.json('PUT', '/App/payments', { urls: [PAYMENTS] }, root);
      await box.json('PUT', '/AccessPolicy/payments-via-orders', { app: 'payments', engine: 'matcho', matcho: actedForByOrders }, root);
      // A client that may exchange the trusted issuer's tokens for payments, acting for nobody.
      await box.json('PUT', '/Client/ci-pay', { grant_types: [EXCHANGE], audience: [PAYMENTS] }, root);
      await allowExchange('ci-pay-jobs', 'ci-pay', { exchange: { delegation: false, subject: { kind: 'jwt', iss: issuer.url } } });
      try {
        const ask = (token: string) =>
          box.request('GET', '/authz/http/payments/charge', { headers: { Authorization: `Bearer ${token}`, Host: 'payments.example' } });
        expect((await ask(t3.access_token)).status).to.equal(200);
        // The issuer's token says orders acted before (with or without claiming this box's iss for it).
        for (const act of [
          { sub: 'orders', client_id: 'orders' },
          { sub: 'orders', client_id: 'orders', iss: box.url },
        ]) {
          const foreign = await issuer.token(box.url, 'x', 'y', { sub: 'job-7', act, 'kubernetes.io': undefined });
          const exchanged = await box.form('/auth/token', {
            grant_type: EXCHANGE,
            client_id: 'ci-pay',
            subject_token: foreign,
            subject_token_type: JWT,
            audience: PAYMENTS,
          });
          expect(exchanged.status, exchanged.text).to.equal(200);
          const res = await ask(exchanged.body.access_token);
          expect(res.status, `${JSON.stringify(act)}: ${res.text}`).to.equal(403);
        }
      } finally {
        await box.json('DELETE', '/AccessPolicy/ci-pay-jobs', undefined, root);
        await box.json('DELETE', '/Client/ci-pay', undefined, root);
        await box.json('DELETE', '/AccessPolicy/payments-via-orders', undefined, root);
        await box.json('DELETE', '/App/payments', undefined, root);
      }
    });

    it("a trusted issuer's sub that is a box person's names nobody at the gate: X-Auth-Request-User stays empty", async function () {
      // The gate names a person by their token's sub (api/decision/engine.ts upstreamHeaders): an
      // exchanged token of another issuer's subject is nobody's here, whatever its sub looks like.
      await box.json('PUT', '/App/payments', { urls: [PAYMENTS], upstream: { token: { header: 'X-Jwt' } } }, root);
      await box.json(
        'PUT',
        '/AccessPolicy/payments-gets',
        { app: 'payments', engine: 'matcho', matcho: { 'request-method': 'get' } },
        root,
      );
      await box.json('PUT', '/Client/ci-pay', { grant_types: [EXCHANGE], audience: [PAYMENTS] }, root);
      await allowExchange('ci-pay-jobs', 'ci-pay', { exchange: { delegation: false, subject: { kind: 'jwt', iss: issuer.url } } });
      try {
        const foreign = await issuer.token(box.url, 'x', 'y', { sub: String(aliceId), 'kubernetes.io': undefined });
        const exchanged = await box.form('/auth/token', {
          grant_type: EXCHANGE,
          client_id: 'ci-pay',
          subject_token: foreign,
          subject_token_type: JWT,
          audience: PAYMENTS,
        });
        expect(exchanged.status, exchanged.text).to.equal(200);
        const res = await box.request('GET', '/authz/http/payments/charge', {
          headers: { Authorization: `Bearer ${exchanged.body.access_token as string}`, Host: 'payments.example' },
        });
        expect(res.status, res.text).to.equal(200);
        expect(res.headers.get('x-auth-request-user')).to.equal('');
        expect(res.headers.get('x-auth-request-email')).to.equal('');
        // The token passed on says whose sub it is.
        expect(decodeJwt(res.headers.get('x-jwt')!).sub_id).to.deep.equal({ format: 'iss_sub', iss: issuer.url, sub: String(aliceId) });
      } finally {
        await box.json('DELETE', '/AccessPolicy/ci-pay-jobs', undefined, root);
        await box.json('DELETE', '/Client/ci-pay', undefined, root);
        await box.json('DELETE', '/AccessPolicy/payments-gets', undefined, root);
        await box.json('DELETE', '/App/payments', undefined, root);
      }
    });

    it("closing alice's first token closes the whole chain", async function () {
      expect((await introspect(t3.access_token)).active).to.equal(true);
      const session = (await introspect(t1)).jti as string;
      const del = await box.json('DELETE', `/Session/${session}`, undefined, root);
      expect(del.status, del.text).to.be.oneOf([200, 204]);
      expect((await introspect(t2.access_token)).active).to.equal(false);
      expect((await introspect(t3.access_token)).active).to.equal(false);
    });
  });

  it('deleting the client a token was issued to closes what other clients exchanged from it', async function () {
    secrets.kiosk = (await box.addClient('kiosk', exchangingClient, { policy: false })).secret;
    await allowExchange('orders-from-kiosk', 'orders', { exchange: { subject: { client_id: 'kiosk' } } });
    try {
      const fromKiosk = await scopedUserToken(box, aliceId, 'kiosk', 'orders:read', ORDERS);
      const exchanged = await exchange('orders', { subject_token: fromKiosk, subject_token_type: ACCESS_TOKEN, audience: PAYMENTS });
      expect((await introspect(exchanged.access_token)).active).to.equal(true);
      expect((await box.json('DELETE', '/Client/kiosk', undefined, root)).status).to.be.oneOf([200, 204]);
      expect((await introspect(exchanged.access_token)).active).to.equal(false);
    } finally {
      await box.json('DELETE', '/AccessPolicy/orders-from-kiosk', undefined, root);
    }
  });

  it("a client's token exchanged by a mightier client acts on the box's API within what both were granted", async function () {
    // keeper may do anything on the API; intern nothing. keeper exchanges intern's token for one for the API.
    secrets.keeper = (await box.addClient('keeper', exchangingClient)).secret; // with an allow policy
    secrets.intern = (await box.addClient('intern', exchangingClient, { policy: false })).secret;
    try {
      const res = await raw('keeper', { subject_token: await ownToken('intern'), subject_token_type: ACCESS_TOKEN });
      expect(res.status, res.text).to.equal(200);
      expect(decodeJwt(res.body.access_token)).to.include({ sub: 'intern', client_id: 'keeper' });
      const api = await box.json('GET', '/Client', undefined, res.body.access_token);
      expect(api.status, api.text).to.equal(403);
      expect(api.body.error_description).to.match(/for client .intern., whose token client .keeper. exchanged/);
      expect((await box.json('GET', '/Client', undefined, await ownToken('keeper'))).status).to.equal(200);
    } finally {
      for (const id of ['keeper', 'intern']) await box.json('DELETE', `/Client/${id}`, undefined, root);
      await box.json('DELETE', '/AccessPolicy/keeper-allow', undefined, root);
    }
  });

  it('a DPoP-bound token is exchanged only with a proof of its key, for a token bound to the same key', async function () {
    await allowExchange('web-own', 'web', { exchange: { delegation: false, subject: { client_id: 'web' } } });
    try {
      const DPoP = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
      const issued = await oauth.clientCredentialsGrantRequest(
        as,
        { client_id: 'web' },
        oauth.ClientSecretBasic(secrets.web!),
        new URLSearchParams(),
        { DPoP, [oauth.allowInsecureRequests]: true },
      );
      const bound = await oauth.processClientCredentialsResponse(as, { client_id: 'web' }, issued);
      expect(bound.token_type).to.equal('dpop');
      const params = { subject_token: bound.access_token, subject_token_type: ACCESS_TOKEN, audience: ORDERS };
      // A thief with the token and no key gets nothing, nor with a key of their own.
      const stolen = await raw('web', params);
      expect(stolen.status).to.equal(400);
      expect(stolen.body.error_description).to.match(/bound to a DPoP key/);
      const otherKey = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
      let refused: unknown;
      await exchange('web', params, otherKey).catch((err: unknown) => (refused = err));
      expect(refused).to.be.instanceOf(oauth.ResponseBodyError);
      expect((refused as oauth.ResponseBodyError).error).to.equal('invalid_request');
      // Its holder exchanges it, and the new token is bound to the same key.
      const exchanged = await exchange('web', params, DPoP);
      expect(exchanged.token_type).to.equal('dpop');
      expect((decodeJwt(exchanged.access_token).cnf as { jkt: string }).jkt).to.equal(
        (decodeJwt(bound.access_token).cnf as { jkt: string }).jkt,
      );
    } finally {
      await box.json('DELETE', '/AccessPolicy/web-own', undefined, root);
    }
  });

  describe('what an exchange may not do', function () {
    let subject: string;
    let actor: string;
    before(async function () {
      subject = await scopedUserToken(box, aliceId, 'web', 'orders:read');
      actor = await ownToken('web');
    });
    /** web, acting itself, exchanging `subject_token` (alice's, by default). */
    const asWeb = (params: Record<string, string>) =>
      raw('web', {
        subject_token: subject,
        subject_token_type: ACCESS_TOKEN,
        actor_token: actor,
        actor_token_type: ACCESS_TOKEN,
        ...params,
      });

    it("widen the scope beyond the subject token's: invalid_scope", async function () {
      const res = await asWeb({ audience: ORDERS, scope: 'orders:read orders:write' });
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ error: 'invalid_scope' });
      expect(res.body.error_description).to.match(/orders:write. is not in the subject token's scope/);
    });

    it("ask for an audience beyond the client's list: invalid_target", async function () {
      const res = await asWeb({ audience: 'https://admin.example' });
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ error: 'invalid_target' });
    });

    it('ask for an audience its policy does not allow: refused, nothing issued', async function () {
      const res = await asWeb({ audience: PAYMENTS });
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ error: 'invalid_request' });
    });

    it("turn a token for a service into one for the box's API: without an audience the subject's stays", async function () {
      await allowExchange('web-narrow', 'web', { exchange: { subject: { client_id: 'web' } } });
      try {
        const forOrders = await scopedUserToken(box, aliceId, 'web', 'orders:read', ORDERS);
        const res = await asWeb({ subject_token: forOrders });
        expect(res.status, res.text).to.equal(200);
        expect(decodeJwt(res.body.access_token).aud).to.equal(ORDERS);
        const api = await box.json('GET', '/Client', undefined, res.body.access_token);
        expect(api.status).to.equal(401);
      } finally {
        await box.json('DELETE', '/AccessPolicy/web-narrow', undefined, root);
      }
    });

    it('impersonate (no actor_token) where no policy allows it', async function () {
      const res = await raw('web', { subject_token: subject, subject_token_type: ACCESS_TOKEN, audience: ORDERS });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
      expect(res.body.error_description).to.match(/impersonation/);
    });

    it('exchange anything when the client has no policy, even with the grant listed', async function () {
      const res = await raw('stranger', { subject_token: subject, subject_token_type: ACCESS_TOKEN, audience: ORDERS });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
    });

    it('a global policy (no link) never allows an exchange', async function () {
      const p = await box.json('PUT', '/AccessPolicy/everyone', { engine: 'allow' }, root);
      expect(p.status, p.text).to.be.oneOf([200, 201]);
      try {
        const res = await raw('stranger', { subject_token: subject, subject_token_type: ACCESS_TOKEN, audience: ORDERS });
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
      } finally {
        await box.json('DELETE', '/AccessPolicy/everyone', undefined, root);
      }
    });

    it('use a client that does not list the grant: unauthorized_client', async function () {
      const res = await box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS_TOKEN },
        { Authorization: basic('root', box.rootSecret) },
      );
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('unauthorized_client');
    });
  });

  describe("the RFC's errors", function () {
    let subject: string;
    before(async function () {
      subject = await scopedUserToken(box, aliceId, 'web', 'orders:read');
    });
    const cases: [string, () => Record<string, string>, string, RegExp][] = [
      ['no subject_token', () => ({ subject_token_type: ACCESS_TOKEN }), 'invalid_request', /subject_token is required/],
      ['no subject_token_type', () => ({ subject_token: subject }), 'invalid_request', /subject_token_type is required/],
      [
        'a subject_token_type not taken',
        () => ({ subject_token: subject, subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }),
        'invalid_request',
        /saml2/,
      ],
      [
        'an unknown subject token',
        () => ({ subject_token: 'not-a-token', subject_token_type: ACCESS_TOKEN }),
        'invalid_request',
        /subject_token is not usable/,
      ],
      [
        'actor_token without its type',
        () => ({ subject_token: subject, subject_token_type: ACCESS_TOKEN, actor_token: subject }),
        'invalid_request',
        /actor_token_type is required/,
      ],
      [
        'actor_token_type without a token',
        () => ({ subject_token: subject, subject_token_type: ACCESS_TOKEN, actor_token_type: ACCESS_TOKEN }),
        'invalid_request',
        /without actor_token/,
      ],
      [
        'a requested_token_type not issued',
        () => ({
          subject_token: subject,
          subject_token_type: ACCESS_TOKEN,
          requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token',
        }),
        'invalid_request',
        /requested_token_type/,
      ],
      [
        'an unknown actor token',
        () => ({ subject_token: subject, subject_token_type: ACCESS_TOKEN, actor_token: 'x.y.z', actor_token_type: JWT }),
        'invalid_request',
        /actor_token is not usable/,
      ],
      [
        'two different targets',
        () => ({ subject_token: subject, subject_token_type: ACCESS_TOKEN, audience: ORDERS, resource: PAYMENTS }),
        'invalid_target',
        /one target/,
      ],
      [
        'an ID token of this box as subject',
        () => ({ subject_token: subject, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
        'invalid_request',
        /ID token of this box/,
      ],
    ];
    for (const [name, params, error, description] of cases) {
      it(`${name}: ${error}`, async function () {
        const res = await raw('web', params());
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal(error);
        expect(res.body.error_description).to.match(description);
      });
    }

    it('no client authentication for a confidential client: invalid_client', async function () {
      const res = await box.form('/auth/token', {
        grant_type: EXCHANGE,
        client_id: 'web',
        subject_token: subject,
        subject_token_type: ACCESS_TOKEN,
      });
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
    });
  });

  describe('resource: an absolute URI without a fragment (RFC 8693 §2.1, RFC 8707 §2)', function () {
    // A client without an audience list, which any exchange of its own tokens is allowed: only the
    // shape of `resource` stands between such a request and a token.
    before(async function () {
      const { audience: _list, ...anyAudience } = exchangingClient;
      secrets.anywhere = (await box.addClient('anywhere', anyAudience, { policy: false })).secret;
      await allowExchange('anywhere-any', 'anywhere', { exchange: { subject: { client_id: 'anywhere' } } });
    });

    for (const resource of [
      'orders',
      '/orders',
      '//orders.example',
      'https://orders.example#top',
      'https://orders.example/#',
      'https://orders .example',
    ]) {
      it(`${JSON.stringify(resource)}: 400 invalid_target, nothing issued`, async function () {
        const res = await raw('anywhere', { subject_token: await ownToken('anywhere'), subject_token_type: ACCESS_TOKEN, resource });
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_target');
        expect(res.body.error_description).to.match(/resource must (be an absolute URI|not have a fragment)/);
        expect(res.body.access_token).to.equal(undefined);
      });
    }

    it('an absolute URI that is no registered resource: 400 invalid_target, nothing issued', async function () {
      const res = await raw('anywhere', {
        subject_token: await ownToken('anywhere'),
        subject_token_type: ACCESS_TOKEN,
        resource: 'https://unregistered.example/api',
      });
      expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_target']);
      expect(res.body.error_description).to.match(/not a registered resource/);
    });

    it('an absolute URI, with a query (RFC 8707: "SHOULD NOT", not "MUST NOT") or a URN, an App\'s audience: the audience of the new token', async function () {
      const root = await box.rootToken();
      for (const [app, audience] of [
        ['orders-api', 'https://orders.example/api?tenant=7'],
        ['orders-urn', 'urn:example:orders'],
      ] as const) {
        const put = await box.json('PUT', `/App/${app}`, { urls: [`https://${app}.example`], audience }, root);
        expect(put.status, put.text).to.equal(201);
      }
      for (const resource of ['https://orders.example/api?tenant=7', 'urn:example:orders']) {
        const res = await raw('anywhere', { subject_token: await ownToken('anywhere'), subject_token_type: ACCESS_TOKEN, resource });
        expect(res.status, res.text).to.equal(200);
        expect(decodeJwt(res.body.access_token as string).aud).to.equal(resource);
      }
    });
  });

  it("a ServiceAccount's token, as actor: a pod acts for a person, and the policy names the ServiceAccount", async function () {
    await allowExchange('orders-pod', 'orders', {
      exchange: { delegation: true, actor: { kind: 'serviceaccount', iss: issuer.url, namespace: 'shop', serviceAccount: 'orders' } },
    });
    try {
      const subject = await scopedUserToken(box, aliceId, 'orders', 'orders:read');
      const asActor = async (namespace: string, name: string) =>
        raw('orders', {
          subject_token: subject,
          subject_token_type: ACCESS_TOKEN,
          actor_token: await issuer.token(box.url, namespace, name),
          actor_token_type: JWT,
          audience: PAYMENTS,
        });
      const res = await asActor('shop', 'orders');
      expect(res.status, res.text).to.equal(200);
      expect(decodeJwt(res.body.access_token).act).to.deep.equal({ sub: 'system:serviceaccount:shop:orders', iss: issuer.url });
      // Another ServiceAccount (another namespace, the same name) is not the one the policy names.
      expect((await asActor('evil', 'orders')).status).to.equal(400);
    } finally {
      await box.json('DELETE', '/AccessPolicy/orders-pod', undefined, root);
    }
  });

  describe('a CI job exchanging its OIDC token (a trusted issuer)', function () {
    const ciToken = (claims: Record<string, unknown>, audience = box.url) =>
      issuer.token(audience, 'x', 'y', {
        sub: 'repo:acme/shop:ref:refs/heads/main',
        repository: 'acme/shop',
        ref: 'refs/heads/main',
        'kubernetes.io': undefined,
        ...claims,
      });

    before(async function () {
      // A public client: the CI job has no secret, only its OIDC token; the policy decides which jobs pass.
      const res = await box.json('PUT', '/Client/deployer', { grant_types: [EXCHANGE], scope: ['deploy'], audience: [ORDERS] }, root);
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      await allowExchange('deployer-main', 'deployer', {
        exchange: {
          delegation: false,
          subject: { kind: 'jwt', iss: issuer.url, claims: { repository: 'acme/shop', ref: 'refs/heads/main' } },
        },
      });
    });

    const ask = (subjectToken: string, extra: Record<string, string> = {}) =>
      box.form('/auth/token', {
        grant_type: EXCHANGE,
        client_id: 'deployer',
        subject_token: subjectToken,
        subject_token_type: JWT,
        scope: 'deploy',
        ...extra,
      });

    it('the main branch of acme/shop gets a deploy token that names the job', async function () {
      const res = await ask(await ciToken({}), { audience: ORDERS });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ issued_token_type: ACCESS_TOKEN, scope: 'deploy' });
      const seen = await introspect(res.body.access_token);
      expect(seen).to.include({ active: true, client_id: 'deployer', sub: 'repo:acme/shop:ref:refs/heads/main', aud: ORDERS });
      expect(seen.sub_id).to.deep.equal({ format: 'iss_sub', iss: issuer.url, sub: 'repo:acme/shop:ref:refs/heads/main' });
      // It lives no longer than the CI token it came from (10 minutes).
      expect(seen.exp).to.be.at.most(Math.floor(Date.now() / 1000) + 600);
    });

    it('another branch, another repository, or a token for another audience is refused', async function () {
      for (const token of [
        await ciToken({ ref: 'refs/heads/feature', sub: 'repo:acme/shop:ref:refs/heads/feature' }),
        await ciToken({ repository: 'evil/shop' }),
        await ciToken({}, 'https://someone-else.example'),
      ]) {
        const res = await ask(token);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
      }
    });

    it("an untrusted issuer's token is refused", async function () {
      const other = await TestIssuer.start();
      try {
        const res = await ask(
          await other.token(box.url, 'x', 'y', {
            sub: 'repo:acme/shop:ref:refs/heads/main',
            repository: 'acme/shop',
            ref: 'refs/heads/main',
          }),
        );
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
        expect(res.body.error_description).to.match(/not trusted/);
      } finally {
        await other.stop();
      }
    });
  });

  describe('an exchange racing the close of its subject: closing and using never both win', function () {
    // The store's part, with the two transactions interleaved by hand: a close
    // whose UPDATE ran but has not committed, and the insert of an exchanged token.
    let closer: pg.Client;
    let exchanger: pg.Client;
    beforeEach(async function () {
      closer = new pg.Client({ connectionString: box.databaseUrl });
      exchanger = new pg.Client({ connectionString: box.databaseUrl });
      await Promise.all([closer.connect(), exchanger.connect()]);
    });
    afterEach(async function () {
      await Promise.all([closer.end(), exchanger.end()]);
    });

    const tx = (c: pg.Client) => c as unknown as Transaction;
    const childOf = async (): Promise<{ parent: SessionRow; child: SessionRow }> => {
      const token = await scopedUserToken(box, aliceId, 'web', 'orders:read');
      const parent = (await findById(closer, (await introspect(token)).jti as string))!;
      const client = { resourceType: 'Client' as const, id: 'orders', grant_types: [EXCHANGE] as never };
      const { session: child } = mint(
        { type: EXCHANGE, origin: 'token_exchange', client, settings: {}, refresh: false, parent },
        box.url,
        testKey,
      );
      return { parent, child };
    };

    it('the close goes first: the exchange waits, finds the parent closed, inserts nothing', async function () {
      const { parent, child } = await childOf();
      await closer.query('BEGIN');
      await closeGrants(tx(closer), { tree: parent.id });
      await exchanger.query('BEGIN');
      const inserting = insertChildSessions(tx(exchanger), [child]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await closer.query('COMMIT');
      expect([...(await inserting)]).to.deep.equal([]);
      await exchanger.query('COMMIT');
      expect(await findById(closer, child.id)).to.equal(undefined);
    });

    it('the exchange goes first: the close waits for it and closes the new token too', async function () {
      const { parent, child } = await childOf();
      await exchanger.query('BEGIN');
      expect([...(await insertChildSessions(tx(exchanger), [child]))]).to.deep.equal([child.id]);
      await closer.query('BEGIN');
      const closing = closeGrants(tx(closer), { tree: parent.id });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await exchanger.query('COMMIT');
      expect((await closing).map((s) => s.id)).to.have.members([parent.id, child.id]);
      await closer.query('COMMIT');
      expect((await findById(exchanger, child.id))!.active).to.equal(false);
    });

    it("a child that names another grant than its parent's is not inserted: the lock taken is always the parent's", async function () {
      // The statement locks the grants the new rows name; a row naming another would slip past a close of its parent's.
      const { parent, child } = await childOf();
      const { parent: other } = await childOf();
      expect([...(await insertChildSessions(tx(exchanger), [{ ...child, family: other.family }]))]).to.deep.equal([]);
      expect(await findById(exchanger, child.id)).to.equal(undefined);
      expect([...(await insertChildSessions(tx(exchanger), [child]))]).to.deep.equal([child.id]);
      expect((await findById(exchanger, child.id))!.parent).to.equal(parent.id);
    });
  });
});

const testKey = await (async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return signingKey('unused', 'ES256', privateKey, publicKey);
})();

/** A token alice's sign-in at `client` gave it, with `scope` (and an audience), minted into the box's database. */
async function scopedUserToken(box: Box, userId: number, client: string, scope: string, audience?: string): Promise<string> {
  return userToken(box, userId, client, audience, scope);
}
