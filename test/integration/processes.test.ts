// Several processes, one box: changes on one hold on the other within a second;
// an acknowledged token survives SIGKILL; SIGTERM drains.
import diagnostics from 'node:diagnostics_channel';
import { expect } from 'chai';
import { Box, basic, eventually } from '../support/box.js';

/** Within a second: how soon another process sees a change. */
const withinASecond = (what: string, check: () => Promise<boolean>): Promise<boolean> => eventually(what, check, 1000, 20);

describe('two API processes on one database', function () {
  let a: Box;
  let b: Box;
  let secret: string;

  before(async function () {
    a = await Box.start();
    // One box, two processes: the same issuer and root credentials.
    b = await a.startAnother();
    ({ secret } = await a.addClient('shared', { auth: { client_credentials: { token_format: 'jwt' } } }));
  });
  after(async function () {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('a session closed on one process is refused by the other', async function () {
    const token = (await a.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('shared', secret) })).body
      .access_token;
    expect((await b.json('GET', '/Client/shared', undefined, token)).status).to.equal(200); // b has it cached now
    expect((await a.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
    await withinASecond('the closed session refused', async () => (await b.json('GET', '/Client/shared', undefined, token)).status === 401);
  });

  it('a policy removed on one process stops allowing on the other', async function () {
    const token = (await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('shared', secret) })).body
      .access_token;
    expect((await b.json('GET', '/Client/shared', undefined, token)).status).to.equal(200);
    await a.json('DELETE', '/AccessPolicy/shared-allow', undefined, await a.rootToken());
    await withinASecond('the policy gone', async () => (await b.json('GET', '/Client/shared', undefined, token)).status === 403);
  });

  it('a secret changed on one process is required by the other', async function () {
    const root = await a.rootToken();
    expect((await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('shared', secret) })).status).to.equal(
      200,
    );
    await a.json('PUT', '/Client/shared', { grant_types: ['client_credentials'], secret: 'rotated-secret' }, root);
    await withinASecond(
      'the old secret refused',
      async () =>
        (await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('shared', secret) })).status === 401,
    );
    expect(
      (await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('shared', 'rotated-secret') })).status,
    ).to.equal(200);
  });
});

describe('the decision point on two processes', function () {
  let a: Box;
  let b: Box;
  let root: string;
  const token = async (): Promise<string> =>
    (
      await a.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: 'https://wiki.example' },
        { Authorization: basic('indexer', 'indexer-secret') },
      )
    ).body.access_token;
  /** A check at b's Envoy HTTP door. */
  const atB = (path: string, bearer: string) =>
    b.request('GET', `/authz/http/wiki${path}`, { headers: { Authorization: `Bearer ${bearer}`, Host: 'wiki.example' } });

  before(async function () {
    a = await Box.start();
    b = await a.startAnother();
    root = await a.rootToken();
    await a.addClient('indexer', { audience: ['https://wiki.example'] }, { secret: 'indexer-secret', policy: false });
    await a.json('PUT', '/App/wiki', { urls: ['https://wiki.example'], audience: 'https://wiki.example' }, root);
    await a.json(
      'PUT',
      '/AccessPolicy/wiki-docs',
      { app: 'wiki', engine: 'matcho', link: [{ id: 'indexer', resourceType: 'Client' }], matcho: { path: '#^/docs/' } },
      root,
    );
  });
  after(async function () {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it("a session closed on one process is refused at the other's gate within a second", async function () {
    const t = await token();
    await eventually('b to allow the token', async () => (await atB('/docs/a', t)).status === 200, 5000);
    expect((await a.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${t}` } })).status).to.equal(200);
    await withinASecond('the closed session refused at b', async () => (await atB('/docs/a', t)).status === 401);
  });

  it("an app's policy changed on one process holds at the other's gate within a second", async function () {
    const t = await token();
    await eventually('b to refuse /notes', async () => (await atB('/notes/1', t)).status === 403, 5000);
    const put = await a.json(
      'PUT',
      '/AccessPolicy/wiki-notes',
      { app: 'wiki', engine: 'matcho', link: [{ id: 'indexer', resourceType: 'Client' }], matcho: { path: '#^/notes/' } },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    await withinASecond('the new policy allowing at b', async () => (await atB('/notes/1', t)).status === 200);
    await a.json('DELETE', '/AccessPolicy/wiki-notes', undefined, root);
    await withinASecond('the removed policy refusing at b', async () => (await atB('/notes/1', t)).status === 403);
  });
});

describe('crash and shutdown', function () {
  it('a token answered just before SIGKILL works after restart (the session was durable)', async function () {
    const box = await Box.start();
    try {
      const { secret } = await box.addClient('durable', {});
      const tokens: string[] = [];
      for (let i = 0; i < 20; i++) {
        tokens.push(
          (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('durable', secret) })).body
            .access_token,
        );
      }
      await box.kill('SIGKILL');
      await box.launch();
      for (const token of tokens) expect((await box.json('GET', '/Client/durable', undefined, token)).status).to.equal(200);
    } finally {
      await box.stop();
    }
  });

  it('SIGTERM lets requests in flight finish, then exits 0', async function () {
    const box = await Box.start();
    const { secret } = await box.addClient('drain', {});
    // In flight: every request is on the wire (fetch's undici says when a body is sent) when SIGTERM comes.
    let sent = 0;
    const onSent = (): void => void sent++;
    diagnostics.subscribe('undici:request:bodySent', onSent);
    const inFlight = Array.from({ length: 20 }, () =>
      box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('drain', secret) }).then(
        (r) => r.status,
        () => 0,
      ),
    );
    try {
      await eventually('the 20 requests to be sent', async () => sent >= 20, 10_000, 1);
    } finally {
      diagnostics.unsubscribe('undici:request:bodySent', onSent);
    }
    const code = await box.kill('SIGTERM');
    const statuses = await Promise.all(inFlight);
    expect(code).to.equal(0);
    // Every request either completed or was never accepted; none was cut off with an error status.
    for (const s of statuses) expect([200, 0]).to.include(s);
    expect(statuses.filter((s) => s === 200).length).to.be.greaterThan(0);
  });
  it('with BOXAUTH_SHUTDOWN_DELAY_MS, SIGTERM keeps answering for that long, each answer closing its connection', async function () {
    const box = await Box.start({ env: { BOXAUTH_SHUTDOWN_DELAY_MS: '1500' } });
    const { secret } = await box.addClient('delay', {});
    const token = (): Promise<Response> =>
      fetch(`${box.url}/auth/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
        headers: { Authorization: basic('delay', secret) },
      });
    const before = await token();
    expect(before.headers.get('connection')).to.equal('keep-alive');
    await before.arrayBuffer();
    const exited = box.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Still listening: a new connection is served, and told to go (as the keep-alive one was).
    const during = await token();
    expect(during.status).to.equal(200);
    expect(during.headers.get('connection')).to.equal('close');
    expect((await fetch(`${box.url}/readyz`)).status).to.equal(503);
    expect(await exited).to.equal(0);
    const after = await token().then(
      (r) => r.status,
      (err: Error) => String((err.cause as { code?: string } | undefined)?.code ?? err),
    );
    expect(after).to.equal('ECONNREFUSED');
  });
});
