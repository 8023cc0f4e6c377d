// The CEL environments (api/policy/cel/shapes.ts) against the request objects as their builders
// make them (api/policy/requests.ts): every field of every sample is one the shape declares, with
// its CEL type, so the shapes cannot drift from the types policies see.
import { expect } from 'chai';
import type { Request } from '../../../../api/http/router.js';
import { appRequest, type Caller } from '../../../../api/decision/request.js';
import { policyRequest, type Principal } from '../../../../api/http/auth.js';
import { BODY_LIMIT_BYTES } from '../../../../api/http/request-body.js';
import { INPUT_LIMITS } from '../../../../api/input.js';
import { exchangeRequest } from '../../../../api/oauth/grants/token-exchange.js';
import { introspectionRequest } from '../../../../api/oauth/introspection.js';
import { registrationRequest } from '../../../../api/oauth/agents.js';
import { CEL_ENVIRONMENTS, SIZES, type CelShape } from '../../../../api/policy/cel/index.js';
import { isObjectShape } from '../../../../api/policy/cel/shapes.js';
import { PolicyIndex } from '../../../../api/policy/evaluate.js';
import type { App, Client } from '../../../../api/types.js';

/** Where `value` does not fit `shape` (null fits any field: a field the request has no value for). */
function misfits(value: unknown, shape: CelShape, at: string): string[] {
  if (value === null || value === undefined || shape === 'dyn') return [];
  if (shape === 'string') return typeof value === 'string' ? [] : [`${at} is not a string`];
  if (shape === 'bool') return typeof value === 'boolean' ? [] : [`${at} is not a bool`];
  if (shape === 'int' || shape === 'double') return typeof value === 'number' ? [] : [`${at} is not a number`];
  if (isObjectShape(shape)) {
    if (typeof value !== 'object' || Array.isArray(value)) return [`${at} is not an object`];
    return Object.entries(value).flatMap(([k, v]) => {
      const declared = Object.hasOwn(shape.fields, k) ? shape.fields[k] : shape.rest;
      return declared ? misfits(v, declared, `${at}.${k}`) : [`${at}.${k} is not declared`];
    });
  }
  if ('list' in shape)
    return Array.isArray(value) ? value.flatMap((v, i) => misfits(v, shape.list, `${at}[${i}]`)) : [`${at} is not a list`];
  return typeof value === 'object' && !Array.isArray(value)
    ? Object.entries(value).flatMap(([k, v]) => misfits(v, shape.map, `${at}[${k}]`))
    : [`${at} is not a map`];
}

const client = { resourceType: 'Client', id: 'ci', grant_types: ['client_credentials'], scope: ['read'] } as Client;
const person = {
  id: '7',
  subject: '5f0c2b7e-1d3a-4e59-8b6c-2a9d4f1e7c30',
  email: 'ada@example.com',
  emailVerified: true,
  groups: [{ id: 'g1', name: 'admins' }],
  data: { team: 'blue' },
  scim: { externalId: 'x1', name: { givenName: 'Ada' } },
  identities: [{ provider: 'corp', subject: '42' }],
};
const caller: Caller = {
  user: person,
  client: 'web',
  scope: 'openid',
  audience: 'https://orders.example',
  session: 's1',
  subject: { iss: 'https://box.example', sub: '7' },
  act: { sub: 'svc', act: { sub: 'first' } },
  amr: ['pwd', 'mfa'],
  acr: 'phr',
  authTime: 1_700_000_000,
};
const app = { resourceType: 'App', id: 'orders', urls: ['https://orders.example'], policyHeaders: ['x-tenant'] } as App;

describe('CEL environments: the shapes of the request objects', function () {
  it('a box API request, with a body, and introspection', function () {
    const principal = { client: { resource: client }, user: person, session: { scope: 'read write' } } as unknown as Principal;
    const req = {
      method: 'PUT',
      path: '/users/7',
      route: { path: '/users/:id' },
      params: { id: '7' },
      query: { q: 'x', tag: ['a', 'b'] },
      body: { email: 'x@example.com', data: { a: [1, 2] } },
    } as unknown as Request;
    expect(misfits(policyRequest(req, principal), CEL_ENVIRONMENTS['box-api'], 'request')).to.deep.equal([]);
    expect(misfits(introspectionRequest(client, 'web'), CEL_ENVIRONMENTS['box-api'], 'request')).to.deep.equal([]);
  });

  it("an agent's client to admit (a metadata document's, a dynamic registration's), in the box API environment", function () {
    const agent = {
      resourceType: 'Client',
      id: 'https://agent.example/client.json',
      grant_types: ['authorization_code', 'refresh_token'],
      auth: { authorization_code: { redirect_uris: ['http://127.0.0.1/callback'] } },
      registration: { kind: 'metadata-document', client_name: 'Agent' },
    } as Client;
    const request = registrationRequest(agent, { scope: 'openid tools', resource: ['https://mcp.example/'], uri: '/auth/authorize' });
    expect(request?.registration).to.deep.include({ host: 'agent.example', scope: ['openid', 'tools'], client_name: 'Agent' });
    expect(misfits(request, CEL_ENVIRONMENTS['box-api'], 'request')).to.deep.equal([]);
  });

  it('a token exchange, in the box API environment', function () {
    const subject = {
      kind: 'box' as const,
      iss: 'https://box.example',
      sub: '7',
      aud: ['a', 'b'],
      scope: 'read',
      user: { id: '7', email: 'a@b', email_verified: true, groups: [] },
    };
    const r = exchangeRequest(client, {
      subject,
      actor: { ...subject, kind: 'jwt', claims: { repository: 'x' } },
      audience: 'https://api.example',
      scope: 'read',
      requestedType: 'jwt',
      act: { sub: 'svc' },
    } as never);
    expect(misfits(r, CEL_ENVIRONMENTS['box-api'], 'request')).to.deep.equal([]);
  });

  it("an app's request, and an AuthZEN evaluation, in the app environment", function () {
    // As the App's policies see it (decideApp makes the person as the App may see them, its claims shaped).
    const shaping = { ...app, claims: { team: 'user.data.team', corp: 'user.identities.map(i, i.subject)' } };
    const asked = { clientId: 'web', user: null, signedInAtLeast: () => true, carries: () => true };
    const question = appRequest(
      shaping,
      { method: 'GET', host: 'orders.example', path: '/a', query: { x: '1', y: ['2', '3'] } },
      { 'x-tenant': 't1' },
      caller,
    );
    const r = new PolicyIndex([], () => undefined).decideApp(shaping, asked, question).request;
    expect(r.user?.claims).to.deep.equal({ team: 'blue', corp: ['42'] });
    expect(misfits(r, CEL_ENVIRONMENTS.app, 'request')).to.deep.equal([]);
    const authzen = { ...r, resource: { type: 'doc', id: '1', properties: { ownerID: 'a' } }, context: { time: 'now' } };
    expect(misfits(authzen, CEL_ENVIRONMENTS.app, 'request')).to.deep.equal([]);
  });

  it("the person's data, SCIM attributes and upstream identities are declared to the box's policies only; an App's see its claims", function () {
    const seen = { id: '7', email: 'a@b', email_verified: true, groups: [] };
    const user = { ...seen, data: { team: 'x' }, scim: { userName: 'a' }, identities: [{ provider: 'github', subject: '1' }] };
    expect(misfits(user, CEL_ENVIRONMENTS['box-api'].fields.user!, 'request.user')).to.deep.equal([]);
    expect(misfits({ ...user, nickname: 'al' }, CEL_ENVIRONMENTS['box-api'].fields.user!, 'request.user')).to.deep.equal([
      'request.user.nickname is not declared',
    ]);
    expect(misfits({ ...seen, claims: { team: 'x', roles: ['a'] } }, CEL_ENVIRONMENTS.app.fields.user!, 'request.user')).to.deep.equal([]);
    expect(misfits(user, CEL_ENVIRONMENTS.app.fields.user!, 'request.user')).to.deep.equal([
      'request.user.data is not declared',
      'request.user.scim is not declared',
      'request.user.identities is not declared',
    ]);
  });

  it('the sizes the cost estimate assumes are the limits the box lets in', function () {
    expect(SIZES.items).to.equal(INPUT_LIMITS.bodyValues);
    expect(SIZES.declaredString).to.equal(INPUT_LIMITS.queryValue);
    expect(SIZES.anyString).to.equal(BODY_LIMIT_BYTES);
  });
});
