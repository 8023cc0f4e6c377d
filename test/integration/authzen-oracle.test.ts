// An App's policy is no oracle on the people of the box (issue 63, item 5). A team that writes
// its App's policies, whose PEP may ask the App's PDP but may not read people on the box's API,
// wrote `request.user.email.startsWith(request.resource.properties.p)` and spelled out any
// person's address and data one character at a time through /evaluations. A PEP now names only
// people it may read (`GET /users/<id>`): anyone else is nobody to the policies, answered exactly
// as a made-up name, so right and wrong guesses, existing and made-up people, answer alike.
import { expect } from 'chai';
import { basic, boxForSuite, type Box, type JsonResponse } from '../support/box.js';

type Json = Record<string, unknown>;

describe('AuthZEN: an App policy is no oracle on people', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let team: string; // the team's PEP: may ask the hr App's PDP, and explain its requests; may not read people
  let admin: string;
  let eve: string; // a person with data the team must not read

  boxForSuite((b, r) => ([box, root] = [b, r]), {
    env: { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password-1' },
  });

  const put = (path: string, body: Json): Promise<JsonResponse> => box.json('PUT', path, body, root);

  before(async function () {
    admin = String((await box.json('GET', '/users?email=boss@example.com', undefined, root)).body[0].id);
    eve = String(
      (
        await box.json(
          'POST',
          '/users',
          { email: 'eve@example.com', password: 'eve-password-1', data: '{"hr":{"ssn":"078-05-1120"}}' },
          root,
        )
      ).body.id,
    );
    expect((await put('/App/hr', { urls: ['https://hr.example'] })).status).to.equal(201);
    // The team's policies: the oracle, on the address and on the data.
    await put('/AccessPolicy/hr-email-oracle', {
      app: 'hr',
      engine: 'cel',
      cel: 'has(request.resource.properties.p) && request.user.email.startsWith(request.resource.properties.p)',
    });
    await put('/AccessPolicy/hr-ssn-oracle', {
      app: 'hr',
      engine: 'cel',
      cel: 'has(request.resource.properties.s) && has(request.user.data.hr) && request.user.data.hr.ssn.startsWith(request.resource.properties.s)',
    });
    const { secret } = await box.addClient('hr-pep', {}, { policy: false });
    await put('/AccessPolicy/hr-pep-asks', {
      engine: 'matcho',
      link: [{ id: 'hr-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'post', uri: '#^/(apps/hr/access/v1/evaluations?|authz/explain)$' },
    });
    team = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('hr-pep', secret) })).body
      .access_token;
    expect((await box.json('GET', `/users/${eve}`, undefined, team)).status, 'the team may not read people').to.equal(403);
  });

  /** The answers to guesses about the subject `id`, in one batch. */
  const guesses = async (id: string, resources: Json[]): Promise<unknown[]> => {
    const res = await box.json(
      'POST',
      '/apps/hr/access/v1/evaluations',
      { subject: { type: 'user', id }, action: { name: 'read' }, evaluations: resources.map((r) => ({ resource: r })) },
      team,
    );
    expect(res.status, res.text).to.equal(200);
    return res.body.evaluations as unknown[];
  };
  const email = (p: string): Json => ({ type: 'guess', id: 'e', properties: { p } });
  const ssn = (s: string): Json => ({ type: 'guess', id: 's', properties: { s } });

  it('right and wrong guesses of an address or of data answer alike, as for a made-up person', async function () {
    const asked = [email('b'), email('x'), email('boss@'), ssn('0'), ssn('9'), ssn('078-05-1120')];
    const madeUp = await guesses('999999', asked);
    expect(madeUp[0]).to.deep.equal({ decision: false, context: { reason: 'no such user' } });
    for (const subject of [admin, 'boss@example.com', eve, 'eve@example.com', 'nobody@example.com']) {
      expect(await guesses(subject, asked), subject).to.deep.equal(madeUp);
    }
  });

  it('a dry run of explain tells the team no more of a person it may not read', async function () {
    const explain = (user: string): Promise<JsonResponse> =>
      box.json('POST', '/authz/explain', { app: 'hr', method: 'GET', path: '/', user }, team);
    const madeUp = await explain('999999');
    expect(madeUp.status, madeUp.text).to.equal(200);
    const real = await explain(eve);
    expect(real.text).not.to.include('eve@example.com');
    expect(real.text).not.to.include('078-05-1120');
    const withoutId = ({ id: _id, ...rest }: Json): Json => rest;
    expect(withoutId(real.body)).to.deep.equal(withoutId(madeUp.body));
    expect(withoutId(madeUp.body)).to.include({ allowed: false, reason: 'no such user' });
  });

  it('a PEP that may read the person still names them, by id or address, and its policies see them', async function () {
    await put('/AccessPolicy/hr-pep-reads-eve', {
      engine: 'matcho',
      link: [{ id: 'hr-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'get', uri: `/users/${eve}` },
    });
    for (const subject of [eve, 'eve@example.com']) {
      expect(await guesses(subject, [email('eve@'), email('x'), ssn('078-')]), subject).to.deep.equal([
        { decision: true },
        { decision: false, context: { reason: 'no policy of this app allows the request' } },
        { decision: true },
      ]);
    }
    // The admin, whom it may not read, is still nobody to it.
    expect((await guesses(admin, [email('boss@')]))[0]).to.deep.equal({ decision: false, context: { reason: 'no such user' } });
    // The box's own administrators (root) name anyone.
    const asRoot = await box.json(
      'POST',
      '/apps/hr/access/v1/evaluation',
      { subject: { type: 'user', id: admin }, action: { name: 'read' }, resource: email('boss@') },
      root,
    );
    expect(asRoot.body).to.deep.equal({ decision: true });
  });
});
