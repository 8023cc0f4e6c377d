// Which redirect URIs an authorization request may name: the registered one to the
// letter, and for a native app's loopback listener (RFC 8252 §7.3) any port, but
// nothing else that differs, however it is spelled.
import { expect } from 'chai';
import { redirectMatches } from '../../../api/oauth/authorize.js';

describe('authorize: redirectMatches', function () {
  it('the registered URI itself, and a loopback one on another port', function () {
    expect(redirectMatches('https://app.example/cb', 'https://app.example/cb')).to.equal(true);
    expect(redirectMatches('http://127.0.0.1:8000/cb', 'http://127.0.0.1:51234/cb')).to.equal(true);
    expect(redirectMatches('http://127.0.0.1/cb', 'http://127.0.0.1:51234/cb')).to.equal(true);
    expect(redirectMatches('http://[::1]:8000/cb?x=1', 'http://[::1]:9/cb?x=1')).to.equal(true);
  });

  it('no other port than a loopback one over http may change', function () {
    expect(redirectMatches('https://app.example/cb', 'https://app.example:444/cb')).to.equal(false);
    expect(redirectMatches('http://localhost:8000/cb', 'http://localhost:9/cb')).to.equal(false);
    expect(redirectMatches('https://127.0.0.1:8000/cb', 'https://127.0.0.1:9/cb')).to.equal(false);
    expect(redirectMatches('http://10.0.0.1:8000/cb', 'http://10.0.0.1:9/cb')).to.equal(false);
  });

  it('on a loopback URI, nothing else may differ: host, scheme, path, query, user info, fragment, or their spelling', function () {
    const registered = 'http://127.0.0.1:8000/cb';
    for (const requested of [
      'http://127.0.0.2:9/cb',
      'http://[::1]:9/cb',
      'https://127.0.0.1:9/cb',
      'http://127.0.0.1:9/cb/',
      'http://127.0.0.1:9/other',
      'http://127.0.0.1:9/cb?next=https://evil.example',
      'http://127.0.0.1:9/cb?',
      'http://127.0.0.1:9/cb#x',
      'http://evil.example@127.0.0.1:9/cb',
      'http://127.0.0.1:9/x/../cb',
      'http://127.0.0.1:9/%63b',
      'http://127.1:9/cb',
      'http://0x7f.0.0.1:9/cb',
      'HTTP://127.0.0.1:9/cb',
      'http://127.0.0.1.evil.example:9/cb',
      'http://127.0.0.1:9\\cb',
      'not a URL',
    ]) {
      expect(redirectMatches(registered, requested), requested).to.equal(false);
    }
  });
});
