// Claims an admin shapes (Client.claims, App.claims; docs/concepts/access-control.md#claims-an-admin-shapes):
// after a real sign-in, the roles a CEL expression makes of the person's groups are in the ID token,
// at UserInfo, in the JWT access token, in introspection (of an opaque token too) and in the gate's
// upstream JWT. What cannot be is refused when written (422 naming the claim); an expression that
// fails at issue leaves its claim out and fails nothing; no expression shapes `sub` or reads
// another person's data.
import { expect } from 'chai';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const CALLBACK = 'https://wiki.example/cb';
const WIKI = 'https://wiki.example';
const ROLES = 'user.groups.filter(g, g.startsWith("wiki-")).map(g, g.substring(5))';
/** A code-flow client's least body. */
const CODE_CLIENT = { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: CALLBACK } } };
const CLAIMS = {
  roles: ROLES,
  tenant: 'user.data.tenant',
  // What the sign-in proved, from the grant.
  signed_in_with: 'grant.amr',
  // Only with the wiki scope: [] leaves the claim out.
  'https://wiki.example/editor': '"wiki" in grant.scope ? user.groups.exists(g, g == "wiki-editors") : null',
  // Ada's data has no nickname: the evaluation fails, the claim is left out.
  nickname: 'user.data.nickname',
  // All this expression can read of people is the one person the token speaks for.
  everything_readable: 'user',
};

describe('claims an admin shapes', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let ada: number;
  let groups: number[];

  const newGroup = async (name: string): Promise<number> => {
    const res = await box.json('POST', '/groups', { name }, root);
    expect(res.status, res.text).to.equal(201);
    return res.body.id as number;
  };

  before(async function () {
    // People's sub is their row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
    box = await Box.start({ env: { BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    root = await box.rootToken();
    groups = [await newGroup('wiki-editors'), await newGroup('wiki-admins'), await newGroup('payroll')];
    const made = await box.json(
      'POST',
      '/users',
      {
        email: 'ada@example.com',
        password: 'ada-password-1',
        'group-ids': groups,
        data: JSON.stringify({ tenant: 'acme', long: Array.from({ length: 1100 }, (_, i) => i) }),
      },
      root,
    );
    expect(made.status, made.text).to.equal(201);
    ada = made.body.id as number;
    // Bob's data is what a leaking expression would want: no token of Ada's may carry any of it.
    const bob = await box.json(
      'POST',
      '/users',
      { email: 'bob@example.com', password: 'bob-password-1', data: JSON.stringify({ tenant: 'globex', salary: 123456 }) },
      root,
    );
    expect(bob.status, bob.text).to.equal(201);
    for (const [id, token_format] of [
      ['wiki', 'jwt'],
      ['wiki-opaque', 'opaque'],
    ] as const) {
      await box.addClient(
        id,
        {
          grant_types: ['authorization_code', 'refresh_token'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: CALLBACK, token_format, refresh_token: true } },
          claims: CLAIMS,
        },
        { secret: `${id}-secret-123`, policy: false },
      );
    }
    const app = await box.json(
      'PUT',
      '/App/wiki',
      { urls: [WIKI], upstream: { token: { header: 'X-Jwt' } }, claims: { roles: ROLES, via: 'grant.client', app_scope: 'grant.scope' } },
      root,
    );
    expect(app.status, app.text).to.equal(201);
    expect((await box.json('PUT', '/AccessPolicy/wiki-anyone', { app: 'wiki', engine: 'allow' }, root)).status).to.be.oneOf([200, 201]);
  });
  after(async function () {
    await box?.stop();
  });

  /** A real sign-in in a browser without JavaScript, then the code flow of `client`; the token endpoint's answer. */
  async function signIn(client: string, params: Record<string, string> = {}): Promise<Record<string, string>> {
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
    const query = new URLSearchParams({ client_id: client, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', ...params });
    const redirect = await browser.get(`/auth/authorize?${query}`);
    expect(redirect.status, redirect.text).to.equal(302);
    const code = new URL(redirect.headers.get('location')!).searchParams.get('code');
    expect(code, redirect.headers.get('location')!).to.be.a('string');
    const res = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK },
      { Authorization: basic(client, `${client}-secret-123`) },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }

  const introspect = async (token: string, client = 'wiki'): Promise<Record<string, unknown>> =>
    (await box.form('/auth/introspect', { token }, { Authorization: basic(client, `${client}-secret-123`) })).body;

  it('roles in the ID token, at UserInfo, in the JWT access token and in introspection, after a real sign-in', async function () {
    const tokens = await signIn('wiki', { scope: 'openid wiki' });
    const info = (await box.json('GET', '/auth/userinfo', undefined, tokens.access_token)).body;
    for (const claims of [decodeJwt(tokens.id_token!), decodeJwt(tokens.access_token!), info, await introspect(tokens.access_token!)]) {
      expect(claims.roles).to.have.members(['editors', 'admins']);
      expect(claims).to.include({ tenant: 'acme', sub: String(ada), 'https://wiki.example/editor': true });
      expect(claims.signed_in_with).to.deep.equal(['pwd']);
    }
  });

  it('an opaque token: introspection answers the shaped claims', async function () {
    const tokens = await signIn('wiki-opaque');
    expect(tokens.access_token).not.to.include('.');
    const answer = await introspect(tokens.access_token!, 'wiki-opaque');
    expect(answer).to.include({ active: true, tenant: 'acme', sub: String(ada), client_id: 'wiki-opaque' });
    expect(answer.roles).to.have.members(['editors', 'admins']);
  });

  it('a claim gated on a scope is left out without it (null leaves a claim out)', async function () {
    const tokens = await signIn('wiki');
    expect(decodeJwt(tokens.id_token!)).to.have.property('roles').and.not.to.have.property('https://wiki.example/editor');
  });

  it('an expression that fails at issue (a field the person lacks) leaves its claim out; the sign-in succeeds', async function () {
    const tokens = await signIn('wiki');
    for (const claims of [decodeJwt(tokens.id_token!), decodeJwt(tokens.access_token!)]) {
      expect(claims).not.to.have.property('nickname');
      expect(claims).to.have.property('tenant', 'acme');
    }
  });

  it("an expression reads only the token's own person: Bob's data is nowhere in Ada's tokens", async function () {
    const tokens = await signIn('wiki');
    const everything = decodeJwt(tokens.access_token!).everything_readable as Record<string, unknown>;
    expect(everything).to.include({ id: String(ada), email: 'ada@example.com' });
    expect((everything.data as Record<string, unknown>).tenant).to.equal('acme');
    for (const token of [tokens.access_token!, tokens.id_token!]) {
      const text = JSON.stringify(decodeJwt(token));
      expect(text).not.to.include('bob@example.com').and.not.to.include('globex').and.not.to.include('123456');
    }
    // There is no variable for other people: an expression that looks for them is refused when written.
    for (const expression of ['users.filter(u, u.email == "bob@example.com")', 'request.user.data', 'people[1].data']) {
      const res = await box.json('PUT', '/Client/leaky', { ...CODE_CLIENT, claims: { peek: expression } }, root);
      expect(res.status, `${expression}: ${res.text}`).to.equal(422);
      expect(res.body.errors).to.have.property('claims.peek');
    }
  });

  it("the gate's upstream JWT carries the App's claims", async function () {
    const tokens = await signIn('wiki', { resource: WIKI });
    const res = await box.request('GET', '/authz/forward-auth/wiki', {
      headers: {
        'X-Forwarded-Method': 'GET',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'wiki.example',
        'X-Forwarded-Uri': '/page',
        Authorization: `Bearer ${tokens.access_token}`,
      },
    });
    expect(res.status, res.text).to.equal(200);
    const jwks = createLocalJWKSet((await box.request('GET', '/.well-known/jwks.json')).body);
    const { payload } = await jwtVerify(res.headers.get('x-jwt')!, jwks, { issuer: box.url, audience: WIKI });
    expect(payload).to.include({ via: 'wiki', sub: String(ada) });
    expect(payload.roles).to.have.members(['editors', 'admins']);
    expect(payload.app_scope).to.deep.equal(['openid']);
    // The App's claims, not the client's: the upstream JWT is the App's.
    expect(payload).not.to.have.property('tenant');
  });

  it('roles is in claims_supported', async function () {
    expect((await box.json('GET', '/.well-known/openid-configuration')).body.claims_supported).to.include('roles');
  });

  it('a refresh states the person as they are now: a group left, its role gone', async function () {
    const tokens = await signIn('wiki');
    const [, admins, payroll] = groups;
    const left = await box.json('PUT', `/users/${ada}`, { 'group-ids': [admins, payroll] }, root);
    expect(left.status, left.text).to.equal(200);
    const refreshed = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
      { Authorization: basic('wiki', 'wiki-secret-123') },
    );
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(decodeJwt(refreshed.body.access_token).roles).to.deep.equal(['admins']);
    expect(decodeJwt(refreshed.body.id_token).roles).to.deep.equal(['admins']);
  });

  describe('refused when written: 422 naming the claim and the problem', function () {
    const put = (kind: 'Client' | 'App', claims: Record<string, string>) =>
      box.json(
        'PUT',
        `/${kind}/refused`,
        kind === 'Client' ? { ...CODE_CLIENT, claims } : { urls: ['https://refused.example'], claims },
        root,
      );

    it('a claim the box alone states: sub, iss, aud, exp, acr, amr, cnf and the others, in any case', async function () {
      for (const name of [
        'sub',
        'iss',
        'aud',
        'exp',
        'acr',
        'amr',
        'cnf',
        'iat',
        'jti',
        'nonce',
        'client_id',
        'scope',
        'act',
        'email',
        'groups',
        'SUB',
      ]) {
        for (const kind of ['Client', 'App'] as const) {
          const res = await put(kind, { [name]: '"someone-else"' });
          expect(res.status, `${kind} ${name}: ${res.text}`).to.equal(422);
          expect(res.body.errors[`claims.${name}`].join(' ')).to.include('the box alone states');
        }
      }
      expect((await box.json('GET', '/Client/refused', undefined, root)).status).to.equal(404);
    });

    it('an expression that does not parse, names a field that cannot exist, or costs too much', async function () {
      const cases: Record<string, string> = {
        unparsable: 'user.groups.filter(g, ',
        nosuchfield: 'user.salary',
        nosuchvariable: 'request.user.email',
        costly: 'user.groups.map(a, user.groups.map(b, user.groups.map(c, a + b + c)))',
      };
      for (const [name, expression] of Object.entries(cases)) {
        const res = await put('Client', { [name]: expression });
        expect(res.status, `${name}: ${res.text}`).to.equal(422);
        expect(res.body.errors[`claims.${name}`], name).to.be.an('array').with.length.above(0);
      }
      const names = await put('Client', { 'bad name': 'user.email', é: 'user.email' });
      expect(names.status, names.text).to.equal(422);
      expect(names.body.errors).to.have.keys('claims.bad name', 'claims.é');
      // A key __proto__, sent as JSON (a JavaScript literal would set the prototype): the edge refuses it first.
      const proto = await box.request('PUT', '/Client/refused', {
        headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...CODE_CLIENT, claims: {} }).replace('"claims":{}', '"claims":{"__proto__":"user.email"}'),
      });
      expect(proto.status, proto.text).to.be.oneOf([400, 422]);
    });
  });
});
