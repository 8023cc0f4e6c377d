// RFC 6749 §5.2: error_description holds %x20-21 / %x23-5B / %x5D-7E only. Every
// description the box sends goes through describable() (ApiError.body, the
// authorize redirects, WWW-Authenticate), so holding it here holds it everywhere.
import { expect } from 'chai';
import fc from 'fast-check';
import { ApiError, describable } from '../../api/errors.js';
import { OAuthError } from '../../api/credentials/errors.js';

const RFC6749_TEXT = /^[\x20-\x21\x23-\x5B\x5D-\x7E]*$/;

describe('error descriptions (RFC 6749 §5.2 character set)', function () {
  it('any text becomes text of the set', function () {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => RFC6749_TEXT.test(describable(text))),
      { numRuns: 2000 },
    );
  });

  it('keeps what it can read: ASCII as it is, typography spelled out, the rest percent-encoded', function () {
    expect(describable('client app may not use it')).to.equal('client app may not use it');
    expect(describable('needs a nonce (OpenID Connect Core §3.2.2.1)')).to.equal('needs a nonce (OpenID Connect Core section 3.2.2.1)');
    expect(describable('client "x" — see C:\\path…')).to.equal("client 'x' - see C:/path...");
    expect(describable('client "клиент"\n')).to.equal(`client '${encodeURIComponent('клиент')}'%0A`);
    expect(describable('lone \ud800 surrogate')).to.equal('lone ? surrogate');
  });

  it('every ApiError body carries its description so', function () {
    const body = new OAuthError('invalid_request', 'response_type=id_token needs a nonce (OpenID Connect Core §3.2.2.1)').body() as Record<
      string,
      string
    >;
    expect(body.error_description).to.match(RFC6749_TEXT);
    expect(
      (new ApiError(403, 'access_denied', 'client "app" may not GET /users').body() as Record<string, string>).error_description,
    ).to.equal("client 'app' may not GET /users");
  });
});
