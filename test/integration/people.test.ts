// The users and groups REST API (spec §4.5, §7), and policies for people.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { userToken } from '../support/user-token.js';

describe('users and groups', function () {
  let box: Box;
  let token: string;
  let q: string;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password' } });
    token = await box.rootToken();
    q = `access_token=${encodeURIComponent(token)}`;
  });
  after(async function () {
    await box?.stop();
  });

  const post = (path: string, body: unknown) => box.json('POST', `${path}?${q}`, body);
  const put = (path: string, body: unknown) => box.json('PUT', `${path}?${q}`, body);
  const get = (path: string) => box.json('GET', `${path}${path.includes('?') ? '&' : '?'}${q}`);
  const del = (path: string) => box.json('DELETE', `${path}?${q}`);

  describe('/users', function () {
    it('POST → 201 {id, email, email_verified, data, status}: never the password hash; the password signs in', async function () {
      const res = await post('/users', { email: 'ann@example.com', password: 'ann-password', data: '{"team":"blue"}' });
      expect(res.status).to.equal(201);
      expect(res.body).to.have.keys('id', 'email', 'email_verified', 'must_verify_email', 'data', 'status');
      expect(res.body.id).to.be.a('number');
      expect(res.body).to.include({ email: 'ann@example.com', data: '{"team":"blue"}', status: null });
      expect((await new FormAgent(box).signIn('ann@example.com', 'ann-password')).status).to.equal(303);
    });

    it('GET /users → array with group-ids, groups, data, email, email_verified, active, status, id, and no password', async function () {
      const res = await get('/users');
      expect(res.status).to.equal(200);
      expect(res.body).to.be.an('array');
      for (const user of res.body) {
        expect(user).to.have.keys('id', 'email', 'email_verified', 'must_verify_email', 'active', 'data', 'status', 'group-ids', 'groups');
      }
      expect(res.headers.get('x-total-count')).to.equal(String(res.body.length));
    });

    it('GET /users/<id> → the user with groups, never the password hash; 404 for an unknown id', async function () {
      const { body: created } = await post('/users', { email: 'bo@example.com', password: 'bo-password' });
      const res = await get(`/users/${created.id}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ id: created.id, email: 'bo@example.com', data: null, status: null });
      expect(res.body.groups).to.deep.equal([]);
      expect(res.body).not.to.have.property('password');
      expect((await get('/users/999999')).status).to.equal(404);
      expect((await get('/users/abc')).status).to.equal(404);
    });

    it("PUT changes fields; a new password is re-hashed and closes the user's sessions", async function () {
      const { body: created } = await post('/users', { email: 'cy@example.com', password: 'cy-password-1' });
      const userTok = await userToken(box, created.id);
      await box.json('PUT', `/AccessPolicy/cy?${q}`, { engine: 'allow', link: [{ id: String(created.id), resourceType: 'User' }] });
      expect((await box.json('GET', `/users/${created.id}?access_token=${userTok}`)).status).to.equal(200);
      const renamed = await put(`/users/${created.id}`, { email: 'cy2@example.com', data: '[1,2]' });
      expect(renamed.status).to.equal(200);
      expect(renamed.body).to.include({ email: 'cy2@example.com', data: '[1,2]' });
      expect(renamed.body).not.to.have.property('password');
      expect((await box.json('GET', `/users/${created.id}?access_token=${userTok}`)).status).to.equal(200);
      const repassed = await put(`/users/${created.id}`, { password: 'cy-password-2' });
      expect(repassed.body).not.to.have.property('password');
      expect((await new FormAgent(box).signIn('cy2@example.com', 'cy-password-2')).status).to.equal(303);
      expect((await box.json('GET', `/users/${created.id}?access_token=${userTok}`)).status).to.equal(401);
    });

    it('DELETE → 200 with the deleted user; then 404', async function () {
      const { body: created } = await post('/users', { email: 'dee@example.com', password: 'dee-password' });
      const res = await del(`/users/${created.id}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ id: created.id, email: 'dee@example.com' });
      expect((await get(`/users/${created.id}`)).status).to.equal(404);
      expect((await del(`/users/${created.id}`)).status).to.equal(404);
    });

    it('pages with _count/_page and filters by email', async function () {
      for (const n of [1, 2, 3]) await post('/users', { email: `page${n}@example.com`, password: 'page-password' });
      const byEmail = await get('/users?email=PAGE2@example.com');
      expect(byEmail.body.map((u: any) => u.email)).to.deep.equal(['page2@example.com']);
      const part = await get('/users?q=page&_count=2&_page=2');
      expect(part.headers.get('x-total-count')).to.equal('3');
      expect(part.body.map((u: any) => u.email)).to.deep.equal(['page3@example.com']);
    });

    describe('email_verified', function () {
      it("an administrator's new user is verified unless the request says false; every answer shows it", async function () {
        const vouched = await post('/users', { email: 'vouched@example.com', password: 'vouched-password' });
        expect(vouched.body.email_verified).to.equal(true);
        const unvouched = await post('/users', { email: 'unvouched@example.com', password: 'unvouched-password', email_verified: false });
        expect(unvouched.status, unvouched.text).to.equal(201);
        expect(unvouched.body.email_verified).to.equal(false);
        expect((await get(`/users/${unvouched.body.id}`)).body.email_verified).to.equal(false);
        expect((await get('/users?email=unvouched@example.com')).body[0].email_verified).to.equal(false);
        expect((await get('/users?email=vouched@example.com')).body[0].email_verified).to.equal(true);
      });

      it('never turns true unasked: an unrelated edit, the same email or a new one leave an unverified address so', async function () {
        const group = (await post('/groups', { name: 'verifiers' })).body;
        const { body: user } = await post('/users', { email: 'vera@example.com', password: 'vera-password', email_verified: false });
        const edits = [
          { email: 'vera@example.com', data: null, 'group-ids': [group.id] }, // what the admin UI sends on an unrelated edit
          { email: 'VERA@example.com' },
          { email: 'vera.new@example.com' },
          { password: 'vera-password-2' },
        ];
        for (const edit of edits) {
          const res = await put(`/users/${user.id}`, edit);
          expect(res.status, res.text).to.equal(200);
          expect(res.body.email_verified, JSON.stringify(edit)).to.equal(false);
        }
        expect((await get(`/users/${user.id}`)).body.email_verified).to.equal(false);
        expect((await put(`/users/${user.id}`, { email_verified: true })).body.email_verified).to.equal(true);
        // The same address in another case is not a new one; a new one is unverified until its link or a vouching.
        expect((await put(`/users/${user.id}`, { email: 'VERA.new@example.com', 'group-ids': [] })).body.email_verified).to.equal(true);
        expect((await put(`/users/${user.id}`, { email: 'vera.other@example.com', 'group-ids': [] })).body.email_verified).to.equal(false);
        expect((await put(`/users/${user.id}`, { email: 'vera.third@example.com', email_verified: true })).body.email_verified).to.equal(
          true,
        );
        expect((await put(`/users/${user.id}`, { email_verified: false })).body.email_verified).to.equal(false);
        expect((await get(`/users/${user.id}`)).body.email_verified).to.equal(false);
      });

      it('must be true or false: anything else is 422 and changes nothing', async function () {
        const { body: user } = await post('/users', { email: 'strict@example.com', password: 'strict-password' });
        for (const value of ['true', 1, null, 'yes']) {
          const created = await post('/users', { email: 'strict2@example.com', password: 'strict-password', email_verified: value });
          expect(created.status, JSON.stringify(value)).to.equal(422);
          expect(created.body.errors).to.deep.equal({ email_verified: ['must be true or false'] });
          const changed = await put(`/users/${user.id}`, { email_verified: value });
          expect(changed.status, JSON.stringify(value)).to.equal(422);
          expect(changed.body.errors).to.deep.equal({ email_verified: ['must be true or false'] });
        }
        expect((await get('/users?email=strict2@example.com')).body).to.deep.equal([]);
        expect((await get(`/users/${user.id}`)).body.email_verified).to.equal(true);
      });
    });

    describe('422 {entity, errors}', function () {
      async function rejected(body: unknown, method = 'POST', path = '/users') {
        const before = (await get('/users')).headers.get('x-total-count');
        const res = method === 'POST' ? await post(path, body) : await put(path, body);
        expect(res.status, res.text).to.equal(422);
        expect(res.body).to.have.keys('entity', 'errors');
        expect((await get('/users')).headers.get('x-total-count')).to.equal(before);
        return res.body;
      }

      it('a taken email, also when it differs in case', async function () {
        await post('/users', { email: 'taken@example.com', password: 'taken-password' });
        const body = await rejected({ email: 'Taken@Example.com', password: 'other-password', data: null });
        expect(body.errors).to.deep.equal({ email: ['email is already taken'] });
        expect(body.entity).to.deep.equal({ email: 'Taken@Example.com', data: null }); // the password is never echoed
      });

      it('missing and invalid fields, all at once', async function () {
        const body = await rejected({ data: 'not json' });
        expect(body.errors).to.have.keys('email', 'password', 'data');
        expect(body.errors.data).to.deep.equal(['must be valid JSON']);
        const invalid = await rejected({ email: 'no-at-sign', password: 'short', data: { a: 1 } });
        expect(invalid.errors.email).to.deep.equal(['is not a valid email address']);
        expect(invalid.errors.password[0]).to.match(/at least 8/);
        expect(invalid.errors.data[0]).to.match(/string holding JSON/);
      });

      it('over-long fields', async function () {
        const body = await rejected({
          email: `${'a'.repeat(250)}@example.com`,
          password: 'x'.repeat(2000),
          data: JSON.stringify('y'.repeat(70000)),
        });
        expect(body.errors).to.have.keys('email', 'password', 'data');
      });

      it('unknown group ids, unknown fields; on PUT too', async function () {
        const body = await rejected({ email: 'grp@example.com', password: 'grp-password', 'group-ids': [424242] });
        expect(body.errors['group-ids'][0]).to.match(/424242/);
        expect((await get('/users?email=grp@example.com')).body).to.deep.equal([]);
        const unknown = await rejected({ email: 'f@example.com', password: 'f-password', role: 'admin' });
        expect(unknown.errors).to.deep.equal({ role: ['is not a known field'] });
        const { body: created } = await post('/users', { email: 'put422@example.com', password: 'put-password' });
        const onPut = await rejected({ email: 'taken@example.com' }, 'PUT', `/users/${created.id}`);
        expect(onPut.errors).to.deep.equal({ email: ['email is already taken'] });
      });
    });
  });

  describe('/groups', function () {
    it('CRUD with {id, name, description, require_second_factor, created_at}; names are unique', async function () {
      const created = await post('/groups', { name: 'editors', description: 'They edit' });
      expect(created.status).to.equal(201);
      expect(created.body).to.have.keys('id', 'name', 'description', 'require_second_factor', 'created_at');
      expect(created.body).to.include({ name: 'editors', description: 'They edit' });
      expect((await get(`/groups/${created.body.id}`)).body.name).to.equal('editors');
      expect((await get('/groups')).body.map((g: any) => g.name)).to.include('editors');
      const dup = await post('/groups', { name: 'Editors' });
      expect(dup.status).to.equal(422);
      expect(dup.body.errors).to.deep.equal({ name: ['name is already taken'] });
      const missing = await post('/groups', { description: 'no name' });
      expect(missing.body.errors).to.deep.equal({ name: ['is required'] });
      const renamed = await put(`/groups/${created.body.id}`, { description: 'They edit things' });
      expect(renamed.body).to.include({ name: 'editors', description: 'They edit things' });
      expect((await del(`/groups/${created.body.id}`)).body.name).to.equal('editors');
      expect((await get(`/groups/${created.body.id}`)).status).to.equal(404);
    });

    it('users join groups through group-ids; deleting a group removes the memberships', async function () {
      const group = (await post('/groups', { name: 'readers' })).body;
      const user = (await post('/users', { email: 'reader@example.com', password: 'reader-password', 'group-ids': [group.id] })).body;
      const read = await get(`/users/${user.id}`);
      expect(read.body.groups).to.deep.equal([{ id: group.id, name: 'readers' }]);
      expect(read.body['group-ids']).to.deep.equal([group.id]);
      await del(`/groups/${group.id}`);
      expect((await get(`/users/${user.id}`)).body.groups).to.deep.equal([]);
    });
  });

  describe('policies for people', function () {
    // A person's token acts within what both the person and its client were granted
    // (docs/concepts/access-control.md): this client may act for its users on anything.
    before(async function () {
      await box.json('PUT', `/Client/root-less?${q}`, {
        grant_types: ['implicit'],
        auth: { implicit: { redirect_uri: 'https://x.example/cb' } },
      });
      await box.json('PUT', `/AccessPolicy/root-less-acts-for-users?${q}`, {
        engine: 'allow',
        link: [{ id: 'root-less', resourceType: 'Client' }],
      });
    });

    it('a group-linked policy gives access to its members; leaving the group takes it away at once', async function () {
      const group = (await post('/groups', { name: 'auditors' })).body;
      await box.json('PUT', `/AccessPolicy/auditors-read?${q}`, {
        engine: 'matcho',
        link: [{ id: String(group.id), resourceType: 'Group' }],
        matcho: { 'request-method': 'get' },
      });
      const user = (await post('/users', { email: 'audrey@example.com', password: 'audrey-password', 'group-ids': [group.id] })).body;
      const t = await userToken(box, user.id, 'root-less');
      expect((await box.json('GET', `/users?access_token=${t}`)).status).to.equal(200);
      expect((await box.json('POST', `/groups?access_token=${t}`, { name: 'nope' })).status).to.equal(403);
      await put(`/users/${user.id}`, { 'group-ids': [] });
      expect((await box.json('GET', `/users?access_token=${t}`)).status).to.equal(403);
    });

    it('a Group link may name the group; the admin user is bootstrapped in `admins`, allowed everything', async function () {
      const admins = (await get('/users?email=boss@example.com')).body[0];
      expect(admins.groups.map((g: any) => g.name)).to.deep.equal(['admins']);
      const policy = (await box.json('GET', '/AccessPolicy/admins-allow', undefined, token)).body;
      expect(policy.link).to.deep.equal([{ id: 'admins', resourceType: 'Group' }]);
      expect((await new FormAgent(box).signIn('boss@example.com', 'boss-password')).status).to.equal(303);
      const t = await userToken(box, admins.id, 'root-less');
      expect((await box.json('GET', '/Client', undefined, t)).status).to.equal(200);
    });

    it("a user token is allowed by the user's own policies only where its client may act for its users too", async function () {
      const user = (await post('/users', { email: 'solo@example.com', password: 'solo-password' })).body;
      const t = await userToken(box, user.id, 'root-less');
      expect((await box.json('GET', '/groups', undefined, t)).status).to.equal(403);
      await box.json('PUT', `/AccessPolicy/solo?${q}`, { engine: 'allow', link: [{ id: String(user.id), resourceType: 'User' }] });
      expect((await box.json('GET', '/groups', undefined, t)).status).to.equal(200);
      // The same person through a client no policy names: the client has not been granted it.
      await box.json('PUT', `/Client/policyless?${q}`, {
        grant_types: ['implicit'],
        auth: { implicit: { redirect_uri: 'https://x.example/cb' } },
      });
      const viaOther = await box.json('GET', '/groups', undefined, await userToken(box, user.id, 'policyless'));
      expect(viaOther.status).to.equal(403);
      expect(viaOther.body.error_description).to.match(/client 'policyless' may not GET \/groups for its users/);
    });
  });
});

describe('a person who signed up themselves (BOXAUTH_REGISTRATION=true)', function () {
  const CALLBACK = 'https://rp.example/callback';
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true' } });
    root = await box.rootToken();
    const rp = await box.json(
      'PUT',
      '/Client/rp',
      { grant_types: ['implicit'], first_party: true, auth: { implicit: { redirect_uri: CALLBACK } } },
      root,
    );
    expect(rp.status, rp.text).to.equal(201);
  });
  after(async function () {
    await box?.stop();
  });

  /** The ID token an app gets for this browser's person (implicit id_token: no code to exchange). */
  async function idToken(browser: FormAgent): Promise<Record<string, unknown>> {
    const query = { response_type: 'id_token', client_id: 'rp', redirect_uri: CALLBACK, scope: 'openid email', nonce: 'n-1' };
    const res = await browser.get(`/auth/authorize?${new URLSearchParams(query)}`);
    expect(res.status, res.text.slice(0, 300)).to.equal(302);
    return decodeJwt(new URLSearchParams(new URL(res.headers.get('location')!).hash.slice(1)).get('id_token')!);
  }

  it('is not vouched for when an administrator then edits something else, with the unchanged email', async function () {
    const browser = new FormAgent(box);
    const page = await browser.get('/auth/sign-up');
    const signedUp = await browser.post('/auth/sign-up', {
      ...hiddenFields(page.text),
      email: 'ceo@victim.example',
      password: 'not-the-ceo-1',
    });
    expect(signedUp.status, signedUp.text).to.equal(303);
    const [self] = (await box.json('GET', '/users?email=ceo@victim.example', undefined, root)).body;
    expect(self.email_verified).to.equal(false);
    expect((await idToken(browser)).email_verified).to.equal(false);

    // An administrator adds the account to a group in the admin UI, which sends every field it shows.
    const staff = (await box.json('POST', '/groups', { name: 'staff' }, root)).body;
    const edited = await box.json('PUT', `/users/${self.id}`, { email: self.email, data: null, 'group-ids': [staff.id] }, root);
    expect(edited.status, edited.text).to.equal(200);
    expect(edited.body.email_verified).to.equal(false);
    expect((await box.json('GET', `/users/${self.id}`, undefined, root)).body.email_verified).to.equal(false);
    const claims = await idToken(browser);
    expect(claims).to.include({ email: 'ceo@victim.example', email_verified: false });
  });
});
