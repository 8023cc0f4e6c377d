// RFC 6749 §5.2: error_description holds %x20-21 / %x23-5B / %x5D-7E only. Every
// description the box sends goes through describable() (ApiError.body, the
// authorize redirects, WWW-Authenticate), so holding it here holds it everywhere.
import { expect } from 'chai';
import fc from 'fast-check';
import { ApiError, challenge, describable, errorFields } from '../../api/errors.js';
import { dpopChallenge } from '../../api/credentials/dpop/resource.js';
import { malformedResponse } from '../../api/grpc/check.js';
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

  it('errorFields and challenge are where every answer gets it: JSON bodies, gRPC refusals, redirects, challenges', function () {
    expect(errorFields('invalid_request', 'client "x" — no')).to.deep.equal({
      error: 'invalid_request',
      error_description: "client 'x' - no",
    });
    expect(JSON.parse(malformedResponse('the path "/é" is refused').denied_response!.body)).to.deep.equal({
      error: 'invalid_request',
      error_description: `the path '/${encodeURIComponent('é')}' is refused`,
    });
    expect(challenge('Bearer', 'boxauth')).to.equal('Bearer realm="boxauth"');
    expect(challenge('Bearer', 'app', { error: 'invalid_token', description: 'token "t" expired' })).to.equal(
      `Bearer realm="app", error="invalid_token", error_description="token 't' expired"`,
    );
    expect(dpopChallenge('app')).to.match(/^DPoP realm="app", algs="[^"]+"$/);
    expect(dpopChallenge('app', { error: 'use_dpop_nonce', problem: 'a "nonce"' })).to.match(
      /^DPoP realm="app", error="use_dpop_nonce", error_description="a 'nonce'", algs="[^"]+"$/,
    );
  });
});
