// The decision point's gRPC door, driven as Envoy drives it: envoy.service.auth.v3.Authorization/Check
// from a client built from Envoy's own protos (test/extauthz: go-control-plane, via the Go
// module proxy). Requests and answers are protojson, so every field is checked by the
// name Envoy's API gives it: allowed, refused, unauthenticated, revoked, a browser without
// a session, apps named by the route or by host, and what a client must not be able to do.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { Box, basic, eventually } from '../../support/box.js';
import { TOOLS_BIN } from '../../support/kube.js';
import { testCa } from '../../support/tls.js';

const EXTAUTHZ = path.join(TOOLS_BIN, 'extauthz');

interface HeaderOption {
  header: { key: string; value?: string };
  appendAction?: string;
}
/** A CheckResponse or a gRPC error, as protojson names them. */
interface Answer {
  status?: { code?: number; message?: string };
  okResponse?: { headers?: HeaderOption[]; headersToRemove?: string[]; responseHeadersToAdd?: HeaderOption[] };
  deniedResponse?: { status: { code: string }; headers?: HeaderOption[]; body?: string };
  grpcError?: { code: number; name: string; message: string };
}

/** Sends CheckRequests (protojson) through the Go client; an answer each, in order. */
function check(port: number, requests: unknown[], ca?: string): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(EXTAUTHZ, ['check', '-addr', `127.0.0.1:${port}`, ...(ca ? ['-ca', ca] : [])], { stdio: 'pipe' });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`extauthz exited ${code}: ${err}`));
      resolve(
        out
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Answer),
      );
    });
    child.stdin.end(requests.map((r) => JSON.stringify(r)).join('\n'));
  });
}

const header = (options: HeaderOption[] | undefined, name: string): string | undefined =>
  options?.find((o) => o.header.key.toLowerCase() === name.toLowerCase())?.header.value ??
  (options?.some((o) => o.header.key.toLowerCase() === name.toLowerCase()) ? '' : undefined);

describe("the decision point's gRPC door (Envoy ext_authz v3)", function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let grpcPort: number;
  const host = 'wiki.example';

  /** A CheckRequest for the wiki, as Envoy's ext_authz filter fills it in. */
  const request = (
    p: string,
    headers: Record<string, string> = {},
    more: { method?: string; host?: string; app?: string | null } = {},
  ): Record<string, unknown> => ({
    attributes: {
      request: {
        http: {
          id: '1',
          method: more.method ?? 'GET',
          path: p,
          host: more.host ?? host,
          scheme: 'https',
          protocol: 'HTTP/1.1',
          headers: { ':authority': more.host ?? host, ':path': p, ':method': more.method ?? 'GET', ...headers },
        },
      },
      ...(more.app === null ? {} : { contextExtensions: { app: more.app ?? 'wiki' } }),
    },
  });
  const one = async (req: Record<string, unknown>): Promise<Answer> => (await check(grpcPort, [req]))[0]!;

  const indexerToken = async (): Promise<string> =>
    (
      await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: 'https://wiki.example' },
        { Authorization: basic('indexer', 'indexer-secret') },
      )
    ).body.access_token;

  before(async function () {
    box = await Box.start();
    grpcPort = Number(box.env.BOXAUTH_GRPC_PORT);
    root = await box.rootToken();
    await box.addClient('indexer', { audience: ['https://wiki.example'] }, { secret: 'indexer-secret', policy: false });
    await box.addClient(
      'wiki-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: 'https://wiki.example/.boxauth/callback' } },
      },
      { policy: false },
    );
    const put = await box.json(
      'PUT',
      '/App/wiki',
      { urls: ['https://wiki.example'], audience: 'https://wiki.example', signIn: { client: 'wiki-sso' } },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    await box.json(
      'PUT',
      '/AccessPolicy/wiki-indexer-reads',
      {
        app: 'wiki',
        engine: 'matcho',
        link: [{ id: 'indexer', resourceType: 'Client' }],
        matcho: { 'request-method': 'get', path: '#^/docs/' },
      },
      root,
    );
    await box.json('PUT', '/AccessPolicy/wiki-health', { app: 'wiki', engine: 'matcho', matcho: { path: '/health' } }, root);
  });
  after(async function () {
    await box?.stop();
  });

  it('allows with gRPC OK: the caller travels upstream, headers it must not set are removed, the decision id both ways', async function () {
    const token = await indexerToken();
    const answer = await one(request('/docs/a?x=1', { authorization: `Bearer ${token}`, 'x-auth-request-user': '1' }));
    expect(answer.status?.code ?? 0, JSON.stringify(answer)).to.equal(0);
    const ok = answer.okResponse!;
    expect(header(ok.headers, 'X-Auth-Request-Client')).to.equal('indexer');
    expect(ok.headers!.every((h) => h.appendAction === 'OVERWRITE_IF_EXISTS_OR_ADD')).to.equal(true);
    // A client has no user: the header the client sent under that name is removed, not passed on.
    expect(ok.headersToRemove).to.include('x-auth-request-user');
    const id = header(ok.responseHeadersToAdd, 'X-Boxauth-Decision');
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    expect(header(ok.headers, 'X-Boxauth-Decision')).to.equal(id);
    expect(answer.deniedResponse).to.equal(undefined);
  });

  it('removes other spellings of an identity header (CGI, PHP, WSGI and Rack read them as that header)', async function () {
    const spoof = { x_auth_request_user: '1', 'x-auth_request-email': 'boss@example.com', 'x.auth.request.groups': 'admins' };
    const token = await indexerToken();
    for (const [what, answer] of [
      ['anonymous', await one(request('/health', spoof))],
      ['a client', await one(request('/docs/a', { authorization: `Bearer ${token}`, ...spoof }))],
    ] as const) {
      expect(answer.status?.code ?? 0, JSON.stringify(answer)).to.equal(0);
      expect(answer.okResponse!.headersToRemove, what).to.include.members(Object.keys(spoof));
    }
  });

  it('refuses with PERMISSION_DENIED and a 403 for the client, naming the decision', async function () {
    const token = await indexerToken();
    const answer = await one(request('/docs/a', { authorization: `Bearer ${token}` }, { method: 'POST' }));
    expect(answer.status?.code).to.equal(7);
    expect(answer.okResponse).to.equal(undefined);
    expect(answer.deniedResponse!.status.code).to.equal('Forbidden');
    const body = JSON.parse(answer.deniedResponse!.body!) as { error: string; decision: string };
    expect(body.error).to.equal('access_denied');
    expect(header(answer.deniedResponse!.headers, 'X-Boxauth-Decision')).to.equal(body.decision);
    expect(header(answer.deniedResponse!.headers, 'Content-Type')).to.equal('application/json');
    // The refusal is explained by its id, as over HTTP.
    const explained = await eventually('the decision to be kept', async () => {
      const res = await box.json('GET', `/authz/decisions/${body.decision}`, undefined, root);
      return res.status === 200 && res;
    });
    expect(explained.body).to.include({ id: body.decision, app: 'wiki', allowed: false, status: 403 });
    const indexer = explained.body.policies.find((p: { id: string }) => p.id === 'wiki-indexer-reads');
    expect(indexer.why).to.equal('request-method: "post" does not match "get"');
  });

  it('without a token: UNAUTHENTICATED, 401 with a challenge; a public path is allowed', async function () {
    const answer = await one(request('/docs/a'));
    expect(answer.status?.code).to.equal(16);
    expect(answer.deniedResponse!.status.code).to.equal('Unauthorized');
    expect(header(answer.deniedResponse!.headers, 'WWW-Authenticate')).to.equal(
      'Bearer realm="wiki", resource_metadata="https://wiki.example/.well-known/oauth-protected-resource"',
    );
    expect((await one(request('/health'))).status?.code ?? 0).to.equal(0);
  });

  it('a revoked token is refused at once, with invalid_token', async function () {
    const token = await indexerToken();
    expect((await one(request('/docs/a', { authorization: `Bearer ${token}` }))).status?.code ?? 0).to.equal(0);
    expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
    const answer = await one(request('/docs/a', { authorization: `Bearer ${token}` }));
    expect(answer.status?.code).to.equal(16);
    expect(header(answer.deniedResponse!.headers, 'WWW-Authenticate')).to.match(/error="invalid_token"/);
  });

  it("a browser without a session is sent to the app's sign-in (302); its stale cookie is cleared", async function () {
    const browser = { accept: 'text/html,application/xhtml+xml' };
    const answer = await one(request('/docs/page?x=1', browser));
    expect(answer.status?.code).to.equal(16);
    expect(answer.deniedResponse!.status.code).to.equal('Found');
    const location = new URL(header(answer.deniedResponse!.headers, 'Location')!);
    expect(`${location.origin}${location.pathname}`).to.equal('https://wiki.example/.boxauth/start');
    expect(location.searchParams.get('rd')).to.equal('/docs/page?x=1');

    // The app's cookie holds a token for the app's audience; once its session is closed it is cleared.
    const token = await indexerToken();
    const cookie = { ...browser, cookie: `theme=dark; __Host-boxauth-app-wiki=${token}` };
    const allowed = await one(request('/docs/page', cookie));
    expect(allowed.status?.code ?? 0, JSON.stringify(allowed)).to.equal(0);
    await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } });
    const stale = await one(request('/docs/page', cookie));
    expect(stale.deniedResponse!.status.code).to.equal('Found');
    expect(header(stale.deniedResponse!.headers, 'Set-Cookie')).to.match(
      /^__Host-boxauth-app-wiki=; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=0/,
    );
  });

  it('reads the headers Envoy sends raw (encode_raw_headers)', async function () {
    const token = await indexerToken();
    const raw = request('/docs/a');
    const http = (raw.attributes as { request: { http: Record<string, unknown> } }).request.http;
    delete http.headers;
    http.headerMap = {
      headers: [
        { key: ':path', rawValue: Buffer.from('/docs/a').toString('base64') },
        { key: 'authorization', rawValue: Buffer.from(`Bearer ${token}`).toString('base64') },
      ],
    };
    const answer = await one(raw);
    expect(answer.status?.code ?? 0, JSON.stringify(answer)).to.equal(0);
  });

  it("the app is the route's (context_extensions) or found by host; an unknown one is refused", async function () {
    const token = await indexerToken();
    const byHost = await one(request('/docs/a', { authorization: `Bearer ${token}` }, { app: null }));
    expect(byHost.status?.code ?? 0).to.equal(0);
    const unknownHost = await one(request('/docs/a', { authorization: `Bearer ${token}` }, { app: null, host: 'elsewhere.example' }));
    expect(unknownHost.status?.code).to.equal(7);
    expect(JSON.parse(unknownHost.deniedResponse!.body!).error_description).to.match(/no app at host/);
    const unknownApp = await one(request('/docs/a', { authorization: `Bearer ${token}` }, { app: 'nope' }));
    expect(unknownApp.deniedResponse!.status.code).to.equal('Forbidden');
  });

  it('an ambiguous path is refused (400), and a request with no HTTP attributes is a bad request', async function () {
    const token = await indexerToken();
    const [ambiguous, empty] = await check(grpcPort, [request('/docs/../admin', { authorization: `Bearer ${token}` }), { attributes: {} }]);
    expect(ambiguous!.status?.code).to.equal(3);
    expect(ambiguous!.deniedResponse!.status.code).to.equal('BadRequest');
    expect(empty!.status?.code).to.equal(3);
    expect(JSON.parse(empty!.deniedResponse!.body!).error).to.equal('invalid_request');
  });

  it('an oversized message is refused by gRPC, and the door keeps deciding', async function () {
    const huge = request('/health', { 'x-filler': 'a'.repeat(2 << 20) });
    const [refused, next] = await check(grpcPort, [huge, request('/health')]);
    expect(refused!.grpcError?.name).to.equal('ResourceExhausted');
    expect(next!.status?.code ?? 0).to.equal(0);
  });

  it('counts its decisions by door', async function () {
    await one(request('/health'));
    const metrics = await box.metrics();
    expect(metrics).to.match(/boxauth_decisions_total\{[^}]*door="grpc"[^}]*\} [1-9]/);
  });

  it('a session closed on another process is refused here within a second', async function () {
    const other = await box.startAnother();
    try {
      const token = await indexerToken();
      const otherPort = Number(other.env.BOXAUTH_GRPC_PORT);
      const at = async (): Promise<number> =>
        (await check(otherPort, [request('/docs/a', { authorization: `Bearer ${token}` })]))[0]!.status?.code ?? 0;
      await eventually('the other process to allow the token', async () => (await at()) === 0, 5000);
      expect((await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
      await eventually('the other process to refuse it', async () => (await at()) === 16, 1000, 20);
    } finally {
      await other.stop();
    }
  });

  it('the workers of one process share the port', async function () {
    const workers = await box.startAnother({ BOXAUTH_WORKERS: '2' });
    try {
      const answers = await check(
        Number(workers.env.BOXAUTH_GRPC_PORT),
        Array.from({ length: 20 }, () => request('/health')),
      );
      expect(answers.map((a) => a.status?.code ?? 0)).to.deep.equal(Array(20).fill(0));
    } finally {
      await workers.stop();
    }
  });

  it('speaks TLS with the API certificate when the box serves HTTPS', async function () {
    const ca = testCa();
    const tlsBox = await Box.start({ tls: { ...ca.issue('served'), dispatcher: ca.dispatcher } });
    try {
      const answer = (await check(Number(tlsBox.env.BOXAUTH_GRPC_PORT), [request('/health', {}, { app: 'nope' })], ca.caFile))[0]!;
      expect(answer.deniedResponse?.status.code, JSON.stringify(answer)).to.equal('Forbidden');
      const plain = (await check(Number(tlsBox.env.BOXAUTH_GRPC_PORT), [request('/health', {}, { app: 'nope' })]))[0]!;
      expect(plain.grpcError?.name).to.equal('Unavailable');
    } finally {
      await tlsBox.stop();
    }
  });
});
