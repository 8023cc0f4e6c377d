// Protected Resource Metadata (RFC 9728) of every App, and the gate's challenges that name it:
// a client refused at a gate finds, from that one answer, the document of the App (on the App's
// own host, at its audience's path), the box as its authorization server, and the scopes the
// App's policies want (AccessPolicy.scope); a token short of a policy's scope is refused 403
// insufficient_scope (RFC 6750 §3.1), a sign-in short of its acr 401 (RFC 9470). The attacks: a
// Host of no App, another App's suffix, a Host or scheme that would write into the challenge,
// another App's scopes, a client's token in the app's sign-in cookie.
import { expect } from 'chai';
import http from 'node:http';
import { Box, basic, eventually } from '../support/box.js';
import { grpcCheck } from '../support/grpc-check.js';
import { userToken } from '../support/user-token.js';
import { pepReadsPeople } from '../support/pep.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** A request with the Host a gateway would pass on (fetch may not set Host). */
function at(port: number, host: string, target: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: { Host: host, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json') && text) body = JSON.parse(text);
        resolve({ status: res.statusCode!, headers: res.headers, text, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';
/** What an MCP client sends (Streamable HTTP): JSON-RPC in a POST, JSON or an event stream back. */
const MCP_ACCEPT = { Accept: 'application/json, text/event-stream' };

describe('protected resource metadata and the challenges that name it', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let port: number;
  let userId: number;
  const NOTES = 'http://notes.example';
  const AUDIENCE = `${NOTES}/mcp`;

  const put = async (path: string, body: Record<string, unknown>) => {
    const res = await box.json('PUT', path, body, root);
    expect(res.status, `${path}: ${res.text}`).to.be.oneOf([200, 201]);
  };

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    port = Number(new URL(box.url).port);
    userId = (await box.json('POST', '/users', { email: 'ada@example.com', password: 'ada-password-1' }, root)).body.id;
    await box.addClient(
      'notes-sso',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${NOTES}/.boxauth/callback` } },
      },
      { secret: 'notes-sso-secret', policy: false },
    );
    await box.addClient(
      'agent',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: 'http://127.0.0.1:1/cb' } } },
      { policy: false },
    );
    await put('/App/notes', { urls: [NOTES], audience: AUDIENCE, description: 'Notes (MCP)', signIn: { client: 'notes-sso' } });
    await put('/App/other', { urls: ['http://other.example'], audience: 'http://other.example/api' });
    // Reading wants notes:read; writing notes:read and notes:write; /both is open to a passkey sign-in
    // or to a token of notes:admin; /strong wants both a passkey and notes:strong.
    await put('/AccessPolicy/notes-read', {
      app: 'notes',
      engine: 'matcho',
      matcho: { 'request-method': 'get', path: '#^/mcp' },
      scope: ['notes:read'],
    });
    await put('/AccessPolicy/notes-write', {
      app: 'notes',
      engine: 'matcho',
      matcho: { 'request-method': 'post', path: '#^/mcp' },
      scope: ['notes:write', 'notes:read'],
    });
    await put('/AccessPolicy/notes-both-acr', { app: 'notes', engine: 'matcho', matcho: { path: '/both' }, acr: 'phr' });
    await put('/AccessPolicy/notes-both-scope', { app: 'notes', engine: 'matcho', matcho: { path: '/both' }, scope: ['notes:admin'] });
    await put('/AccessPolicy/notes-strong', {
      app: 'notes',
      engine: 'matcho',
      matcho: { path: '/strong' },
      acr: 'phr',
      scope: ['notes:strong'],
    });
    // What must never be listed for notes: a dry-run policy's scope, another App's.
    await put('/AccessPolicy/notes-dry', { app: 'notes', engine: 'allow', dryRun: true, scope: ['notes:dry'] });
    await put('/AccessPolicy/other-secret', { app: 'other', engine: 'allow', scope: ['other:secret'] });
  });
  after(async function () {
    await box?.stop();
  });

  const agentToken = (scope?: string) => userToken(box, userId, 'agent', AUDIENCE, scope);

  /** A forward-auth check, as Traefik sends it (the app named by its host). */
  const forwardAuth = (uri: string, headers: Record<string, string> = {}, method = 'GET') =>
    box.request('GET', '/authz/forward-auth', {
      headers: {
        'X-Forwarded-Method': method,
        'X-Forwarded-Proto': 'http',
        'X-Forwarded-Host': 'notes.example',
        'X-Forwarded-Uri': uri,
        ...headers,
      },
    });

  describe('the documents', function () {
    it("an App's document is on its host at its audience's path: the audience exactly, the box, its policies' scopes", async function () {
      const res = await at(port, 'notes.example', `${WELL_KNOWN}/mcp`);
      expect(res.status, res.text).to.equal(200);
      expect(res.headers['content-type']).to.match(/^application\/json/);
      expect(res.headers['cache-control']).to.equal('public, max-age=60');
      expect(res.body).to.deep.equal({
        resource: AUDIENCE,
        authorization_servers: [box.url],
        // The union of notes' deciding policies' scopes: not the dry-run one's, not other's.
        scopes_supported: ['notes:admin', 'notes:read', 'notes:strong', 'notes:write'],
        bearer_methods_supported: ['header'],
        resource_name: 'Notes (MCP)',
        dpop_signing_alg_values_supported: ['ES256', 'ES384', 'ES512', 'PS256', 'RS256', 'EdDSA'],
      });
      // The box named there is the authorization server its own metadata says it is (RFC 9728 §3.3, RFC 8414).
      const as = await box.request('GET', '/.well-known/oauth-authorization-server');
      expect(as.body.issuer).to.equal(res.body.authorization_servers[0]);
    });

    it("a policy's new scope is listed once written", async function () {
      await put('/AccessPolicy/notes-extra', { app: 'notes', engine: 'matcho', matcho: { path: '/extra' }, scope: ['notes:extra'] });
      try {
        const res = await at(port, 'notes.example', `${WELL_KNOWN}/mcp`);
        expect(res.body.scopes_supported).to.include('notes:extra');
      } finally {
        await box.json('DELETE', '/AccessPolicy/notes-extra', undefined, root);
      }
    });

    it("the box's own host has the box's own document, the box its resource", async function () {
      const res = await at(port, new URL(box.url).host, WELL_KNOWN);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.resource).to.equal(box.url);
      expect(res.body.authorization_servers).to.deep.equal([box.url]);
      expect(res.body).to.not.have.property('scopes_supported');
    });

    it('a Host of no App gets 404, never an App document; an App host answers only its own suffix', async function () {
      for (const [host, path] of [
        ['nowhere.example', WELL_KNOWN],
        ['nowhere.example', `${WELL_KNOWN}/mcp`],
        ['nowhere.example', `${WELL_KNOWN}/api`],
        // another App's suffix at this App's host, and this App's at another's
        ['notes.example', `${WELL_KNOWN}/api`],
        ['other.example', `${WELL_KNOWN}/mcp`],
        // the box's host holds no App's document
        [new URL(box.url).host, `${WELL_KNOWN}/mcp`],
        // one spelling per document: no trailing slash, no encoding, no bare well-known where the audience has a path
        ['notes.example', WELL_KNOWN],
        ['notes.example', `${WELL_KNOWN}/mcp/`],
        ['notes.example', `${WELL_KNOWN}/%6Dcp`],
        ['notes.example', `${WELL_KNOWN}/MCP`],
        ['notes.example', `${WELL_KNOWN}/mcp/x`],
      ] as const) {
        const res = await at(port, host, path);
        expect(res.status, `${host}${path}: ${res.text}`).to.equal(404);
        expect(res.text).to.not.include('notes:').and.not.include('other:');
      }
      const other = await at(port, 'other.example', `${WELL_KNOWN}/api`);
      expect(other.status).to.equal(200);
      expect(other.body.resource).to.equal('http://other.example/api');
      expect(other.body.scopes_supported).to.deep.equal(['other:secret']);
      expect(other.body.resource_name).to.equal('other');
    });
  });

  describe('the challenges', function () {
    const metadataAt = (origin: string) => `resource_metadata="${origin}${WELL_KNOWN}/mcp"`;

    it('an MCP client without a token gets 401 naming the document, at every door, never a redirect', async function () {
      const expected = `Bearer realm="notes", ${metadataAt(NOTES)}`;
      // forward-auth as Traefik and Caddy send it
      const traefik = await forwardAuth('/mcp', MCP_ACCEPT, 'POST');
      expect(traefik.status).to.equal(401);
      expect(traefik.headers.get('www-authenticate')).to.equal(expected);
      // NGINX's auth_request, with ?signin=401
      const nginx = await at(port, 'notes.example', '/authz/forward-auth/notes?signin=401', {
        'X-Original-URI': '/mcp',
        'X-Original-Method': 'POST',
        ...MCP_ACCEPT,
      });
      expect(nginx.status).to.equal(401);
      expect(nginx.headers['www-authenticate']).to.equal(expected);
      expect(nginx.headers['x-boxauth-sign-in']).to.equal(undefined);
      // Envoy's HTTP service
      const envoy = await at(port, 'notes.example', '/authz/http/notes/mcp', { ...MCP_ACCEPT }, 'POST');
      expect(envoy.status).to.equal(401);
      expect(envoy.headers['www-authenticate']).to.equal(expected);
      // Envoy's gRPC service
      const grpc = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
        attributes: {
          request: {
            http: { method: 'POST', path: '/mcp', host: 'notes.example', scheme: 'http', headers: { accept: MCP_ACCEPT.Accept } },
          },
        },
      });
      expect(grpc.denied_response?.status.code).to.equal(401);
      expect(grpc.denied_response?.headers.find((h) => h.header.key === 'WWW-Authenticate')?.header.value).to.equal(expected);
      // The URL named is the document.
      const url = new URL(/resource_metadata="([^"]+)"/.exec(expected)![1]!);
      const doc = await at(port, url.host, url.pathname);
      expect(doc.body.resource).to.equal(AUDIENCE);
    });

    it('a person in a browser is still sent to sign in (302, or 401 with the address for NGINX)', async function () {
      const browser = await forwardAuth('/mcp', { Accept: 'text/html' });
      expect(browser.status).to.equal(302);
      const nginx = await at(port, 'notes.example', '/authz/forward-auth/notes?signin=401', {
        'X-Original-URI': '/mcp',
        'X-Original-Method': 'GET',
        Accept: 'text/html',
      });
      expect(nginx.status).to.equal(401);
      expect(nginx.headers['x-boxauth-sign-in']).to.match(/^http:\/\/notes\.example\/\.boxauth\/start\?/);
    });

    it('names the origin the client addressed: a port, https', async function () {
      const res = await box.request('GET', '/authz/forward-auth/notes', {
        headers: {
          'X-Forwarded-Method': 'GET',
          'X-Forwarded-Proto': 'https',
          'X-Forwarded-Host': 'notes.example:8443',
          'X-Forwarded-Uri': '/mcp',
        },
      });
      expect(res.headers.get('www-authenticate')).to.equal(`Bearer realm="notes", ${metadataAt('https://notes.example:8443')}`);
    });

    it('a bad token, or a DPoP one without its proof, is told where the document is too', async function () {
      const bad = await forwardAuth('/mcp', { Authorization: 'Bearer not-a-token', ...MCP_ACCEPT });
      expect(bad.status).to.equal(401);
      expect(bad.headers.get('www-authenticate')).to.match(/^Bearer realm="notes", error="invalid_token", error_description="[^"]*", /);
      expect(bad.headers.get('www-authenticate')).to.match(new RegExp(`, ${metadataAt(NOTES).replace(/[.?]/g, '\\$&')}$`));
      const dpop = await forwardAuth('/mcp', { Authorization: 'DPoP not-a-token', ...MCP_ACCEPT });
      expect(dpop.status).to.equal(401);
      expect(dpop.headers.get('www-authenticate'))
        .to.match(/^DPoP realm="notes", /)
        .and.include(metadataAt(NOTES));
      // A token for another App's audience.
      const elsewhere = await userToken(box, userId, 'agent', 'http://other.example/api', 'notes:read');
      const wrong = await forwardAuth('/mcp', { Authorization: `Bearer ${elsewhere}` });
      expect(wrong.status).to.equal(401);
      expect(wrong.headers.get('www-authenticate')).to.include(metadataAt(NOTES));
    });

    it("a Host or scheme that would write into the challenge is not repeated: the App's own url stands in", async function () {
      for (const [host, proto] of [
        ['evil.example", error="injected', 'http'],
        ['evil.example\\', 'http'],
        ['notes.example', 'javascript'],
        ['notes.example', 'http", x="'],
        ['evil.example/.well-known/x?', 'http'],
      ]) {
        const res = await box.request('GET', '/authz/forward-auth/notes', {
          headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Proto': proto!, 'X-Forwarded-Host': host!, 'X-Forwarded-Uri': '/mcp' },
        });
        expect(res.status, `${host} ${proto}`).to.equal(401);
        expect(res.headers.get('www-authenticate'), `${host} ${proto}`).to.equal(`Bearer realm="notes", ${metadataAt(NOTES)}`);
      }
    });
  });

  describe('AccessPolicy scope', function () {
    it('a token short of a policy scope is refused 403 insufficient_scope with all the scopes wanted; with them it passes', async function () {
      const readOnly = await agentToken('notes:read');
      const write = await forwardAuth('/mcp', { Authorization: `Bearer ${readOnly}`, ...MCP_ACCEPT }, 'POST');
      expect(write.status, write.text).to.equal(403);
      expect(write.body.error).to.equal('insufficient_scope');
      expect(write.body.decision).to.match(/^[0-9a-f-]{36}$/);
      expect(write.headers.get('www-authenticate')).to.match(
        /^Bearer realm="notes", error="insufficient_scope", error_description="[^"]+", scope="notes:write notes:read", resource_metadata="http:\/\/notes\.example\/\.well-known\/oauth-protected-resource\/mcp"$/,
      );
      expect((await forwardAuth('/mcp', { Authorization: `Bearer ${readOnly}` })).status).to.equal(200);
      const both = await agentToken('openid notes:read notes:write');
      expect((await forwardAuth('/mcp', { Authorization: `Bearer ${both}` }, 'POST')).status).to.equal(200);
      const none = await agentToken();
      const read = await forwardAuth('/mcp', { Authorization: `Bearer ${none}` });
      expect(read.status).to.equal(403);
      expect(read.headers.get('www-authenticate')).to.include('scope="notes:read"');
      // A scope is a whole word: notes:readx is not notes:read.
      const lookalike = await agentToken('notes:readx notes:rea');
      expect((await forwardAuth('/mcp', { Authorization: `Bearer ${lookalike}` })).status).to.equal(403);
    });

    it('the same at the HTTP and gRPC doors', async function () {
      const readOnly = await agentToken('notes:read');
      const envoy = await at(
        port,
        'notes.example',
        '/authz/http/notes/mcp',
        { Authorization: `Bearer ${readOnly}`, ...MCP_ACCEPT },
        'POST',
      );
      expect(envoy.status).to.equal(403);
      expect(envoy.headers['www-authenticate']).to.include('error="insufficient_scope"').and.include('scope="notes:write notes:read"');
      const grpc = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
        attributes: {
          request: {
            http: { method: 'POST', path: '/mcp', host: 'notes.example', scheme: 'http', headers: { authorization: `Bearer ${readOnly}` } },
          },
        },
      });
      expect(grpc.denied_response?.status.code).to.equal(403);
      const challenge = grpc.denied_response?.headers.find((h) => h.header.key === 'WWW-Authenticate')?.header.value;
      expect(challenge).to.include('error="insufficient_scope"').and.include(metadataOf(NOTES));
    });

    const metadataOf = (origin: string) => `resource_metadata="${origin}${WELL_KNOWN}/mcp"`;

    it('one policy wants scope, another acr: the scope is asked for (consent at most, not a new sign-in)', async function () {
      const token = await agentToken('notes:read');
      const res = await forwardAuth('/both', { Authorization: `Bearer ${token}` });
      expect(res.status).to.equal(403);
      expect(res.headers.get('www-authenticate')).to.include('error="insufficient_scope"').and.include('scope="notes:admin"');
      expect((await forwardAuth('/both', { Authorization: `Bearer ${await agentToken('notes:admin')}` })).status).to.equal(200);
    });

    it('a policy that wants both acr and scope steps up (401, RFC 9470) and names its scope and the document', async function () {
      const token = await agentToken('notes:read');
      const res = await forwardAuth('/strong', { Authorization: `Bearer ${token}` });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(
        /^Bearer realm="notes", error="insufficient_user_authentication", error_description="[^"]+", acr_values="phr", scope="notes:strong", resource_metadata="http:\/\/notes\.example\/\.well-known\/oauth-protected-resource\/mcp"$/,
      );
      // The scope alone does not make up for the sign-in.
      expect((await forwardAuth('/strong', { Authorization: `Bearer ${await agentToken('notes:strong')}` })).status).to.equal(401);
    });

    it("a person in their browser (the app's sign-in cookie) is not asked for scopes; a client's token in that cookie is", async function () {
      const own = await userToken(box, userId, 'notes-sso', AUDIENCE, 'openid');
      const page = await forwardAuth('/mcp', { Cookie: `boxauth-app-notes=${own}`, Accept: 'text/html' });
      expect(page.status, page.text).to.equal(200);
      expect(page.headers.get('x-auth-request-user')).to.equal(String(userId));
      // The app's sign-in token sent as a bearer token is a client's like any other.
      const asBearer = await forwardAuth('/mcp', { Authorization: `Bearer ${own}` });
      expect(asBearer.status).to.equal(403);
      // An agent's token planted in the app's cookie does not pass as the person.
      const planted = await forwardAuth('/mcp', { Cookie: `boxauth-app-notes=${await agentToken()}`, Accept: 'text/html' });
      expect(planted.status).to.equal(403);
    });

    it('the decision record says which scopes were wanted', async function () {
      // A person of their own: the record keeps a caller's refusals within a budget, which the tests above spent.
      const bea = (await box.json('POST', '/users', { email: 'bea@example.com', password: 'bea-password-1' }, root)).body.id;
      const token = await userToken(box, bea, 'agent', AUDIENCE, 'notes:read');
      const res = await forwardAuth('/mcp', { Authorization: `Bearer ${token}` }, 'POST');
      const id = res.headers.get('x-boxauth-decision')!;
      const explained = await eventually('the recorded decision', async () => {
        const found = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
        return found.status === 200 && found;
      });
      const write = explained.body.policies.find((p: { id: string }) => p.id === 'notes-write');
      expect(write.verdict).to.equal('needs more scope');
      expect(write.scope).to.deep.equal(['notes:write', 'notes:read']);
      expect(write.why).to.include('notes:write notes:read');
      expect(explained.body.reason).to.include('notes:write notes:read');
    });

    it('an AuthZEN PEP asking about a token is told the scopes wanted; a person it names carries none', async function () {
      await box.addClient('notes-pep', {}, { secret: 'notes-pep-secret', policy: false });
      await put('/AccessPolicy/notes-pep-asks', {
        engine: 'matcho',
        link: [{ id: 'notes-pep', resourceType: 'Client' }],
        matcho: { 'request-method': 'post', uri: '/apps/notes/access/v1/evaluation' },
      });
      await pepReadsPeople(box, root, 'notes-pep');
      const pep = (
        await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('notes-pep', 'notes-pep-secret') })
      ).body.access_token as string;
      const ask = (subject: Record<string, string>) =>
        box.json(
          'POST',
          '/apps/notes/access/v1/evaluation',
          { subject, action: { name: 'post' }, resource: { type: 'mcp', id: 'x', properties: { path: '/mcp' } } },
          pep,
        );
      const short = await ask({ type: 'token', id: await agentToken('notes:read') });
      expect(short.status, short.text).to.equal(200);
      expect(short.body).to.deep.include({ decision: false });
      expect(short.body.context.scope).to.equal('notes:write notes:read');
      expect((await ask({ type: 'token', id: await agentToken('notes:read notes:write') })).body.decision).to.equal(true);
      // A subject named by id has no token, so no scope: a policy that wants one does not allow it.
      expect((await ask({ type: 'user', id: String(userId) })).body.decision).to.equal(false);
    });

    it('scope is for App policies, and each is a scope token (RFC 6749 §3.3)', async function () {
      const box_ = await box.json('PUT', '/AccessPolicy/box-scope', { engine: 'allow', scope: ['x'] }, root);
      expect(box_.status).to.equal(422);
      expect(box_.body.errors).to.have.property('scope');
      for (const scope of [['a"b'], ['a b'], ['a\\b'], [], ['é']]) {
        const res = await box.json('PUT', '/AccessPolicy/bad-scope', { app: 'notes', engine: 'allow', scope }, root);
        expect(res.status, JSON.stringify(scope)).to.equal(422);
      }
    });
  });
});
