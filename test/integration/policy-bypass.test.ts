// Attempts to get past access policies: a query standing in for what the router
// derives, a second spelling of a path, introspecting others' tokens, asking for
// audiences and scopes beyond what a client was granted.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic, boxForSuite } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('access policies cannot be bypassed', function () {
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  /** A client with `policy` as its only AccessPolicy, and a token of it. */
  async function restricted(
    id: string,
    policy: Record<string, unknown> | undefined,
    client: Record<string, unknown> = {},
  ): Promise<{ token: string; secret: string }> {
    const { secret } = await box.addClient(id, client, { policy: false });
    if (policy) {
      const res = await box.json('PUT', `/AccessPolicy/${id}-policy`, { ...policy, link: [{ id, resourceType: 'Client' }] }, root);
      expect(res.status, res.text).to.be.oneOf([200, 201]);
    }
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    expect(res.status, res.text).to.equal(200);
    return { token: res.body.access_token, secret };
  }

  describe("the request object is the server's word", function () {
    let token: string;
    before(async function () {
      // It writes the policy team-policy of the app team (which it may write: a box-API policy is not its to write).
      ({ token } = await restricted('team-writer', {
        engine: 'matcho',
        matcho: { params: { 'resource/type': { $enum: ['AccessPolicy', 'App'] }, 'resource/id': { $enum: ['team-policy', 'team'] } } },
      }));
    });

    it('a query parameter cannot supply resource/id: 400, and nothing is written', async function () {
      const evil = { id: 'evil-allow', engine: 'allow', link: [{ id: 'team-writer', resourceType: 'Client' }] };
      expect((await box.json('POST', '/AccessPolicy', evil, token)).status).to.equal(403);
      const smuggled = await box.json('POST', '/AccessPolicy?resource/id=team-policy', evil, token);
      expect(smuggled.status).to.equal(400);
      expect(smuggled.body.error).to.equal('invalid_request');
      expect(smuggled.body.error_description).to.include('resource/id');
      const encoded = await box.json('POST', '/AccessPolicy?resource%2Fid=team-policy', evil, token);
      expect(encoded.status).to.equal(400);
      expect((await box.json('GET', '/AccessPolicy/evil-allow', undefined, root)).status).to.equal(404);
      // The token is still only what its policy says.
      expect((await box.json('GET', '/Client', undefined, token)).status).to.equal(403);
    });

    it("the route's own id is what the policy tests", async function () {
      const own = await box.json('PUT', '/AccessPolicy/team-policy', { engine: 'matcho', app: 'team', matcho: { uri: '/nothing' } }, token);
      expect(own.status).to.equal(201);
      expect((await box.json('PUT', '/AccessPolicy/other-policy', { engine: 'allow' }, token)).status).to.equal(403);
    });

    it('resource/type cannot be supplied either, nor resource/id on /users', async function () {
      const users = await box.json('GET', '/users?resource/id=1', undefined, root);
      expect(users.status).to.equal(400);
      const type = await box.json('GET', '/Client?resource/type=AccessPolicy', undefined, root);
      expect(type.status).to.equal(400);
    });

    it('query parameters stay visible to policies under their own names', async function () {
      const { token: searcher } = await restricted('searcher', {
        engine: 'matcho',
        matcho: { 'request-method': 'get', uri: '/Client', params: { grant_types: 'implicit' } },
      });
      expect((await box.json('GET', '/Client?grant_types=implicit', undefined, searcher)).status).to.equal(200);
      expect((await box.json('GET', '/Client', undefined, searcher)).status).to.equal(403);
    });
  });

  describe('one path, one meaning', function () {
    let token: string;
    before(async function () {
      ({ token } = await restricted('no-policies', {
        engine: 'json-schema',
        schema: { type: 'object', properties: { uri: { type: 'string', not: { pattern: '^/AccessPolicy' } } } },
      }));
    });

    it('the policy denies /AccessPolicy', async function () {
      expect((await box.json('GET', '/AccessPolicy/root-allow', undefined, token)).status).to.equal(403);
      expect((await box.json('GET', '/Client/no-policies', undefined, token)).status).to.equal(200);
    });

    it('another case of the path is no route at all (404), and writes nothing', async function () {
      expect((await box.json('GET', '/accesspolicy/root-allow', undefined, token)).status).to.equal(404);
      const put = await box.json('PUT', '/ACCESSPOLICY/x', { engine: 'allow' }, token);
      expect(put.status).to.equal(404);
      expect((await box.json('GET', '/AccessPolicy/x', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/client/no-policies', undefined, token)).status).to.equal(404);
    });

    it('trailing slashes and doubled slashes are not aliases', async function () {
      expect((await box.json('GET', '/Client/', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '//Client', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/Client//root', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/Client/root/', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/Client/root', undefined, root)).status).to.equal(200);
    });
  });

  describe('introspection is scoped', function () {
    let own: { token: string; secret: string };
    before(async function () {
      own = await restricted('nosy', undefined, { auth: { client_credentials: { refresh_token: true } } });
    });

    const introspect = (secret: string, token: string, id = 'nosy') =>
      box.form('/auth/introspect', { token }, { Authorization: basic(id, secret) });

    it("a client without a policy sees its own tokens, and nobody else's", async function () {
      expect((await introspect(own.secret, own.token)).body).to.include({ active: true, client_id: 'nosy' });
      const rootsToken = await introspect(own.secret, root);
      expect(rootsToken.status).to.equal(200);
      expect(rootsToken.body).to.deep.equal({ active: false });
      const { secret } = await box.addClient('refresher', { auth: { client_credentials: { refresh_token: true } } }, { policy: false });
      const issued = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('refresher', secret) });
      expect((await introspect(own.secret, issued.body.refresh_token)).body).to.deep.equal({ active: false });
      expect((await introspect(secret, issued.body.refresh_token, 'refresher')).body).to.include({ active: true });
    });

    it("an AccessPolicy that allows introspection lets a client see others' tokens", async function () {
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/nosy-introspects-root',
        {
          engine: 'matcho',
          link: [{ id: 'nosy', resourceType: 'Client' }],
          matcho: { uri: '/auth/introspect', params: { 'token/client': 'root' } },
        },
        root,
      );
      expect(policy.status).to.equal(201);
      expect((await introspect(own.secret, root)).body).to.include({ active: true, client_id: 'root' });
      const { token: other } = await restricted('bystander', undefined);
      expect((await introspect(own.secret, other)).body).to.deep.equal({ active: false });
    });
  });

  describe('audience and scope are granted, not taken', function () {
    let secret: string;
    before(async function () {
      ({ secret } = await restricted(
        'limited',
        { engine: 'allow' },
        {
          audience: ['https://orders.example', box.url],
          scope: ['orders:read', 'orders:write'],
          auth: { client_credentials: { token_format: 'jwt', refresh_token: true } },
        },
      ));
    });

    const ask = (params: Record<string, string>, id = 'limited', s = secret) =>
      box.form('/auth/token', { grant_type: 'client_credentials', ...params }, { Authorization: basic(id, s) });

    it('what the lists hold is granted', async function () {
      const res = await ask({ audience: 'https://orders.example', scope: 'orders:read orders:write' });
      expect(res.status, res.text).to.equal(200);
      expect(decodeJwt(res.body.access_token)).to.include({ aud: 'https://orders.example', scope: 'orders:read orders:write' });
    });

    it('an audience beyond the list is invalid_target, a scope beyond it invalid_scope', async function () {
      const aud = await ask({ audience: 'https://payments.example' });
      expect(aud.status).to.equal(400);
      expect(aud.body.error).to.equal('invalid_target');
      const scope = await ask({ scope: 'orders:read admin' });
      expect(scope.status).to.equal(400);
      expect(scope.body.error).to.equal('invalid_scope');
      expect(scope.body.error_description).to.include("'admin'");
    });

    it('values are bounded, for clients with and without lists', async function () {
      const { secret: open } = await box.addClient('open', {}, { policy: false });
      const huge = await ask({ audience: 'a'.repeat(250 * 1024) }, 'open', open);
      expect(huge.status).to.be.oneOf([400, 413]);
      const long = await ask({ audience: `https://${'a'.repeat(600)}` }, 'open', open);
      expect(long.status).to.equal(400);
      expect(long.body.error).to.equal('invalid_target');
      const longScope = await ask({ scope: 's'.repeat(200) }, 'open', open);
      expect(longScope.body.error).to.equal('invalid_scope');
      const badScope = await ask({ scope: 'quote"d' }, 'open', open);
      expect(badScope.body.error).to.equal('invalid_scope');
      // Without lists, any bounded value is granted, as before.
      expect((await ask({ audience: 'https://payments.example', scope: 'x y' }, 'open', open)).status).to.equal(200);
    });

    it('the lists are validated like every other field', async function () {
      const bad = await box.json(
        'PUT',
        '/Client/bad-lists',
        { grant_types: ['client_credentials'], secret: 'secret-123', audience: 'one', scope: ['a b'] },
        root,
      );
      expect(bad.status).to.equal(422);
      expect(bad.body.errors).to.have.keys('audience', 'scope.0');
    });

    it('a refresh may narrow the scope, never widen it, and stays within the lists', async function () {
      const first = await ask({ scope: 'orders:read' });
      const widen = await box.form('/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'limited',
        refresh_token: first.body.refresh_token,
        scope: 'orders:read orders:write',
      });
      expect(widen.status).to.equal(400);
      expect(widen.body.error).to.equal('invalid_scope');
      const same = await box.form('/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'limited',
        refresh_token: first.body.refresh_token,
      });
      expect(same.status).to.equal(200);
      expect(decodeJwt(same.body.access_token).scope).to.equal('orders:read');
      // The list shrinks: the refresh token no longer carries what it held.
      const shrunk = await box.json(
        'PUT',
        '/Client/limited',
        {
          grant_types: ['client_credentials'],
          audience: ['https://orders.example'],
          scope: ['orders:write'],
          auth: { client_credentials: { token_format: 'jwt', refresh_token: true } },
        },
        root,
      );
      expect(shrunk.status).to.equal(200);
      const after = await box.form('/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'limited',
        refresh_token: first.body.refresh_token,
      });
      expect(after.body.error).to.equal('invalid_scope');
    });

    it("the box's own API refuses a token meant for another audience; sign-out and revocation still close it", async function () {
      const { secret: s } = await box.addClient('aud-user', {});
      const payments = await ask({ audience: 'https://payments.example' }, 'aud-user', s);
      const refused = await box.json('GET', '/Client/aud-user', undefined, payments.body.access_token);
      expect(refused.status).to.equal(401);
      expect(refused.body.error).to.equal('invalid_token');
      expect(refused.body.error_description).to.include('https://payments.example');
      const mine = await ask({ audience: box.url }, 'aud-user', s);
      expect((await box.json('GET', '/Client/aud-user', undefined, mine.body.access_token)).status).to.equal(200);
      const none = await ask({}, 'aud-user', s);
      expect((await box.json('GET', '/Client/aud-user', undefined, none.body.access_token)).status).to.equal(200);
      const signOut = await box.json('DELETE', '/Session', undefined, payments.body.access_token);
      expect(signOut.status).to.equal(200);
      expect(signOut.body.active).to.equal(false);
      const other = await ask({ audience: 'https://payments.example' }, 'aud-user', s);
      expect((await box.form('/auth/revoke', { token: other.body.access_token }, { Authorization: basic('aud-user', s) })).status).to.equal(
        200,
      );
      expect(
        (await box.form('/auth/introspect', { token: other.body.access_token }, { Authorization: basic('aud-user', s) })).body.active,
      ).to.equal(false);
    });

    it('the authorize endpoint refuses scopes beyond the list, back at the client', async function () {
      const cb = 'https://app.example/cb';
      await box.json(
        'PUT',
        '/Client/scoped-spa',
        {
          grant_types: ['authorization_code'],
          scope: ['profile'],
          auth: { authorization_code: { redirect_uri: cb } },
        },
        root,
      );
      const res = await box.request(
        'GET',
        `/auth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: 'scoped-spa',
          redirect_uri: cb,
          scope: 'profile admin',
          state: 's',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        })}`,
      );
      expect(res.status).to.equal(302);
      const loc = new URL(res.headers.get('location')!);
      expect(loc.searchParams.get('error')).to.equal('invalid_scope');
      expect(loc.searchParams.get('state')).to.equal('s');
    });
  });

  describe('a secret written is visible to policies as written (true), never as its value', function () {
    const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
    const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
    let admin: { id: number };
    let helpdesk: string;

    /** A json-schema policy of the box's API allowing `method` on routes of `type` whose body `body` accepts. */
    const bodyPolicy = (method: string, type: string, body: Record<string, unknown>) => ({
      engine: 'json-schema',
      schema: {
        required: ['request-method', 'params', 'body'],
        properties: {
          'request-method': { const: method },
          params: { required: ['resource/type'], properties: { 'resource/type': { const: type } } },
          body,
        },
      },
    });
    const signsIn = async (email: string, password: string): Promise<number> => (await new FormAgent(box).signIn(email, password)).status;

    before(async function () {
      const admins = (await box.json('GET', '/groups', undefined, root)).body.find((g: { name: string }) => g.name === 'admins');
      const made = await box.json(
        'POST',
        '/users',
        { email: 'chief@corp.example', password: 'chief-password-1', 'group-ids': [admins.id] },
        root,
      );
      expect(made.status, made.text).to.equal(201);
      admin = made.body;
      // The helpdesk: it may turn people on and off, and nothing else.
      ({ token: helpdesk } = await restricted(
        'helpdesk',
        bodyPolicy('put', 'users', {
          type: 'object',
          additionalProperties: false,
          required: ['active'],
          properties: { active: { type: 'boolean' } },
        }),
      ));
    });

    it("a helpdesk allowed {active} is refused {active, password}: the administrator's password stays", async function () {
      expect((await box.json('PUT', `/users/${admin.id}`, { active: true }, helpdesk)).status).to.equal(200);
      for (const password of ['helpdesk-owns-you', null, '']) {
        const res = await box.json('PUT', `/users/${admin.id}`, { active: false, password }, helpdesk);
        expect(res.status, res.text).to.equal(403);
        expect(res.body.error).to.equal('access_denied');
      }
      expect((await box.json('PUT', `/users/${admin.id}`, { active: false, 'group-ids': [] }, helpdesk)).status).to.equal(403);
      expect(await signsIn('chief@corp.example', 'helpdesk-owns-you')).not.to.equal(303);
      expect(await signsIn('chief@corp.example', 'chief-password-1')).to.equal(303);
      const other = await box.json('POST', '/users', { email: 'temp@corp.example', password: 'temp-password-1' }, root);
      const off = await box.json('PUT', `/users/${other.body.id}`, { active: false }, helpdesk);
      expect(off.status, off.text).to.equal(200);
      expect(off.body.status).not.to.equal('active');
    });

    it('a policy allows a password write by saying so ("password": {"const": true}), and never sees the value', async function () {
      const { token: resetter } = await restricted(
        'password-desk',
        bodyPolicy('put', 'users', {
          type: 'object',
          additionalProperties: false,
          required: ['password'],
          properties: { password: { const: true } },
        }),
      );
      const person = await box.json('POST', '/users', { email: 'forgetful@corp.example', password: 'forgetful-password-1' }, root);
      const res = await box.json('PUT', `/users/${person.body.id}`, { password: 'remembered-password-1' }, resetter);
      expect(res.status, res.text).to.equal(200);
      expect(await signsIn('forgetful@corp.example', 'remembered-password-1')).to.equal(303);
      // A policy testing the value never matches: it is not there to test.
      const { token: peeker } = await restricted(
        'password-peeker',
        bodyPolicy('put', 'users', { required: ['password'], properties: { password: { const: 'remembered-password-2' } } }),
      );
      const peeked = await box.json('PUT', `/users/${person.body.id}`, { password: 'remembered-password-2' }, peeker);
      expect(peeked.status, peeked.text).to.equal(403);
    });

    describe('on the SCIM door, however SCIM names the password', function () {
      let person: string;
      let directory: string;
      const scim = (method: string, path: string, body: unknown, token: string) =>
        box.request(method, `/scim/v2${path}`, {
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/scim+json' },
          body: JSON.stringify(body),
        });
      const patch = (token: string, ...Operations: unknown[]) =>
        scim('PATCH', `/Users/${person}`, { schemas: [PATCH_OP], Operations }, token);

      before(async function () {
        // A directory that may only turn people on and off, by PATCH.
        const op = {
          type: 'object',
          additionalProperties: false,
          required: ['op'],
          properties: {
            op: { enum: ['replace', 'Replace'] },
            path: { enum: ['active'] },
            value: {
              oneOf: [{ type: 'boolean' }, { type: 'object', additionalProperties: false, properties: { active: { type: 'boolean' } } }],
            },
          },
        };
        ({ token: directory } = await restricted(
          'active-directory',
          bodyPolicy('patch', 'scim', { type: 'object', properties: { Operations: { type: 'array', items: op } } }),
        ));
        const made = await scim(
          'POST',
          '/Users',
          { schemas: [USER], userName: 'scimmed@corp.example', password: 'scimmed-password-1' },
          root,
        );
        expect(made.status, made.text).to.equal(201);
        person = JSON.parse(made.text).id;
      });

      it('a PATCH of active passes; a password by path, by value object or by URN is refused', async function () {
        const on = await patch(directory, { op: 'replace', path: 'active', value: true });
        expect(on.status, on.text).to.equal(200);
        const attempts = [
          { op: 'replace', path: 'PassWord', value: 'directory-owns-you' },
          { op: 'replace', path: `${USER}:password`, value: 'directory-owns-you' },
          { op: 'replace', value: { active: true, Password: 'directory-owns-you' } },
          { op: 'replace', value: { active: true, [`${USER}:password`]: 'directory-owns-you' } },
        ];
        for (const attempt of attempts) {
          const res = await patch(directory, attempt);
          expect(res.status, `${JSON.stringify(attempt)}: ${res.text}`).to.equal(403);
        }
        expect(await signsIn('scimmed@corp.example', 'scimmed-password-1')).to.equal(303);
      });

      it('a PUT or POST with Password in any case reads "password": true', async function () {
        const { token: provisioner } = await restricted(
          'password-directory',
          bodyPolicy('put', 'scim', { required: ['password'], properties: { password: { const: true } } }),
        );
        const res = await scim(
          'PUT',
          `/Users/${person}`,
          { schemas: [USER], userName: 'scimmed@corp.example', PASSWORD: 'scimmed-password-2' },
          provisioner,
        );
        expect(res.status, res.text).to.equal(200);
        expect(await signsIn('scimmed@corp.example', 'scimmed-password-2')).to.equal(303);
        const { token: patcher } = await restricted(
          'password-patcher',
          bodyPolicy('patch', 'scim', {
            properties: {
              Operations: { items: { required: ['path', 'value'], properties: { path: { const: 'password' }, value: { const: true } } } },
            },
          }),
        );
        const patched = await patch(patcher, { op: 'replace', path: `${USER}:Password`, value: 'scimmed-password-3' });
        expect(patched.status, patched.text).to.equal(200);
        expect(await signsIn('scimmed@corp.example', 'scimmed-password-3')).to.equal(303);
      });

      it('a policy testing the value never matches: it is not there to test', async function () {
        const { token: peeker } = await restricted(
          'password-peeking-directory',
          bodyPolicy('patch', 'scim', {
            properties: { Operations: { items: { required: ['value'], properties: { value: { const: 'scimmed-password-4' } } } } },
          }),
        );
        const peeked = await patch(peeker, { op: 'replace', path: 'password', value: 'scimmed-password-4' });
        expect(peeked.status, peeked.text).to.equal(403);
        expect(await signsIn('scimmed@corp.example', 'scimmed-password-3')).to.equal(303);
      });
    });
  });
});
