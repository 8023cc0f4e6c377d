// The decisions of the authorization_code grant, without a database: what
// presenting a stored code with these parameters comes to.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { judgeCode } from '../../../../api/oauth/grants/authorization-code.js';
import type { AuthorizationCode } from '../../../../api/store/authorization-codes.js';
import type { Client } from '../../../../api/types.js';

const client: Client = { resourceType: 'Client', id: 'spa', grant_types: ['authorization_code'] };
const now = Date.parse('2026-11-23T12:00:00Z');
const verifier = 'v'.repeat(43);
const challenge = createHash('sha256').update(verifier).digest('base64url');
const code = (change: Partial<AuthorizationCode> = {}): AuthorizationCode => ({
  clientId: 'spa',
  userId: 7,
  redirectUri: 'https://spa.example/cb',
  scope: 'photos',
  codeChallenge: challenge,
  expiresAt: new Date(now + 60_000),
  usedAt: null,
  sessionId: null,
  nonce: null,
  claims: null,
  audience: null,
  authTime: null,
  sid: null,
  amr: null,
  dpopJkt: null,
  ...change,
});
const params = { redirect_uri: 'https://spa.example/cb', code_verifier: verifier };

/** The refusal's description, whether the code is spent by it, or the other outcome's name. */
function outcome(v: ReturnType<typeof judgeCode>): string {
  if ('refuse' in v) return `${v.refuse.code}: ${v.refuse.message}${v.spend ? ' (spent)' : ''}`;
  return 'replayed' in v ? 'replayed' : 'honour';
}

describe('authorization_code: judgeCode', function () {
  it('honours a fresh code with the right redirect URI and verifier', function () {
    expect(outcome(judgeCode(client, code(), params, now))).to.equal('honour');
  });

  it("refuses an unknown code, or another client's, without spending it", function () {
    expect(outcome(judgeCode(client, undefined, params, now))).to.equal(
      'invalid_grant: authorization code is unknown or was issued to another client',
    );
    expect(outcome(judgeCode(client, code({ clientId: 'other' }), params, now))).to.match(/another client$/);
  });

  it('a spent code presented again is a replay, whatever else is wrong', function () {
    expect(outcome(judgeCode(client, code({ usedAt: new Date(now - 1000), expiresAt: new Date(now - 1) }), {}, now))).to.equal('replayed');
  });

  it('refuses, and spends, an expired code, another redirect URI, a missing or wrong verifier', function () {
    expect(outcome(judgeCode(client, code({ expiresAt: new Date(now) }), params, now))).to.equal(
      'invalid_grant: authorization code has expired (spent)',
    );
    expect(outcome(judgeCode(client, code(), { ...params, redirect_uri: 'https://spa.example/other' }, now))).to.match(
      /redirect_uri differs.*\(spent\)$/,
    );
    expect(outcome(judgeCode(client, code(), { redirect_uri: params.redirect_uri }, now))).to.match(
      /code_verifier is required.*\(spent\)$/,
    );
    expect(outcome(judgeCode(client, code(), { ...params, code_verifier: 'w'.repeat(43) }, now))).to.match(/does not match.*\(spent\)$/);
  });

  it('a code without a challenge refuses a verifier, and is honoured without one', function () {
    expect(outcome(judgeCode(client, code({ codeChallenge: null }), params, now))).to.match(/had no code_challenge \(spent\)$/);
    expect(outcome(judgeCode(client, code({ codeChallenge: null }), { redirect_uri: params.redirect_uri }, now))).to.equal('honour');
  });

  it('a code bound to a DPoP key (dpop_jkt) is honoured only with a proof of that key, and spent by any other', function () {
    const jkt = 'k'.repeat(43);
    const bound = (): AuthorizationCode => code({ dpopJkt: jkt });
    expect(outcome(judgeCode(client, bound(), params, now, jkt))).to.equal('honour');
    expect(outcome(judgeCode(client, bound(), params, now))).to.match(/^invalid_grant: .*send a DPoP proof of that key \(spent\)$/);
    expect(outcome(judgeCode(client, bound(), params, now, 'j'.repeat(43)))).to.match(/^invalid_grant: .*not the one .* \(spent\)$/);
    expect(outcome(judgeCode(client, code(), params, now, jkt)), 'an unbound code takes any proof').to.equal('honour');
  });
});
