// No answer of the box carries a person's password hash (issue 63, item 6): the right the AuthZEN
// guide hands a Subject Search PEP, `GET #^/users/[0-9]+$`, read every person's argon2id hash, the
// admin's included. Each door that shows a person is asked here; none may hold `$argon2`, nor a
// `password` field.
import { expect } from 'chai';
import { basic, Box, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { provisioner } from '../support/scim.js';

/** The answer as text: a hash anywhere in it (a field of any name, a YAML line) shows. */
const expectNoHash = (res: JsonResponse, door: string): void => {
  expect(res.status, `${door}: ${res.text}`).to.be.below(500);
  expect(res.text, door).not.to.match(/\$argon2/);
  expect(res.text, door).not.to.match(/"password"\s*:|^\s*password\s*:/m);
};

describe('no answer carries a password hash', function () {
  let box: Box;
  let root: string;
  let pep: string;
  let person: number;
  let admin: number;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password-1' } });
    root = await box.rootToken();
    admin = (await box.json('GET', '/users?email=boss@example.com', undefined, root)).body[0].id;
    // The PEP right the AuthZEN guide recommends for Subject Search.
    const { secret } = await box.addClient('search-pep', {}, { policy: false });
    await box.json(
      'PUT',
      '/AccessPolicy/search-pep-reads-people',
      {
        engine: 'matcho',
        link: [{ id: 'search-pep', resourceType: 'Client' }],
        matcho: { 'request-method': 'get', uri: '#^/users/[0-9]+$' },
      },
      root,
    );
    const granted = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('search-pep', secret) });
    pep = granted.body.access_token as string;
  });
  after(async function () {
    await box?.stop();
  });

  it('POST, GET (JSON and YAML), PUT and DELETE /users answer without it; the password still works', async function () {
    const created = await box.json('POST', '/users', { email: 'hash@example.com', password: 'hash-password-1' }, root);
    expect(created.status).to.equal(201);
    expectNoHash(created, 'POST /users');
    person = created.body.id;
    expectNoHash(await box.json('GET', `/users/${person}`, undefined, root), 'GET /users/<id>');
    expectNoHash(await box.json('GET', `/users/${person}`, undefined, root, { Accept: 'application/yaml' }), 'GET /users/<id> as YAML');
    expectNoHash(await box.json('GET', '/users?email=hash@example.com', undefined, root), 'GET /users?email=');
    expectNoHash(await box.json('GET', '/users', undefined, root, { Accept: 'application/yaml' }), 'GET /users as YAML');
    expectNoHash(await box.json('PUT', `/users/${person}`, { password: 'hash-password-2' }, root), 'PUT /users/<id>');
    // What the hash was for is done by signing in.
    expect((await new FormAgent(box).signIn('hash@example.com', 'hash-password-2')).status).to.equal(303);
    const doomed = (await box.json('POST', '/users', { email: 'doomed@example.com', password: 'doomed-password-1' }, root)).body;
    expectNoHash(await box.json('DELETE', `/users/${doomed.id}`, undefined, root), 'DELETE /users/<id>');
  });

  it("the guide's Subject Search PEP right reads no one's hash, the admin's included", async function () {
    for (const id of [admin, person]) {
      const read = await box.json('GET', `/users/${id}`, undefined, pep);
      expect(read.status).to.equal(200);
      expectNoHash(read, `GET /users/${id} by the PEP`);
    }
  });

  it('a refused write (422) holds neither the password sent nor a hash', async function () {
    const refused = await box.json('PUT', `/users/${person}`, { password: 'hash-password-3', 'group-ids': [999999] }, root);
    expect(refused.status).to.equal(422);
    expectNoHash(refused, '422 of PUT /users/<id>');
    expect(refused.text).not.to.include('hash-password-3');
  });

  it('SCIM and the audit trail answer without it', async function () {
    const scim = await provisioner(box, 'hash-provisioning', { 'Content-Type': 'application/scim+json' });
    const [listed] = (await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "hash@example.com"')}`)).body.Resources;
    expectNoHash(await scim('GET', `/Users/${listed.id}`), 'SCIM GET /Users/<id>');
    expectNoHash(await scim('GET', '/Users'), 'SCIM GET /Users');
    const events = await box.json('GET', `/AuditEvent?resource_type=User&_count=100`, undefined, root);
    expect(events.status).to.equal(200);
    expect(events.text).not.to.match(/\$argon2/);
  });
});
