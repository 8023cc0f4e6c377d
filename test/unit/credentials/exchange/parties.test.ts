// The delegation chain (RFC 8693 §4.1) as the exchange builds it: the actor outermost,
// the subject's chain nested inside; another issuer's chain is that issuer's word.
import { expect } from 'chai';
import { chainFor, chainLength, foreignAct, MAX_CHAIN } from '../../../../api/credentials/exchange/parties.js';
import type { Party } from '../../../../api/policy/requests.js';
import { WorkloadError } from '../../../../api/credentials/workload/issuers.js';

const BOX = 'https://auth.example';
const party = (p: Partial<Party>): Party => ({ kind: 'box', iss: BOX, sub: 'x', aud: null, scope: null, ...p });

describe('token exchange: the act chain', function () {
  it('nests the subject token’s chain inside the new actor; names another issuer’s actor by iss', function () {
    const subject = party({ sub: '42', act: { sub: 'web', client_id: 'web' } });
    expect(chainFor(subject, party({ sub: 'orders', client_id: 'orders' }), BOX)).to.deep.equal({
      sub: 'orders',
      client_id: 'orders',
      act: { sub: 'web', client_id: 'web' },
    });
    expect(chainFor(subject, party({ kind: 'serviceaccount', iss: 'https://k8s', sub: 'system:serviceaccount:a:b' }), BOX)).to.deep.equal({
      sub: 'system:serviceaccount:a:b',
      iss: 'https://k8s',
      act: { sub: 'web', client_id: 'web' },
    });
  });

  it('keeps the chain as it was without an actor (impersonation hides no one)', function () {
    expect(chainFor(party({ act: { sub: 'web' } }), undefined, BOX)).to.deep.equal({ sub: 'web' });
    expect(chainFor(party({}), undefined, BOX)).to.equal(undefined);
  });

  it('another issuer’s act: every actor without iss is that issuer’s, other fields dropped', function () {
    expect(foreignAct({ sub: 'web', client_id: 'web', admin: true, act: { sub: 'ci', iss: 'https://ci' } }, 'https://other')).to.deep.equal(
      {
        sub: 'web',
        iss: 'https://other',
        client_id: 'web',
        act: { sub: 'ci', iss: 'https://ci' },
      },
    );
    expect(foreignAct(undefined, 'https://other')).to.equal(undefined);
  });

  it('refuses a malformed or endless chain instead of shortening it', function () {
    for (const bad of [null, 'web', [], { client_id: 'web' }, { sub: 'a', act: { sub: 7 } }]) {
      expect(() => foreignAct(bad, 'https://other'), JSON.stringify(bad)).to.throw(WorkloadError, /malformed/);
    }
    let deep: Record<string, unknown> = { sub: 'last' };
    for (let i = 0; i < MAX_CHAIN + 1; i++) deep = { sub: `a${i}`, act: deep };
    expect(() => foreignAct(deep, 'https://other')).to.throw(WorkloadError, /more than/);
    deep = { sub: 'last' };
    for (let i = 0; i < MAX_CHAIN - 1; i++) deep = { sub: `a${i}`, act: deep };
    expect(chainLength(foreignAct(deep, 'https://other'))).to.equal(MAX_CHAIN);
  });
});
