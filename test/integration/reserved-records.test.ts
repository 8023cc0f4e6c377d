// The records a box creates for itself (api/reserved.ts): the REST API keeps them
// usable, and a restart creates only what is missing — it never puts back a
// password, secret or membership that a person changed.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Box, basic, boxForSuite } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe("the box's own records", function () {
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const admin = (): { email: string; password: string } =>
    JSON.parse(fs.readFileSync(path.join(box.dataDir, 'admin-user.json'), 'utf8')) as { email: string; password: string };

  async function adminsGroupId(): Promise<number> {
    const groups = await box.json('GET', '/groups?name=admins', undefined, root);
    return groups.body[0].id as number;
  }

  async function sql(text: string, params: unknown[] = []): Promise<any[]> {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      return (await db.query(text, params)).rows;
    } finally {
      await db.end();
    }
  }

  it('none of them can be deleted through the REST API (409), and each stays', async function () {
    for (const path of [
      '/Client/root',
      '/Client/boxauth-admin',
      '/AccessPolicy/root-allow',
      '/AccessPolicy/admins-allow',
      `/groups/${await adminsGroupId()}`,
    ]) {
      const res = await box.json('DELETE', path, undefined, root);
      expect(res.status, path).to.equal(409);
      expect(res.body.error_description, path).to.include("box's own");
      expect((await box.json('GET', path, undefined, root)).status, path).to.equal(200);
    }
  });

  it("the admin UI client, the reserved policies and the admins group's name cannot be changed", async function () {
    const hijack = await box.json(
      'PUT',
      '/Client/boxauth-admin',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: 'https://attacker.example/cb' } },
      },
      root,
    );
    expect(hijack.status).to.equal(409);
    const stored = await box.json('GET', '/Client/boxauth-admin', undefined, root);
    expect(stored.body.auth.authorization_code.redirect_uri).to.equal(`${box.url}/admin/callback`);
    expect((await box.json('PUT', '/AccessPolicy/admins-allow', { engine: 'matcho', matcho: { uri: '/nothing' } }, root)).status).to.equal(
      409,
    );
    const id = await adminsGroupId();
    expect((await box.json('PUT', `/groups/${id}`, { name: 'former-admins' }, root)).status).to.equal(409);
    expect((await box.json('PUT', `/groups/${id}`, { description: 'The people who run this box.' }, root)).status).to.equal(200);
  });

  it('the root client keeps client_credentials, and its secret can be rotated', async function () {
    const dropped = await box.json(
      'PUT',
      '/Client/root',
      { grant_types: ['implicit'], auth: { implicit: { redirect_uri: 'https://a.example/cb' } } },
      root,
    );
    expect(dropped.status).to.equal(422);
    expect(dropped.body.errors).to.have.key('grant_types');
    const rotated = await box.json(
      'PUT',
      '/Client/root',
      {
        grant_types: ['client_credentials'],
        secret: 'rotated-root-secret',
        auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 3600 } },
      },
      root,
    );
    expect(rotated.status).to.equal(200);
    expect(
      (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', 'rotated-root-secret') })).status,
    ).to.equal(200);
    // BOXAUTH_ROOT_CLIENT_SECRET is declared configuration: a restart applies it again.
    await box.stop();
    await box.launch();
    expect(
      (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) })).status,
    ).to.equal(200);
    expect(
      (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', 'rotated-root-secret') })).status,
    ).to.equal(401);
    root = await box.rootToken();
  });

  it("a restart keeps the admin's changed password and removed membership", async function () {
    const { email, password } = admin();
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, password)).status).to.equal(303);
    const [user] = (await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root)).body;
    const change = await box.json('PUT', `/users/${user.id}`, { password: 'rotated-after-a-leak', 'group-ids': [] }, root);
    expect(change.status).to.equal(200);

    await box.stop();
    await box.launch();
    root = await box.rootToken();

    expect((await new FormAgent(box).signIn(email, password)).status).to.equal(401);
    expect((await new FormAgent(box).signIn(email, 'rotated-after-a-leak')).status).to.equal(303);
    const after = await box.json('GET', `/users/${user.id}`, undefined, root);
    expect(after.body.groups).to.deep.equal([]);
  });

  it('a deleted admin user is not created again', async function () {
    const { email } = admin();
    const [user] = (await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root)).body;
    expect((await box.json('DELETE', `/users/${user.id}`, undefined, root)).status).to.equal(200);
    await box.stop();
    await box.launch();
    root = await box.rootToken();
    const found = await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root);
    expect(found.body).to.deep.equal([]);
  });

  it('a reserved record taken over by a Kubernetes resource goes back to the box at start-up', async function () {
    await sql(
      "UPDATE clients SET managed_by = 'Client tenant/boxauth-admin', resource = jsonb_set(resource, '{auth,authorization_code,redirect_uri}', '\"https://attacker.example/cb\"') WHERE id = 'boxauth-admin'",
    );
    await box.stop();
    await box.launch(); // before: "Client boxauth-admin is managed by …", and no box
    root = await box.rootToken();
    const stored = await box.json('GET', '/Client/boxauth-admin', undefined, root);
    expect(stored.body.meta.managedBy).to.equal(undefined);
    expect(stored.body.auth.authorization_code.redirect_uri).to.equal(`${box.url}/admin/callback`);
  });
});
