import { expect } from 'chai';
import { matcho, patternErrors } from '../../../api/policy/matcho.js';

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
    expect(patternErrors({ uri: '#([' })).to.have.length(1);
    expect(patternErrors({ a: { $enum: 'x' } })[0]).to.match(/\$enum must be an array/);
    expect(patternErrors({ a: ['#ok', { b: '#(' }] })[0]).to.match(/matcho\.a\[1\]\.b/);
    expect(patternErrors({ uri: '#^/ok$' })).to.deep.equal([]);
  });
});
