// The parts of an MCP journey that are not the box: an MCP server made with the MCP TypeScript
// SDK (its StreamableHTTPServerTransport), an agent's OAuthClientProvider for the SDK's client,
// the loopback server that catches the authorization response, and the HTTPS server that
// serves the agent's Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document).
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { TestCa } from './tls.js';

/** A loopback server, stopped with its open connections. */
async function listening(server: http.Server | https.Server): Promise<{ port: number; stop(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A tool call that reached the MCP server, with who the gateway said was calling. */
export interface ToolCall {
  tool: string;
  user: string | undefined;
  client: string | undefined;
}

export interface McpServer {
  /** host:port of the server itself (the gateway's upstream). */
  address: string;
  /** Every tool call that reached it, in order. */
  calls: ToolCall[];
  stop(): Promise<void>;
}

const TOOLS: Tool[] = [
  {
    name: 'search',
    description: 'Search the files',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
  {
    name: 'delete_file',
    description: 'Delete a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'publish',
    description: 'Publish a file to everyone',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];

const header = (headers: Record<string, string | string[] | undefined> | undefined, name: string): string | undefined => {
  const value = headers?.[name];
  return Array.isArray(value) ? value.join(',') : value || undefined;
};

/**
 * An MCP server of files with three tools (search, delete_file, publish), on the SDK's
 * StreamableHTTPServerTransport at /mcp, stateless (a server and a transport per request, as
 * the SDK's stateless example does) and answering in JSON. It knows nothing of OAuth: it
 * trusts the gateway in front of it, and answers a search with who the gateway said is asking.
 */
export async function startMcpServer(): Promise<McpServer> {
  const calls: ToolCall[] = [];
  const mcpServer = (): Server => {
    const server = new Server({ name: 'files', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const headers = extra.requestInfo?.headers;
      const call = {
        tool: request.params.name,
        user: header(headers, 'x-auth-request-user'),
        client: header(headers, 'x-auth-request-client'),
      };
      calls.push(call);
      const args = JSON.stringify(request.params.arguments ?? {});
      return { content: [{ type: 'text', text: `${call.tool} ${args} for user ${call.user ?? '-'} through ${call.client ?? '-'}` }] };
    });
    return server;
  };
  const httpServer = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://mcp').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  const { port, stop } = await listening(httpServer);
  return { address: `127.0.0.1:${port}`, calls, stop };
}

/** The authorization responses the agent's redirect URI receives. */
export interface Callback {
  /** The redirect URI (a loopback address, RFC 8252 §7.3). */
  url: string;
  /** The next authorization response's parameters. */
  next(): Promise<URLSearchParams>;
  stop(): Promise<void>;
}

/** The agent's redirect URI: http://127.0.0.1:<port>/callback, answering a page that says the agent may be closed. */
export async function startCallback(): Promise<Callback> {
  const waiting: ((params: URLSearchParams) => void)[] = [];
  const arrived: URLSearchParams[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Agent</title><p>You may close this window.</p>');
    const take = waiting.shift();
    if (take) take(url.searchParams);
    else arrived.push(url.searchParams);
  });
  const { port, stop } = await listening(server);
  return {
    url: `http://127.0.0.1:${port}/callback`,
    next: () => {
      const first = arrived.shift();
      return first ? Promise.resolve(first) : new Promise((resolve) => waiting.push(resolve));
    },
    stop,
  };
}

/** An HTTPS server of the test's CA serving one JSON document, as an agent's vendor serves its Client ID Metadata Document. */
export interface MetadataDocument {
  /** The document's URL: the agent's client_id. */
  url: string;
  /** How often it was fetched. */
  fetches: number;
  stop(): Promise<void>;
}

export async function serveMetadataDocument(
  ca: TestCa,
  path: string,
  documentOf: (url: string) => Record<string, unknown>,
): Promise<MetadataDocument> {
  const { certFile, keyFile } = ca.issue('metadata-document');
  let url = '';
  const served: MetadataDocument = { url: '', fetches: 0, stop: () => Promise.resolve() };
  const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
    if (req.url !== path) {
      res.writeHead(404).end();
      return;
    }
    served.fetches++;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=300' }).end(JSON.stringify(documentOf(url)));
  });
  const { port, stop } = await listening(server);
  url = `https://127.0.0.1:${port}${path}`;
  served.url = url;
  served.stop = stop;
  return served;
}

/** The last Bearer challenge of a 401 with `error`, as an RFC 9470 client reads it. */
export interface Challenge {
  error: string | undefined;
  acrValues: string | undefined;
  header: string;
}

/** The parameters of a Bearer challenge (RFC 6750 §3: auth-params, quoted strings without escapes here). */
export function challengeOf(header: string): Challenge {
  const param = (name: string): string | undefined => new RegExp(`[ ,]${name}="([^"]*)"`).exec(header)?.[1];
  return { error: param('error'), acrValues: param('acr_values'), header };
}

/**
 * The agent's OAuthClientProvider: an MCP client application's memory of one MCP server
 * (client information, tokens, the PKCE verifier) and its way to a person's browser. With
 * `clientMetadataUrl` the SDK uses it as the client_id when the authorization server says
 * `client_id_metadata_document_supported`; without one it registers (RFC 7591).
 *
 * RFC 9470 (step-up): the SDK's client treats a 401 with `error="insufficient_user_authentication"`
 * as any 401. An agent that honours the challenge reads it from the response (the transport's
 * `fetch`, see `observe`), forgets its tokens (a refresh would give a token of the same sign-in)
 * and asks the next authorization for the `acr_values` the challenge names.
 */
export class AgentProvider implements OAuthClientProvider {
  private information: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  private stepUpTo: string | undefined;
  /** The authorization requests the SDK asked the person's browser to open, in order. */
  readonly authorizations: URL[] = [];
  /** The 401 challenges the agent saw, in order. */
  readonly challenges: Challenge[] = [];
  /** Whether the agent acts on a step-up's challenge; without, it is the SDK's client alone. */
  honoursStepUp = true;

  constructor(
    private readonly redirect: string,
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Agent',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.information;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.information = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    if (this.stepUpTo) url.searchParams.set('acr_values', this.stepUpTo);
    this.stepUpTo = undefined;
    this.authorizations.push(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'client') this.information = undefined;
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
  }

  /** The agent's fetch for the MCP server: it reads each 401's challenge, and acts on a step-up's (RFC 9470 §3). */
  readonly observe = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    const header = res.headers.get('www-authenticate');
    if (res.status === 401 && header) {
      const challenge = challengeOf(header);
      this.challenges.push(challenge);
      if (this.honoursStepUp && challenge.error === 'insufficient_user_authentication' && challenge.acrValues) {
        this.stepUpTo = challenge.acrValues;
        this.saved = undefined;
      }
    }
    return res;
  };
}
