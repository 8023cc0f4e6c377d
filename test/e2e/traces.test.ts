// Traces, read back from a real OpenTelemetry Collector (test/otelcol through
// test/support/collector.ts): the box exports over OTLP with every trace sampled but those its
// caller marked not sampled (parentbased_always_on); the tests
// make what a cluster makes (a token issued, a gateway's request decided and refused over
// HTTP and over gRPC, each with the app's traceparent) and check the shape of what arrived:
// the decision is a child of the app's request, with its policies beneath it; each log line of
// a traced request names its trace; and no token, code, secret or password is in any span.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { pino } from 'pino';
import { tracingOf } from '../../api/config.js';
import { flushTraces, startTracing, stopTracing } from '../../api/tracing.js';
import { Controller, type Outcome, type Resource } from '../../operator/controller.js';
import type { EventRecorder } from '../../operator/events.js';
import type { ObjectCache } from '../../operator/informer.js';
import { CLIENTS, type Kube } from '../../operator/kube.js';
import { OperatorMetrics } from '../../operator/metrics.js';
import { ManualClock } from '../support/clock.js';
import { basic, Box, eventually } from '../support/box.js';
import { ancestorsOf, appTrace, Collector, type ExportedSpan } from '../support/collector.js';
import { FormAgent } from '../support/form-agent.js';
import { grpcCheck } from '../support/grpc-check.js';
import { HookServer } from '../support/hook-servers.js';
import { testCa } from '../support/tls.js';
import { APP_REDIRECT, authorizePath } from '../support/signed-in.js';

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

const childrenOf = (spans: ExportedSpan[], parent: ExportedSpan): ExportedSpan[] => spans.filter((s) => s.parentSpanId === parent.spanId);

describe('traces over OTLP, read back from an OpenTelemetry Collector', function () {
  this.timeout(120_000);
  let collector: Collector;
  let box: Box;
  let root: string;
  const indexerSecret = `indexer-${hex(12)}`;
  const wiki = 'wiki.example';

  before(async function () {
    collector = await Collector.start();
    box = await Box.start({
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_SERVICE_NAME: 'boxauth-under-test',
        // The hook of the last test listens on loopback.
        BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32',
      },
    });
    root = await box.rootToken();
    await box.addClient('indexer', { audience: [`https://${wiki}`] }, { secret: indexerSecret, policy: false });
    expect((await box.json('PUT', '/App/wiki', { urls: [`https://${wiki}`], audience: `https://${wiki}` }, root)).status).to.equal(201);
    const policy = {
      app: 'wiki',
      engine: 'matcho',
      link: [{ id: 'indexer', resourceType: 'Client' }],
      matcho: { 'request-method': 'get', path: '#^/docs/' },
    };
    expect((await box.json('PUT', '/AccessPolicy/wiki-indexer-reads', policy, root)).status).to.equal(201);
  });
  after(async function () {
    await box?.stop();
    await collector?.stop();
  });

  const indexerToken = async (headers: Record<string, string> = {}): Promise<string> => {
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', audience: `https://${wiki}` },
      { Authorization: basic('indexer', indexerSecret), ...headers },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  };

  /** A forward-auth request (Traefik's, Caddy's) for GET or POST /docs/a, carrying the app's trace. */
  const forwardAuth = (method: string, token: string, traceparent: string) =>
    fetch(`${box.url}/authz/forward-auth/wiki`, {
      headers: {
        'X-Forwarded-Method': method,
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': wiki,
        'X-Forwarded-Uri': '/docs/a',
        Authorization: `Bearer ${token}`,
        traceparent,
      },
    });

  /** The spans of `traceId`, once its decision's span (and its parent) has come. */
  const traceOf = (traceId: string, names: string[]): Promise<ExportedSpan[]> =>
    collector
      .waitFor((spans) => names.every((n) => spans.some((s) => s.traceId === traceId && s.name === n)), `${names.join(', ')} of ${traceId}`)
      .then((spans) => spans.filter((s) => s.traceId === traceId));

  it('a token issued: the request to the token endpoint, with client authentication beneath it', async function () {
    const { traceId, spanId, traceparent } = appTrace();
    await indexerToken({ traceparent });
    const spans = await traceOf(traceId, ['POST /auth/token', 'client authentication']);
    const request = spans.find((s) => s.name === 'POST /auth/token')!;
    expect(request.parentSpanId, 'a child of the caller').to.equal(spanId);
    expect(request.kind).to.equal(2);
    expect(request.attributes).to.include({
      'http.request.method': 'POST',
      'http.route': '/auth/token',
      'http.response.status_code': 200,
      'oauth.grant_type': 'client_credentials',
    });
    expect(request.resource).to.include({ 'service.name': 'boxauth-under-test', 'boxauth.box': 'default' });
    const auth = childrenOf(spans, request).find((s) => s.name === 'client authentication');
    expect(auth?.attributes).to.include({ 'oauth.client_id': 'indexer', 'boxauth.client_auth.method': 'client_secret_basic' });
  });

  it("a token issued: its PostgreSQL statements are spans beneath the request, named by operation and table, never a parameter's value", async function () {
    const { traceId, traceparent } = appTrace();
    const token = await indexerToken({ traceparent });
    const spans = await traceOf(traceId, ['POST /auth/token', 'INSERT sessions']);
    const request = spans.find((s) => s.name === 'POST /auth/token')!;
    const insert = spans.find((s) => s.name === 'INSERT sessions')!;
    expect(ancestorsOf(spans, insert), 'the session written for the token, beneath its request').to.include(request.spanId);
    expect(insert.kind, 'a client span').to.equal(3);
    expect(insert.attributes).to.deep.equal({
      'db.system.name': 'postgresql',
      'db.operation.name': 'INSERT',
      'db.query.summary': 'INSERT sessions',
      'db.collection.name': 'sessions',
    });
    const statements = collector.traces().filter((s) => s.attributes['db.system.name'] === 'postgresql');
    expect(statements.length).to.be.above(1);
    for (const s of statements) {
      // Keywords and names only: a digest, a code, a token or any other value would not fit.
      expect(Object.keys(s.attributes), s.name).to.have.members([
        'db.system.name',
        'db.operation.name',
        'db.query.summary',
        ...(s.attributes['db.collection.name'] ? ['db.collection.name'] : []),
      ]);
      for (const value of Object.values(s.attributes)) expect(String(value), s.name).to.match(/^[A-Za-z_.]+( [a-z_.]+)?$/);
      expect(JSON.stringify(s)).not.to.include(token.split('.')[2]);
    }
  });

  it('a group commit is one span, linked to the token requests it carried, each of which names it back', async function () {
    // Concurrent token requests, each in a trace of its own, until some of them share a commit.
    const batch = await eventually('a group commit carrying two of the requests', async () => {
      const traces = Array.from({ length: 20 }, appTrace);
      await Promise.all(traces.map((t) => indexerToken({ traceparent: t.traceparent })));
      const ours = new Set(traces.map((t) => t.traceId));
      // A batch's statement is in the trace of the first request it carried; each request's span comes after its batch's.
      await collector.waitFor(
        (spans) => traces.every((t) => spans.some((s) => s.traceId === t.traceId && s.name === 'POST /auth/token')),
        'their requests',
      );
      return collector.traces().find((s) => s.name === 'group commit' && s.links.filter((l) => ours.has(l.traceId)).length >= 2);
    });
    expect(batch.attributes['db.operation.batch.size']).to.equal(batch.links.length);
    const spans = collector.traces();
    expect(
      spans.filter((s) => s.parentSpanId === batch.spanId).map((s) => s.name),
      'its statement beneath it',
    ).to.include('INSERT sessions');
    for (const link of batch.links) {
      const carried = spans.find((s) => s.traceId === link.traceId && s.spanId === link.spanId);
      expect(carried, 'a linked span').to.not.equal(undefined);
      const inTrace = spans.filter((s) => s.traceId === link.traceId);
      const request = inTrace.find((s) => s.name === 'POST /auth/token')!;
      expect([carried!.spanId, ...ancestorsOf(inTrace, carried!)], 'a span of the token request').to.include(request.spanId);
      expect(carried!.events.find((e) => e.name === 'group commit')?.attributes).to.include({
        'boxauth.batch.trace_id': batch.traceId,
        'boxauth.batch.span_id': batch.spanId,
        'db.operation.batch.size': batch.links.length,
      });
    }
  });

  it("a traced token request is the exemplar of its latencies in OpenMetrics; Prometheus' text format stays as it was", async function () {
    const { traceId, traceparent } = appTrace();
    await indexerToken({ traceparent });
    const spans = await traceOf(traceId, ['POST /auth/token']);
    const request = spans.find((s) => s.name === 'POST /auth/token')!;
    const scraped = await fetch(`http://127.0.0.1:${box.env.BOXAUTH_METRICS_PORT}/metrics`, {
      headers: { Accept: 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3' },
    });
    expect(scraped.headers.get('content-type')).to.match(/^application\/openmetrics-text; version=1\.0\.0/);
    const open = await scraped.text();
    expect(open.trimEnd().endsWith('# EOF'), 'an OpenMetrics exposition').to.equal(true);
    const exemplar = `# {trace_id="${traceId}",span_id="${request.spanId}"}`;
    for (const histogram of ['boxauth_http_request_duration_seconds_bucket{', 'boxauth_token_duration_seconds_bucket{']) {
      const lines = open.split('\n').filter((l) => l.startsWith(histogram) && l.includes(exemplar));
      expect(lines, `${histogram} with the request's exemplar`).to.have.length(1);
    }
    expect(open).to.match(/^# TYPE boxauth_http_requests counter$/m);
    expect(open).to.match(/^boxauth_http_requests_total\{/m);

    // Asked for nothing in particular (or after an OpenMetrics scrape), the text format, without exemplars.
    const text = await box.metrics();
    expect(text).not.to.include('# {trace_id=');
    expect(text).not.to.include('# EOF');
    expect(text).to.match(/^# TYPE boxauth_http_requests_total counter$/m);
  });

  it("a gateway's request decided and one refused: the decision is a child of the app's request, its policy beneath", async function () {
    const token = await indexerToken();
    const allowed = appTrace();
    expect((await forwardAuth('GET', token, allowed.traceparent)).status).to.equal(200);
    const refused = appTrace();
    expect((await forwardAuth('POST', token, refused.traceparent)).status).to.equal(403);

    for (const [trace, verdict, status] of [
      [allowed, 'allow', 200],
      [refused, 'deny', 403],
    ] as const) {
      const spans = await traceOf(trace.traceId, ['decision', 'policy']);
      const door = spans.find((s) => s.parentSpanId === trace.spanId)!;
      expect(door.name, verdict).to.equal('GET /authz/forward-auth/:app');
      expect(door.attributes['http.response.status_code']).to.equal(status);
      const decision = childrenOf(spans, door).find((s) => s.name === 'decision')!;
      expect(decision.attributes, verdict).to.include({
        'boxauth.app': 'wiki',
        'boxauth.door': 'forward-auth',
        'boxauth.decision': verdict,
        'boxauth.decision.status': status,
      });
      const policy = childrenOf(spans, decision).find((s) => s.name === 'policy')!;
      expect(policy.attributes, verdict).to.include({
        'boxauth.policy': 'wiki-indexer-reads',
        'boxauth.policy.engine': 'matcho',
        'boxauth.policy.verdict': verdict === 'allow' ? 'allows' : 'denies',
      });
      expect(policy.attributes['boxauth.policy.units'], 'the units of work it spent').to.be.a('number').above(0);
    }
  });

  it("Envoy's gRPC check continues the traceparent among the CheckRequest's headers", async function () {
    const token = await indexerToken();
    const { traceId, spanId, traceparent } = appTrace();
    const answer = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
      attributes: {
        request: {
          http: {
            method: 'GET',
            path: '/docs/b',
            host: wiki,
            scheme: 'https',
            headers: { ':authority': wiki, ':path': '/docs/b', ':method': 'GET', authorization: `Bearer ${token}`, traceparent },
          },
        },
        context_extensions: { app: 'wiki' },
      },
    });
    expect(answer.status?.code ?? 0).to.equal(0);
    const spans = await traceOf(traceId, ['envoy.service.auth.v3.Authorization/Check', 'decision']);
    const check = spans.find((s) => s.name === 'envoy.service.auth.v3.Authorization/Check')!;
    expect(check.parentSpanId).to.equal(spanId);
    expect(check.kind).to.equal(2);
    const decision = childrenOf(spans, check).find((s) => s.name === 'decision')!;
    expect(decision.attributes).to.include({ 'boxauth.door': 'grpc', 'boxauth.decision': 'allow' });
  });

  it('each log line of a traced request names its trace and span', async function () {
    const { traceId, traceparent } = appTrace();
    await indexerToken({ traceparent });
    const spans = await traceOf(traceId, ['POST /auth/token']);
    const request = spans.find((s) => s.name === 'POST /auth/token')!;
    // The access log is written in batches (api/log.ts): its line may come a moment after the span.
    const line = await eventually('the access log line of the request', async () =>
      box.logs
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.trace_id === traceId && l.msg === 'request'),
    );
    expect(line).to.include({ span_id: request.spanId, url: '/auth/token', status: 200 });
  });

  it('no token, code, secret or password is in any span exported over a whole journey', async function () {
    const password = `pw-${hex(12)}`;
    const appSecret = `app-secret-${hex(12)}`;
    const email = `ada-${hex(4)}@example.com`;
    expect((await box.json('POST', '/users', { email, password }, root)).status).to.equal(201);
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: APP_REDIRECT, refresh_token: true } },
      },
      { secret: appSecret, policy: false },
    );
    const secrets: Record<string, string> = { password, appSecret, indexerSecret };

    // A token with client_secret, in HTTP Basic and in the body.
    secrets.basicToken = await indexerToken();
    const posted = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_id: 'indexer',
      client_secret: indexerSecret,
    });
    expect(posted.status, posted.text).to.equal(200);
    secrets.postedToken = posted.body.access_token as string;

    // A sign-in with a password, the code, its tokens and a refresh.
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, password)).status).to.equal(303);
    const authorized = await browser.get(authorizePath('app'));
    expect(authorized.status, authorized.text).to.equal(302);
    secrets.code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
    const granted = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: secrets.code, redirect_uri: APP_REDIRECT },
      { Authorization: basic('app', appSecret) },
    );
    expect(granted.status, granted.text).to.equal(200);
    secrets.accessToken = granted.body.access_token as string;
    secrets.refreshToken = granted.body.refresh_token as string;
    const refreshed = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: secrets.refreshToken },
      { Authorization: basic('app', appSecret) },
    );
    expect(refreshed.status, refreshed.text).to.equal(200);
    secrets.refreshedAccess = refreshed.body.access_token as string;
    // A refresh token rotated, when the client's refreshes rotate it.
    if (refreshed.body.refresh_token) secrets.refreshedRefresh = refreshed.body.refresh_token as string;
    // The token at a gateway and at the introspection endpoint.
    const { traceparent } = appTrace();
    await forwardAuth('GET', secrets.accessToken, traceparent);
    await box.form('/auth/introspect', { token: secrets.accessToken }, { Authorization: basic('app', appSecret) });

    // Every request of the journey has come once the refresh and the last introspection have.
    await collector.waitFor(
      (spans) => spans.some((s) => s.name === 'POST /auth/introspect') && spans.filter((s) => s.name === 'POST /auth/token').length >= 6,
      'the spans of the journey',
    );
    expect(collector.traces().some((s) => s.name === 'GET /auth/authorize')).to.equal(true);
    const exported = collector.bodies.join('\n');
    for (const [what, value] of Object.entries(secrets)) {
      expect(value, what).to.be.a('string').with.length.above(8);
      expect(exported.includes(value), `${what} in an exported span`).to.equal(false);
      // A JWT's signature alone (its claims name the client, which spans do too).
      const signature = value.split('.')[2];
      if (signature) expect(exported.includes(signature), `${what}'s signature in an exported span`).to.equal(false);
    }
  });

  /** `run` while a Hook of the token request (Python's, answering at /allow) is declared; deleted after. */
  const withTokenHook = async (name: string, run: (hook: HookServer) => Promise<void>): Promise<void> => {
    const ca = testCa();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const hook = await HookServer.start('python', secret, ca);
    try {
      const spec = { moments: ['tokenIssuing'], url: `${hook.url}/allow`, caBundle: Buffer.from(ca.pem).toString('base64'), secret };
      const put = await box.json('PUT', `/Hook/${name}`, spec, root);
      expect(put.status, put.text).to.equal(201);
      await run(hook);
    } finally {
      await box.json('DELETE', `/Hook/${name}`, undefined, root);
      await hook.kill();
    }
  };

  it("gives a hook the token request's trace: its call is a child span, and the hook is sent that span as its parent", async function () {
    await withTokenHook('traced', async (hook) => {
      const { traceId, traceparent } = appTrace();
      await indexerToken({ traceparent });
      const spans = await traceOf(traceId, ['POST /auth/token', 'POST']);
      const request = spans.find((s) => s.name === 'POST /auth/token')!;
      const call = spans.find((s) => s.name === 'POST')!;
      expect(call.kind, 'a client span').to.equal(3);
      expect(call.attributes).to.include({ 'server.address': '127.0.0.1', 'url.path': '/allow' });
      // Beneath the request, through whatever the token endpoint made on the way (none of it the hook's own doing).
      expect(ancestorsOf(spans, call)).to.include(request.spanId);
      const [seen] = (await hook.seen()).filter((c) => c.path === '/allow');
      expect(seen?.headers.traceparent, 'the traceparent the hook was sent').to.equal(`00-${traceId}-${call.spanId}-01`);
    });
  });

  it('a trace its caller did not sample: nothing of it is exported, and the hook is still sent its context', async function () {
    await withTokenHook('traced-not-sampled', async (hook) => {
      const unsampled = appTrace();
      await indexerToken({ traceparent: unsampled.traceparent.replace(/-01$/, '-00') });
      // Spans are exported in the order they end: once the next request's have come, the first's would have too.
      const sampled = appTrace();
      await indexerToken({ traceparent: sampled.traceparent });
      await traceOf(sampled.traceId, ['POST /auth/token', 'client authentication', 'POST']);
      expect(collector.traces().filter((s) => s.traceId === unsampled.traceId)).to.deep.equal([]);
      const [first, second] = (await hook.seen()).filter((c) => c.path === '/allow');
      // The box's request is a span of the caller's trace, not sampled either: the hook may go on with it.
      expect(first?.headers.traceparent).to.match(new RegExp(`^00-${unsampled.traceId}-[0-9a-f]{16}-00$`));
      expect(first?.headers.traceparent).not.to.include(unsampled.spanId);
      expect(second?.headers.traceparent).to.match(new RegExp(`^00-${sampled.traceId}-[0-9a-f]{16}-01$`));
    });
  });
});

/** A controller whose reconcile is Ready, or fails while `failure` is set. */
class Reconciling extends Controller<Resource> {
  failure: Error | undefined;

  protected fingerprint(): string {
    return 'v1';
  }

  protected async reconcile(): Promise<Outcome> {
    if (this.failure) throw this.failure;
    return { ready: true };
  }
}

describe("the operator's reconciles, read back from an OpenTelemetry Collector", function () {
  this.timeout(60_000);
  let collector: Collector;

  before(async function () {
    collector = await Collector.start();
    // The operator's process, as operator/main.ts starts it with OTEL_TRACES_EXPORTER=otlp.
    await startTracing(
      tracingOf(
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_TRACES_SAMPLER: 'always_on' },
        'boxauth-operator',
      ),
    );
  });
  after(async function () {
    await stopTracing();
    await collector?.stop();
  });

  it('a span per reconcile, naming the object and its outcome', async function () {
    const obj: Resource = { metadata: { name: 'wiki', namespace: 'team-a', generation: 1 }, status: { observedGeneration: 1 } };
    const informer: ObjectCache<Resource> = { on: () => undefined, get: () => obj, list: () => [obj] };
    const controller = new Reconciling('client', CLIENTS, informer, {
      kube: {} as Kube,
      log: pino({ level: 'silent' }),
      metrics: new OperatorMetrics(),
      events: {} as EventRecorder,
      clock: new ManualClock(),
    });
    await controller.reconcileKey('team-a/wiki');
    controller.failure = new Error('the database is away');
    await controller.reconcileKey('team-a/wiki', true).catch(() => undefined);
    await flushTraces();
    const spans = (await collector.waitFor((s) => s.filter((x) => x.name === 'reconcile').length >= 2, 'two reconciles')).filter(
      (s) => s.name === 'reconcile',
    );
    expect(spans.map((s) => s.attributes)).to.deep.equal([
      {
        'boxauth.controller': 'client',
        'k8s.namespace.name': 'team-a',
        'k8s.object.name': 'wiki',
        'boxauth.reconcile.result': 'ok',
        'boxauth.reconcile.ready': true,
      },
      { 'boxauth.controller': 'client', 'k8s.namespace.name': 'team-a', 'k8s.object.name': 'wiki', 'boxauth.reconcile.result': 'error' },
    ]);
    expect(spans[0]!.resource['service.name']).to.equal('boxauth-operator');
  });
});
