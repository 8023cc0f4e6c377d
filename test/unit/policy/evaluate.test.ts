import { expect } from 'chai';
import { PolicyIndex, type Subject } from '../../../api/policy/evaluate.js';
import type { BoxApiRequest, ExchangeRequest } from '../../../api/policy/requests.js';
import type { AccessPolicy } from '../../../api/types.js';

const policy = (id: string, fields: Partial<AccessPolicy>): AccessPolicy => ({
  resourceType: 'AccessPolicy',
  id,
  engine: 'matcho',
  matcho: {},
  ...fields,
});

const reads: BoxApiRequest = {
  'request-method': 'get',
  uri: '/groups',
  params: { 'resource/type': 'groups' },
  'query-string': '',
  client: { id: 'app' },
  user: null,
  scope: null,
};

describe('PolicyIndex.weigh: the policies decide tries, by side', function () {
  const index = new PolicyIndex(
    [
      policy('global-gets', { matcho: { 'request-method': 'get' } }),
      policy('admins', { engine: 'allow', link: [{ id: 'admins', resourceType: 'Group' }] }),
      policy('app-posts', { matcho: { 'request-method': 'post' }, link: [{ id: 'app', resourceType: 'Client' }] }),
      policy('app-dry', { engine: 'allow', dryRun: true, link: [{ id: 'app', resourceType: 'Client' }] }),
      policy('wiki-only', { engine: 'allow', app: 'wiki', link: [{ id: 'app', resourceType: 'Client' }] }),
    ],
    (id, err) => {
      throw new Error(`${id}: ${err.message}`);
    },
  );

  it("a client's own token: its policies and the global ones, on the client's side, as decide tries them", function () {
    const subject: Subject = { clientId: 'app', user: null };
    expect(index.weigh(subject, reads)).to.deep.equal([
      { side: 'client', id: 'global-gets', allows: true },
      { side: 'client', id: 'app-posts', allows: false },
    ]);
    expect(index.decide(subject, reads)).to.deep.equal({ allowed: true, policies: ['global-gets'] });
  });

  it("a person's token: the person's side with the global ones, the client's without (and never an app's, nor a dry run)", function () {
    const subject: Subject = { clientId: 'app', user: { id: '7', groups: [{ id: '3', name: 'admins' }] } };
    expect(index.weigh(subject, reads)).to.deep.equal([
      { side: 'person', id: 'global-gets', allows: true },
      { side: 'person', id: 'admins', allows: true },
      { side: 'client', id: 'app-posts', allows: false },
    ]);
    expect(index.decide(subject, reads)).to.deep.equal({ allowed: false, refusedBy: 'client' });
  });

  it("an exchange: the client's linked policies only", function () {
    const exchange = { ...reads, 'request-method': 'post', uri: '/auth/token' } as unknown as ExchangeRequest;
    expect(index.weigh({ clientId: 'app', user: null }, exchange, true)).to.deep.equal([{ side: 'client', id: 'app-posts', allows: true }]);
    expect(index.decideExchange('app', exchange)).to.deep.equal({ allowed: true, policies: ['app-posts'] });
  });
});
