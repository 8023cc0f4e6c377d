// Hooks (docs/guides/hooks.md) on real parts: a box on PostgreSQL, and hooks in other processes in
// the two languages the guide shows (test/hooks: Python's http.server, Go's net/http), each
// serving HTTPS under a CA of the test's (the Hook's caBundle) and checking every call's Standard
// Webhooks signature. A token moment end to end in both; what the box alone states is dropped; a
// refusal; each way a call fails (slow, down, garbage, SIGKILLed mid-call, too many at once, the
// breaker) gets the failure policy, never a 500; no redirect is followed; a replayed or unsigned
// call is one the hook can tell.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { basic, Box, boxForSuite, eventually } from '../support/box.js';
import { HookServer, type HookLanguage } from '../support/hook-servers.js';
import { testCa, type TestCa } from '../support/tls.js';
import { startAll } from '../support/start-all.js';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The value of a counter of the box's metrics with these labels (0 when it has none yet). */
function counter(text: string, name: string, labels: Record<string, string>): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('hooks: your own code at every token, in other processes', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let ca: TestCa;
  const secret = newSecret();
  const servers = {} as Record<HookLanguage, HookServer>;
  let clientSecret: string;
  // The hooks are at 127.0.0.1: the box's settings allow it, as an administrator would a cluster's own range.
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } });

  before(async function () {
    ca = testCa();
    [servers.python, servers.go] = await startAll([HookServer.start('python', secret, ca), HookServer.start('go', secret, ca)]);
    ({ secret: clientSecret } = await box.addClient('svc', { auth: { client_credentials: { token_format: 'jwt' } } }));
  });
  after(async function () {
    await Promise.all(Object.values(servers).map((s) => s.kill()));
  });

  const written: string[] = [];
  afterEach(async function () {
    for (const id of written.splice(0)) await box.json('DELETE', `/Hook/${id}`, undefined, root);
  });

  /** Writes Hook `id` (REST form) calling `url`, signed with the hooks' secret, trusting the test's CA. */
  async function putHook(id: string, url: string, spec: Record<string, unknown> = {}): Promise<void> {
    const res = await box.json(
      'PUT',
      `/Hook/${id}`,
      { moments: ['tokenIssuing'], url, caBundle: Buffer.from(ca.pem).toString('base64'), secret, ...spec },
      root,
    );
    expect(res.status, res.text).to.be.oneOf([200, 201]);
    written.push(id);
  }

  const token = (client = 'svc', pass = clientSecret) =>
    box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(client, pass) });

  for (const language of ['python', 'go'] as const) {
    it(`adds what a ${language} hook answers to a token, but never a claim the box alone states`, async function () {
      const server = servers[language];
      await putHook(`licence-${language}`, `${server.url}/claims`);
      const res = await token();
      expect(res.status, res.text).to.equal(200);
      const claims = decodeJwt(res.body.access_token as string);
      expect(claims).to.include({ licence: 'gold', hook_lang: language, sub: 'svc', iss: box.url, client_id: 'svc' });
      for (const name of ['acr', 'groups', 'email']) expect(claims, name).to.not.have.property(name);
      // The call the hook got was signed, and named this box, this Hook and this moment.
      const [call] = (await server.seen()).filter((s) => s.path === '/claims').slice(-1);
      expect(call).to.include({ problem: null, box: box.url, hook: `licence-${language}`, moment: 'tokenIssuing' });
    });

    it(`lets the ${language} hook tell a replayed or an unsigned call from the box's`, async function () {
      const server = servers[language];
      await putHook(`replay-${language}`, `${server.url}/allow`);
      expect((await token()).status).to.equal(200);
      const [call] = (await server.seen()).filter((s) => s.path === '/allow' && s.problem === null).slice(-1);
      const signed = ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];
      const headers = Object.fromEntries(signed.map((h) => [h, call!.headers[h]!]));
      const replayed = await server.post('/allow', headers, call!.body);
      expect(replayed.status, replayed.text).to.equal(401);
      expect(replayed.text).to.include('replayed');
      const unsigned = await server.post('/allow', { 'content-type': 'application/json' }, call!.body);
      expect(unsigned.status).to.equal(401);
      // A body changed to name another box (or hook, or moment) breaks the signature.
      const forged = await server.post(
        '/allow',
        { ...headers, 'webhook-id': `${headers['webhook-id']}x` },
        call!.body.replace(box.url, 'https://other-box.example'),
      );
      expect(forged.text).to.include('bad signature');
    });
  }

  it('with boxToken, each call carries a short JWT of the box, for the hook’s URL, that the box’s JWKS verifies', async function () {
    const url = `${servers.go.url}/allow-token`;
    await putHook('with-token', url, { boxToken: true });
    expect((await token()).status).to.equal(200);
    const [call] = (await servers.go.seen()).filter((s) => s.path === '/allow-token').slice(-1);
    const bearer = /^Bearer (.+)$/.exec(call!.headers.authorization ?? '')?.[1];
    expect(bearer, 'an Authorization header').to.be.a('string');
    const { payload } = await jwtVerify(bearer!, createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`)), {
      issuer: box.url,
      audience: url,
    });
    expect(payload.exp! - payload.iat!).to.equal(60);
    expect(payload.jti).to.be.a('string');
  });

  it("refuses the token with the hook's message when it refuses", async function () {
    await putHook('licence', `${servers.python.url}/refuse`);
    const res = await token();
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('access_denied');
    expect(res.body.error_description).to.include('the licence of this team has expired');
    await eventually('the audit line of the refusal', async () =>
      box.logs.some((l) => /"event":"hook"/.test(l) && /"hook":"licence"/.test(l) && /"result":"refused"/.test(l)),
    );
  });

  it('asks only the hooks whose matchConditions hold, over the request', async function () {
    await box.addClient('other', { auth: { client_credentials: { token_format: 'jwt' } } }, { secret: clientSecret });
    await putHook('only-svc', `${servers.go.url}/claims`, { matchConditions: [{ name: 'svc', expression: "request.client.id == 'svc'" }] });
    expect(decodeJwt((await token('svc')).body.access_token as string)).to.have.property('licence');
    expect(decodeJwt((await token('other')).body.access_token as string)).to.not.have.property('licence');
  });

  it('refuses matchConditions that do not compile, a caBundle without a certificate, a Hook nobody can check', async function () {
    const bad = await box.json(
      'PUT',
      '/Hook/bad',
      {
        moments: ['tokenIssuing'],
        url: 'https://hooks.example/x',
        matchConditions: [{ name: 'x', expression: 'request.nope ==' }],
        caBundle: 'AAAA',
      },
      root,
    );
    expect(bad.status).to.equal(422);
    expect(Object.keys(bad.body.errors ?? bad.body.details ?? {}).join(' ') + bad.text)
      .to.include('matchConditions.x')
      .and.include('caBundle');
    const unchecked = await box.json('PUT', '/Hook/bad', { moments: ['tokenIssuing'], url: 'https://hooks.example/x' }, root);
    expect(unchecked.status).to.equal(422);
    expect(unchecked.text).to.include('boxToken');
    const http = await box.json('PUT', '/Hook/bad', { moments: ['tokenIssuing'], url: 'http://hooks.example/x', boxToken: true }, root);
    expect(http.status).to.equal(422);
  });

  it('changes nothing when the same Hook is applied again', async function () {
    await putHook('same', `${servers.python.url}/allow`);
    const first = await box.json('GET', '/Hook/same', undefined, root);
    await putHook('same', `${servers.python.url}/allow`);
    const again = await box.json('GET', '/Hook/same', undefined, root);
    expect(again.body.meta.versionId).to.equal(first.body.meta.versionId);
    expect(again.body).to.not.have.property('secret');
  });

  it('signs each call with the secret the Hook has now: a new secret is used from the next call', async function () {
    await putHook('rotated', `${servers.go.url}/allow-rotated`);
    expect((await token()).status).to.equal(200);
    // The hook still checks the old secret: the box's next call, signed with the new one, is one it refuses.
    await putHook('rotated', `${servers.go.url}/allow-rotated`, { secret: newSecret() });
    const res = await token();
    expect(res.status, res.text).to.equal(503);
    const [last] = (await servers.go.seen()).filter((s) => s.path === '/allow-rotated').slice(-1);
    expect(last!.problem).to.equal('bad signature');
  });

  it('a Hook written while calls to the hooks are under way cuts none of them', async function () {
    await putHook('steady', `${servers.go.url}/allow`);
    await putHook('churn', `${servers.python.url}/allow`);
    let writing = true;
    // Another Hook written again and again (each a change the box hears of), while tokens are asked for.
    const writes = (async () => {
      for (let i = 0; writing; i++) await putHook('churn', `${servers.python.url}/allow`, { timeoutSeconds: 2 + (i % 2) });
    })();
    const answers = [];
    for (let round = 0; round < 5; round++) answers.push(...(await Promise.all(Array.from({ length: 10 }, () => token()))));
    writing = false;
    await writes;
    const refused = answers.filter((r) => r.status !== 200);
    expect(refused.map((r) => `${r.status} ${r.text}`)).to.deep.equal([]);
  });

  describe('a call that fails gets the failure policy, never a 500', function () {
    // 5 s unless a case says: on a loaded machine a 1 s deadline turned a garbage answer into a timeout.
    const failsWith = async (id: string, url: string, result: string, spec: Record<string, unknown> = {}): Promise<void> => {
      const before = counter(await box.metrics(), 'boxauth_hook_calls_total', { hook: id, result });
      await putHook(id, url, { failurePolicy: 'Fail', timeoutSeconds: 5, ...spec });
      const refused = await token();
      expect(refused.status, refused.text).to.equal(503);
      expect(refused.body.error).to.equal('temporarily_unavailable');
      await putHook(id, url, { failurePolicy: 'Ignore', timeoutSeconds: 5, ...spec });
      const went = await token();
      expect(went.status, went.text).to.equal(200);
      expect(decodeJwt(went.body.access_token as string)).to.not.have.property('slow');
      expect(counter(await box.metrics(), 'boxauth_hook_calls_total', { hook: id, result })).to.equal(before + 2);
    };

    it('slow: past timeoutSeconds', async function () {
      await failsWith('slow', `${servers.go.url}/slow/3000`, 'timeout', { timeoutSeconds: 1 });
    });

    it('down: nobody listens', async function () {
      const gone = await HookServer.start('python', secret, ca);
      await gone.kill();
      await failsWith('down', `${gone.url}/claims`, 'unreachable');
    });

    it('garbage: an answer that is not one', async function () {
      await failsWith('garbage', `${servers.python.url}/garbage`, 'garbage');
    });

    it('a redirect, even to an address the box allows, is not followed', async function () {
      const target = await HookServer.start('go', secret, ca);
      try {
        await failsWith('redirect', `${servers.python.url}/redirect/${target.port}`, 'status');
        expect(await target.seen()).to.deep.equal([]);
      } finally {
        await target.kill();
      }
    });

    it('SIGKILLed in the middle of a call', async function () {
      const dying = await HookServer.start('python', secret, ca);
      await putHook('dying', `${dying.url}/hang`, { timeoutSeconds: 10 });
      const pending = token();
      await eventually('the hook to get the call', async () => (await dying.seen()).some((s) => s.path === '/hang'));
      await dying.kill('SIGKILL');
      const res = await pending;
      expect(res.status, res.text).to.equal(503);
      expect(counter(await box.metrics(), 'boxauth_hook_calls_total', { hook: 'dying', result: 'unreachable' })).to.equal(1);
    });

    it('too many calls at once: past maxInFlight', async function () {
      await putHook('narrow', `${servers.go.url}/slow/1500`, { maxInFlight: 1, failurePolicy: 'Ignore', timeoutSeconds: 5 });
      const answers = await Promise.all([token(), token(), token()]);
      const slow = answers.map((a) => decodeJwt(a.body.access_token as string).slow === true);
      expect(slow.filter(Boolean)).to.have.length(1);
      expect(counter(await box.metrics(), 'boxauth_hook_calls_total', { hook: 'narrow', result: 'busy' })).to.equal(2);
    });

    it('the breaker opens after failures in a row: the hook is not called while it is open', async function () {
      const gone = await HookServer.start('go', secret, ca);
      await gone.kill();
      await putHook('breaker', `${gone.url}/claims`, { failurePolicy: 'Ignore' });
      for (let i = 0; i < 7; i++) expect((await token()).status).to.equal(200);
      const metrics = await box.metrics();
      expect(counter(metrics, 'boxauth_hook_calls_total', { hook: 'breaker', result: 'unreachable' })).to.equal(5);
      expect(counter(metrics, 'boxauth_hook_calls_total', { hook: 'breaker', result: 'breaker_open' })).to.equal(2);
      // A hook down under load fails every request: the trail keeps a line a second per result, not one a request.
      await eventually('the audit lines of the failed calls', async () => box.logs.some((l) => /"event":"hook".*"hook":"breaker"/.test(l)));
      expect(box.logs.filter((l) => /"event":"hook"/.test(l) && /"hook":"breaker"/.test(l)).length).to.be.below(7);
    });
  });
});
