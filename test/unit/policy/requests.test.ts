// The request objects policies test, one per kind of question (api/policy/requests.ts), as
// their builders make them: what a policy author reads in the docs is what a policy sees.
// The engines' entry takes each kind by its type: the @ts-expect-error lines below stop
// compiling if a request of one kind could be handed to the question of another.
import { expect } from 'chai';
import type { Request } from '../../../api/http/router.js';
import { appRequest, NOBODY, type Caller } from '../../../api/decision/request.js';
import { policyRequest, type Principal } from '../../../api/http/auth.js';
import { exchangeRequest } from '../../../api/oauth/grants/token-exchange.js';
import { introspectionRequest } from '../../../api/oauth/introspection.js';
import { PolicyIndex, type AppQuestion, type Policies } from '../../../api/policy/evaluate.js';
import type { AppRequest, AuthzenRequest, BoxApiRequest, ExchangeRequest } from '../../../api/policy/requests.js';
import type { App, Client } from '../../../api/types.js';

const client = { resourceType: 'Client', id: 'ci', grant_types: ['client_credentials'], scope: ['read'] } as Client;
const person = {
  id: '7',
  subject: '5f0c2b7e-1d3a-4e59-8b6c-2a9d4f1e7c30',
  email: 'ada@example.com',
  emailVerified: true,
  groups: [{ id: 'g1', name: 'admins' }],
  data: { team: 'blue' },
  scim: { userName: 'ada@example.com', externalId: 'E7', active: true },
  identities: [{ provider: 'corp', subject: 'ada-1' }],
};

/** The person as an App's policies see them: what the App's tokens carry, and the claims it shapes (none here). */
const ADA_AT_APP = { id: '7', email: 'ada@example.com', email_verified: true, groups: ['admins'], claims: {} };

/** The person as the box's own request objects show them: the box's fields, their data, SCIM attributes and upstream identities. */
const ADA = {
  id: '7',
  email: 'ada@example.com',
  email_verified: true,
  groups: ['admins'],
  data: { team: 'blue' },
  scim: { userName: 'ada@example.com', externalId: 'E7', active: true },
  identities: [{ provider: 'corp', subject: 'ada-1' }],
};

describe('request objects: the box API', function () {
  const principal = { client: { resource: client }, user: person, session: { scope: 'read write' } } as unknown as Principal;
  const request = (change: Record<string, unknown>): Request =>
    ({
      method: 'PUT',
      path: '/users/7',
      route: { path: '/users/:id' },
      params: { id: '7' },
      query: {},
      body: undefined,
      ...change,
    }) as unknown as Request;

  it("the route's type and id, the query without credentials, the client, the person and the token's scope", function () {
    const r = policyRequest(request({ query: { q: 'x', tag: ['a', 'b'], access_token: 'secret' } }), principal);
    expect(r).to.deep.equal({
      'request-method': 'put',
      uri: '/users/7',
      params: { q: 'x', tag: ['a', 'b'], 'resource/type': 'users', 'resource/id': '7' },
      'query-string': 'q=x&tag=a&tag=b',
      client: { ...client },
      user: ADA,
      scope: 'read write',
    });
  });

  it('a write carries its record, each secret written as true (never its value); a route without :id names no id', function () {
    const r = policyRequest(
      request({
        method: 'POST',
        path: '/users',
        route: { path: '/users' },
        params: {},
        body: { email: 'b@example.com', password: 'p', secret: 's' },
      }),
      principal,
    );
    expect(r.params).to.deep.equal({ 'resource/type': 'users' });
    expect(r.body).to.deep.equal({ email: 'b@example.com', password: true, secret: true });
  });

  it("a query parameter named like the route's is refused", function () {
    expect(() => policyRequest(request({ query: { 'resource/id': '8' } }), principal)).to.throw(/names with "\/"/);
  });

  it("introspecting another client's token: the owner as a parameter, nobody's person or scope", function () {
    expect(introspectionRequest(client, 'web')).to.deep.equal({
      'request-method': 'post',
      uri: '/auth/introspect',
      params: { 'token/client': 'web' },
      'query-string': '',
      client: { ...client },
      user: null,
      scope: null,
    });
  });
});

describe('request objects: an app', function () {
  const app = { resourceType: 'App', id: 'orders', urls: ['https://orders.example'], policyHeaders: ['x-tenant', 'x-absent'] } as App;
  const nobodyAsks = { clientId: null, user: null, signedInAtLeast: () => false, carries: () => true };
  /** The request object `app`'s policies see of `q`: the one decideApp makes, the person as the App may see them. */
  const seen = (q: AppQuestion, of: App = app) =>
    new PolicyIndex([], (id) => {
      throw new Error(id);
    }).decideApp(of, nobodyAsks, q).request;

  it('the request as its gateway read it, lower case; only the headers the app names; nobody', function () {
    const r = seen(
      appRequest(app, { method: 'GET', host: 'Orders.Example', path: '/a', query: { x: '1' } }, { 'x-tenant': 't1', cookie: 'c' }, NOBODY),
    );
    expect(r).to.deep.equal({
      app: 'orders',
      'request-method': 'get',
      host: 'orders.example',
      path: '/a',
      query: { x: '1' },
      headers: { 'x-tenant': 't1' },
      user: null,
      client: null,
      scope: null,
      audience: null,
      subject: null,
      act: null,
      amr: null,
      acr: null,
      jsonrpc: null,
      txn: null,
    });
  });

  it("a JSON-RPC body's call: its envelope only, never its id", function () {
    const call = { method: 'tools/call', tool: 'search', id: '7' };
    const r = appRequest(app, { method: 'POST', host: 'orders.example', path: '/mcp', query: {} }, {}, NOBODY, call).request;
    expect(r.jsonrpc).to.deep.equal({ method: 'tools/call', tool: 'search' });
  });

  it('the caller as the checked credential says, the session and sign-in time left out', function () {
    const caller: Caller = {
      user: person,
      client: 'web',
      scope: 'openid',
      audience: 'https://orders.example',
      session: 's1',
      subject: { iss: 'https://box.example', sub: '7' },
      act: { sub: 'svc' },
      amr: ['pwd', 'hwk', 'user', 'mfa'],
      acr: 'phr',
      authTime: 1_700_000_000,
    };
    const r = seen(appRequest(app, { method: 'post', host: 'orders.example', path: '/', query: {} }, {}, caller));
    expect(r).to.deep.include({
      user: ADA_AT_APP,
      client: 'web',
      scope: 'openid',
      audience: 'https://orders.example',
      subject: { iss: 'https://box.example', sub: '7' },
      act: { sub: 'svc' },
      amr: ['pwd', 'hwk', 'user', 'mfa'],
      acr: 'phr',
    });
    expect(r).to.not.have.property('session');
    expect(r).to.not.have.property('authTime');
  });

  it("the person as the App may see them: its token's claims and the claims it shapes, never data, SCIM or identities", function () {
    const caller: Caller = { ...NOBODY, user: person, client: 'web', scope: 'openid orders' };
    const shaping = {
      ...app,
      claims: { team: 'user.data.team', employee: 'user.scim.externalId', via: 'grant.client + " " + grant.scope[1]' },
    };
    const r = seen(appRequest(shaping, { method: 'get', host: 'orders.example', path: '/', query: {} }, {}, caller), shaping);
    expect(r.user).to.deep.equal({ ...ADA_AT_APP, claims: { team: 'blue', employee: 'E7', via: 'web orders' } });
    // The raw person travels with the question only, to be shaped: never in the request object.
    expect(JSON.stringify(r)).not.to.include('ada-1');
  });
});

describe('request objects: a token exchange', function () {
  const subject = { kind: 'box' as const, iss: 'https://box.example', sub: '7', aud: null, scope: 'read' };

  it('the token endpoint as the box API sees it, nobody as the person, and the exchange', function () {
    const r = exchangeRequest(client, {
      subject,
      actor: null,
      audience: 'https://api.example',
      scope: 'read',
      requestedType: 'urn:ietf:params:oauth:token-type:access_token',
      act: undefined,
    });
    expect(r).to.deep.equal({
      'request-method': 'post',
      uri: '/auth/token',
      params: { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange' },
      'query-string': '',
      client: { ...client },
      user: null,
      scope: 'read',
      exchange: {
        subject,
        actor: null,
        delegation: false,
        audience: 'https://api.example',
        scope: ['read'],
        requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      },
    });
  });

  it('with an actor: a delegation, and the act the new token would carry', function () {
    const actor = { ...subject, sub: 'svc' };
    const r = exchangeRequest(client, { subject, actor, audience: null, scope: null, requestedType: 'jwt', act: { sub: 'svc' } });
    expect(r.exchange).to.deep.include({ actor, delegation: true, scope: [], act: { sub: 'svc' } });
  });
});

describe('request objects: each kind only where it is asked', function () {
  it('the engines refuse, at compile time, a request of another kind', function () {
    // Never run: what matters is that it compiles, with each @ts-expect-error needed.
    const typeChecked = (
      policies: Policies,
      box: BoxApiRequest,
      app: AppRequest,
      authzen: AuthzenRequest,
      exchange: ExchangeRequest,
    ): void => {
      const subject = { clientId: 'ci', user: null };
      const atApp = { ...subject, signedInAtLeast: () => false, carries: () => true };
      void policies.decide(subject, box);
      void policies.decideApp({ id: 'orders' }, atApp, { request: app, person: null });
      void policies.decideApp({ id: 'orders' }, atApp, { request: authzen, person: null });
      void policies.decideExchange('ci', exchange);
      // @ts-expect-error an exchange is not a request on the box's API
      void policies.decide(subject, exchange);
      // @ts-expect-error an app's request is not a request on the box's API
      void policies.decide(subject, app);
      // @ts-expect-error a request on the box's API is not an exchange
      void policies.decideExchange('ci', box);
      // @ts-expect-error a request on the box's API is not an app's
      void policies.decideApp({ id: 'orders' }, atApp, { request: box, person: null });
      // @ts-expect-error an exchange is not an app's request
      void policies.decideApp({ id: 'orders' }, atApp, { request: exchange, person: null });
    };
    expect(typeChecked).to.be.a('function');
  });
});
