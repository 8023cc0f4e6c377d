import { expect } from 'chai';
import { compilePolicy, createPolicyAjv, checkPolicyCompiles } from '../../../api/policy/engines.js';
import { matcho, mismatch, patternErrors } from '../../../api/policy/matcho.js';
import { CEL_ENVIRONMENTS } from '../../../api/policy/cel/index.js';
import type { AccessPolicy } from '../../../api/types.js';

describe('matcho', function () {
  const request = {
    'request-method': 'get',
    uri: '/Client/abc',
    params: { 'resource/id': 'abc' },
    user: { id: '7', groups: ['admins', 'ops'] },
    client: null,
  };

  it('matches objects by subset', function () {
    expect(matcho(request, { 'request-method': 'get' })).to.equal(true);
    expect(matcho(request, { 'request-method': 'post' })).to.equal(false);
    expect(matcho(request, { params: { 'resource/id': 'abc' } })).to.equal(true);
    expect(matcho(request, { missing: 'x' })).to.equal(false);
  });

  it('treats "#..." strings as regular expressions, on strings only', function () {
    expect(matcho(request, { uri: '#^/Client/' })).to.equal(true);
    expect(matcho(request, { uri: '#^/Session' })).to.equal(false);
    expect(matcho({ n: 5 }, { n: '#5' })).to.equal(false);
  });

  it('knows present? and nil?', function () {
    expect(matcho(request, { user: 'present?' })).to.equal(true);
    expect(matcho(request, { client: 'present?' })).to.equal(false);
    expect(matcho(request, { client: 'nil?', nothing: 'nil?' })).to.equal(true);
  });

  it('matches arrays element by element, and $contains anywhere', function () {
    expect(matcho(request, { user: { groups: ['admins'] } })).to.equal(true);
    expect(matcho(request, { user: { groups: ['ops'] } })).to.equal(false);
    expect(matcho(request, { user: { groups: { $contains: 'ops' } } })).to.equal(true);
    expect(matcho(request, { user: { groups: { $contains: 'nobody' } } })).to.equal(false);
  });

  it('$enum and $one-of', function () {
    expect(matcho(request, { 'request-method': { $enum: ['get', 'head'] } })).to.equal(true);
    expect(matcho(request, { 'request-method': { $enum: ['put'] } })).to.equal(false);
    expect(matcho(request, { $one_of: 1 })).to.equal(false);
    expect(matcho(request, { uri: { '$one-of': ['#^/Session', '#^/Client'] } })).to.equal(true);
  });

  it("reads the request's own fields only: a pattern key such as toString finds nothing on the prototype", function () {
    expect(matcho(request, { toString: 'present?' })).to.equal(false);
    expect(matcho(request, { constructor: 'present?' })).to.equal(false);
    expect(matcho(request, { user: { hasOwnProperty: 'present?' } })).to.equal(false);
    expect(matcho(request, { valueOf: 'nil?' })).to.equal(true);
  });

  it('compares other values by equality', function () {
    expect(matcho({ a: true, b: 3 }, { a: true, b: 3 })).to.equal(true);
    expect(matcho({ a: true }, { a: false })).to.equal(false);
  });

  it('reports unusable patterns', function () {
    expect(patternErrors({ uri: '#([' }, 'dyn')).to.have.length(1);
    expect(patternErrors({ a: { $enum: 'x' } }, 'dyn')[0]).to.match(/\$enum must be an array/);
    expect(patternErrors({ a: ['#ok', { b: '#(' }] }, 'dyn')[0]).to.match(/matcho\.a\[1\]\.b/);
    expect(patternErrors({ uri: '#^/ok$' }, 'dyn')).to.deep.equal([]);
  });
});

describe('matcho references', function () {
  // An AuthZEN evaluation at an app: the owner rule of the working group's Todo scenario.
  const request = {
    app: 'todo',
    'request-method': 'can_update_todo',
    user: {
      id: '7',
      email: 'rick@example.com',
      groups: ['editors'],
      data: { team: 'blue', tags: ['a', 'b'] },
      scim: { externalId: 'CiRmZDA2', userName: 'rick@example.com' },
      identities: [{ provider: 'corp', subject: 'rick-1' }],
    },
    client: null,
    resource: { type: 'todo', id: '1', properties: { ownerID: '7', team: 'blue', tags: ['a', 'b'], owner: null } },
  };
  const owner = { resource: { properties: { ownerID: '.user.id' } } };

  it('a "." string compares the value with the value at that path of the request', function () {
    expect(matcho(request, owner)).to.equal(true);
    expect(matcho({ ...request, resource: { properties: { ownerID: '8' } } }, owner)).to.equal(false);
    expect(matcho(request, { resource: { properties: { team: '.user.data.team' } } })).to.equal(true);
    expect(matcho(request, { user: { scim: { externalId: '.user.scim.externalId' } } })).to.equal(true);
    expect(matcho(request, { user: { identities: { $contains: { subject: '.user.identities.0.subject' } } } })).to.equal(true);
    // Lists and objects compare by their whole value.
    expect(matcho(request, { resource: { properties: { tags: '.user.data.tags' } } })).to.equal(true);
    // Inside $one-of and $contains the reference still reads the whole request.
    expect(matcho(request, { resource: { properties: { ownerID: { '$one-of': ['.user.email', '.user.id'] } } } })).to.equal(true);
  });

  it('a missing (or null) referenced value never matches, not even a missing or null value', function () {
    expect(matcho(request, { resource: { properties: { nothing: '.user.data.nothing' } } })).to.equal(false);
    expect(matcho(request, { resource: { properties: { owner: '.client' } } })).to.equal(false);
    expect(matcho({ ...request, user: null }, owner)).to.equal(false);
    expect(matcho({ ...request, user: null, resource: { properties: {} } }, owner)).to.equal(false);
    // Only own fields are read: a path through the prototype finds nothing.
    expect(matcho(request, { resource: { properties: { ownerID: '.user.constructor' } } })).to.equal(false);
    expect(
      matcho({ ...request, resource: { properties: { ownerID: 'x' } } }, { resource: { properties: { ownerID: '.user.data.toString' } } }),
    ).to.equal(false);
  });

  it('explain shows both values', function () {
    const other = { ...request, resource: { properties: { ownerID: '8' } } };
    expect(mismatch(other, owner)).to.equal('resource.properties.ownerID: "8" does not equal .user.id ("7")');
    expect(mismatch({ ...request, user: null }, owner)).to.equal(
      'resource.properties.ownerID: "7" does not equal .user.id, which the request does not have',
    );
  });

  it('refuses a "." string that names no field a request of the policy\'s target can have, naming where it is', function () {
    const app = CEL_ENVIRONMENTS.app;
    expect(patternErrors(owner, app)).to.deep.equal([]);
    expect(patternErrors({ user: { claims: { any: { depth: '.user.claims.x.y.z' } } } }, app)).to.deep.equal([]);
    expect(patternErrors({ a: '.user.groups.0', c: '.resource.properties.x' }, app)).to.deep.equal([]);
    // An App's policies see a person as the App may (its claims), never their data, SCIM attributes or identities.
    for (const field of ['data', 'scim', 'identities'])
      expect(patternErrors({ a: `.user.${field}.x` }, app)[0], field).to.include(`names .user.${field},`);
    const box = CEL_ENVIRONMENTS['box-api'];
    expect(patternErrors({ user: { data: { any: { depth: '.user.data.x.y.z' } } }, b: '.user.identities.1.provider' }, box)).to.deep.equal(
      [],
    );
    const [host] = patternErrors({ host: '.example.com' }, app);
    expect(host).to.match(/^matcho\.host "\.example\.com" starts with "\."/);
    expect(host).to.include('names .example, which no request this policy decides has');
    expect(host).to.include('{"$enum": [".example.com"]}');
    expect(patternErrors({ a: '.user.name' }, app)[0]).to.include('names .user.name');
    expect(patternErrors({ a: '.user.id.x' }, app)[0]).to.include('.user.id holds no fields');
    expect(patternErrors({ a: '.user.groups.first' }, app)[0]).to.include('is a list');
    expect(patternErrors({ a: { '$one-of': ['.', '.user..id', '.user.'] } }, app)).to.have.length(3);
    // A field of one target's requests is not another's: the box API's requests have no resource.
    expect(patternErrors({ uri: '.resource.properties.uri' }, CEL_ENVIRONMENTS['box-api'])[0]).to.include('names .resource,');
    expect(
      patternErrors(
        { params: { 'resource/id': '.user.id' }, exchange: { audience: '.exchange.subject.user.data.aud' } },
        CEL_ENVIRONMENTS['box-api'],
      ),
    ).to.deep.equal([]);
  });

  it('a literal that starts with "." is written with $enum, which compares as written', function () {
    const dotted = { host: '.internal' };
    expect(matcho(dotted, { host: { $enum: ['.internal'] } })).to.equal(true);
    expect(patternErrors({ host: { $enum: ['.internal'] } }, CEL_ENVIRONMENTS.app)).to.deep.equal([]);
  });

  it('a policy written with an unreadable reference is refused (422) naming the field; a stored one allows nothing', function () {
    const policy = {
      resourceType: 'AccessPolicy',
      id: 'p',
      app: 'todo',
      engine: 'matcho',
      matcho: { host: '.example.com' },
    } as AccessPolicy;
    expect(() => checkPolicyCompiles(policy))
      .to.throw()
      .with.property('status', 422);
    // Stored before references existed, when ".example.com" was a literal: it is not read as
    // something else now, it makes its policy allow nothing (and the server logs why).
    expect(() => compilePolicy(policy, createPolicyAjv())).to.throw(/starts with "\."/);
    // A stored pattern without "." strings means what it meant.
    const old = { ...policy, matcho: { host: 'todo.example', path: '#^/api/', user: 'present?' } } as AccessPolicy;
    expect(compilePolicy(old, createPolicyAjv()).test({ ...request, host: 'todo.example', path: '/api/x' } as never)).to.equal(true);
    const refs = { ...policy, matcho: owner } as AccessPolicy;
    expect(compilePolicy(refs, createPolicyAjv()).test(request as never)).to.equal(true);
  });
});
