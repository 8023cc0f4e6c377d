// What a policy knows about a person, and matcho references, over HTTP: the owner rule of the
// AuthZEN working group's Todo scenario ("editors may change only their own todos") at an app
// through the AuthZEN door, rules that read the person's data, SCIM attributes and upstream
// identities (an App's policies read them as the claims the App shapes of them: App.claims), and a
// person trying every door they have to change what such a rule reads.
import { expect } from 'chai';
import { Box, basic, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { linkDummyIdentity } from '../support/identities.js';
import { userToken } from '../support/user-token.js';
import { pepReadsPeople } from '../support/pep.js';

type Json = Record<string, any>;

describe('policies that read a person, and matcho references', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let rick: string;
  let morty: string;
  let pep: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));
  const put = (path: string, body: Json): Promise<JsonResponse> => box.json('PUT', path, body, root);

  before(async function () {
    const editors = (await box.json('POST', '/groups', { name: 'editors' }, root)).body.id;
    const user = async (email: string, more: Json): Promise<string> => {
      const res = await box.json('POST', '/users', { email, password: `${email}-password-1`, ...more }, root);
      expect(res.status, res.text).to.equal(201);
      return String(res.body.id);
    };
    rick = await user('rick@example.com', { 'group-ids': [editors], data: JSON.stringify({ team: 'blue' }) });
    morty = await user('morty@example.com', {});
    // What the App's policies may read of a person beyond their address and groups: its claims.
    const app = await put('/App/todo', {
      urls: ['https://todo.example'],
      claims: {
        team: 'user.data.team',
        title: 'user.scim.title',
        employee: 'user.scim.externalId',
        corp: 'user.identities.filter(i, i.provider == "corp").map(i, i.subject)',
      },
    });
    expect(app.status, app.text).to.equal(201);
    const owner = await put('/AccessPolicy/todo-own', {
      app: 'todo',
      engine: 'matcho',
      link: [{ id: 'editors', resourceType: 'Group' }],
      matcho: { 'request-method': 'can_update_todo', resource: { properties: { ownerID: '.user.id' } } },
    });
    expect(owner.status, owner.text).to.equal(201);
    const team = await put('/AccessPolicy/todo-team', {
      app: 'todo',
      engine: 'matcho',
      matcho: { 'request-method': 'can_read_team', resource: { properties: { team: '.user.claims.team' } } },
    });
    expect(team.status, team.text).to.equal(201);
    const { secret } = await box.addClient('todo-pep', {}, { policy: false });
    await put('/AccessPolicy/todo-pep-asks', {
      engine: 'matcho',
      link: [{ id: 'todo-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'post', uri: '/apps/todo/access/v1/evaluation' },
    });
    await pepReadsPeople(box, root, 'todo-pep');
    pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('todo-pep', secret) })).body
      .access_token;
  });

  const decision = async (subject: string, action: string, properties: Json): Promise<boolean> => {
    const res = await box.json(
      'POST',
      '/apps/todo/access/v1/evaluation',
      { subject: { type: 'user', id: subject }, resource: { type: 'todo', id: '1', properties }, action: { name: action } },
      pep,
    );
    expect(res.status, res.text).to.equal(200);
    return res.body.decision as boolean;
  };

  it('an owner rule: an editor may update their own todo, not another’s; nobody else may', async function () {
    expect(await decision(rick, 'can_update_todo', { ownerID: rick })).to.equal(true);
    expect(await decision(rick, 'can_update_todo', { ownerID: morty })).to.equal(false);
    expect(await decision(rick, 'can_update_todo', {})).to.equal(false);
    // Morty owns the todo but is no editor: the policy is linked to editors.
    expect(await decision(morty, 'can_update_todo', { ownerID: morty })).to.equal(false);
  });

  it('a rule on the person’s data: a missing value matches nothing, not even a missing value', async function () {
    expect(await decision(rick, 'can_read_team', { team: 'blue' })).to.equal(true);
    expect(await decision(rick, 'can_read_team', { team: 'red' })).to.equal(false);
    expect(await decision(morty, 'can_read_team', { team: 'blue' })).to.equal(false);
    expect(await decision(morty, 'can_read_team', {})).to.equal(false);
    // An administrator changes the data: the next decision reads it (the person's cache is dropped).
    expect((await box.json('PUT', `/users/${morty}`, { email: 'morty@example.com', data: '{"team":"red"}' }, root)).status).to.equal(200);
    expect(await decision(morty, 'can_read_team', { team: 'red' })).to.equal(true);
  });

  it('explain shows both values of a reference', async function () {
    const res = await box.json(
      'POST',
      '/apps/todo/access/v1/evaluation',
      {
        subject: { type: 'user', id: rick },
        resource: { type: 'todo', id: '1', properties: { ownerID: morty } },
        action: { name: 'can_update_todo' },
      },
      pep,
    );
    expect(res.body.decision).to.equal(false);
    // Kept a moment after the answer (api/decision/record.ts).
    const explained = await eventually('the refusal is kept', async () => {
      const found = await box.json('GET', `/authz/decisions/${res.headers.get('x-boxauth-decision')!}`, undefined, root);
      return found.status === 200 && found;
    });
    expect(explained.text).to.include(`resource.properties.ownerID: \\"${morty}\\" does not equal .user.id (\\"${rick}\\")`);
  });

  it('a reference to a field no request has is refused with 422 naming it, and nothing is stored', async function () {
    const res = await put('/AccessPolicy/todo-typo', { app: 'todo', engine: 'matcho', matcho: { host: '.todo.example' } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.errors.matcho[0]).to.include('matcho.host ".todo.example" starts with "."').and.include('{"$enum": [".todo.example"]}');
    expect((await box.json('GET', '/AccessPolicy/todo-typo', undefined, root)).status).to.equal(404);
    const literal = await put('/AccessPolicy/todo-literal', {
      app: 'todo',
      engine: 'matcho',
      matcho: { host: { $enum: ['.todo.example'] } },
    });
    expect(literal.status, literal.text).to.equal(201);
  });

  it('a rule on SCIM attributes and on upstream identities, as the directory and a link set them', async function () {
    await put('/AccessPolicy/todo-directory', {
      app: 'todo',
      engine: 'matcho',
      matcho: { 'request-method': 'can_admin', user: { claims: { title: 'Admin', employee: '.resource.properties.employee' } } },
    });
    await put('/AccessPolicy/todo-corp', {
      app: 'todo',
      engine: 'matcho',
      matcho: {
        'request-method': 'can_sync',
        user: { claims: { corp: { $contains: '.resource.properties.corpID' } } },
      },
    });
    expect(await decision(rick, 'can_admin', { employee: 'E-1' })).to.equal(false);
    const { secret } = await box.addClient('directory', {});
    const directory = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('directory', secret) }))
      .body.access_token;
    // The directory names Rick by his SCIM id (his public sub), found by his userName.
    const listed = await box.request('GET', `/scim/v2/Users?filter=${encodeURIComponent('userName eq "rick@example.com"')}`, {
      headers: { Authorization: `Bearer ${directory}` },
    });
    const [rickAtScim] = listed.body.Resources;
    const scim = await box.request('PUT', `/scim/v2/Users/${rickAtScim.id}`, {
      headers: { Authorization: `Bearer ${directory}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'rick@example.com',
        externalId: 'E-1',
        title: 'Admin',
      }),
    });
    expect(scim.status, scim.text).to.equal(200);
    expect(await decision(rick, 'can_admin', { employee: 'E-1' })).to.equal(true);
    expect(await decision(rick, 'can_admin', { employee: 'E-2' })).to.equal(false);

    const provider = await put('/IdentityProvider/corp', {
      type: 'oauth2',
      oauth2: {
        authorizationUrl: 'https://corp.example/authorize',
        tokenUrl: 'https://corp.example/token',
        userinfoUrl: 'https://corp.example/userinfo',
        clientId: 'box',
      },
      secret: 'corp-secret-123',
    });
    expect(provider.status, provider.text).to.equal(201);
    expect(await decision(rick, 'can_sync', { corpID: 'rick-at-corp' })).to.equal(false);
    // A link made by a sign-in at the provider (here straight into the database, by another
    // process): the change feed drops the cached person, so the next decisions read it.
    await linkDummyIdentity(box.databaseUrl!, Number(rick), 'corp', 'rick-at-corp');
    await eventually('the link is seen', async () => decision(rick, 'can_sync', { corpID: 'rick-at-corp' }));
    expect(await decision(rick, 'can_sync', { corpID: 'someone-else' })).to.equal(false);
    expect(await decision(morty, 'can_sync', { corpID: 'rick-at-corp' })).to.equal(false);
    // The provider removed takes its links with it, and the rule with them.
    expect((await box.json('DELETE', '/IdentityProvider/corp', undefined, root)).status).to.be.oneOf([200, 204]);
    await eventually('the link is gone', async () => !(await decision(rick, 'can_sync', { corpID: 'rick-at-corp' })));
  });

  it('a person cannot change what a policy reads about them through any door they have', async function () {
    // Their token on the box's API (a person's token through a client): no policy lets a person write
    // their own record, nor speak to the SCIM door.
    const own = await userToken(box, Number(morty));
    const data = JSON.stringify({ team: 'blue' });
    expect((await box.json('PUT', `/users/${morty}`, { email: 'morty@example.com', data }, own)).status).to.equal(403);
    const scim = await box.request('PATCH', `/scim/v2/Users/${morty}`, {
      headers: { Authorization: `Bearer ${own}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'add', path: 'title', value: 'Admin' }],
      }),
    });
    expect(scim.status).to.equal(403);
    // The account page has no field for data: one sent along with a form is not read.
    const browser = new FormAgent(box);
    expect((await browser.signIn('morty@example.com', 'morty@example.com-password-1')).status).to.equal(303);
    const page = await browser.get('/auth/account');
    const csrf = hiddenFields(page.text).csrf!;
    await browser.post('/auth/account/email', {
      csrf,
      new_email: 'morty2@example.com',
      password: 'morty@example.com-password-1',
      data,
      team: 'blue',
    });
    await browser.post('/auth/account/password', {
      csrf,
      password: 'morty@example.com-password-1',
      new_password: 'a-new-password-42',
      data,
    });
    const stored = await box.json('GET', `/users/${morty}`, undefined, root);
    expect(JSON.parse(stored.body.data as string)).to.deep.equal({ team: 'red' });
    expect(await decision(morty, 'can_read_team', { team: 'blue' })).to.equal(false);
    expect(await decision(morty, 'can_admin', { employee: 'E-1' })).to.equal(false);
  });
});
