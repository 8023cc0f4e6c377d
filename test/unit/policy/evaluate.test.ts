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

describe("PolicyIndex.decideApp: a policy's scope, and scopesOf", function () {
  const index = new PolicyIndex(
    [
      policy('reads', { app: 'notes', matcho: { 'request-method': 'get' }, scope: ['notes:read'] }),
      policy('strong', { app: 'notes', matcho: { 'request-method': 'delete' }, acr: 'phr', scope: ['notes:admin'] }),
      policy('dry', { app: 'notes', engine: 'allow', dryRun: true, scope: ['notes:dry'] }),
      policy('elsewhere', { app: 'other', engine: 'allow', scope: ['other:secret'] }),
      policy('linked', { app: 'notes', engine: 'allow', scope: ['notes:linked'], link: [{ id: 'agent', resourceType: 'Client' }] }),
    ],
    (id, err) => {
      throw new Error(`${id}: ${err.message}`);
    },
  );
  const request = (method: string) => ({
    request: {
      app: 'notes',
      'request-method': method,
      host: 'notes.example',
      path: '/',
      query: {},
      headers: {},
      client: 'robot',
    } as never,
    person: null,
  });
  const subject = (carried: string[], signedIn = false) => ({
    clientId: 'robot',
    user: null,
    signedInAtLeast: () => signedIn,
    carries: (want: readonly string[]) => want.every((s) => carried.includes(s)),
  });

  it('allows with all the scopes; without, says the policy needs more scope, and which', function () {
    expect(index.decideApp({ id: 'notes' }, subject(['notes:read']), request('get')).allowed).to.equal(true);
    expect(index.decideApp({ id: 'notes' }, subject([]), request('get')).outcomes).to.deep.include({
      id: 'reads',
      verdict: 'needs more scope',
      scope: ['notes:read'],
    });
  });

  it('a policy wanting acr and scope asks for a stronger sign-in, naming its scope when the token lacks it', function () {
    expect(index.decideApp({ id: 'notes' }, subject([]), request('delete')).outcomes).to.deep.include({
      id: 'strong',
      verdict: 'needs a stronger sign-in',
      acr: 'phr',
      scope: ['notes:admin'],
    });
    expect(index.decideApp({ id: 'notes' }, subject(['notes:admin']), request('delete')).outcomes).to.deep.include({
      id: 'strong',
      verdict: 'needs a stronger sign-in',
      acr: 'phr',
    });
    expect(index.decideApp({ id: 'notes' }, subject([], true), request('delete')).outcomes).to.deep.include({
      id: 'strong',
      verdict: 'needs more scope',
      scope: ['notes:admin'],
    });
  });

  it("an App's scopes are its deciding policies', linked or not: never a dry run's, nor another App's", function () {
    expect(index.scopesOf('notes')).to.deep.equal(['notes:admin', 'notes:linked', 'notes:read']);
    expect(index.scopesOf('other')).to.deep.equal(['other:secret']);
    expect(index.scopesOf('none')).to.deep.equal([]);
  });
});
