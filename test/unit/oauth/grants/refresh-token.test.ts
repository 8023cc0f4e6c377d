// The decisions of the refresh_token grant, without a database: what a use of a
// refresh token held by this session comes to, for this client, now.
import { expect } from 'chai';
import { judgeRefresh } from '../../../../api/oauth/grants/refresh-token.js';
import type { SessionRow } from '../../../../api/store/sessions.js';
import type { Client } from '../../../../api/types.js';
import { sessionRow } from '../../../support/session-row.js';

const now = Date.parse('2026-11-23T12:00:00Z');
const client = (refresh: boolean | undefined): Client => ({
  resourceType: 'Client',
  id: 'app',
  grant_types: ['client_credentials'],
  auth: { client_credentials: { refresh_token: refresh } },
});
const holder = (change: Partial<SessionRow> = {}): SessionRow => sessionRow({ start: new Date(now - 60_000), ...change });

function outcome(v: ReturnType<typeof judgeRefresh>): string {
  if ('error' in v) return `${v.error.code}: ${v.error.message}`;
  return 'reused' in v ? 'reused' : 'use';
}

describe('refresh_token: judgeRefresh', function () {
  it('a live refresh token of this client, with refresh enabled by the grant that started its family, is used', function () {
    expect(outcome(judgeRefresh(client(true), holder(), now))).to.equal('use');
    expect(outcome(judgeRefresh(client(true), holder({ refreshTokenExp: new Date(now + 1) }), now))).to.equal('use');
  });

  it("an unknown token, or another client's, is invalid_grant", function () {
    expect(outcome(judgeRefresh(client(true), undefined, now))).to.match(/^invalid_grant: refresh token is unknown/);
    expect(outcome(judgeRefresh(client(true), holder({ clientId: 'other' }), now))).to.match(/^invalid_grant: .*another client/);
  });

  it('a rotated token presented again is a reuse, even in a closed session', function () {
    expect(outcome(judgeRefresh(client(true), holder({ refreshUsedAt: new Date(now - 1), active: false }), now))).to.equal('reused');
  });

  it('a closed session or an expired token is invalid_grant', function () {
    expect(outcome(judgeRefresh(client(true), holder({ active: false }), now))).to.equal(
      'invalid_grant: refresh token belongs to a closed session',
    );
    expect(outcome(judgeRefresh(client(true), holder({ refreshTokenExp: new Date(now) }), now))).to.equal(
      'invalid_grant: refresh token has expired',
    );
  });

  it('is unauthorized_client once the client no longer enables refresh for that grant', function () {
    expect(outcome(judgeRefresh(client(false), holder(), now))).to.match(/^unauthorized_client: .*auth\.client_credentials\.refresh_token/);
    expect(outcome(judgeRefresh(client(undefined), holder({ origin: 'authorization_code' }), now))).to.match(
      /auth\.authorization_code\.refresh_token/,
    );
  });

  it("a DPoP-bound refresh token (a public client's) is used only with a proof of its key, before anything else is judged", function () {
    const bound = (change: Partial<SessionRow> = {}) => holder({ refreshJkt: 'key-1', ...change });
    expect(outcome(judgeRefresh(client(true), bound(), now, { jkt: 'key-1' }))).to.equal('use');
    expect(outcome(judgeRefresh(client(true), bound(), now))).to.match(/^invalid_dpop_proof: .*DPoP-bound/);
    expect(outcome(judgeRefresh(client(true), bound(), now, { jkt: 'key-2' }))).to.equal(
      'invalid_grant: this refresh token is bound to another DPoP key',
    );
    // Without the key, a rotated token presented again sets off nothing.
    expect(outcome(judgeRefresh(client(true), bound({ refreshUsedAt: new Date(now - 1) }), now))).to.match(/^invalid_dpop_proof/);
    // An unbound one needs no proof, whatever key a proof of the request has.
    expect(outcome(judgeRefresh(client(true), holder(), now, { jkt: 'key-2' }))).to.equal('use');
  });

  it("a confidential client's refresh token of a DPoP-bound grant is used only by the client authenticated, before reuse is judged", function () {
    const ofBoundGrant = (change: Partial<SessionRow> = {}) => holder({ jkt: 'key-1', ...change });
    expect(outcome(judgeRefresh(client(true), ofBoundGrant(), now, { unproven: true }))).to.match(/^invalid_client: .*must authenticate/);
    expect(outcome(judgeRefresh(client(true), ofBoundGrant({ refreshUsedAt: new Date(now - 1) }), now, { unproven: true }))).to.match(
      /^invalid_client/,
    );
    expect(outcome(judgeRefresh(client(true), ofBoundGrant(), now))).to.equal('use');
    // The spec's form (client_id alone) stays for a grant that never was bound.
    expect(outcome(judgeRefresh(client(true), holder(), now, { unproven: true }))).to.equal('use');
  });
});
