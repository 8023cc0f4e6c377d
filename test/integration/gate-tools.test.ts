// Per-tool decisions at the gate (docs/guides/guard-your-apps.md, "Per-tool decisions for MCP
// servers"): an MCP client's JSON-RPC body, as the HTTP door, forward-auth (NGINX with the body
// read first) and Envoy's gRPC ext_authz (with_request_body) send it, decided call by call by
// cel and matcho policies; the refusal a JSON-RPC error with the decision id; and the attacks:
// a forbidden call behind an allowed one, a tool named twice, a body larger than the gate reads
// or cut by the gateway, a compressed one.
import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { grpcCheck } from '../support/grpc-check.js';
import { userToken } from '../support/user-token.js';
import { pepReadsPeople } from '../support/pep.js';

type Json = Record<string, unknown>;
const rpc = (id: number | string | null, method: string, params?: Json): Json => ({
  jsonrpc: '2.0',
  ...(id !== null ? { id } : {}),
  method,
  ...(params ? { params } : {}),
});
const toolCall = (id: number, name: string, args: Json = {}): Json => rpc(id, 'tools/call', { name, arguments: args });

/** One way a gateway asks the gate about a POST to the MCP server, its body sent along. */
interface Door {
  name: string;
  ask(
    app: string,
    token: string | undefined,
    body: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; text: string; decision: string }>;
}

describe('per-tool decisions at the gate', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  const people: Record<'ana' | 'bob', { id: number; tokens: Record<string, string> }> = {
    ana: { id: 0, tokens: {} },
    bob: { id: 0, tokens: {} },
  };
  const APPS = { cel: 'https://mcp-cel.example', matcho: 'https://mcp-matcho.example' } as const;
  const put = (path: string, body: Json) => box.json('PUT', path, body, root);

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_GATE_BODY_BYTES: '4096' } });
    root = await box.rootToken();
    const analysts = (await box.json('POST', '/groups', { name: 'analysts' }, root)).body.id as number;
    people.ana.id = (
      await box.json('POST', '/users', { email: 'ana@example.com', password: 'ana-password-1', 'group-ids': [analysts] }, root)
    ).body.id;
    people.bob.id = (await box.json('POST', '/users', { email: 'bob@example.com', password: 'bob-password-1' }, root)).body.id;
    await box.addClient('agent', {}, { policy: false });
    for (const [kind, url] of Object.entries(APPS)) {
      const app = `mcp-${kind}`;
      expect((await put(`/App/${app}`, { urls: [url] })).status).to.equal(201);
      // The session's plumbing, for anyone the agent acts for: no tool in it.
      await put(`/AccessPolicy/${app}-plumbing`, {
        app,
        engine: 'matcho',
        link: [{ id: 'agent', resourceType: 'Client' }],
        matcho: {
          'request-method': 'post',
          jsonrpc: { method: { $enum: ['initialize', 'notifications/initialized', 'tools/list', 'ping'] } },
        },
      });
      for (const p of Object.values(people)) p.tokens[app] = await userToken(box, p.id, 'agent', url);
    }
    // The agent, for analysts, may call search and read_file, not delete_* (nor anything else): in CEL…
    await put('/AccessPolicy/mcp-cel-tools', {
      app: 'mcp-cel',
      engine: 'cel',
      cel: `request.client == "agent" && "analysts" in request.user.groups && request.jsonrpc.method == "tools/call" && request.jsonrpc.tool in ["search", "read_file"]`,
    });
    // …and in matcho, linked to the group.
    await put('/AccessPolicy/mcp-matcho-tools', {
      app: 'mcp-matcho',
      engine: 'matcho',
      link: [{ id: 'analysts', resourceType: 'Group' }],
      matcho: { client: 'agent', jsonrpc: { method: 'tools/call', tool: '#^(search|read_file)$' } },
    });
  });
  after(async function () {
    await box?.stop();
  });

  const answer = (res: JsonResponse) => ({ status: res.status, text: res.text, decision: res.headers.get('x-boxauth-decision') ?? '' });
  const auth = (token: string | undefined): Record<string, string> => (token ? { Authorization: `Bearer ${token}` } : {});
  const DOORS: Door[] = [
    {
      name: "the HTTP door (Envoy's http_service)",
      ask: async (app, token, body, headers = {}) =>
        answer(
          await box.request('POST', `/authz/http/${app}/mcp`, {
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...auth(token), ...headers },
            body,
          }),
        ),
    },
    {
      name: 'forward-auth (NGINX, the body read first)',
      ask: async (app, token, body, headers = {}) =>
        answer(
          await box.request('POST', `/authz/forward-auth/${app}`, {
            headers: {
              'X-Original-URI': '/mcp',
              'X-Original-Method': 'POST',
              'Content-Type': 'application/json',
              ...auth(token),
              ...headers,
            },
            body,
          }),
        ),
    },
    {
      name: "Envoy's gRPC ext_authz (with_request_body)",
      ask: async (app, token, body, headers = {}) => {
        const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
        const res = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
          attributes: {
            request: {
              http: {
                method: 'POST',
                path: '/mcp',
                host: new URL(APPS[app === 'mcp-cel' ? 'cel' : 'matcho']).host,
                scheme: 'https',
                headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...lower },
                body,
              },
            },
            context_extensions: { app },
          },
        });
        const denied = res.denied_response;
        const decision = [...(res.ok_response?.headers ?? []), ...(denied?.headers ?? [])].find(
          (h) => h.header.key === 'X-Boxauth-Decision',
        );
        return { status: denied ? denied.status.code : 200, text: denied?.body ?? '', decision: decision?.header.value ?? '' };
      },
    },
  ];

  for (const door of DOORS) {
    describe(door.name, function () {
      for (const app of ['mcp-cel', 'mcp-matcho']) {
        it(`${app}: an analyst's agent calls search and read_file, not delete_all; bob's agent calls no tool; both have the plumbing`, async function () {
          const ask = (who: 'ana' | 'bob', body: Json | Json[]) => door.ask(app, people[who].tokens[app], JSON.stringify(body));
          for (const body of [
            rpc(1, 'initialize', { protocolVersion: '2025-11-25' }),
            rpc(null, 'notifications/initialized'),
            rpc(2, 'tools/list'),
          ]) {
            expect((await ask('bob', body)).status, JSON.stringify(body)).to.equal(200);
          }
          expect((await ask('ana', toolCall(3, 'search', { q: 'x' }))).status).to.equal(200);
          expect((await ask('ana', toolCall(4, 'read_file'))).status).to.equal(200);
          const refused = await ask('ana', toolCall(5, 'delete_all'));
          expect(refused.status).to.equal(403);
          // The JSON-RPC error an MCP client shows: the request's id, -32001 (the AuthZEN MCP binding's), the decision.
          expect(JSON.parse(refused.text)).to.deep.equal({
            jsonrpc: '2.0',
            id: 5,
            error: {
              code: -32001,
              message: 'tools/call "delete_all": no policy of this app allows this call',
              data: { decision: refused.decision },
            },
          });
          expect(refused.decision).to.match(/\S/);
          expect((await ask('bob', toolCall(6, 'search'))).status).to.equal(403);
          // A method no policy names is refused too (deny by default), with its own id.
          const other = await ask('ana', rpc('abc', 'resources/read', { uri: 'file:///etc/passwd' }));
          expect([other.status, JSON.parse(other.text).id]).to.deep.equal([403, 'abc']);
        });
      }

      it('a batch is decided call by call: a forbidden call behind an allowed one refuses the whole request', async function () {
        const token = people.ana.tokens['mcp-cel'];
        const both = await door.ask('mcp-cel', token, JSON.stringify([toolCall(1, 'search'), toolCall(2, 'delete_all')]));
        expect(both.status).to.equal(403);
        const errors = JSON.parse(both.text) as { id: number; error: { code: number; message: string } }[];
        expect(errors.map((e) => [e.id, e.error.code])).to.deep.equal([
          [1, -32001],
          [2, -32001],
        ]);
        expect(errors[0]!.error.message).to.include('delete_all');
        expect((await door.ask('mcp-cel', token, JSON.stringify([toolCall(1, 'search'), toolCall(2, 'read_file')]))).status).to.equal(200);
      });

      it('a tool named twice is refused (400): JSON.parse would decide the last, a parser keeping the first would run delete_all', async function () {
        const body = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"delete_all","name":"search"}}';
        const res = await door.ask('mcp-cel', people.ana.tokens['mcp-cel'], body);
        expect(res.status).to.equal(400);
        expect(JSON.parse(res.text)).to.deep.include({ jsonrpc: '2.0', id: null });
        expect(JSON.parse(res.text).error.code).to.equal(-32700);
      });

      it('a body larger than the gate reads is refused (413), even when an allowed call comes first', async function () {
        const body = JSON.stringify([toolCall(1, 'search', { pad: 'x'.repeat(5000) }), toolCall(2, 'delete_all')]);
        const res = await door.ask('mcp-cel', people.ana.tokens['mcp-cel'], body);
        expect(res.status).to.equal(413);
        expect(JSON.parse(res.text).error.code).to.equal(-32600);
      });

      it('without a token: the 401 challenge as before, not a JSON-RPC error', async function () {
        const res = await door.ask('mcp-cel', undefined, JSON.stringify(toolCall(1, 'search')));
        expect(res.status).to.equal(401);
        expect(res.text).to.not.include('jsonrpc');
      });
    });
  }

  it("Envoy's cut body (allow_partial_message) is refused, whether Envoy says so or the size does", async function () {
    const token = people.ana.tokens['mcp-cel'];
    const whole = JSON.stringify(toolCall(1, 'search'));
    const check = (http: Json) =>
      grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
        attributes: {
          request: {
            http: {
              method: 'POST',
              path: '/mcp',
              host: 'mcp-cel.example',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              ...http,
            },
          },
          context_extensions: { app: 'mcp-cel' },
        },
      });
    expect((await check({ raw_body: Buffer.from(whole) })).status.code).to.equal(0);
    const flagged = await check({ body: whole, headers: { authorization: `Bearer ${token}`, 'x-envoy-auth-partial-body': 'true' } });
    expect(flagged.denied_response?.status.code).to.equal(413);
    const shorter = await check({ body: whole, size: whole.length + 100 });
    expect(shorter.denied_response?.status.code).to.equal(413);
  });

  it('a compressed body is refused: the gate cannot read what the app would inflate', async function () {
    const res = await box.request('POST', '/authz/http/mcp-cel/mcp', {
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', Authorization: `Bearer ${people.ana.tokens['mcp-cel']}` },
      body: gzipSync(JSON.stringify(toolCall(1, 'delete_all'))) as unknown as string,
    });
    expect(res.status).to.equal(400);
  });

  it('the record of a refused call keeps its method and tool, never the body', async function () {
    const res = await DOORS[0]!.ask(
      'mcp-cel',
      people.ana.tokens['mcp-cel'],
      JSON.stringify(toolCall(1, 'delete_all', { secret: 'do-not-keep-me' })),
    );
    expect(res.status).to.equal(403);
    let kept: JsonResponse | undefined;
    for (let i = 0; i < 50 && kept?.status !== 200; i++) {
      kept = await box.json('GET', `/authz/decisions/${res.decision}`, undefined, root);
      if (kept.status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(kept!.status, kept!.text).to.equal(200);
    expect(kept!.body.request.jsonrpc).to.deep.equal({ method: 'tools/call', tool: 'delete_all' });
    expect(kept!.text).to.not.include('do-not-keep-me');
  });

  it('a tool named with a NUL or half a surrogate pair is refused and kept, and so are the refusals written beside it', async function () {
    // PostgreSQL's jsonb takes neither: one such name failed the insert of its whole batch of refusals.
    const odd = ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete\\u0000all"}}'];
    odd.push('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete\\ud800all"}}');
    const plain = JSON.stringify(toolCall(3, 'delete_all'));
    const answers = await Promise.all([
      ...odd.map((body) => DOORS[0]!.ask('mcp-cel', people.ana.tokens['mcp-cel'], body)),
      DOORS[0]!.ask('mcp-cel', people.bob.tokens['mcp-cel'], plain),
    ]);
    for (const res of answers) expect(res.status, res.text).to.equal(403);
    const kept: JsonResponse[] = [];
    for (const res of answers) {
      let one: JsonResponse | undefined;
      for (let i = 0; i < 30 && one?.status !== 200; i++) {
        one = await box.json('GET', `/authz/decisions/${res.decision}`, undefined, root);
        if (one.status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      kept.push(one!);
    }
    expect(kept.map((k) => k.status)).to.deep.equal([200, 200, 200]);
    expect(kept.map((k) => k.body.request.jsonrpc.tool)).to.deep.equal(['delete\uFFFDall', 'delete\uFFFDall', 'delete_all']);
  });

  it('an AuthZEN evaluation of a tool call, as the AuthZEN MCP binding maps it, is decided as the gate decides it', async function () {
    const { secret } = await box.addClient('mcp-pep', {}, { policy: false });
    await box.json(
      'PUT',
      '/AccessPolicy/mcp-pep-asks',
      {
        engine: 'matcho',
        link: [{ id: 'mcp-pep', resourceType: 'Client' }],
        matcho: { 'request-method': 'post', uri: '#^/apps/mcp-matcho/access/v1/evaluation$' },
      },
      root,
    );
    await pepReadsPeople(box, root, 'mcp-pep');
    const pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('mcp-pep', secret) })).body
      .access_token as string;
    const evaluate = async (tool: string, client?: string) =>
      (
        await box.json(
          'POST',
          '/apps/mcp-matcho/access/v1/evaluation',
          {
            subject: { type: 'user', id: String(people.ana.id) },
            action: { name: 'tools/call' },
            resource: { type: 'tool', id: tool },
            context: { agent: client ?? 'agent' },
          },
          pep,
        )
      ).body.decision as boolean;
    // The matcho policy names the client: an AuthZEN subject is a person with no client, so it is refused…
    expect(await evaluate('search')).to.equal(false);
    // …and a policy that tests the person and the tool alone decides both alike.
    await put('/AccessPolicy/mcp-matcho-analysts', {
      app: 'mcp-matcho',
      engine: 'matcho',
      link: [{ id: 'analysts', resourceType: 'Group' }],
      matcho: { jsonrpc: { method: 'tools/call', tool: '#^(search|read_file)$' } },
    });
    expect(await evaluate('search')).to.equal(true);
    expect(await evaluate('delete_all')).to.equal(false);
  });
});
