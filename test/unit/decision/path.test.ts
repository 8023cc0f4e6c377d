// The path of a request at a gate, read once (api/decision/path.ts): one meaning per
// path, and what a gateway and its app could read two ways is refused, not guessed at.
import { expect } from 'chai';
import { readTarget } from '../../../api/decision/path.js';

const refusal = (target: string): string | undefined => {
  const r = readTarget(target);
  return 'refused' in r ? r.refused : undefined;
};

describe('readTarget', function () {
  it('decodes the path once, and keeps what would change its shape out of it', function () {
    expect(readTarget('/admin')).to.deep.equal({ path: '/admin', query: {} });
    expect(readTarget('/%61dmin/a%20b')).to.deep.include({ path: '/admin/a b' });
    expect(readTarget('/a/')).to.deep.include({ path: '/a/' });
    expect(readTarget('/')).to.deep.include({ path: '/' });
    // %25 decodes to a percent sign, once: never a second decoding into %61.
    expect(readTarget('/%2561')).to.deep.include({ path: '/%61' });
    // A fragment is the browser's, never the app's.
    expect(readTarget('/a?x=1#frag?y=2')).to.deep.equal({ path: '/a', query: { x: '1' } });
  });

  it('reads the query: + as a space, repeated names as a list, a name alone as empty', function () {
    const r = readTarget('/p?a=1&b=x+y&a=2&c&&d=%3D');
    expect(r).to.have.property('path', '/p');
    expect({ ...(r as { query: object }).query }).to.deep.equal({ a: ['1', '2'], b: 'x y', c: '', d: '=' });
    // The query is a map without a prototype: __proto__ is a name like any other.
    const proto = readTarget('/p?__proto__=x') as { query: Record<string, unknown> };
    expect(proto.query.__proto__).to.equal('x');
    expect(Object.getPrototypeOf(proto.query)).to.equal(null);
  });

  it('refuses a path that does not begin with /', function () {
    expect(refusal('admin')).to.equal('the path must begin with /');
    expect(refusal('')).to.equal('the path must begin with /');
    expect(refusal('http://app.example/admin')).to.equal('the path must begin with /');
  });

  it('refuses an encoded slash, backslash or NUL, a raw backslash or NUL', function () {
    for (const target of ['/admin%2F..', '/a%2fb', '/a%5Cb', '/a%00', '/a\\b', '/a\0b']) {
      expect(refusal(target), target).to.equal(
        'the path holds an encoded slash, a backslash or a NUL: its meaning depends on who reads it',
      );
    }
  });

  it('refuses dot segments, encoded or with ;parameters, and empty segments', function () {
    for (const target of ['/public/../admin', '/./admin', '/a/%2e%2e/b', '/a/..;x/b', '/a/.;/b', '/..']) {
      expect(refusal(target), target).to.equal('the path holds a dot segment (. or ..): normalize it at the gateway');
    }
    for (const target of ['//admin', '/a//b']) expect(refusal(target), target).to.equal('the path holds an empty segment (//)');
    // ...but a trailing slash is a segment of its own, not an empty one in the middle.
    expect(refusal('/a/')).to.equal(undefined);
    // A dot inside a name is no dot segment.
    expect(refusal('/a/.well-known/..x')).to.equal(undefined);
  });

  it('refuses broken percent-encoding, in the path and the query, and a NUL in the query', function () {
    expect(refusal('/a%zz')).to.equal('the path holds malformed percent-encoding');
    expect(refusal('/a%E0%A4')).to.equal('the path holds malformed percent-encoding');
    expect(refusal('/a?x=%zz')).to.equal('the query holds malformed percent-encoding');
    expect(refusal('/a?%zz=1')).to.equal('the query holds malformed percent-encoding');
    expect(refusal('/a?x=%00')).to.equal('the query holds a NUL');
    expect(refusal('/a?%00=1')).to.equal('the query holds a NUL');
  });

  it('refuses more than 100 query parameters, counting empty pairs out', function () {
    const many = (n: number): string => `/a?${Array.from({ length: n }, (_, i) => `p${i}=1`).join('&')}`;
    expect(refusal(many(100))).to.equal(undefined);
    expect(refusal(`${many(100)}&&&`)).to.equal(undefined);
    expect(refusal(many(101))).to.equal('more than 100 query parameters');
  });
});
