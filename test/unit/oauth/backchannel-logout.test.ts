// Who a close tells, and what the logout token says (api/oauth/backchannel-logout.ts), as pure
// functions: OpenID Connect Back-Channel Logout 1.0 §2.4's claims, one notice per (client, sid) or
// (client, sub), none to a client without a backchannel_logout_uri or that did not take part.
import { expect } from 'chai';
import type { AuditEvent } from '../../../api/audit.js';
import type { ClosedSession } from '../../../api/notices/kinds.js';
import {
  BACKCHANNEL_LOGOUT_EVENT,
  LOGOUT_TOKEN_SECONDS,
  acknowledged,
  logoutNotices,
  logoutTokenClaims,
  logoutTokenId,
} from '../../../api/oauth/backchannel-logout.js';

const closeBy = (how: Extract<AuditEvent, { event: 'session_closed' }>['how'], by = {}): AuditEvent => ({
  event: 'session_closed',
  sessions: ['s'],
  how,
  by,
});
const session = (client: string, user: number | null, sid: string | null): ClosedSession => ({
  session: `${client}-${sid}`,
  client,
  user,
  sid,
});
const receivers = new Map([
  ['rp', { id: 'rp', backchannel_logout_uri: 'https://rp.example/bcl' }],
  ['strict', { id: 'strict', backchannel_logout_uri: 'https://strict.example/bcl', backchannel_logout_session_required: true }],
]);

describe('back-channel logout: who a close tells', function () {
  it('one notice per (client, sid), the person named too, for clients with a backchannel_logout_uri only', function () {
    const closed = [session('rp', 7, 'sid-a'), session('rp', 7, 'sid-a'), session('rp', 7, 'sid-b'), session('quiet', 7, 'sid-a')];
    expect(logoutNotices(closeBy('sign-out'), closed, receivers)).to.deep.equal([
      { destination: 'rp', payload: { sub: '7', sid: 'sid-a' } },
      { destination: 'rp', payload: { sub: '7', sid: 'sid-b' } },
    ]);
  });

  it('a grant from no browser session: the person alone, unless the client requires a sid', function () {
    const closed = [session('rp', 7, null), session('rp', 7, null), session('strict', 7, null), session('strict', 7, 'sid-a')];
    expect(logoutNotices(closeBy('deactivated'), closed, receivers)).to.deep.equal([
      { destination: 'rp', payload: { sub: '7' } },
      { destination: 'strict', payload: { sub: '7', sid: 'sid-a' } },
    ]);
  });

  it("a SAML app's sign-in is no grant of tokens: a logout token never tells of it (its LogoutRequest does)", function () {
    const saml = { ...session('rp', 7, 'sid-a'), saml: { nameId: 'ann@example.com', nameIdFormat: 'emailAddress' } };
    expect(logoutNotices(closeBy('sign-out'), [saml], receivers)).to.deep.equal([]);
  });

  it("a client's own sessions (no person), other events, and a client's own revocation tell nobody", function () {
    expect(logoutNotices(closeBy('api'), [session('rp', null, null)], receivers)).to.deep.equal([]);
    expect(
      logoutNotices({ event: 'signing_key', action: 'rotated', kid: 'k' } as AuditEvent, [session('rp', 7, 'x')], receivers),
    ).to.deep.equal([]);
    expect(logoutNotices(closeBy('revoke', { client: 'rp' }), [session('rp', 7, 'x')], receivers)).to.deep.equal([]);
    expect(logoutNotices(closeBy('revoke', { client: 'other' }), [session('rp', 7, 'x')], receivers)).to.have.length(1);
  });
});

describe('back-channel logout: the logout token (§2.4)', function () {
  const notice = { id: '42', payload: { sub: '7', sid: 'sid-a' } };

  it('has iss, aud, iat, a short exp, jti, the event, sid and sub, and never a nonce', function () {
    const claims = logoutTokenClaims('https://box.example', 'rp', notice, 1_700_000_000_500);
    expect(claims).to.deep.equal({
      iss: 'https://box.example',
      sub: '7',
      aud: 'rp',
      iat: 1_700_000_000,
      exp: 1_700_000_000 + LOGOUT_TOKEN_SECONDS,
      jti: logoutTokenId('https://box.example', '42'),
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
      sid: 'sid-a',
    });
    expect(claims).not.to.have.property('nonce');
    expect(LOGOUT_TOKEN_SECONDS).to.be.at.most(300);
  });

  it('keeps its jti on a retry, and has another for another notice or box', function () {
    const first = logoutTokenClaims('https://box.example', 'rp', notice, 1_000);
    const retry = logoutTokenClaims('https://box.example', 'rp', notice, 60_000);
    expect(retry.jti).to.equal(first.jti);
    expect(logoutTokenId('https://box.example', '43')).not.to.equal(first.jti);
    expect(logoutTokenId('https://other.example', '42')).not.to.equal(first.jti);
  });

  it('counts 200 and 204 as done (§2.8), anything else as to be tried again', function () {
    expect([200, 204].map(acknowledged)).to.deep.equal([true, true]);
    expect([201, 302, 400, 404, 500, 503].map(acknowledged)).to.deep.equal([false, false, false, false, false, false]);
  });
});
