// A token a person's sign-in gave an app acts within what BOTH the person and the
// app were granted (RFC 9700 §2.3; docs/concepts/access-control.md). The attack: an admin
// signs in to an ordinary app, and the app uses that token on the box's own API
// to read password hashes, write clients, and make itself admin.
import { expect } from 'chai';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const REDIRECT = 'https://app.example/cb';

describe('delegated tokens: what both the person and the client were granted', function () {
  let box: Box;
  let root: string;
  let adminId: number;
  let agent: FormAgent;

  before(async function () {
    // The admin's sub is their row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
    const env = { BOXAUTH_ADMIN_EMAIL: 'boss@example.com', BOXAUTH_ADMIN_PASSWORD: 'boss-password', BOXAUTH_PUBLIC_SUBJECTS: 'sequential' };
    box = await Box.start({ env });
    root = await box.rootToken();
    adminId = (await box.json('GET', '/users?email=boss@example.com', undefined, root)).body[0].id;
    for (const id of ['app', 'reader-app']) {
      await box.addClient(
        id,
        { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } } },
        { secret: 'app-secret-123', policy: false },
      );
    }
    await box.json('POST', '/users', { email: 'plain@example.com', password: 'plain-password' }, root);
    agent = new FormAgent(box);
    expect((await agent.signIn('boss@example.com', 'boss-password')).status).to.equal(303);
  });
  after(async function () {
    await box?.stop();
  });

  /** The admin signs in to `client` (consent included) and the app exchanges the code: its tokens. */
  async function appTokens(client: string, scope: string): Promise<Record<string, string>> {
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: REDIRECT, scope })}`;
    let res = await agent.get(authorize);
    if (res.status === 200) res = await agent.consent(res, 'allow');
    const location = new URL(res.headers.get('location')!);
    const code = location.searchParams.get('code');
    expect(code, location.toString()).to.be.a('string');
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT },
      { Authorization: basic(client, 'app-secret-123') },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    return tokens.body;
  }

  /** Every kind of route of the box's own API, reading and writing. */
  const ROUTES: [method: string, path: string, body?: unknown][] = [
    ['GET', '/users'],
    ['GET', '/users/1'],
    ['POST', '/users', { email: 'planted@example.com', password: 'planted-password' }],
    ['PUT', '/users/1', { 'group-ids': [] }],
    ['GET', '/groups'],
    ['POST', '/groups', { name: 'planted' }],
    ['GET', '/Client'],
    ['GET', '/Client/app'],
    ['PUT', '/Client/x', { grant_types: ['client_credentials'], secret: 'planted-secret' }],
    ['DELETE', '/Client/reader-app'],
    ['GET', '/AccessPolicy'],
    ['PUT', '/AccessPolicy/x-allow', { engine: 'allow', link: [{ id: 'app', resourceType: 'Client' }] }],
    ['GET', '/Session'],
  ];

  it('an app the admin signed in to (scope "openid email") gets 403 on every box API route, and userinfo still answers it', async function () {
    const tokens = await appTokens('app', 'openid email');
    const before = (await box.json('GET', '/Client', undefined, root)).body.total;
    for (const [method, path, body] of ROUTES) {
      const res = await box.json(method, path.replace('/users/1', `/users/${adminId}`), body, tokens.access_token);
      expect(res.status, `${method} ${path}: ${res.text}`).to.equal(403);
      expect(res.body.error_description).to.include("client 'app' may not");
    }
    // Nothing was written.
    expect((await box.json('GET', '/Client', undefined, root)).body.total).to.equal(before);
    expect((await box.json('GET', '/AccessPolicy/x-allow', undefined, root)).status).to.equal(404);
    expect((await box.json('GET', '/users?email=planted@example.com', undefined, root)).body).to.deep.equal([]);
    // What the token is for: who signed in.
    const userinfo = await box.json('GET', '/auth/userinfo', undefined, tokens.access_token);
    expect(userinfo.status, userinfo.text).to.equal(200);
    expect(userinfo.body).to.include({ sub: String(adminId), email: 'boss@example.com' });
    // A refreshed token is no stronger.
    const refreshed = await box.form('/auth/token', {
      grant_type: 'refresh_token',
      client_id: 'app',
      refresh_token: tokens.refresh_token!,
    });
    expect((await box.json('GET', '/users', undefined, refreshed.body.access_token)).status).to.equal(403);
  });

  it('a global policy about the person does not let apps act as them', async function () {
    await box.json(
      'PUT',
      '/AccessPolicy/admins-read-anything',
      { engine: 'matcho', matcho: { 'request-method': 'get', user: { groups: { $contains: 'admins' } } } },
      root,
    );
    try {
      const tokens = await appTokens('app', 'openid');
      expect((await box.json('GET', '/users', undefined, tokens.access_token)).status).to.equal(403);
    } finally {
      await box.json('DELETE', '/AccessPolicy/admins-read-anything', undefined, root);
    }
  });

  it('a policy linked to the client lets it act for its users, within what each person may', async function () {
    // reader-app may read, for its users; the admin may do everything; a plain user nothing.
    await box.json(
      'PUT',
      '/AccessPolicy/reader-app-reads',
      { engine: 'matcho', link: [{ id: 'reader-app', resourceType: 'Client' }], matcho: { 'request-method': 'get' } },
      root,
    );
    const tokens = await appTokens('reader-app', 'openid');
    expect((await box.json('GET', '/users', undefined, tokens.access_token)).status).to.equal(200);
    expect((await box.json('GET', `/users/${adminId}`, undefined, tokens.access_token)).status).to.equal(200);
    const write = await box.json('POST', '/groups', { name: 'readers-may-not' }, tokens.access_token);
    expect(write.status).to.equal(403);
    // Another person, without policies of their own, gets nothing through the same app.
    const plain = new FormAgent(box);
    await plain.signIn('plain@example.com', 'plain-password');
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'reader-app', redirect_uri: REDIRECT })}`;
    let res = await plain.get(authorize);
    if (res.status === 200) res = await plain.consent(res, 'allow');
    const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
    const plainTokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { Authorization: basic('reader-app', 'app-secret-123') },
    );
    const denied = await box.json('GET', '/users', undefined, plainTokens.body.access_token);
    expect(denied.status).to.equal(403);
    expect(denied.body.error_description).to.match(/^no AccessPolicy allows GET \/users/);
  });

  it('boxauth-admin (first party, no consent) grants only its own scopes: no self-made scope for policies to trust', async function () {
    const authorize = (scope: string): string =>
      `/auth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: 'boxauth-admin',
        redirect_uri: `${box.url}/admin/callback`,
        scope,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`;
    const refused = new URL((await agent.get(authorize('openid users:read'))).headers.get('location')!);
    expect(refused.searchParams.get('error')).to.equal('invalid_scope');
    expect(refused.searchParams.get('code')).to.equal(null);
    const granted = new URL((await agent.get(authorize('openid email'))).headers.get('location')!);
    expect(granted.searchParams.get('code')).to.be.a('string');
  });

  it('the admin UI acts for the person signed in to it: an admin manages users, a plain user gets 403', async function () {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const tokenFor = async (browser: FormAgent): Promise<string> => {
      const res = await browser.get(
        `/auth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: 'boxauth-admin',
          redirect_uri: `${box.url}/admin/callback`,
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        })}`,
      );
      const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
      const tokens = await box.form('/auth/token', {
        grant_type: 'authorization_code',
        client_id: 'boxauth-admin',
        code,
        redirect_uri: `${box.url}/admin/callback`,
        code_verifier: verifier,
      });
      expect(tokens.status, tokens.text).to.equal(200);
      return tokens.body.access_token;
    };
    const adminToken = await tokenFor(agent);
    expect((await box.json('GET', '/users', undefined, adminToken)).status).to.equal(200);
    expect((await box.json('POST', '/groups', { name: 'made-in-the-ui' }, adminToken)).status).to.equal(201);
    const plain = new FormAgent(box);
    await plain.signIn('plain@example.com', 'plain-password');
    expect((await box.json('GET', '/users', undefined, await tokenFor(plain))).status).to.equal(403);
  });
});
