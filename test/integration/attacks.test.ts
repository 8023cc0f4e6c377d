// An attacker's pass over what the hardening change added: requests a browser
// never sends to the box's own pages, and a second spelling of a resource id
// against a policy that tests `uri`.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readCache } from '../../api/cli/kube/token-cache.js';
import { Box, basic } from '../support/box.js';

describe("an attacker's requests", function () {
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
  });
  after(async function () {
    await box?.stop();
  });

  describe("the box's page forms, posted by a stranger with something else than a form", function () {
    // Express leaves req.body unset for a body it did not parse: each of these was a 500.
    const pages = ['/auth/logout', '/auth/device/verify', '/auth/sign-in', '/auth/consent', '/auth/sign-out'];

    for (const page of pages) {
      it(`POST ${page} with a JSON body or none answers as to an empty form, never 500`, async function () {
        for (const init of [
          { headers: { 'Content-Type': 'application/json' }, body: '{"csrf": "x", "id_token_hint": "y"}' },
          { headers: { 'Content-Type': 'text/plain' }, body: 'csrf=x' },
          {},
        ]) {
          const res = await box.request('POST', page, init);
          expect(res.status, `${page} ${JSON.stringify(init)}: ${res.text}`).to.be.within(200, 499);
        }
      });
    }

    it('POST /auth/logout without a body signs nobody out: the page that asks, not an error', async function () {
      const res = await box.request('POST', '/auth/logout');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      expect(res.text).to.include('Sign out?');
    });
  });

  describe('a parameter sent twice is refused, never read one way by a proxy and another by the box', function () {
    it('on the token, introspection, revocation and device endpoints: 400 naming it', async function () {
      const basicRoot = { Authorization: basic('root', box.rootSecret), 'Content-Type': 'application/x-www-form-urlencoded' };
      for (const [path, body] of [
        ['/auth/token', 'grant_type=client_credentials&grant_type=client_credentials'],
        ['/auth/token', 'grant_type=client_credentials&audience=a&audience=b'],
        ['/auth/introspect', `token=${root}&token=${root}`],
        ['/auth/revoke', `token=${root}&token=x`],
        ['/auth/device', 'client_id=root&client_id=root'],
      ] as const) {
        const res = await box.request('POST', path, { headers: basicRoot, body });
        expect(res.status, `${path} ${body}: ${res.text}`).to.equal(400);
        expect(res.body).to.include({ error: 'invalid_request' });
        expect(res.body.error_description).to.include('more than once');
      }
      // The root token was not revoked by the refused request.
      expect((await box.json('GET', '/Client/root', undefined, root)).status).to.equal(200);
    });

    it('userinfo takes the token once: header and body, or the query twice, is refused', async function () {
      const both = await box.request('POST', '/auth/userinfo', {
        headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/x-www-form-urlencoded' },
        body: `access_token=${root}`,
      });
      expect(both.status, both.text).to.equal(400);
      const twice = await box.request('GET', `/auth/userinfo?access_token=${root}&access_token=${root}`);
      expect(twice.status, twice.text).to.equal(401);
      expect(twice.body.error_description).to.include('once');
    });

    it('logout with a parameter given twice is a page saying so, and signs nobody out', async function () {
      const res = await box.request('GET', '/auth/logout?client_id=a&client_id=b');
      expect(res.status).to.equal(400);
      expect(res.text).to.include('more than once');
    });
  });

  describe('a policy that tests uri sees the id the router serves', function () {
    let token: string;
    before(async function () {
      const { secret } = await box.addClient('not-root-reader', {}, { policy: false });
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/not-root-reader-policy',
        {
          engine: 'json-schema',
          link: [{ id: 'not-root-reader', resourceType: 'Client' }],
          schema: {
            properties: { 'request-method': { const: 'get' } },
            not: { properties: { uri: { const: '/Client/root' } }, required: ['uri'] },
          },
        },
        root,
      );
      expect(policy.status, policy.text).to.equal(201);
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('not-root-reader', secret) });
      token = res.body.access_token;
    });

    it('every client but root is readable', async function () {
      expect((await box.json('GET', '/Client/not-root-reader', undefined, token)).status).to.equal(200);
      expect((await box.json('GET', '/Client/root', undefined, token)).status).to.equal(403);
    });

    it('root percent-encoded is still root: 403, its record never sent', async function () {
      for (const spelling of ['/Client/%72oot', '/Client/%72%6F%6F%74', '/Client/r%6fot']) {
        const res = await box.json('GET', spelling, undefined, token);
        expect(res.status, `${spelling}: ${res.text}`).to.equal(403);
        expect(res.text).not.to.include('grant_types');
      }
    });

    it('an id holding an encoded "/" stays one segment to the policy', async function () {
      // No such client; the policy must not see /Client/root/x, nor /Client/root.
      const res = await box.json('GET', '/Client/root%2Fx', undefined, token);
      expect(res.status).to.be.oneOf([400, 404]);
    });
  });
});

describe("kube-login's token cache, holding what another program wrote", function () {
  it('a file of JSON null, a number or a list is no cache: sign in again, no TypeError', function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-attack-'));
    try {
      const file = path.join(dir, 'cache.json');
      for (const text of ['null', '5', '[]', '"x"']) {
        fs.writeFileSync(file, text);
        expect(readCache(file, { issuer: 'https://box', client_id: 'kubectl', scope: 'openid' }), text).to.equal(undefined);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
