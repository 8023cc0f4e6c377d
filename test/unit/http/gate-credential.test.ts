// The credential the gates' doors hand the decision point (api/http/gate-credential.ts): the
// token of Authorization, else the request's cookies, read by the door and never by the decision point.
import { expect } from 'chai';
import { credentialFrom } from '../../../api/http/gate-credential.js';

describe('credentialFrom', function () {
  it('takes the token of Authorization, by its scheme (RFC 6750 §2.1, RFC 9449 §7.1), over any cookie', function () {
    expect(credentialFrom('Bearer abc.def', 'boxauth-app-reports=xyz')).to.deep.equal({ bearer: 'abc.def' });
    expect(credentialFrom('bearer abc', undefined)).to.deep.equal({ bearer: 'abc' });
    expect(credentialFrom('DPoP abc', undefined)).to.deep.equal({ dpop: 'abc' });
  });

  it("else the request's cookies, as RFC 6265 §5.4's pairs (the first of a name wins, a malformed one is left out)", function () {
    expect(credentialFrom(undefined, '__Host-boxauth-app-reports=tok; theme=dark; theme=light; bad=%E0')).to.deep.equal({
      cookies: { '__Host-boxauth-app-reports': 'tok', theme: 'dark' },
    });
    // An Authorization header of neither scheme carries no token: the cookies are the credential.
    expect(credentialFrom('Basic dXNlcjpwYXNz', 'a=1')).to.deep.equal({ cookies: { a: '1' } });
    expect(credentialFrom(undefined, undefined)).to.deep.equal({ cookies: {} });
  });
});
