// An App's policy is no oracle on the people of the box (issue 63, item 5). A team that writes
// its App's policies, whose PEP may ask the App's PDP but may not read people on the box's API,
// wrote `request.user.email.startsWith(request.resource.properties.p)` and spelled out any
// person's address and data one character at a time through /evaluations. A PEP now names only
// people it may read (`GET /users/<id>`): anyone else is nobody to the policies, answered exactly
// as a made-up name, so right and wrong guesses, existing and made-up people, answer alike. And
// whoever the person, named or behind a token for the App, the App's policies see of them what the
// App may (its tokens' claims, and the claims an administrator shapes for it), never their data.
import { expect } from 'chai';
import pg from 'pg';
import { basic, boxForSuite, eventually, type Box, type JsonResponse } from '../support/box.js';
import { userToken } from '../support/user-token.js';

type Json = Record<string, unknown>;

describe('AuthZEN: an App policy is no oracle on people', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let team: string; // the team: writes the hr App's policies, asks its PDP as its PEP, explains its requests; may not read people
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
    const { secret } = await box.addClient('hr-pep', {}, { policy: false });
    await put('/AccessPolicy/hr-pep-asks', {
      engine: 'matcho',
      link: [{ id: 'hr-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'post', uri: '#^/(apps/hr/access/v1/evaluations?|authz/explain)$' },
    });
    // The delegation of docs/concepts/access-control.md: the team may write the App hr and its policies, named hr-…, and nothing else.
    await put('/AccessPolicy/hr-pep-app', {
      engine: 'matcho',
      link: [{ id: 'hr-pep', resourceType: 'Client' }],
      matcho: { 'request-method': { $enum: ['get', 'put'] }, params: { 'resource/type': 'App', 'resource/id': 'hr' } },
    });
    await put('/AccessPolicy/hr-pep-policies', {
      engine: 'matcho',
      link: [{ id: 'hr-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'put', params: { 'resource/type': 'AccessPolicy', 'resource/id': '#^hr-' }, body: { app: 'hr' } },
    });
    team = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('hr-pep', secret) })).body
      .access_token;
    expect((await box.json('GET', `/users/${eve}`, undefined, team)).status, 'the team may not read people').to.equal(403);
    // The team's oracle on the address.
    const oracle = await teamWrites('hr-email-oracle', {
      engine: 'cel',
      cel: 'has(request.resource.properties.p) && request.user.email.startsWith(request.resource.properties.p)',
    });
    expect(oracle.status, oracle.text).to.equal(201);
  });

  /** The team writes the hr App's policy `id`. */
  const teamWrites = (id: string, policy: Json, token = team): Promise<JsonResponse> =>
    box.json('PUT', `/AccessPolicy/${id}`, { app: 'hr', ...policy }, token);

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
      expect(await guesses(subject, [email('eve@'), email('x')]), subject).to.deep.equal([
        { decision: true },
        { decision: false, context: { reason: 'no policy of this app allows the request' } },
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
  // What follows names eve, whom the team's PEP may now read: what its policies see of her is what the App may.

  /** What the hr App's policies answer to the guess `path` about eve, through /evaluations (as the PEP names her). */
  const evaluated = async (paths: string[]): Promise<unknown[]> =>
    guesses(
      eve,
      paths.map((path) => ({ type: 'guess', id: 'g', properties: { path } })),
    );
  /** The same through forward-auth, with eve's own token for the App: each guess's status. */
  let eveAtHr: string;
  const forwarded = async (paths: string[]): Promise<number[]> => {
    eveAtHr ??= await userToken(box, Number(eve), 'root', 'https://hr.example');
    const statuses: number[] = [];
    for (const path of paths) {
      const res = await box.request('GET', '/authz/forward-auth/hr', {
        headers: {
          'X-Forwarded-Method': 'GET',
          'X-Forwarded-Proto': 'https',
          'X-Forwarded-Host': 'hr.example',
          'X-Forwarded-Uri': path,
          Authorization: `Bearer ${eveAtHr}`,
        },
      });
      statuses.push(res.status);
    }
    return statuses;
  };
  const GUESSES = ['/guess/1', '/guess/078-05', '/guess/9', '/guess/078-05-1120'];
  const NO_POLICY = { decision: false, context: { reason: 'no policy of this app allows the request' } };

  it("a policy of the App that reads a person's data, SCIM attributes or identities is refused when written (422), whoever writes it", async function () {
    for (const [cel, field] of [
      ['("/guess/" + request.user.data.hr.ssn).startsWith(request.path)', 'request.user.data'],
      ['request.user.scim.externalId.startsWith(request.path)', 'request.user.scim'],
      ['request.user.identities.exists(i, i.subject.startsWith(request.path))', 'request.user.identities'],
    ] as const) {
      for (const token of [team, root]) {
        const res = await teamWrites('hr-ssn-oracle', { engine: 'cel', cel }, token);
        expect(res.status, res.text).to.equal(422);
        expect(String(res.body.errors.cel), res.text).to.include(`${field}: no such field`);
      }
    }
    const reference = await teamWrites('hr-ssn-oracle', { engine: 'matcho', matcho: { path: '.user.data.hr.ssn' } });
    expect(reference.status, reference.text).to.equal(422);
    expect(String(reference.body.errors.matcho)).to.include('names .user.data,');
    expect((await box.json('GET', '/AccessPolicy/hr-ssn-oracle', undefined, root)).status).to.equal(404);
  });

  it("what the team can write about a person's data learns nothing of it: every guess denies, through /evaluations and forward-auth", async function () {
    // Patterns on fields an App's request has not are written, and match nothing.
    const pattern = await teamWrites('hr-ssn-pattern', {
      engine: 'matcho',
      matcho: { path: '#^/guess/', user: { data: { hr: { ssn: '#^078-05' } } } },
    });
    expect(pattern.status, pattern.text).to.equal(201);
    const schema = await teamWrites('hr-ssn-schema', {
      engine: 'json-schema',
      schema: { required: ['user'], properties: { path: { pattern: '^/guess/078' }, user: { required: ['data'] } } },
    });
    expect(schema.status, schema.text).to.equal(201);
    // An expression stored by an older release (or straight into the database): it cannot be evaluated, and allows nothing.
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      const cel = '("/guess/" + request.user.data.hr.ssn).startsWith(request.path)';
      await db.query(`INSERT INTO access_policies (id, resource) VALUES ('hr-ssn-stored', $1)`, [
        JSON.stringify({ id: 'hr-ssn-stored', app: 'hr', engine: 'cel', cel }),
      ]);
    } finally {
      await db.end();
    }
    await eventually('the box to load the stored policy, and log that it cannot be evaluated', async () => {
      await evaluated(['/guess/1']);
      return box.logs.some((l) => l.includes('hr-ssn-stored') && l.includes('request.user.data: no such field'));
    });
    expect(await evaluated(GUESSES)).to.deep.equal(GUESSES.map(() => NO_POLICY));
    expect(await forwarded(GUESSES)).to.deep.equal([403, 403, 403, 403]);
  });

  it("the field an administrator shapes into the App's claims is what its policies read; the team cannot shape one", async function () {
    const widened = await box.json('PUT', '/App/hr', { urls: ['https://hr.example'], claims: { ssn: 'user.data.hr.ssn' } }, team);
    expect(widened.status, widened.text).to.equal(403);
    const shaped = await put('/App/hr', { urls: ['https://hr.example'], claims: { ssn: 'user.data.hr.ssn' } });
    expect(shaped.status, shaped.text).to.equal(200);
    const claim = await teamWrites('hr-ssn-claim', {
      engine: 'cel',
      cel: 'request.path.startsWith("/guess/") && ("/guess/" + request.user.claims.ssn).startsWith(request.path)',
    });
    expect(claim.status, claim.text).to.equal(201);
    expect(await evaluated(GUESSES)).to.deep.equal([NO_POLICY, { decision: true }, NO_POLICY, { decision: true }]);
    expect(await forwarded(GUESSES)).to.deep.equal([403, 200, 403, 200]);
  });

  it("the box's own policies still see the whole person", async function () {
    const mallory = (await box.json('POST', '/users', { email: 'mallory@example.com', password: 'mallory-password-1' }, root)).body.id;
    const policy = await put('/AccessPolicy/groups-by-ssn', {
      engine: 'cel',
      cel: 'request.uri == "/groups" && request.user != null && has(request.user.data.hr) && request.user.data.hr.ssn.startsWith("078-")',
    });
    expect(policy.status, policy.text).to.equal(201);
    expect((await box.json('GET', '/groups', undefined, await userToken(box, Number(eve)))).status).to.equal(200);
    expect((await box.json('GET', '/groups', undefined, await userToken(box, Number(mallory)))).status).to.equal(403);
  });
});
