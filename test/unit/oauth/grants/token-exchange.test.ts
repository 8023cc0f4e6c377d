// The scope ceiling of token exchange (RFC 8693), without a database: an exchange
// only narrows — never beyond the subject token's scope, nor the client's list.
import { expect } from 'chai';
import { exchangedScope } from '../../../../api/oauth/grants/token-exchange.js';
import { OAuthError } from '../../../../api/credentials/errors.js';
import type { Party } from '../../../../api/policy/requests.js';
import type { Client } from '../../../../api/types.js';

const client = (scope?: string[]): Client => ({ resourceType: 'Client', id: 'web', grant_types: [], ...(scope ? { scope } : {}) });
const subject = (p: Partial<Party>): Party => ({ kind: 'box', iss: 'https://auth.example', sub: '42', aud: null, scope: null, ...p });

/** The scope granted, or the refusal as `code: message`. */
function outcome(...args: Parameters<typeof exchangedScope>): string | null {
  try {
    return exchangedScope(...args);
  } catch (err) {
    if (err instanceof OAuthError) return `${err.code}: ${err.message}`;
    throw err;
  }
}

describe('token exchange: exchangedScope', function () {
  it("grants what is asked within the subject token's scope", function () {
    expect(outcome(client(), subject({ scope: 'orders:read orders:write' }), ['orders:read'])).to.equal('orders:read');
  });

  it("refuses a scope beyond a box token's, naming what is beyond it", function () {
    expect(outcome(client(), subject({ scope: 'orders:read' }), ['orders:read', 'orders:write'])).to.equal(
      `invalid_scope: an exchange may narrow the scope, not widen it: "orders:write" is not in the subject token's scope`,
    );
  });

  it('a box token without a scope cannot gain one', function () {
    expect(outcome(client(), subject({ scope: null }), ['orders:read'])).to.match(/^invalid_scope: .*"orders:read"/);
  });

  it("another issuer's JWT: its scope claim is the ceiling; without one, the client's list is", function () {
    const ci = (scope: string | null) => subject({ kind: 'jwt', iss: 'https://ci.example', scope });
    expect(outcome(client(), ci('deploy'), ['deploy', 'admin'])).to.match(/^invalid_scope: .*"admin" is not in the subject token's scope/);
    expect(outcome(client(), ci(null), ['deploy'])).to.equal('deploy');
    expect(outcome(client(['deploy']), ci(null), ['admin'])).to.match(/^invalid_scope: client "web" may not be granted "admin"/);
  });

  it("within the subject's scope, still not beyond the client's list", function () {
    expect(outcome(client(['orders:read']), subject({ scope: 'orders:read orders:write' }), ['orders:write'])).to.match(
      /^invalid_scope: client "web" may not be granted "orders:write"/,
    );
  });

  it("without a request: the subject's scope, as far as the client's list goes", function () {
    expect(outcome(client(), subject({ scope: 'orders:read orders:write' }), null)).to.equal('orders:read orders:write');
    expect(outcome(client(['orders:read']), subject({ scope: 'orders:read orders:write' }), null)).to.equal('orders:read');
    expect(outcome(client(['payments']), subject({ scope: 'orders:read' }), null)).to.equal(null);
    expect(outcome(client(), subject({ kind: 'jwt', scope: null }), null)).to.equal(null);
  });
});
