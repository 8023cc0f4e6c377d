import { expect } from 'chai';
import { excerpt, EXCERPT_LIMITS } from '../../../api/decision/excerpt.js';

const size = (v: unknown): number => JSON.stringify(v).length;

describe('the excerpt a kept refusal holds of its request', function () {
  it('is the request itself when it is within the limits: nothing cut', function () {
    const request = { app: 'wiki', path: '/a', query: { x: ['1', '2'] }, user: null, scope: 'read', n: 1.5, ok: true };
    expect(excerpt(request, 'request')).to.deep.equal({ value: request, cut: [] });
  });

  it('cuts each string to 256 characters and names the cut, without splitting a character', function () {
    const { value, cut } = excerpt({ query: { q: 'x'.repeat(12_000) }, path: `/${'é'.repeat(255)}😀😀` }, 'request');
    const v = value as { query: { q: string }; path: string };
    expect(v.query.q).to.equal('x'.repeat(256));
    expect(v.path).to.equal(`/${'é'.repeat(255)}`); // the emoji's surrogate pair is not halved
    expect(cut).to.deep.equal(['request.query.q: 256 of 12000 characters kept', 'request.path: 256 of 260 characters kept']);
  });

  it('replaces what PostgreSQL cannot keep in jsonb (NUL, half a surrogate pair) by U+FFFD, in values and keys; a whole pair stays', function () {
    const { value } = excerpt({ tool: 'a\u0000b\ud800c\udc00d😀', ['k\u0000']: 'v' }, 'request');
    expect(value).to.deep.equal({ tool: 'a\uFFFDb\uFFFDc\uFFFDd😀', ['k\uFFFD']: 'v' });
  });

  it('keeps the whole within 4,096 characters of JSON, however wide or deep the value, and says what it left out', function () {
    const context = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 'v'.repeat(100)]));
    let deep: unknown = 'bottom';
    for (let i = 0; i < 1000; i++) deep = { d: deep };
    for (const huge of [
      { context },
      { list: Array.from({ length: 50_000 }, (_, i) => i * 1e300) },
      { deep },
      { s: '"\\\n'.repeat(5000) },
    ]) {
      const { value, cut } = excerpt(huge, 'request');
      expect(size(value)).to.be.at.most(EXCERPT_LIMITS.recordChars).and.above(0);
      expect(cut).to.not.deep.equal([]);
      expect(cut.length).to.be.at.most(EXCERPT_LIMITS.cutsNamed);
    }
    expect(excerpt({ context }, 'request').cut).to.deep.equal([
      'request.context.k37: 51 of 100 characters kept', // the last one begun, filling the room left
      'request.context: 1962 of 2000 entries left out',
    ]);
    expect(excerpt({ deep }, 'request').cut).to.deep.equal([`request.deep${'.d'.repeat(7)}: deeper than 8 levels, left out`]);
  });

  it('leaves out a key longer than a string may be, and keeps a key named __proto__ a key', function () {
    const sent = JSON.parse(`{"${'k'.repeat(300)}": 1, "__proto__": {"admin": true}}`) as object;
    const { value, cut } = excerpt(sent, 'request');
    expect(Object.getPrototypeOf(value)).to.equal(Object.prototype);
    expect(JSON.stringify(value)).to.equal('{"__proto__":{"admin":true}}');
    expect(cut).to.deep.equal([`request.${'k'.repeat(32)}…: a key of 300 characters, left out`]);
  });
});
