// The resource API of Client and AccessPolicy: CRUD, search Bundles, JSON and
// YAML, validation from the CRD schemas, and secrets that never come back.
import { expect } from 'chai';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { Box, basic, boxForSuite } from '../support/box.js';

describe('resource API', function () {
  let box: Box;
  let token: string;

  boxForSuite((b, r) => ([box, token] = [b, r]));

  describe('Client', function () {
    it('PUT creates (201) then replaces (200); the stored Client never shows its secret', async function () {
      const body = { grant_types: ['client_credentials'], secret: 'first-secret', auth: { client_credentials: { token_format: 'jwt' } } };
      const created = await box.json('PUT', '/Client/billing', body, token);
      expect(created.status).to.equal(201);
      expect(created.body).to.include({ resourceType: 'Client', id: 'billing' });
      expect(created.body).not.to.have.property('secret');
      expect(created.body.meta.versionId).to.equal('1');
      const replaced = await box.json('PUT', '/Client/billing', { ...body, secret: 'second-secret' }, token);
      expect(replaced.status).to.equal(200);
      expect(replaced.body.meta.versionId).to.equal('2');
      const read = await box.json('GET', '/Client/billing', undefined, token);
      expect(read.text).not.to.include('second-secret');
      expect(read.text).not.to.include('secret_hash');
      // The new secret works, the old one does not.
      expect(
        (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('billing', 'second-secret') })).status,
      ).to.equal(200);
      expect(
        (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('billing', 'first-secret') })).status,
      ).to.equal(401);
    });

    it('stores the secret as an argon2id hash only', async function () {
      await box.json('PUT', '/Client/hashed', { grant_types: ['client_credentials'], secret: 'plain-text-secret' }, token);
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        const { rows } = await db.query('SELECT secret_hash, resource::text AS resource FROM clients WHERE id = $1', ['hashed']);
        expect(rows[0].secret_hash).to.match(/^\$argon2id\$/);
        expect(rows[0].resource).not.to.include('plain-text-secret');
      } finally {
        await db.end();
      }
    });

    it('PUT without a secret keeps the current one (a GET-edit-PUT round trip is safe)', async function () {
      await box.json('PUT', '/Client/roundtrip', { grant_types: ['client_credentials'], secret: 'keep-this-one' }, token);
      const read = await box.json('GET', '/Client/roundtrip', undefined, token);
      const edited = { ...read.body, description: 'edited' };
      expect((await box.json('PUT', '/Client/roundtrip', edited, token)).status).to.equal(200);
      expect(
        (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('roundtrip', 'keep-this-one') }))
          .status,
      ).to.equal(200);
    });

    it('POST creates a Client with id and resourceType; a second POST of the id is 409', async function () {
      const body = { resourceType: 'Client', id: 'posted', grant_types: ['client_credentials'], secret: 'posted-secret' };
      const res = await box.json('POST', '/Client', body, token);
      expect(res.status).to.equal(201);
      expect(res.headers.get('location')).to.equal('/Client/posted');
      const again = await box.json('POST', '/Client', body, token);
      expect(again.status).to.equal(409);
    });

    it('speaks YAML both ways', async function () {
      const yaml = stringify({ grant_types: ['implicit'], auth: { implicit: { redirect_uri: 'https://app.example/callback' } } });
      const res = await box.request('PUT', '/Client/yaml-app', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/yaml', Accept: 'application/yaml' },
        body: yaml,
      });
      expect(res.status).to.equal(201);
      expect(res.headers.get('content-type')).to.match(/^application\/yaml/);
      const parsed = parse(res.text);
      expect(parsed.auth.implicit.redirect_uri).to.equal('https://app.example/callback');
      const text = await box.request('GET', '/Client/yaml-app', { headers: { Authorization: `Bearer ${token}`, Accept: 'text/yaml' } });
      expect(parse(text.text).id).to.equal('yaml-app');
    });

    it('422 lists every problem by field, from the CRD schema and its CEL rules', async function () {
      const res = await box.json(
        'PUT',
        '/Client/bad',
        { grant_types: ['teleport'], auth: { client_credentials: { access_token_expiration: -5 }, other: {} } },
        token,
      );
      expect(res.status).to.equal(422);
      expect(res.body.entity.grant_types).to.deep.equal(['teleport']);
      expect(res.body.errors).to.have.keys('grant_types.0', 'auth.client_credentials.access_token_expiration', 'auth.other');
      const cel = await box.json('PUT', '/Client/bad', { grant_types: ['implicit'] }, token);
      expect(cel.status).to.equal(422);
      expect(cel.body.errors.auth).to.deep.equal(['an implicit client needs auth.implicit.redirect_uri']);
      const noSecret = await box.json('PUT', '/Client/bad', { grant_types: ['client_credentials'] }, token);
      expect(noSecret.status).to.equal(422);
      expect(noSecret.body.errors).to.deep.equal({
        secret: [
          'is required for a client_credentials client (or bind ServiceAccounts with auth.workload or SPIFFE IDs with auth.spiffe, register its keys: jwks or jwks_uri, or its certificate: token_endpoint_auth_method)',
        ],
      });
      const mismatch = await box.json(
        'PUT',
        '/Client/bad',
        { id: 'other', grant_types: ['client_credentials'], secret: 'abcdefgh' },
        token,
      );
      expect(mismatch.status).to.equal(422);
      expect(mismatch.body.errors).to.have.key('id');
      expect((await box.json('GET', '/Client/bad', undefined, token)).status).to.equal(404);
    });

    it('DELETE removes the client and closes its sessions', async function () {
      const { secret } = await box.addClient('doomed', {});
      const t = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('doomed', secret) })).body
        .access_token;
      expect((await box.json('GET', '/Client/doomed', undefined, t)).status).to.equal(200);
      const del = await box.json('DELETE', '/Client/doomed', undefined, token);
      expect(del.status).to.equal(200);
      expect(del.body.id).to.equal('doomed');
      expect((await box.json('GET', '/Client/doomed', undefined, t)).status).to.equal(401);
      expect((await box.json('GET', '/Client/doomed', undefined, token)).status).to.equal(404);
      expect((await box.json('DELETE', '/Client/doomed', undefined, token)).status).to.equal(404);
    });

    it('search answers a Bundle with total, paging, field filters and sorting', async function () {
      for (const id of ['s-a', 's-b', 's-c']) {
        await box.json(
          'PUT',
          `/Client/${id}`,
          { grant_types: ['implicit'], description: 'searchable', auth: { implicit: { redirect_uri: `https://${id}.example/cb` } } },
          token,
        );
      }
      const page = await box.json('GET', '/Client?description=searchable&_count=2&_page=1&_sort=-id', undefined, token);
      expect(page.status).to.equal(200);
      expect(page.body).to.include({ resourceType: 'Bundle', type: 'searchset', total: 3 });
      expect(page.body.entry.map((e: any) => e.resource.id)).to.deep.equal(['s-c', 's-b']);
      const second = await box.json('GET', '/Client?description=searchable&_count=2&_page=2&_sort=-id', undefined, token);
      expect(second.body.total).to.equal(3);
      expect(second.body.entry.map((e: any) => e.resource.id)).to.deep.equal(['s-a']);
      const byGrant = await box.json('GET', '/Client?grant_types=implicit&description=searchable', undefined, token);
      expect(byGrant.body.total).to.equal(3);
      const bad = await box.json('GET', '/Client?_count=0', undefined, token);
      expect(bad.status).to.equal(400);
    });
  });

  describe('AccessPolicy', function () {
    it('PUT, GET, search and DELETE', async function () {
      const put = await box.json('PUT', '/AccessPolicy/p1', { engine: 'allow', link: [{ id: 'someone', resourceType: 'Client' }] }, token);
      expect(put.status).to.equal(201);
      expect(put.body).to.include({ resourceType: 'AccessPolicy', id: 'p1', engine: 'allow' });
      expect((await box.json('GET', '/AccessPolicy/p1', undefined, token)).body.link).to.deep.equal([
        { id: 'someone', resourceType: 'Client' },
      ]);
      const search = await box.json('GET', '/AccessPolicy?engine=allow', undefined, token);
      expect(search.body.entry.map((e: any) => e.resource.id)).to.include('p1');
      expect((await box.json('DELETE', '/AccessPolicy/p1', undefined, token)).status).to.equal(200);
      expect((await box.json('GET', '/AccessPolicy/p1', undefined, token)).status).to.equal(404);
    });

    it('POST without an id assigns one', async function () {
      const res = await box.json('POST', '/AccessPolicy', { engine: 'allow', link: [{ id: 'x', resourceType: 'Client' }] }, token);
      expect(res.status).to.equal(201);
      expect(res.body.id).to.match(/^[0-9a-f-]{36}$/);
    });

    it('422 for unknown engines, bad links, and engines without their pattern', async function () {
      const engine = await box.json('PUT', '/AccessPolicy/bad', { engine: 'yolo' }, token);
      expect(engine.status).to.equal(422);
      expect(engine.body.errors.engine[0]).to.match(/allow, json-schema, matcho/);
      const link = await box.json('PUT', '/AccessPolicy/bad', { engine: 'allow', link: [{ id: 'x', resourceType: 'Planet' }] }, token);
      expect(link.body.errors).to.have.key('link.0.resourceType');
      const schema = await box.json('PUT', '/AccessPolicy/bad', { engine: 'json-schema' }, token);
      expect(schema.body.errors).to.deep.equal({ schema: ['engine json-schema needs a schema'] });
      const regex = await box.json('PUT', '/AccessPolicy/bad', { engine: 'matcho', matcho: { uri: '#([' } }, token);
      expect(regex.status).to.equal(422);
      expect(regex.body.errors.matcho[0]).to.match(/regular expression/);
      const jsonSchema = await box.json('PUT', '/AccessPolicy/bad', { engine: 'json-schema', schema: { type: 'no-such-type' } }, token);
      expect(jsonSchema.status).to.equal(422);
      expect((await box.json('GET', '/AccessPolicy/bad', undefined, token)).status).to.equal(404);
    });

    it('refuses $data and unknown formats and keywords with 422 naming them, and stores nothing', async function () {
      const cases: [unknown, string][] = [
        [{ properties: { uri: { const: { $data: '1/params/x' } } } }, '"$data" (at /properties/uri/const)'],
        [{ properties: { user: { properties: { email: { format: 'emial' } } } } }, 'format "emial"'],
        [{ propertes: { uri: { const: '/x' } } }, 'keyword "propertes"'],
      ];
      for (const [schema, named] of cases) {
        const res = await box.json('PUT', '/AccessPolicy/odd-schema', { engine: 'json-schema', schema }, token);
        expect(res.status, res.text).to.equal(422);
        expect(res.body.entity.schema).to.deep.equal(schema);
        expect(res.body.errors.schema).to.have.length(1);
        expect(res.body.errors.schema[0]).to.include(named);
        expect((await box.json('GET', '/AccessPolicy/odd-schema', undefined, token)).status).to.equal(404);
      }
    });

    it('stores a schema with known keywords and formats', async function () {
      const schema = {
        type: 'object',
        required: ['user'],
        properties: { user: { properties: { email: { format: 'email' } } } },
        $comment: 'c',
      };
      const res = await box.json('PUT', '/AccessPolicy/good-schema', { engine: 'json-schema', schema }, token);
      expect(res.status, res.text).to.equal(201);
      expect((await box.json('GET', '/AccessPolicy/good-schema', undefined, token)).body.schema).to.deep.equal(schema);
    });
  });

  describe('bad input changes nothing', function () {
    it('malformed JSON and YAML are 400', async function () {
      const json = await box.request('PUT', '/Client/broken', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: '{"grant_types": [',
      });
      expect(json.status).to.equal(400);
      expect(json.body.error).to.equal('invalid_request');
      const yaml = await box.request('PUT', '/Client/broken', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/yaml' },
        body: 'grant_types: [implicit\n  - : :',
      });
      expect(yaml.status).to.equal(400);
      expect(yaml.body.error_description).to.match(/YAML/);
      expect((await box.json('GET', '/Client/broken', undefined, token)).status).to.equal(404);
    });

    it('a wrong content type is 415', async function () {
      const res = await box.request('PUT', '/Client/broken', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'text/plain' },
        body: 'hello',
      });
      expect(res.status).to.equal(415);
    });

    it('an oversized body is 413 with the limit named', async function () {
      const huge = JSON.stringify({ grant_types: ['client_credentials'], description: 'x'.repeat(300 * 1024) });
      const res = await box.request('PUT', '/Client/huge', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: huge,
      });
      expect(res.status).to.equal(413);
      expect(res.body.error_description).to.match(/262144 bytes/);
    });

    it('a body that is not an object is 422', async function () {
      const res = await box.request('PUT', '/Client/arr', {
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: '[1,2]',
      });
      expect(res.status).to.equal(422);
    });

    it('an unknown endpoint is 404 for an allowed token', async function () {
      const res = await box.json('GET', '/Nothing/here', undefined, token);
      expect(res.status).to.equal(404);
    });
  });
});
