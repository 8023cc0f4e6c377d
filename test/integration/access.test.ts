// Access control: bearer tokens (header or access_token parameter), 401 vs 403,
// and the three policy engines, OR-combined, denied by default.
import { expect } from 'chai';
import crypto from 'node:crypto';
import { decodeJwt } from 'jose';
import { Box, basic, boxForSuite } from '../support/box.js';

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('access control', function () {
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  async function tokenFor(id: string, client: Record<string, unknown> = {}): Promise<string> {
    const { secret } = await box.addClient(id, client, { policy: false });
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    return res.body.access_token;
  }

  it('a new client can do nothing until a policy allows it (403), then it can', async function () {
    const token = await tokenFor('newcomer');
    const denied = await box.json('GET', '/Client/newcomer', undefined, token);
    expect(denied.status).to.equal(403);
    expect(denied.body.error).to.equal('access_denied');
    expect(denied.body.error_description).to.include('newcomer');
    await box.json('PUT', '/AccessPolicy/newcomer', { engine: 'allow', link: [{ id: 'newcomer', resourceType: 'Client' }] }, root);
    expect((await box.json('GET', '/Client/newcomer', undefined, token)).status).to.equal(200);
    await box.json('DELETE', '/AccessPolicy/newcomer', undefined, root);
    expect((await box.json('GET', '/Client/newcomer', undefined, token)).status).to.equal(403);
  });

  it('401 with a Bearer challenge when the token is missing, unknown, or malformed', async function () {
    const missing = await box.json('GET', '/Client');
    expect(missing.status).to.equal(401);
    expect(missing.body.error).to.equal('invalid_token');
    expect(missing.headers.get('www-authenticate')).to.match(/^Bearer/);
    const unknown = await box.json('GET', '/Client', undefined, 'not-a-real-token');
    expect(unknown.status).to.equal(401);
    expect(unknown.headers.get('www-authenticate')).to.include('error="invalid_token"');
    const scheme = await box.request('GET', '/Client', { headers: { Authorization: 'Token abc' } });
    expect(scheme.status).to.equal(401);
  });

  it('takes the token from the access_token query parameter, but not from both places at once', async function () {
    expect((await box.json('GET', `/Client?access_token=${encodeURIComponent(root)}`)).status).to.equal(200);
    const both = await box.request('GET', `/Client?access_token=${encodeURIComponent(root)}`, {
      headers: { Authorization: `Bearer ${root}` },
    });
    expect(both.status).to.equal(400);
  });

  it('refuses tampered JWTs, alg none and foreign keys', async function () {
    const [h, p] = root.split('.');
    const claims = decodeJwt(root);
    const tampered = `${h}.${b64({ ...claims, sub: 'someone-else' })}.${root.split('.')[2]}`;
    expect((await box.json('GET', '/Client', undefined, tampered)).status).to.equal(401);
    const none = `${b64({ alg: 'none', kid: JSON.parse(Buffer.from(h!, 'base64url').toString()).kid })}.${p}.`;
    const noneRes = await box.json('GET', '/Client', undefined, none);
    expect(noneRes.status).to.equal(401);
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const header = JSON.parse(Buffer.from(h!, 'base64url').toString());
    const input = `${b64(header)}.${b64(claims)}`;
    const forged = `${input}.${crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    const forgedRes = await box.json('GET', '/Client', undefined, forged);
    expect(forgedRes.status).to.equal(401);
    expect(forgedRes.body.error_description).to.match(/signature/);
  });

  it("refuses another issuer's JWT even when a key the box trusts signed it and its session is live", async function () {
    // A process on this box's database under another base URL: its JWTs verify with the
    // box's keys and name sessions the box holds, but they were issued by someone else.
    const issuer = 'https://elsewhere.example';
    const elsewhere = await box.startAnother({ BOXAUTH_BASE_URL: issuer });
    try {
      const foreign = await elsewhere.rootToken();
      expect(decodeJwt(foreign).iss).to.equal(issuer);
      expect(JSON.parse(Buffer.from(foreign.split('.')[0]!, 'base64url').toString()).kid).to.equal(
        JSON.parse(Buffer.from(root.split('.')[0]!, 'base64url').toString()).kid,
      );
      expect((await elsewhere.json('GET', '/Client', undefined, foreign)).status, 'at its own issuer it works').to.equal(200);
      const refused = await box.json('GET', '/Client', undefined, foreign);
      expect(refused.status).to.equal(401);
      expect(refused.body.error_description).to.match(/another issuer/);
      const introspected = await box.form('/auth/introspect', { token: foreign }, { Authorization: basic('root', box.rootSecret) });
      expect(introspected.body).to.deep.equal({ active: false });
    } finally {
      await elsewhere.stop();
    }
  });

  it('a token one character off one the box has cached is refused, opaque or JWT', async function () {
    const { secret } = await box.addClient('neighbour', {});
    const opaque = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('neighbour', secret) })).body
      .access_token as string;
    const oneOff = (token: string, i: number): string => `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
    const signature = root.lastIndexOf('.') + 1;
    for (const [token, variants] of [
      [opaque, [oneOff(opaque, 0), oneOff(opaque, opaque.length >> 1), oneOff(opaque, opaque.length - 1), `${opaque}A`]],
      [root, [oneOff(root, signature + 10), oneOff(root, root.length - 10)]],
    ] as const) {
      // Used first, so that the box holds it in its caches (the session by digest, the verified JWT).
      expect((await box.json('GET', '/Client/neighbour', undefined, token)).status).to.equal(200);
      for (const variant of variants) {
        const res = await box.json('GET', '/Client/neighbour', undefined, variant);
        expect(res.status, variant).to.equal(401);
        expect(res.body.error).to.equal('invalid_token');
      }
      expect((await box.json('GET', '/Client/neighbour', undefined, token)).status).to.equal(200);
    }
  });

  it('json-schema policies allow requests matching the schema', async function () {
    const token = await tokenFor('reader');
    await box.json(
      'PUT',
      '/AccessPolicy/reader-get-only',
      {
        engine: 'json-schema',
        link: [{ id: 'reader', resourceType: 'Client' }],
        schema: {
          type: 'object',
          required: ['request-method', 'uri'],
          properties: { 'request-method': { const: 'get' }, uri: { type: 'string', pattern: '^/Client' } },
        },
      },
      root,
    );
    expect((await box.json('GET', '/Client/reader', undefined, token)).status).to.equal(200);
    expect((await box.json('GET', '/AccessPolicy', undefined, token)).status).to.equal(403);
    expect((await box.json('DELETE', '/Client/reader', undefined, token)).status).to.equal(403);
  });

  it('matcho policies match patterns with regexes, and see the client', async function () {
    const token = await tokenFor('matcher', { description: 'team-a' });
    await box.json(
      'PUT',
      '/AccessPolicy/matcher',
      {
        engine: 'matcho',
        link: [{ id: 'matcher', resourceType: 'Client' }],
        matcho: { 'request-method': { $enum: ['get', 'put'] }, uri: '#^/Client/team-a-', client: { description: 'team-a' } },
      },
      root,
    );
    expect((await box.json('GET', '/Client/team-a-thing', undefined, token)).status).to.equal(404); // allowed, absent
    expect((await box.json('GET', '/Client/team-b-thing', undefined, token)).status).to.equal(403);
    expect((await box.json('DELETE', '/Client/team-a-thing', undefined, token)).status).to.equal(403);
  });

  it('policies OR together, and a policy without link applies to every token', async function () {
    const token = await tokenFor('global-user');
    expect((await box.json('GET', '/Session', undefined, token)).status).to.equal(403);
    await box.json(
      'PUT',
      '/AccessPolicy/everyone-reads-sessions',
      {
        engine: 'matcho',
        matcho: { 'request-method': 'get', uri: '#^/Session' },
      },
      root,
    );
    expect((await box.json('GET', '/Session', undefined, token)).status).to.equal(200);
    expect((await box.json('GET', '/Client', undefined, token)).status).to.equal(403);
    await box.json('DELETE', '/AccessPolicy/everyone-reads-sessions', undefined, root);
    expect((await box.json('GET', '/Session', undefined, token)).status).to.equal(403);
  });

  it('the engines never see the access token', async function () {
    const token = await tokenFor('leaky');
    await box.json(
      'PUT',
      '/AccessPolicy/leaky',
      {
        engine: 'matcho',
        link: [{ id: 'leaky', resourceType: 'Client' }],
        matcho: { params: { access_token: 'present?' } },
      },
      root,
    );
    expect((await box.json('GET', `/Client?access_token=${encodeURIComponent(token)}`)).status).to.equal(403);
  });
});
