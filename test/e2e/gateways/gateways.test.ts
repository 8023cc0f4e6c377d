// Real gateways in front of an app, the box as their decision point: Debian's
// NGINX (auth_request) and Caddy (forward_auth), and Traefik (forwardAuth) built
// from the Go module proxy, each configured as docs/guides/guard-your-apps.md
// says (./configs.ts). One case list runs against each; the plain-HTTP
// behaviour of the doors is in test/integration/gate.test.ts. The box exports its
// traces to a real OpenTelemetry Collector (test/support/collector.ts), so a case
// reads back whether the app's traceparent came through the gateway to the decision.
import { expect } from 'chai';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { Box, basic } from '../../support/box.js';
import { launchBrowser, screenshot } from '../../support/browser.js';
import { ancestorsOf, appTrace, Collector, type ExportedSpan } from '../../support/collector.js';
import { ath, newKey, proof } from '../../support/dpop.js';
import { onFreePorts } from '../../support/ports.js';
import { userToken } from '../../support/user-token.js';
import { TRAEFIK_LISTED_PREFIX } from './configs.js';
import { startGateway, startUpstream, type Gateway, type GatewayName, type Received, type Upstream } from './launch.js';

const GATEWAYS: GatewayName[] = ['nginx', 'caddy', 'traefik'];
const appOf = (name: GatewayName): string => `wiki-${name}`;
const audienceOf = (name: GatewayName): string => `https://${appOf(name)}.example`;

describe('real gateways in front of an app', function () {
  this.timeout(60_000);
  let box: Box;
  let collector: Collector;
  let root: string;
  let upstream: Upstream;
  let browser: Browser;
  let samId: string;
  /** Sam's public sub (a new box's: opaque), which the app's sign-in client is given. */
  let samSub: string;
  /** People whose names are outside ASCII, one stored before the box refused control characters. */
  const strangeNames: { id: number; email: string; groups: string[] }[] = [];
  const gateways = new Map<GatewayName, Gateway>();

  /** An app guarded by one gateway: its sign-in client, and its policies (staff do anything, the indexer reads /docs/, /health is public). */
  async function guardedApp(name: GatewayName, url: string): Promise<void> {
    const app = appOf(name);
    await box.addClient(
      `${app}-sso`,
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: `${url}/.boxauth/callback` } },
      },
      { policy: false },
    );
    const put = await box.json('PUT', `/App/${app}`, { urls: [url], audience: audienceOf(name), signIn: { client: `${app}-sso` } }, root);
    expect(put.status, put.text).to.equal(201);
    const policies: Record<string, Record<string, unknown>> = {
      staff: { engine: 'allow', link: [{ id: 'staff', resourceType: 'Group' }] },
      'indexer-reads': {
        engine: 'matcho',
        link: [{ id: 'indexer', resourceType: 'Client' }],
        matcho: { 'request-method': 'get', path: '#^/docs/' },
      },
      health: { engine: 'matcho', matcho: { 'request-method': 'get', path: '/health' } },
      // The indexer may read /scoped with a token of scope docs:scoped only (AccessPolicy.scope).
      scoped: { engine: 'matcho', link: [{ id: 'indexer', resourceType: 'Client' }], matcho: { path: '/scoped' }, scope: ['docs:scoped'] },
    };
    for (const [id, policy] of Object.entries(policies)) {
      const res = await box.json('PUT', `/AccessPolicy/${app}-${id}`, { app, ...policy }, root);
      expect(res.status, res.text).to.be.lessThan(300);
    }
  }

  before(async function () {
    // The box's own origin is another host than the apps' (localhost, not 127.0.0.1), as in a
    // cluster: the browser keeps the box's cookies and each app's apart.
    collector = await Collector.start();
    [box, upstream, browser] = await Promise.all([
      Box.start({
        hostname: 'localhost',
        env: {
          // Traces on, every trace the gateway's request carries kept, exported to the Collector.
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
          OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        },
      }),
      startUpstream(),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    const staff = (await box.json('POST', '/groups', { name: 'staff' }, root)).body.id;
    samId = String(
      (await box.json('POST', '/users', { email: 'sam@example.com', password: 'sam-password-1', 'group-ids': [staff] }, root)).body.id,
    );
    await box.addClient('indexer', { audience: GATEWAYS.map(audienceOf) }, { secret: 'indexer-secret', policy: false });
    const zespol = (await box.json('POST', '/groups', { name: 'Zespół, 100%' }, root)).body.id;
    const lukasz = await box.json(
      'POST',
      '/users',
      { email: 'łukasz@example.com', password: 'a-good-password-1', 'group-ids': [staff, zespol] },
      root,
    );
    expect(lukasz.status, lukasz.text).to.equal(201);
    strangeNames.push({ id: lukasz.body.id, email: 'łukasz@example.com', groups: ['staff', 'Zespół, 100%'] });
    const old = await box.json('POST', '/users', { email: 'old@example.com', password: 'a-good-password-1', 'group-ids': [staff] }, root);
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      await db.query('UPDATE users SET email = $1 WHERE id = $2', ['ol\u0001d\r\n😀@example.com', old.body.id]);
    } finally {
      await db.end();
    }
    strangeNames.push({ id: old.body.id, email: 'ol\u0001d\r\n😀@example.com', groups: ['staff'] });
    samSub = await box.publicSubOf(samId);
    await Promise.all(
      GATEWAYS.map(async (name) => {
        // The app's URL names the gateway's port: both again on a new one when another process took it first.
        const gateway = await onFreePorts(1, async ([port]) => {
          await guardedApp(name, `http://127.0.0.1:${port}`);
          return startGateway(name, {
            app: appOf(name),
            port: port,
            box: `127.0.0.1:${box.port}`,
            upstream: upstream.address,
            readyPath: '/health',
          });
        });
        gateways.set(name, gateway);
      }),
    );
  });
  after(async function () {
    await Promise.all([...gateways.values()].map((g) => g.stop()));
    await Promise.all([browser?.close(), upstream?.stop(), box?.stop()]);
    await collector?.stop();
  });

  const indexerToken = async (name: GatewayName): Promise<string> => {
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', audience: audienceOf(name) },
      { Authorization: basic('indexer', 'indexer-secret') },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  };

  /** A request to the app through its gateway. */
  const through = async (name: GatewayName, path: string, init: { method?: string; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${gateways.get(name)!.url}${path}`, {
      method: init.method ?? 'GET',
      headers: init.headers,
      redirect: 'manual',
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  };
  /** What the upstream received for the request `run` makes (undefined: nothing reached it). */
  const reaching = async (run: () => Promise<{ status: number }>): Promise<{ status: number; received: Received | undefined }> => {
    const before = upstream.received.length;
    const { status } = await run();
    expect(upstream.received.length - before).to.be.at.most(1);
    return { status, received: upstream.received[before] };
  };

  for (const name of GATEWAYS) {
    describe(name, function () {
      const app = appOf(name);

      it('allowed: the upstream answers, the caller in X-Auth-Request-* headers the gateway set from the box answer', async function () {
        const token = await indexerToken(name);
        const res = await reaching(() => through(name, '/docs/a?x=1', { headers: { Authorization: `Bearer ${token}` } }));
        expect(res.status).to.equal(200);
        expect(res.received!.url).to.equal('/docs/a?x=1');
        expect(res.received!.headers['x-auth-request-client']).to.equal('indexer');
        // A client's token names no user: the header is empty or absent, never a user's.
        expect(res.received!.headers['x-auth-request-user'] ?? '').to.equal('');
      });

      it('names outside ASCII and control characters reach the upstream percent-encoded, as the box sent them', async function () {
        for (const person of strangeNames) {
          const token = await userToken(box, person.id, 'root', audienceOf(name));
          const res = await reaching(() => through(name, '/docs/names', { headers: { Authorization: `Bearer ${token}` } }));
          expect(res.status, person.email).to.equal(200);
          const headers = res.received!.headers;
          expect(headers['x-auth-request-email']).to.match(/^[\x21-\x7e]+$/);
          expect(decodeURIComponent(headers['x-auth-request-email'] as string)).to.equal(person.email);
          expect((headers['x-auth-request-groups'] as string).split(',').map(decodeURIComponent)).to.have.members(person.groups);
        }
        expect(box.process!.exitCode).to.equal(null);
      });

      it('refused: 403, and the upstream sees nothing', async function () {
        const token = await indexerToken(name);
        const res = await reaching(() => through(name, '/docs/a', { method: 'POST', headers: { Authorization: `Bearer ${token}` } }));
        expect(res.status).to.equal(403);
        expect(res.received).to.equal(undefined);
      });

      it('an API call without a token: 401 with WWW-Authenticate', async function () {
        const res = await through(name, '/docs/a', { headers: { Accept: 'application/json' } });
        expect(res.status).to.equal(401);
        const metadata = `${gateways.get(name)!.url}/.well-known/oauth-protected-resource`;
        expect(res.headers.get('www-authenticate')).to.equal(`Bearer realm="${app}", resource_metadata="${metadata}"`);
      });

      it("the app's metadata document (RFC 9728) is served by the box at the app's own origin, outside the policies", async function () {
        const res = await through(name, '/.well-known/oauth-protected-resource');
        expect(res.status, res.text).to.equal(200);
        const document = JSON.parse(res.text) as Record<string, unknown>;
        expect(document.resource).to.equal(audienceOf(name));
        const issuer = (await box.request('GET', '/.well-known/oauth-authorization-server')).body.issuer as string;
        expect(document.authorization_servers).to.deep.equal([issuer]);
        expect(document.scopes_supported).to.deep.equal(['docs:scoped']);
      });

      it("a token short of a policy's scope: 403 with the insufficient_scope challenge the box wrote", async function () {
        const token = await indexerToken(name);
        const res = await reaching(() => through(name, '/scoped', { headers: { Authorization: `Bearer ${token}` } }));
        expect(res.status).to.equal(403);
        expect(res.received).to.equal(undefined);
        const full = await through(name, '/scoped', { headers: { Authorization: `Bearer ${token}` } });
        expect(full.headers.get('www-authenticate')).to.match(
          /^Bearer realm="[^"]+", error="insufficient_scope", error_description="[^"]+", scope="docs:scoped", resource_metadata="[^"]+"$/,
        );
      });

      it('a revoked token is refused right after DELETE /Session', async function () {
        const token = await indexerToken(name);
        const auth = { Authorization: `Bearer ${token}` };
        expect((await through(name, '/docs/b', { headers: auth })).status).to.equal(200);
        expect((await box.request('DELETE', '/Session', { headers: auth })).status).to.equal(200);
        const res = await reaching(() => through(name, '/docs/b', { headers: auth }));
        expect(res.status).to.equal(401);
        expect(res.received).to.equal(undefined);
      });

      it('a DPoP-bound token passes with a proof of the request as its client sent it, once; not without one, nor for another path', async function () {
        const key = await newKey();
        const issued = await box.form(
          '/auth/token',
          { grant_type: 'client_credentials', audience: audienceOf(name) },
          {
            Authorization: basic('indexer', 'indexer-secret'),
            DPoP: await proof(key, { htm: 'POST', htu: `http://localhost:${box.port}/auth/token` }),
          },
        );
        expect(issued.body.token_type, issued.text).to.equal('DPoP');
        const token = issued.body.access_token as string;
        // The proof names the URL the client called, the gateway's: the gateway must tell the box the original request.
        const proofFor = (path: string) => proof(key, { htm: 'GET', htu: `${gateways.get(name)!.url}${path}`, ath: ath(token) });
        const bound = (dpop: string) => ({ headers: { Authorization: `DPoP ${token}`, DPoP: dpop } });

        const first = await proofFor('/docs/a');
        const allowed = await reaching(() => through(name, '/docs/a?x=1', bound(first)));
        expect(allowed.status).to.equal(200);
        expect(allowed.received!.headers['x-auth-request-client']).to.equal('indexer');
        for (const [what, run] of [
          ['the same proof again', () => through(name, '/docs/a?x=1', bound(first))],
          ['a proof for another path', async () => through(name, '/docs/a', bound(await proofFor('/docs/other')))],
          ['no proof', () => through(name, '/docs/a', { headers: { Authorization: `DPoP ${token}` } })],
          ['the token as Bearer', () => through(name, '/docs/a', { headers: { Authorization: `Bearer ${token}` } })],
        ] as const) {
          const refused = await reaching(run);
          expect(refused.status, what).to.equal(401);
          expect(refused.received, what).to.equal(undefined);
        }
      });

      it('a client-sent X-Auth-Request-Email never reaches the upstream on an anonymous allowed request', async function () {
        const res = await reaching(() =>
          through(name, '/health', { headers: { 'X-Auth-Request-Email': 'boss@example.com', 'X-Auth-Request-User': '1' } }),
        );
        expect(res.status).to.equal(200);
        expect(res.received!.headers['x-auth-request-email'] ?? '').to.equal('');
        expect(res.received!.headers['x-auth-request-user'] ?? '').to.equal('');
      });

      it('a client-sent alias of an identity header (X_Auth_Request_User, X.Auth.Request.Email) never reaches the upstream', async function () {
        // CGI, PHP, WSGI and Rack read these as X-Auth-Request-User and -Email: the gateway must drop them.
        // Traefik 3.6 cannot (GHSA-rf44-j88r-hh8c): 3.7.12 adds the entry point's aliasHeadersStrategy, but
        // 3.7.12 and 3.7.13 need a github.com/containous/go-http-auth version the Go module proxy refuses
        // (403 "not available"), so the tests build 3.6.12.
        if (name === 'traefik') return this.skip();
        const res = await reaching(() =>
          through(name, '/health', { headers: { X_Auth_Request_User: '1', 'X.Auth.Request.Email': 'boss@example.com' } }),
        );
        expect(res.status).to.equal(200);
        const aliases = Object.keys(res.received!.headers).filter((h) => /^x.auth.request.(user|email)$/.test(h) && !h.includes('-'));
        expect(aliases, `${name} passed them on`).to.deep.equal([]);
      });

      it('a client naming another original request (X-Forwarded-Uri, X-Original-URI, X-Original-URL) is not decided on it', async function () {
        const spoof = {
          'X-Forwarded-Uri': '/health',
          'X-Forwarded-Method': 'GET',
          'X-Original-URI': '/health',
          'X-Original-URL': `${gateways.get(name)!.url}/health`,
          'X-Original-Method': 'GET',
        };
        const res = await reaching(() => through(name, '/docs/secret', { method: 'POST', headers: spoof }));
        expect(res.received, `${name} passed the request on`).to.equal(undefined);
        expect(res.status).to.be.within(400, 599);
      });

      it('a client-sent X-Forwarded-Host does not move the way to sign in', async function () {
        const res = await through(name, '/docs/page', {
          headers: { Accept: 'text/html', 'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https' },
        });
        expect(res.status).to.equal(302);
        expect(res.headers.get('location')).to.equal(`${gateways.get(name)!.url}/.boxauth/start?rd=%2Fdocs%2Fpage`);
      });

      it('a person in a browser: sent to the box sign-in, and back to the page after signing in', async function () {
        const gateway = gateways.get(name)!;
        const first = await through(name, '/docs/page?x=1', { headers: { Accept: 'text/html' } });
        expect(first.status).to.equal(302);
        expect(first.headers.get('location')).to.equal(`${gateway.url}/.boxauth/start?rd=%2Fdocs%2Fpage%3Fx%3D1`);

        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          await page.goto(`${gateway.url}/docs/page?x=1`);
          expect(new URL(page.url()).origin).to.equal(`http://localhost:${box.port}`);
          await page.getByLabel('Email').fill('sam@example.com');
          await page.getByLabel('Password').fill('sam-password-1');
          await page.getByRole('button', { name: 'Sign in', exact: true }).click();
          await page.waitForURL(`${gateway.url}/docs/page?x=1`);
          const seen = JSON.parse((await page.locator('body').textContent()) ?? '') as Received;
          await screenshot(page, `gateway-${name}-signed-in`);
          expect(seen.url).to.equal('/docs/page?x=1');
          expect(seen.headers['x-auth-request-email']).to.equal('sam@example.com');
          // The sub the app's sign-in client was given (api/decision/engine.ts upstreamHeaders), not the row id.
          expect(seen.headers['x-auth-request-user']).to.equal(samSub).and.not.equal(samId);
          expect(seen.headers['x-auth-request-groups']).to.equal('staff');
          expect(seen.headers['x-auth-request-client']).to.equal(`${app}-sso`);
        } finally {
          await context.close();
        }
      });
    });
  }

  it("each gateway passes the app's traceparent on: the decision is a span of the app's trace, beneath the app's span", async function () {
    // Each gateway as the guide configures it, and Traefik with the traces page's authRequestHeaders list.
    const asked: [label: string, name: GatewayName, path: string][] = [
      ...GATEWAYS.map((name): [string, GatewayName, string] => [name, name, '/docs/traced']),
      ['traefik with authRequestHeaders', 'traefik', `${TRAEFIK_LISTED_PREFIX}docs/traced`],
    ];
    // One request through each, then one wait: the box exports its spans in batches, every 5 s.
    const traces = new Map<string, ReturnType<typeof appTrace> & { app: string; decision: string }>();
    for (const [label, name, path] of asked) {
      const trace = appTrace();
      const token = await indexerToken(name);
      const res = await through(name, path, { headers: { Authorization: `Bearer ${token}`, traceparent: trace.traceparent } });
      // The listed router's path is outside the indexer's policy (/docs/…): refused, a decision all the same.
      expect(res.status, label).to.equal(path === '/docs/traced' ? 200 : 403);
      traces.set(label, { ...trace, app: appOf(name), decision: res.status === 200 ? 'allow' : 'deny' });
    }
    const decided = (traceId: string) => (s: ExportedSpan) => s.name === 'decision' && s.traceId === traceId;
    // The request's span ends after its decision's, and may come in the next batch: both are waited for.
    const requested = (traceId: string) => (s: ExportedSpan) => s.name === 'GET /authz/forward-auth/:app' && s.traceId === traceId;
    const all = await collector.waitFor(
      (spans) => [...traces.values()].every((t) => spans.some(decided(t.traceId)) && spans.some(requested(t.traceId))),
      "the decisions of the gateways' traces, and their requests",
    );
    for (const [name, { traceId, spanId, app, decision: verdict }] of traces) {
      const spans = all.filter((s) => s.traceId === traceId);
      const decision = spans.find(decided(traceId))!;
      expect(decision.attributes, name).to.include({ 'boxauth.app': app, 'boxauth.door': 'forward-auth', 'boxauth.decision': verdict });
      // The topmost of its spans in the box is the forward-auth request, whose parent is the app's span.
      const top = spans.find((s) => s.spanId === (ancestorsOf(spans, decision).at(-1) ?? decision.spanId))!;
      expect(top.name, name).to.equal('GET /authz/forward-auth/:app');
      expect(top.parentSpanId, `${name} passed on the app's span as the parent`).to.equal(spanId);
    }
  });

  describe('with the box stopped', function () {
    const tokens = new Map<GatewayName, string>();
    before(async function () {
      for (const name of GATEWAYS) tokens.set(name, await indexerToken(name));
      await box.stop();
    });

    for (const name of GATEWAYS) {
      it(`${name} fails closed: 5xx, and nothing reaches the upstream`, async function () {
        const open = await reaching(() => through(name, '/health'));
        expect(open.status).to.be.within(500, 599);
        expect(open.received).to.equal(undefined);
        const withToken = await reaching(() => through(name, '/docs/a', { headers: { Authorization: `Bearer ${tokens.get(name)!}` } }));
        expect(withToken.status).to.be.within(500, 599);
        expect(withToken.received).to.equal(undefined);
      });
    }
  });
});
