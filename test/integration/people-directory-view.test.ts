// What a directory (SCIM) wrote of a person, as the REST API shows it: read-only on GET
// /users/<id> (externalId, name and the other attributes kept as sent, never a password), and
// never written through PUT /users/<id>: the directory's attributes are the directory's.
import { expect } from 'chai';
import { Box } from '../support/box.js';
import { restIdOf } from '../support/scim.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe("REST: a person's directory attributes, read-only", function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
  });
  after(async function () {
    await box?.stop();
  });

  const scim = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await box.request(method, `/scim/v2${path}`, {
      headers: { Authorization: `Bearer ${root}`, ...(body !== undefined ? { 'Content-Type': 'application/scim+json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    expect(res.status, res.text).to.be.oneOf([200, 201]);
    return JSON.parse(res.text);
  };
  const restId = (email: string): Promise<number> => restIdOf(box, root, email);

  it('GET /users/<id> shows what the directory wrote (externalId, name, the rest as sent), never its password', async function () {
    const made = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      userName: 'dir.ann@example.com',
      externalId: 'entra-0001',
      name: { givenName: 'Ann', familyName: 'Lee', formatted: 'Ann Lee' },
      title: 'Engineer',
      [ENTERPRISE]: { department: 'Platform' },
      password: 'a-directory-password-1',
    });
    expect(made.id).to.not.equal(String(await restId('dir.ann@example.com')));
    const shown = (await box.json('GET', `/users/${await restId('dir.ann@example.com')}`, undefined, root)).body;
    expect(shown.active).to.equal(true);
    expect(shown.scim).to.deep.equal({
      externalId: 'entra-0001',
      name: { givenName: 'Ann', familyName: 'Lee', formatted: 'Ann Lee' },
      title: 'Engineer',
      [ENTERPRISE]: { department: 'Platform' },
    });
    expect(JSON.stringify(shown.scim)).not.to.include('a-directory-password-1');
    // The list's entries stay as they were: the one record carries it, as it carries the hash.
    const [listed] = (await box.json('GET', '/users?email=dir.ann@example.com', undefined, root)).body;
    expect(listed).not.to.have.property('scim');
  });

  it('a person no directory wrote shows scim: null', async function () {
    const made = await box.json('POST', '/users', { email: 'rest.bob@example.com', password: 'a-rest-password-1' }, root);
    expect((await box.json('GET', `/users/${made.body.id}`, undefined, root)).body.scim).to.equal(null);
  });

  it('PUT /users/<id> never writes them: a record read and written back, or one that tries, leaves the directory’s attributes be', async function () {
    const made = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'dir.cat@example.com',
      externalId: 'okta-7',
      displayName: 'Cat',
    });
    const cat = await restId('dir.cat@example.com');
    const record = (await box.json('GET', `/users/${cat}`, undefined, root)).body;
    const { password: _hash, ...readBack } = record;
    const written = await box.json(
      'PUT',
      `/users/${cat}`,
      { ...readBack, data: '{"team": "red"}', scim: { externalId: 'forged', displayName: 'Mallory', name: { formatted: 'Mallory' } } },
      root,
    );
    expect(written.status, written.text).to.equal(200);
    expect(written.body.data).to.equal('{"team": "red"}');
    expect(written.body.scim).to.deep.equal({ externalId: 'okta-7', displayName: 'Cat' });
    const atDirectory = await scim('GET', `/Users/${made.id}`);
    expect(atDirectory).to.include({ externalId: 'okta-7', displayName: 'Cat' });
    expect(atDirectory).not.to.have.property('name');
  });
});
