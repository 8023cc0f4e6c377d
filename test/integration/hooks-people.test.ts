// Hooks (docs/guides/hooks.md) at a person's tokens, on real parts: a person signs in at a
// first-party app of the code flow, and hooks in other processes (Python, Go) add to the access
// token, the ID token and the UserInfo answer, or refuse them. A token request waiting for a slow
// hook holds no database connection (a pool of one serves another request meanwhile). Boxes that
// share a host each ask their own hooks, signed as themselves.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { basic, Box, boxForSuite } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { HookServer } from '../support/hook-servers.js';
import { Host } from '../support/host.js';
import { testCa, type TestCa } from '../support/tls.js';
import { startAll } from '../support/start-all.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const REDIRECT = 'https://app.example/cb';
const ALLOWED = { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' };

/** Writes Hook `id` at `box` calling `url`, signed with `secret`, trusting `ca`. */
async function putHook(box: Box, root: string, id: string, url: string, secret: string, ca: TestCa, spec = {}): Promise<void> {
  const body = { moments: ['tokenIssuing'], url, caBundle: Buffer.from(ca.pem).toString('base64'), secret, ...spec };
  const res = await box.json('PUT', `/Hook/${id}`, body, root);
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

describe("hooks at a person's tokens: access token, ID token, UserInfo", function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let ca: TestCa;
  const secret = newSecret();
  let python: HookServer;
  let go: HookServer;
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: ALLOWED });

  before(async function () {
    ca = testCa();
    [python, go] = await startAll([HookServer.start('python', secret, ca), HookServer.start('go', secret, ca)]);
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, token_format: 'jwt', refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
    expect((await box.json('POST', '/users', { email: 'ada@example.com', password: 'a-good-password' }, root)).status).to.equal(201);
  });
  after(async function () {
    await Promise.all([python?.kill(), go?.kill()]);
  });
  afterEach(async function () {
    for (const id of ['access', 'id', 'userinfo']) await box.json('DELETE', `/Hook/${id}`, undefined, root);
  });

  /** Ada signs in, and the app exchanges her code (scope openid email): the token endpoint's answer. */
  async function adaSignsIn(): Promise<{ status: number; body: any; text: string }> {
    const browser = new FormAgent(box);
    expect((await browser.signIn('ada@example.com', 'a-good-password')).status).to.equal(303);
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'app',
      redirect_uri: REDIRECT,
      scope: 'openid email',
      nonce: 'n-1',
    });
    const authorized = await browser.get(`/auth/authorize?${query}`);
    expect(authorized.status, authorized.text).to.equal(302);
    const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
    return box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { Authorization: basic('app', 'app-secret-123') },
    );
  }

  it('adds each moment’s claims where it belongs, about the person, and never what the box alone states', async function () {
    await putHook(box, root, 'access', `${python.url}/echo`, secret, ca, { moments: ['tokenIssuing'] });
    await putHook(box, root, 'id', `${go.url}/claims`, secret, ca, { moments: ['idTokenIssuing'] });
    await putHook(box, root, 'userinfo', `${python.url}/claims`, secret, ca, { moments: ['userinfoAnswering'] });
    const granted = await adaSignsIn();
    expect(granted.status, granted.text).to.equal(200);
    const access = decodeJwt(granted.body.access_token as string);
    expect(access.seen).to.deep.equal({ box: box.url, hook: 'access', moment: 'tokenIssuing', email: 'ada@example.com', client: 'app' });
    expect(access).to.not.have.property('licence');
    const id = decodeJwt(granted.body.id_token as string);
    expect(id).to.include({ licence: 'gold', hook_lang: 'go', aud: 'app', iss: box.url, nonce: 'n-1' });
    expect(id.acr).to.not.equal('phr');
    // With an access token, the address is UserInfo's (Core §5.4): the hook's "email" is not put in its place.
    for (const name of ['groups', 'email']) expect(id, name).to.not.have.property(name);
    expect(id.sub).to.not.equal('admin');
    const userinfo = await box.json('GET', '/auth/userinfo', undefined, granted.body.access_token as string);
    expect(userinfo.status, userinfo.text).to.equal(200);
    expect(userinfo.body).to.include({ licence: 'gold', hook_lang: 'python', email: 'ada@example.com', sub: id.sub });
    // A refresh asks the same moments about the same person.
    const refreshed = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: granted.body.refresh_token as string },
      { Authorization: basic('app', 'app-secret-123') },
    );
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(decodeJwt(refreshed.body.access_token as string).seen).to.include({ email: 'ada@example.com', moment: 'tokenIssuing' });
    expect(decodeJwt(refreshed.body.id_token as string)).to.include({ licence: 'gold', hook_lang: 'go' });
  });

  it('refuses the ID token, or the UserInfo answer, when the hook refuses', async function () {
    await putHook(box, root, 'id', `${go.url}/refuse`, secret, ca, { moments: ['idTokenIssuing'] });
    const refused = await adaSignsIn();
    expect(refused.status).to.equal(400);
    expect(refused.body).to.include({ error: 'access_denied' });
    await box.json('DELETE', '/Hook/id', undefined, root);
    const granted = await adaSignsIn();
    await putHook(box, root, 'userinfo', `${python.url}/refuse`, secret, ca, { moments: ['userinfoAnswering'] });
    const userinfo = await box.json('GET', '/auth/userinfo', undefined, granted.body.access_token as string);
    expect(userinfo.status).to.equal(403);
    expect(userinfo.text).to.include('the licence of this team has expired');
  });
});

describe('a token request waiting for a hook holds no database connection', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let python: HookServer;
  const secret = newSecret();
  // One connection in the pool: a request that held it while the hook thinks would stop every other.
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { ...ALLOWED, BOXAUTH_DB_POOL_SIZE: '1' } });
  after(async function () {
    await python?.kill();
  });

  it('serves another client while one waits for a slow hook', async function () {
    const ca = testCa();
    python = await HookServer.start('python', secret, ca);
    const { secret: pass } = await box.addClient('slowpoke', {});
    await box.addClient('other', {}, { secret: pass });
    await putHook(box, root, 'slow', `${python.url}/slow/4000`, secret, ca, {
      timeoutSeconds: 8,
      matchConditions: [{ name: 'slowpoke', expression: "request.client.id == 'slowpoke'" }],
    });
    let slowDone = false;
    const slow = box
      .form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('slowpoke', pass) })
      .finally(() => (slowDone = true));
    // Once the hook has the call, the slow request waits on it, not on the database.
    for (let i = 0; i < 100 && !(await python.seen()).some((s) => s.path === '/slow/4000'); i++)
      await new Promise((r) => setTimeout(r, 50));
    const other = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('other', pass) });
    expect(other.status, other.text).to.equal(200);
    expect(slowDone, 'the slow request had ended before the other was served').to.equal(false);
    expect((await slow).status).to.equal(200);
  });
});

describe("boxes on one host each ask their own hooks, never another box's", function () {
  this.timeout(180_000);
  let host: Host;
  let python: HookServer;
  let go: HookServer;
  const secret = newSecret();
  before(async function () {
    const ca = testCa();
    [python, go] = await startAll([HookServer.start('python', secret, ca), HookServer.start('go', secret, ca)]);
    host = await Host.start([
      { team: 'team-a', env: ALLOWED },
      { team: 'team-b', env: ALLOWED },
    ]);
    await Promise.all([host.ready('team-a'), host.ready('team-b')]);
    const [a, b] = [host.box('team-a'), host.box('team-b')];
    const [rootA, rootB] = await Promise.all([a.rootToken(), b.rootToken()]);
    await a.addClient('svc', { auth: { client_credentials: { token_format: 'jwt' } } }, { secret: 'svc-secret-123' });
    await b.addClient('svc', { auth: { client_credentials: { token_format: 'jwt' } } }, { secret: 'svc-secret-123' });
    await putHook(a, rootA, 'echo', `${python.url}/echo`, secret, ca);
    await putHook(b, rootB, 'echo', `${go.url}/echo`, secret, ca);
  });
  after(async function () {
    await host?.stop();
    await Promise.all([python?.kill(), go?.kill()]);
  });

  it("signs each call as its own box, to its own hook; box A's hook never hears of box B", async function () {
    const token = async (team: string) =>
      decodeJwt(
        (await host.box(team).form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('svc', 'svc-secret-123') }))
          .body.access_token as string,
      );
    for (let i = 0; i < 3; i++) {
      expect((await token('team-a')).seen).to.include({ box: host.urlOf('team-a'), hook: 'echo' });
      expect((await token('team-b')).seen).to.include({ box: host.urlOf('team-b'), hook: 'echo' });
    }
    const boxesAt = async (server: HookServer) => [...new Set((await server.seen()).map((s) => s.box))];
    expect(await boxesAt(python)).to.deep.equal([host.urlOf('team-a')]);
    expect(await boxesAt(go)).to.deep.equal([host.urlOf('team-b')]);
  });
});
