// What decides about a client that names itself, as pure functions (api/oauth/client-metadata.ts,
// document-fetch.ts documentLifetime, outbound.ts addressProblem) and the policies that admit it (api/policy/evaluate.ts
// decideRegistration): the draft's rules on a Client Identifier URL, a document's metadata, the
// cache lifetime from its headers, the addresses never fetched, and deny by default.
import { expect } from 'chai';
import fs from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { projectPath } from '../../../api/paths.js';
import type { RegistrationRequest } from '../../../api/policy/requests.js';
import { clientIdUrlProblem, readClientMetadata } from '../../../api/oauth/client-metadata.js';
import { documentLifetime } from '../../../api/document-fetch.js';
import { addressProblem } from '../../../api/outbound.js';
import { registrationRequest } from '../../../api/oauth/agents.js';
import { PolicyIndex } from '../../../api/policy/evaluate.js';
import type { AccessPolicy, Client } from '../../../api/types.js';

describe('Client Identifier URLs (draft §3)', function () {
  it('takes an https URL with a path, written as it is normalized', function () {
    expect(clientIdUrlProblem('https://agent.example/client.json')).to.equal(undefined);
    expect(clientIdUrlProblem('https://agent.example:8443/c')).to.equal(undefined);
  });
  for (const [url, why] of [
    ['http://agent.example/client.json', /https/],
    ['https://agent.example', /path/],
    ['https://agent.example/', /path/],
    ['https://user:pw@agent.example/c', /user information/],
    ['https://agent.example/c#f', /fragment/],
    ['https://agent.example/c?x=1', /query/],
    ['https://agent.example/a/../c', /"\." or "\.\."/],
    ['https://agent.example/a/%2e%2e/c', /"\." or "\.\."/],
    ['https://Agent.example/c', /normalized/],
    ['https://agent.example:443/c', /normalized/],
    ['https://agent.example/c d', /spaces/],
  ] as const) {
    it(`refuses ${url}`, function () {
      expect(clientIdUrlProblem(url)).to.match(why);
    });
  }
});

describe("a document's or a registration's metadata", function () {
  it('makes a public client of the code and refresh grants, with rotated refresh tokens', function () {
    const read = readClientMetadata({ redirect_uris: ['http://127.0.0.1/cb', 'com.example.agent:/cb'], client_name: 'Agent' }, 'document');
    if ('error' in read) throw new Error(read.description);
    expect(read.client.grant_types).to.deep.equal(['authorization_code', 'refresh_token']);
    expect(read.client.auth?.authorization_code).to.deep.include({ refresh_token: true, refresh_token_rotation: true });
    expect(read.clientName).to.equal('Agent');
  });
  it('takes no back-channel logout URI: an agent keeps no session to end, and no stranger picks where the box POSTs', function () {
    for (const from of ['document', 'registration'] as const) {
      const meta = {
        redirect_uris: ['http://127.0.0.1/cb'],
        backchannel_logout_uri: 'https://a.example/bcl',
        backchannel_logout_session_required: true,
      };
      const read = readClientMetadata(meta, from);
      if ('error' in read) throw new Error(read.description);
      expect(read.client).not.to.have.any.keys('backchannel_logout_uri', 'backchannel_logout_session_required');
    }
  });
  for (const [meta, error] of [
    [{ redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], client_secret: 'x' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], grant_types: ['implicit'] }, 'invalid_client_metadata'],
    [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['http://a.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://a.example/cb\n'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
  ] as const) {
    it(`refuses ${JSON.stringify(meta)} with ${error}`, function () {
      const read = readClientMetadata(meta, 'registration');
      expect('error' in read && read.error).to.equal(error);
    });
  }
});

describe('how long a fetched document stands (draft §5.2)', function () {
  const bounds = { min: 60, max: 86400 };
  it('max-age, within the bounds', function () {
    expect(documentLifetime({ cacheControl: 'public, max-age=600' }, bounds)).to.equal(600);
    expect(documentLifetime({ cacheControl: 'max-age=5' }, bounds)).to.equal(60);
    expect(documentLifetime({ cacheControl: 'max-age=9999999' }, bounds)).to.equal(86400);
  });
  it('no-store and no-cache: the least; Expires less Date; an invalid Expires: the least; nothing said: the most', function () {
    expect(documentLifetime({ cacheControl: 'no-store' }, bounds)).to.equal(60);
    expect(documentLifetime({ cacheControl: 'no-cache, max-age=600' }, bounds)).to.equal(60);
    expect(documentLifetime({ expires: 'Thu, 01 Jan 2026 01:00:00 GMT', date: 'Thu, 01 Jan 2026 00:00:00 GMT' }, bounds)).to.equal(3600);
    expect(documentLifetime({ expires: '0' }, bounds)).to.equal(60);
    expect(documentLifetime({}, bounds)).to.equal(86400);
  });
});

describe('the addresses a document is never fetched from (draft §8.6)', function () {
  const none = { allowed: [] as [string, number][] };
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
  ]) {
    it(`refuses ${address}`, function () {
      expect(addressProblem(address, none, new Set())).to.be.a('string');
    });
  }
  it("takes a public address, refuses the box's own, and takes what the operator allows", function () {
    expect(addressProblem('93.184.216.34', none, new Set())).to.equal(undefined);
    expect(addressProblem('93.184.216.34', none, new Set(['93.184.216.34']))).to.match(/box's own/);
    expect(addressProblem('127.0.0.1', { allowed: [['127.0.0.1', 32]] }, new Set(['127.0.0.1']))).to.equal(undefined);
    expect(addressProblem('127.0.0.2', { allowed: [['127.0.0.1', 32]] }, new Set())).to.be.a('string');
  });
});

describe('the policies that admit an agent: deny by default', function () {
  const agent = {
    resourceType: 'Client',
    id: 'https://agent.example/client.json',
    grant_types: ['authorization_code'],
    auth: { authorization_code: { redirect_uris: ['http://127.0.0.1/cb'] } },
    registration: { kind: 'metadata-document' },
  } as Client;
  const request = registrationRequest(agent, { scope: undefined, resource: [], uri: '/auth/authorize' })!;
  const decide = (policies: Omit<AccessPolicy, 'resourceType'>[]): boolean =>
    new PolicyIndex(
      policies.map((p) => ({ resourceType: 'AccessPolicy', ...p })),
      () => undefined,
    ).decideRegistration(request).allowed;

  it('no policy, an allow-engine policy, an app policy or a policy of another host: refused', function () {
    expect(decide([])).to.equal(false);
    expect(decide([{ id: 'everything', engine: 'allow' }])).to.equal(false);
    expect(decide([{ id: 'app', app: 'orders', engine: 'matcho', matcho: { registration: { host: 'agent.example' } } }])).to.equal(false);
    expect(decide([{ id: 'other', engine: 'matcho', matcho: { registration: { host: 'other.example' } } }])).to.equal(false);
    expect(decide([{ id: 'linked-elsewhere', engine: 'cel', cel: 'true', link: [{ resourceType: 'Client', id: 'web' }] }])).to.equal(false);
  });
  it('a global policy naming its host (matcho, json-schema, cel), or one linked to its client_id: admitted', function () {
    expect(
      decide([{ id: 'm', engine: 'matcho', matcho: { registration: { kind: 'metadata-document', host: 'agent.example' } } }]),
    ).to.equal(true);
    const schema = {
      type: 'object',
      required: ['registration'],
      properties: { registration: { type: 'object', properties: { host: { const: 'agent.example' } }, required: ['host'] } },
    };
    expect(decide([{ id: 'j', engine: 'json-schema', schema }])).to.equal(true);
    expect(decide([{ id: 'c', engine: 'cel', cel: 'request.registration.host.endsWith(".example")' }])).to.equal(true);
    expect(decide([{ id: 'l', engine: 'cel', cel: 'true', link: [{ resourceType: 'Client', id: agent.id }] }])).to.equal(true);
  });
});

describe('docs/examples/policies/agents/agent-vendor.yaml, as the guide shows it', function () {
  const policies = parseAllDocuments(
    fs.readFileSync(projectPath('docs', 'examples', 'policies', 'agents', 'agent-vendor.yaml'), 'utf8'),
  ).map((d): AccessPolicy => {
    const { metadata, spec } = d.toJS() as { metadata: { name: string }; spec: Omit<AccessPolicy, 'id' | 'resourceType'> };
    return { resourceType: 'AccessPolicy', id: metadata.name, ...spec };
  });
  const errors: string[] = [];
  const index = new PolicyIndex(policies, (id, err) => errors.push(`${id}: ${err.message}`));
  const admitted = (registration: Partial<RegistrationRequest['registration']>): boolean =>
    index.decideRegistration({
      'request-method': 'post',
      uri: '/auth/authorize',
      params: {},
      'query-string': '',
      client: null,
      user: null,
      scope: null,
      registration: {
        kind: 'metadata-document',
        client_id: 'https://agents.example.com/client.json',
        host: 'agents.example.com',
        redirect_uris: ['http://127.0.0.1/callback'],
        client_name: 'Example Agent',
        scope: ['openid', 'tools'],
        resource: ['https://mcp.example.com/'],
        ...registration,
      },
    }).allowed;

  it('compiles, and admits the vendor for what it may ask, and nothing else', function () {
    expect(errors).to.deep.equal([]);
    expect(admitted({})).to.equal(true);
    expect(admitted({ host: 'agents.example.org' })).to.equal(false);
    expect(admitted({ redirect_uris: ['https://elsewhere.example/callback'] })).to.equal(false);
    expect(admitted({ scope: ['openid', 'admin'] })).to.equal(false);
    expect(admitted({ resource: ['https://other.example/'] })).to.equal(false);
    expect(admitted({ kind: 'dynamic', host: '127.0.0.1' })).to.equal(true);
  });
});
