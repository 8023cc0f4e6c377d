import { expect } from 'chai';
import { OAuthError } from '../../../api/credentials/errors.js';
import { audienceParam, resourceParam } from '../../../api/oauth/params.js';

/** The error code and description `f` throws, or undefined. */
function refusal(f: () => unknown): { code: string; message: string } | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    if (err instanceof OAuthError) return { code: err.code, message: err.message };
    throw err;
  }
}

describe('resourceParam (RFC 8707 §2, RFC 8693 §2.1)', function () {
  it('takes absolute URIs: https, with a port, a path, a query ("SHOULD NOT", not "MUST NOT"), a URN', function () {
    for (const uri of [
      'https://api.example',
      'https://api.example:8443/v1/',
      'https://api.example/v1?tenant=7&x=%2F',
      'http://127.0.0.1:8080',
      'urn:example:orders',
      'spiffe://cluster.local/ns/shop/sa/orders',
    ]) {
      expect(resourceParam(uri), uri).to.equal(uri);
    }
  });

  it('absent or empty: no target', function () {
    expect(resourceParam(undefined)).to.equal(null);
    expect(resourceParam('')).to.equal(null);
  });

  it('refuses with invalid_target what is not an absolute URI', function () {
    for (const value of [
      'orders',
      '/orders',
      '//orders.example',
      './x',
      '1https://x',
      ':x',
      'https://ex ample',
      'https://[::1',
      'https:',
      'a\\b:c',
      'https://x/%zz',
    ]) {
      const refused = refusal(() => resourceParam(value));
      expect(refused, value).to.deep.equal({
        code: 'invalid_target',
        message: 'resource must be an absolute URI, such as https://api.example.com (RFC 8707 §2)',
      });
    }
  });

  it('refuses a fragment, even an empty one', function () {
    for (const value of ['https://api.example#x', 'https://api.example/#', 'urn:example:orders#1']) {
      expect(refusal(() => resourceParam(value))?.message, value).to.equal('resource must not have a fragment (#…) (RFC 8707 §2)');
    }
  });

  it('keeps the limits of an audience, naming the resource', function () {
    expect(refusal(() => resourceParam(`https://api.example/${'a'.repeat(600)}`))?.message).to.equal(
      'resource is longer than 512 characters',
    );
    expect(refusal(() => resourceParam('https://api.example/\u0085'))?.message).to.equal('resource must not hold control characters');
  });

  it('audience stays looser: a name is a target there', function () {
    expect(audienceParam('orders')).to.equal('orders');
    expect(refusal(() => audienceParam('x'.repeat(513)))?.message).to.equal('audience is longer than 512 characters');
  });
});
