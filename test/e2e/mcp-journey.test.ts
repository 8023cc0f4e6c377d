// An MCP server guarded by the box, with real parts (docs/guides/mcp-servers.md): the MCP
// TypeScript SDK's StreamableHTTPServerTransport behind Debian's NGINX, configured as the
// guide's page gives it (read from the page), the box as its authorization server and its
// gate; the SDK's own client as the agent, with an OAuthClientProvider (test/support/mcp.ts)
// whose client_id is the URL of a Client ID Metadata Document the test serves over HTTPS (a CA
// of its own, trusted by the box through NODE_EXTRA_CA_CERTS); Sam in Chromium signs in and
// consents. The agent knows only the server's URL: it discovers the rest from the first 401.
// It calls a tool the policies allow, is refused one they do not (and sees the JSON-RPC error
// with the decision's id), is stepped up where a policy wants a second factor, and is stopped
// when Sam ends its grant on her account page. Then once more with dynamic registration.
import fs from 'node:fs';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { projectPath } from '../../api/paths.js';
import { Box, eventually } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import {
  AgentProvider,
  startCallback,
  startMcpServer,
  serveMetadataDocument,
  type Callback,
  type McpServer,
  type MetadataDocument,
} from '../support/mcp.js';
import { onFreePorts } from '../support/ports.js';
import { testCa, type TestCa } from '../support/tls.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { mcpNginxConf } from './gateways/configs.js';
import { startNginx, type Gateway } from './gateways/launch.js';
import { startAll } from '../support/start-all.js';

const GUIDE = projectPath('docs', 'guides', 'mcp-servers.md');
const SAM = { email: 'sam@example.com', password: 'sam-password-1' };
const MFA = 'urn:boxauth:acr:mfa';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The JSON-RPC error a refused call's POST was answered with, as the SDK's StreamableHTTPError carries it. */
function rpcErrorIn(err: unknown): {
  status: number;
  body: { jsonrpc: string; id: unknown; error: { code: number; message: string; data?: { decision?: string } } };
} {
  const message = err instanceof Error ? err.message : String(err);
  const found = /^Streamable HTTP error: Error POSTing to endpoint: (.*)$/s.exec(message);
  if (!found) throw new Error(`not the SDK's error for a refused POST: ${message}`);
  return { status: (err as { code?: number }).code ?? 0, body: JSON.parse(found[1]!) as ReturnType<typeof rpcErrorIn>['body'] };
}

const textOf = (result: unknown): string => ((result as CallToolResult).content[0] as { text: string }).text;

describe('an MCP server behind NGINX and the box: the MCP SDK client as the agent', function () {
  this.timeout(90_000);
  let ca: TestCa;
  let box: Box;
  let boxOrigin: string;
  let root: string;
  let mcp: McpServer;
  let callback: Callback;
  let document: MetadataDocument;
  let gateway: Gateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Sam as the gate names them to the MCP server: the public `sub` their clients (public, of a new box) are given. */
  let samSub: string;
  /** The MCP server's URL through NGINX. */
  let serverUrl: URL;

  before(async function () {
    ca = testCa();
    [callback, mcp] = await startAll([startCallback(), startMcpServer()]);
    document = await serveMetadataDocument(ca, '/agents/files-agent.json', (url) => ({
      client_id: url,
      client_name: 'Files Agent',
      client_uri: new URL(url).origin,
      redirect_uris: [callback.url],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
    [box, browser] = await Promise.all([
      Box.start({
        hostname: 'localhost',
        env: {
          // The box trusts the test's CA for the agent's document, served on loopback, which only this setting lets it fetch.
          NODE_EXTRA_CA_CERTS: ca.caFile,
          BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32',
          BOXAUTH_DYNAMIC_REGISTRATION: 'true',
        },
      }),
      launchBrowser(),
    ]);
    boxOrigin = box.url;
    root = await box.rootToken();
    const put = async (path: string, body: Record<string, unknown>): Promise<void> => {
      const res = await box.json('PUT', path, body, root);
      expect(res.status, `${path}: ${res.text}`).to.be.lessThan(300);
    };
    const engineers = (await box.json('POST', '/groups', { name: 'engineers' }, root)).body.id;
    const sam = await box.json('POST', '/users', { ...SAM, 'group-ids': [engineers] }, root);
    expect(sam.status, sam.text).to.equal(201);
    samSub = await box.publicSubOf(sam.body.id as number);

    // The server's URL (its resource, in the policies) names NGINX's port: all again on a new one
    // when another process took it first.
    gateway = await onFreePorts(1, async ([port]) => {
      serverUrl = new URL(`http://127.0.0.1:${port}/mcp`);
      const resource = serverUrl.origin;
      // The guide's policies (docs/guides/mcp-servers.md), the agent vendor's host and the server's URL the test's.
      const agentHost = new URL(document.url).host;
      await put('/AccessPolicy/agents-of-agent-example', {
        engine: 'cel',
        cel: `request.registration.kind == "metadata-document" && request.registration.host == "${agentHost}"`,
      });
      await put('/AccessPolicy/registered-agents', {
        engine: 'cel',
        cel: `request.registration.kind == "dynamic" && request.registration.redirect_uris.all(u, u.startsWith("http://127.0.0.1:")) && request.registration.resource.all(r, r == "${resource}")`,
      });
      await put('/App/mcp', { urls: [resource], audience: resource, description: 'Files' });
      const engineersOnly = [{ id: 'engineers', resourceType: 'Group' }];
      await put('/AccessPolicy/mcp-session', {
        app: 'mcp',
        engine: 'cel',
        link: engineersOnly,
        cel: 'request.jsonrpc == null ? request["request-method"] in ["get", "delete"] : request.jsonrpc.method in ["initialize", "notifications/initialized", "tools/list", "ping"]',
      });
      await put('/AccessPolicy/mcp-search', {
        app: 'mcp',
        engine: 'cel',
        link: engineersOnly,
        scope: ['files:read'],
        cel: 'request.jsonrpc != null && request.jsonrpc.tool == "search"',
      });
      await put('/AccessPolicy/mcp-publish', {
        app: 'mcp',
        engine: 'cel',
        link: engineersOnly,
        acr: MFA,
        cel: 'request.jsonrpc != null && request.jsonrpc.tool == "publish"',
      });

      const guide = fs.readFileSync(GUIDE, 'utf8');
      // Ready once NGINX asks the box: a GET without a token is the box's 401 (a POST's body is read first: '{}' is a 400).
      return startNginx(
        port,
        (dir) => mcpNginxConf(guide, { port: port, box: `127.0.0.1:${box.port}`, upstream: mcp.address, dir }),
        async (url) => (await fetch(`${url}/mcp`)).status === 401,
      );
    });
    context = await browser.newContext();
    page = await context.newPage();
  });
  after(async function () {
    await gateway?.stop();
    await Promise.all([browser?.close(), box?.stop(), mcp?.stop(), callback?.stop(), document?.stop()]);
    if (ca) fs.rmSync(ca.dir, { recursive: true, force: true });
  });

  /** An MCP client of the SDK, connected to the server through NGINX with `agent`'s tokens. */
  async function connected(agent: AgentProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: agent, fetch: agent.observe });
    const client = new Client({ name: 'files-agent', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  }

  /**
   * The agent's first connection: the SDK, told only the server's URL, meets the 401, discovers
   * the box, and sends Sam's browser to authorize. What that authorization request is.
   */
  async function firstConnection(agent: AgentProvider): Promise<{ authorization: URL; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: agent, fetch: agent.observe });
    let refused: unknown;
    await new Client({ name: 'files-agent', version: '1.0.0' }).connect(transport).catch((err: unknown) => (refused = err));
    expect(refused, String(refused)).to.be.instanceOf(UnauthorizedError);
    expect(agent.authorizations).to.have.length(1);
    return { authorization: agent.authorizations[0]!, transport };
  }

  /**
   * Sam's browser at the authorization request `url`, through sign-in (when asked) and the consent
   * page, which names the agent as `agent` says, the scope and the server, to the agent's redirect URI.
   */
  async function samAuthorizes(url: URL, agent: string): Promise<URLSearchParams> {
    const response = callback.next();
    await page.goto(url.href);
    if (await page.getByLabel('Password').count()) {
      await page.getByLabel('Email').fill(SAM.email);
      await page.getByLabel('Password').fill(SAM.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    }
    const allow = page.locator('button[name="decision"][value="allow"]');
    await allow.waitFor();
    await screenshot(page, 'mcp-consent');
    // Which agent, what it asks for, and for which server (the App the resource names).
    const consent = (await page.locator('main').textContent()) ?? '';
    expect(consent).to.include(agent).and.include('files:read').and.include(`mcp — Files ${serverUrl.origin}`);
    await allow.click();
    const params = await response;
    expect(params.get('error'), params.toString()).to.equal(null);
    // RFC 9207: the response names the box.
    expect(params.get('iss')).to.equal(boxOrigin);
    return params;
  }

  describe('with a Client ID Metadata Document', function () {
    const agent = (): AgentProvider => cimdAgent;
    let cimdAgent: AgentProvider;
    let client: Client;
    let transport: StreamableHTTPClientTransport;
    /** The last time step Sam's authenticator app gave a code for. */
    let lastStep = 0;

    it('the first 401 names the metadata document, which names the box, whose metadata takes a URL as client_id', async function () {
      const first = await fetch(serverUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
      });
      expect(first.status).to.equal(401);
      const challenge = first.headers.get('www-authenticate') ?? '';
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
      expect(metadataUrl, challenge).to.equal(`${serverUrl.origin}/.well-known/oauth-protected-resource`);
      const resource = (await (await fetch(metadataUrl!)).json()) as Record<string, unknown>;
      expect(resource.resource).to.equal(serverUrl.origin);
      expect(resource.authorization_servers).to.deep.equal([boxOrigin]);
      expect(resource.scopes_supported).to.deep.equal(['files:read']);
      const server = (await (await fetch(`${boxOrigin}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(server.client_id_metadata_document_supported).to.equal(true);
      expect(server.authorization_response_iss_parameter_supported).to.equal(true);
      expect(server.registration_endpoint).to.be.a('string');
    });

    it('the SDK discovers from the 401 alone; Sam signs in and consents in Chromium; the agent connects', async function () {
      cimdAgent = new AgentProvider(callback.url, document.url);
      const { authorization, transport: first } = await firstConnection(agent());
      expect(`${authorization.origin}${authorization.pathname}`).to.equal(`${boxOrigin}/auth/authorize`);
      expect(authorization.searchParams.get('client_id')).to.equal(document.url);
      expect(authorization.searchParams.get('resource')).to.equal(serverUrl.origin);
      expect(authorization.searchParams.get('scope')).to.equal('files:read');
      expect(authorization.searchParams.get('code_challenge_method')).to.equal('S256');

      const params = await samAuthorizes(
        authorization,
        `An agent: Files Agent. It describes itself in a document at ${document.url}: only ${new URL(document.url).host} vouches for it.`,
      );
      expect(document.fetches, 'the box fetched the agent document').to.be.greaterThan(0);
      await first.finishAuth(params.get('code')!);
      ({ client, transport } = await connected(agent()));
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).to.deep.equal(['search', 'delete_file', 'publish']);
    });

    it('search is allowed: the server answers, for Sam, through the agent', async function () {
      const result = await client.callTool({ name: 'search', arguments: { query: 'quarterly report' } });
      expect(textOf(result)).to.equal(`search {"query":"quarterly report"} for user ${samSub} through ${document.url}`);
      expect(mcp.calls.at(-1)).to.deep.equal({ tool: 'search', user: samSub, client: document.url });
    });

    it('delete_file is refused: the agent sees the JSON-RPC error with the decision id, the server sees nothing', async function () {
      const before = mcp.calls.length;
      let refused: unknown;
      await client.callTool({ name: 'delete_file', arguments: { path: '/etc/passwd' } }).catch((err: unknown) => (refused = err));
      const { status, body } = rpcErrorIn(refused);
      expect(status).to.equal(403);
      expect(body.jsonrpc).to.equal('2.0');
      expect(body.id).to.be.a('number');
      expect(body.error.code).to.equal(-32001);
      expect(body.error.data?.decision).to.match(UUID);
      expect(mcp.calls.length).to.equal(before);
      // The decision the agent was shown is the one the box kept: the tool, and nothing of the arguments.
      // Refusals are kept in batches: the record is there a moment after the answer.
      const explained = await eventually('the kept decision', async () => {
        const res = await box.json('GET', `/authz/decisions/${body.error.data!.decision}`, undefined, root);
        return res.status === 200 && res;
      });
      expect(explained.text).to.include('delete_file').and.not.include('/etc/passwd');
    });

    it('publish wants a second factor: the SDK alone refreshes its token, is refused again, and stops', async function () {
      // RFC 9470's challenge is a 401 like any other to the SDK's client: it refreshes (a token of
      // the same sign-in) and gives up on the second 401. docs/guides/mcp-servers.md says so.
      agent().honoursStepUp = false;
      const challenges = agent().challenges.length;
      let refused: unknown;
      await client.callTool({ name: 'publish', arguments: { path: '/reports/q3.pdf' } }).catch((err: unknown) => (refused = err));
      expect(String(refused)).to.include('Server returned 401 after successful authentication');
      expect(
        agent()
          .challenges.slice(challenges)
          .map((c) => c.error),
      ).to.deep.equal(['insufficient_user_authentication', 'insufficient_user_authentication']);
      expect(mcp.calls.map((c) => c.tool)).to.not.include('publish');
      agent().honoursStepUp = true;
      // A call that passes clears the SDK's memory of that failure.
      await client.callTool({ name: 'search', arguments: { query: 'again' } });
    });

    it('publish wants a second factor: 401 insufficient_user_authentication; an agent that reads it steps up, Sam sets up her app, the call goes through', async function () {
      const before = agent().authorizations.length;
      let refused: unknown;
      await client.callTool({ name: 'publish', arguments: { path: '/reports/q3.pdf' } }).catch((err: unknown) => (refused = err));
      expect(refused, String(refused)).to.be.instanceOf(UnauthorizedError);
      const challenge = agent().challenges.at(-1)!;
      expect(challenge.error, challenge.header).to.equal('insufficient_user_authentication');
      expect(challenge.acrValues).to.equal(MFA);
      expect(challenge.header).to.include(`resource_metadata="${serverUrl.origin}/.well-known/oauth-protected-resource"`);
      expect(mcp.calls.map((c) => c.tool)).to.not.include('publish');
      const authorization = agent().authorizations[before]!;
      expect(authorization.searchParams.get('acr_values')).to.equal(MFA);

      // Sam signed in minutes ago with her password alone and has no second factor: she sets one up now.
      const response = callback.next();
      await page.goto(authorization.href);
      await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
      const key = base32Decode(((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, ''));
      lastStep = stepAt(Date.now());
      await page.getByLabel('The code the app shows now').fill(totpCode(key, lastStep));
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('heading', { name: 'Keep these recovery codes' }).waitFor();
      await page.getByRole('button', { name: 'Continue' }).click();
      const params = await response;
      expect(params.get('iss')).to.equal(boxOrigin);
      await transport.finishAuth(params.get('code')!);

      const result = await client.callTool({ name: 'publish', arguments: { path: '/reports/q3.pdf' } });
      expect(textOf(result)).to.include(`for user ${samSub}`);
      expect(mcp.calls.at(-1)!.tool).to.equal('publish');
    });

    it("Sam ends the agent's grant on her account page: its next call is refused within a second", async function () {
      const held = agent().tokens()!.access_token;
      const authorizations = agent().authorizations.length;
      const calls = mcp.calls.length;
      await page.goto(`${boxOrigin}/auth/account`);
      const rows = page.locator('#grants tbody tr', { hasText: document.url });
      expect(await rows.count()).to.be.greaterThan(0);
      await screenshot(page, 'mcp-account-grants');
      let ended = 0;
      while ((await rows.count()) > 0) {
        await rows.first().getByRole('button', { name: 'End' }).click();
        await page.waitForURL(/changed=grant/);
        ended = Date.now();
      }
      const refused = await fetch(serverUrl, {
        method: 'POST',
        headers: { Authorization: `Bearer ${held}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'search', arguments: { query: 'x' } } }),
      });
      expect(refused.status).to.equal(401);
      expect(Date.now() - ended).to.be.lessThan(1000);

      // The SDK's next call: 401, the refresh token closed with the grant, so it asks Sam again.
      let stopped: unknown;
      await client.callTool({ name: 'search', arguments: { query: 'more' } }).catch((err: unknown) => (stopped = err));
      expect(stopped, String(stopped)).to.be.instanceOf(UnauthorizedError);
      expect(agent().authorizations.length).to.equal(authorizations + 1);
      expect(mcp.calls.length).to.equal(calls);
      await client.close();
    });
  });

  describe('with dynamic registration', function () {
    let registered: AgentProvider;
    let client: Client;

    it('the SDK registers (no metadata document of its own), Sam consents, search passes and delete_file is refused', async function () {
      registered = new AgentProvider(callback.url);
      const { authorization, transport } = await firstConnection(registered);
      const clientId = registered.clientInformation()?.client_id;
      expect(clientId)
        .to.be.a('string')
        .and.not.match(/^https:/);
      expect(authorization.searchParams.get('client_id')).to.equal(clientId);
      expect(authorization.searchParams.get('resource')).to.equal(serverUrl.origin);

      const params = await samAuthorizes(
        authorization,
        'An agent: Test Agent. It registered itself with this box, and nobody vouches for it',
      );
      await transport.finishAuth(params.get('code')!);
      ({ client } = await connected(registered));
      const result = await client.callTool({ name: 'search', arguments: { query: 'minutes' } });
      expect(textOf(result)).to.equal(`search {"query":"minutes"} for user ${samSub} through ${clientId}`);

      let refused: unknown;
      await client.callTool({ name: 'delete_file', arguments: { path: '/minutes' } }).catch((err: unknown) => (refused = err));
      const { status, body } = rpcErrorIn(refused);
      expect(status).to.equal(403);
      expect(body.error.code).to.equal(-32001);
      expect(body.error.data?.decision).to.match(UUID);
      expect(mcp.calls.map((c) => c.tool)).to.not.include('delete_file');
      await client.close();
    });

    it('through NGINX, a batch that hides delete_file behind search is refused whole, and so is a body longer than the gate reads', async function () {
      const calls = mcp.calls.length;
      const post = (body: string) =>
        fetch(serverUrl, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${registered.tokens()!.access_token}`,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
          },
          body,
        });
      const call = (id: number, name: string, query = 'x') => ({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name, arguments: { query } },
      });
      const batch = await post(JSON.stringify([call(1, 'search'), call(2, 'delete_file')]));
      expect(batch.status).to.equal(403);
      const answers = (await batch.json()) as { id: number; error: { code: number; data: { decision: string } } }[];
      expect(answers.map((a) => [a.id, a.error.code])).to.deep.equal([
        [1, -32001],
        [2, -32001],
      ]);
      expect(batch.headers.get('x-boxauth-decision')).to.equal(answers[0]!.error.data.decision);
      // The gate reads 64 KiB (BOXAUTH_GATE_BODY_BYTES): a longer body is not decided as if it held no call.
      const long = await post(JSON.stringify(call(3, 'search', 'x'.repeat(70_000))));
      expect(long.status).to.equal(413);
      expect(mcp.calls.length).to.equal(calls);
    });
  });
});
