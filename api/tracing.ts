// Traces over OTLP (OpenTelemetry), off unless OTEL_TRACES_EXPORTER=otlp (docs/operations/traces.md).
// Off, nothing of the SDK is loaded and every helper here is one test of `on`: the hot path pays a
// branch. On, startTracing() loads the SDK once per process (a lazy import) and:
// - requestSpan() makes one server span per request at the doors (HTTP and gRPC), a child of the
//   caller's W3C trace context (traceparent/tracestate: an app's request as its gateway forwards
//   it, an Envoy CheckRequest's headers), named by the route once it is known;
// - span() makes a child for what costs time inside (client authentication, each policy
//   evaluated, a decision, an outbound call);
// - outboundHeaders() gives what the box calls (hooks, webhooks, logout tokens, documents) the
//   current trace context;
// - logFields() ties each log line of a traced request to its trace and span (api/log.ts), and
//   traceExemplar() a latency it took to its trace (an exemplar, api/metrics.ts);
// - statementSpan() makes a client span per PostgreSQL statement (api/db/located-client.ts), and
//   batchSpan() one span per group commit, linked to the requests it carried (api/store/group-commit.ts).
// Attributes name things (a route, an app, a policy, a client id, a verdict), never a credential:
// no query string, header, body or parameter value is ever copied into a span.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Attributes, Context, ContextAPI, Link, Span, TextMapPropagator, TraceAPI, Tracer } from '@opentelemetry/api';
import { whenOver } from './response-over.js';

/** OTEL_TRACES_SAMPLER's values (the specification's, less the Jaeger remote sampler). */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

export interface TracingConfig {
  /** OTEL_TRACES_EXPORTER: `otlp` exports; `none` (the default) loads nothing. */
  exporter: 'none' | 'otlp';
  /** Where spans are POSTed (OTLP/HTTP, protobuf): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  endpoint: string;
  sampler: (typeof TRACE_SAMPLERS)[number];
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the traceidratio samplers, 0 to 1. */
  ratio: number;
  /** OTEL_SERVICE_NAME. */
  serviceName: string;
}

/** What a span's holder may do with it: add what it learned (a verdict, units spent). */
export interface SpanNotes {
  setAttributes(attributes: Attributes): void;
}

const NO_NOTES: SpanNotes = { setAttributes: () => undefined };

interface On {
  trace: TraceAPI;
  context: ContextAPI;
  tracer: Tracer;
  propagator: TextMapPropagator;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
  /** Where the request's own span is kept in a context: the access log's route names it. */
  requestKey: symbol;
  /** SpanKind and SpanStatusCode's values used here. */
  kinds: { server: number; client: number };
  errorStatus: number;
}

let on: On | undefined;

/** Whether spans are being made (startTracing ran with an exporter). */
export const tracingOn = (): boolean => on !== undefined;

/**
 * Loads the SDK and starts exporting, once per process (a host's boxes share it: each span names
 * its box). `attributes`: the resource's, beside service.name (the box, the version).
 */
export async function startTracing(config: TracingConfig, attributes: Attributes = {}): Promise<void> {
  if (config.exporter === 'none' || on) return;
  const [api, sdk, core, resources, asyncHooks, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  if (on) return;
  // Context follows awaits through AsyncLocalStorage: a policy's span finds its request's.
  api.context.setGlobalContextManager(new asyncHooks.AsyncLocalStorageContextManager().enable());
  const ratio = new sdk.TraceIdRatioBasedSampler(config.ratio);
  const root = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.AlwaysOnSampler(),
    parentbased_always_off: new sdk.AlwaysOffSampler(),
    parentbased_traceidratio: ratio,
  }[config.sampler];
  const provider = new sdk.TracerProvider({
    sampler: config.sampler.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root,
    resource: resources.resourceFromAttributes({ ...attributes, 'service.name': config.serviceName }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new otlp.OTLPTraceExporter({ url: config.endpoint }) })],
  });
  on = {
    trace: api.trace,
    context: api.context,
    tracer: provider.getTracer('boxauth'),
    propagator: new core.W3CTraceContextPropagator(),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
    requestKey: Symbol('boxauth request span'),
    kinds: { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT },
    errorStatus: api.SpanStatusCode.ERROR,
  };
}

/** Exports what is left and stops (the process is stopping). */
export async function stopTracing(): Promise<void> {
  const stopping = on;
  on = undefined;
  await stopping?.shutdown();
}

/** Exports every ended span now (tests read them back). */
export async function flushTraces(): Promise<void> {
  await on?.flush();
}

type Carrier = Record<string, string | string[] | undefined>;

const getter = {
  keys: (carrier: Carrier): string[] => Object.keys(carrier),
  get: (carrier: Carrier, key: string): string | string[] | undefined => carrier[key],
};

const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';

/** Runs `fn` in `span`, ending it when `fn` returns or settles; a throw or rejection marks it failed. */
function within<T>(o: On, span: Span, fn: (notes: SpanNotes) => T): T {
  const failed = (err: unknown): void => {
    span.setStatus({ code: o.errorStatus, message: err instanceof Error ? err.name : 'error' });
    span.end();
  };
  let out: T;
  try {
    out = fn(span);
  } catch (err) {
    failed(err);
    throw err;
  }
  if (!isPromise(out)) {
    span.end();
    return out;
  }
  return out.then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      failed(err);
      throw err;
    },
  ) as T;
}

/**
 * Whether the current span is one whose trace is not kept (not sampled): then no child of it is
 * made at all. Every sampler here decides a child of this process's span as it decided the parent
 * (the parent-based ones by the parent's flag, the ratio ones by the same trace id, always_on and
 * always_off alike), so a child would only be made to be dropped; at 1 % that was most of what
 * traces cost a request (docs/operations/traces.md). The trace's context still goes on through the
 * span not kept: to what the box calls (outboundSpan) and into each log line (logFields).
 */
function notKept(o: On): boolean {
  const current = o.trace.getActiveSpan();
  return current !== undefined && !sampled(current);
}

/** Whether a span's trace is kept: its sampled flag (not isRecording(), which a kept span that has ended answers false). */
const sampled = (s: Span): boolean => (s.spanContext().traceFlags & 1) === 1;

/** Whether a span begun now would be made: traces are on, and the current trace (if any) is kept. */
export const spansMadeNow = (): boolean => on !== undefined && !notKept(on);

/** `fn` in a child span of the current one named `name` (off, or the trace not kept: `fn` alone). */
export function span<T>(name: string, attributes: Attributes, fn: (notes: SpanNotes) => T): T {
  const o = on;
  if (!o || notKept(o)) return fn(NO_NOTES);
  return o.tracer.startActiveSpan(name, { attributes }, (s) => within(o, s, fn));
}

/** `fn` in a span of a call the box makes (kind CLIENT), with `headers` given to carry its context on. */
export function outboundSpan<T>(name: string, attributes: Attributes, fn: (headers: Record<string, string>) => T): T {
  const o = on;
  if (!o) return fn({});
  if (notKept(o)) return fn(contextHeaders(o));
  return o.tracer.startActiveSpan(name, { attributes, kind: o.kinds.client }, (s) => within(o, s, () => fn(contextHeaders(o))));
}

/** The current trace context as the headers that carry it on (traceparent, tracestate). */
function contextHeaders(o: On): Record<string, string> {
  const headers: Record<string, string> = {};
  o.propagator.inject(o.context.active(), headers, { set: (carrier, key, value) => (carrier[key] = value) });
  return headers;
}

/** The attributes of a call to `url`: its server and path, never its query (which may carry a credential). */
export const outboundAttributes = (method: string, url: URL): Attributes => ({
  'http.request.method': method,
  'server.address': url.hostname,
  'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
  'url.path': url.pathname,
});

/** The parent a caller's headers name (traceparent/tracestate), or the current context. */
function parentOf(o: On, headers: Carrier | IncomingHttpHeaders): Context {
  return o.propagator.extract(o.context.active(), headers, getter);
}

/**
 * `fn` in the server span of one call at a door that is not HTTP (Envoy's gRPC Check): a child of
 * the trace context `headers` carry (the CheckRequest's headers of the app's request).
 */
export function callSpan<T>(name: string, headers: Carrier, attributes: Attributes, fn: (notes: SpanNotes) => T): T {
  const o = on;
  if (!o) return fn(NO_NOTES);
  return o.tracer.startActiveSpan(name, { attributes, kind: o.kinds.server }, parentOf(o, headers), (s) => within(o, s, fn));
}

/**
 * `serve` in the server span of one HTTP request, a child of the trace context its headers carry;
 * the span ends when the response closes, with its status. Its name is the method until
 * nameRequestSpan gives it the route.
 */
export function requestSpan(req: IncomingMessage, res: ServerResponse, serve: () => void): void {
  const o = on;
  if (!o) return serve();
  const method = req.method ?? 'GET';
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const parent = parentOf(o, req.headers);
  const s = o.tracer.startSpan(
    method,
    { kind: o.kinds.server, attributes: { 'http.request.method': method, 'url.path': path, 'server.address': hostOf(req) } },
    parent,
  );
  whenOver(res, () => {
    s.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) s.setStatus({ code: o.errorStatus });
    s.end();
  });
  const ctx = o.trace.setSpan(parent, s).setValue(o.requestKey, s);
  o.context.with(ctx, serve);
}

/** The Host the request was sent to, without its port (a hosted box's name). */
const hostOf = (req: IncomingMessage): string => (req.headers.host ?? '').replace(/:\d+$/, '');

/** The span of the request being served (requestSpan), if traces are on. */
const requestSpanNow = (): Span | undefined => on?.context.active().getValue(on.requestKey) as Span | undefined;

/** Names the request's span by its route (`POST /auth/token`), as the access log does (api/http/app.ts). */
export function nameRequestSpan(method: string, route: string): void {
  const s = requestSpanNow();
  if (!s) return;
  s.updateName(`${method} ${route}`);
  s.setAttribute('http.route', route);
}

/** Adds what a door learnt of its request (the grant asked for) to the request's span. */
export function noteRequest(attributes: Attributes): void {
  requestSpanNow()?.setAttributes(attributes);
}

/**
 * The trace and span ids a log line of the current span carries (none: {}). A new object each
 * time: pino merges each line's own fields into what its mixin returns (Object.assign), so an
 * object shared between lines would carry every earlier line's fields into the next.
 */
export function logFields(): Record<string, string> {
  const s = on?.trace.getActiveSpan();
  if (!s) return {};
  const { traceId, spanId, traceFlags } = s.spanContext();
  return { trace_id: traceId, span_id: spanId, trace_flags: `0${traceFlags.toString(16)}`.slice(-2) };
}

/** A span its holder ends when what it times is over (a statement, whose end a callback may tell). */
export interface OpenSpan {
  end(err?: Error): void;
}

/**
 * A client span of one PostgreSQL statement, begun now under the current span (off: undefined).
 * `summary` names it by its operation and table (`INSERT sessions`): never its text or parameters.
 */
export function statementSpan(summary: { operation: string; table?: string }): OpenSpan | undefined {
  const o = on;
  if (!o || notKept(o)) return undefined;
  const name = summary.table ? `${summary.operation} ${summary.table}` : summary.operation;
  const s = o.tracer.startSpan(name, {
    kind: o.kinds.client,
    attributes: {
      'db.system.name': 'postgresql',
      'db.operation.name': summary.operation,
      'db.query.summary': name,
      ...(summary.table ? { 'db.collection.name': summary.table } : {}),
    },
  });
  return {
    end: (err) => {
      if (err) s.setStatus({ code: o.errorStatus, message: err.name });
      s.end();
    },
  };
}

/** `fn` bound to the current context (off: `fn`): a callback a pool calls from another request's release. */
export function bindToContext<F extends (...args: never[]) => unknown>(fn: F): F {
  const o = on;
  return o ? o.context.bind(o.context.active(), fn) : fn;
}

/** The current span, for a batch that will carry the current request's work (off, or none: undefined). */
export const spanForBatch = (): Span | undefined => on?.trace.getActiveSpan();

/**
 * `run` in one span for a batch that carries the work of several requests (a group commit): a child
 * of the first sampled request among `carried` (a trace that is kept shows its batch), linked to
 * every one of them; each of them is given an event naming the batch back.
 */
export function batchSpan<T>(name: string, carried: (Span | undefined)[], run: () => Promise<T>): Promise<T> {
  const o = on;
  if (!o) return run();
  const spans = carried.filter((c): c is Span => c !== undefined);
  // A batch of requests whose traces are none of them kept would be a span to drop (see notKept): it
  // runs under the first of them, so that its statements are not made either, whatever span (another
  // batch's) was current when it was flushed.
  if (spans.length > 0 && !spans.some(sampled)) return o.context.with(o.trace.setSpan(o.context.active(), spans[0]!), run);
  const links: Link[] = spans.map((c) => ({ context: c.spanContext() }));
  const first = spans.find(sampled) ?? spans[0];
  const parent = first ? o.trace.setSpan(o.context.active(), first) : o.trace.deleteSpan(o.context.active());
  const size = carried.length;
  return o.tracer.startActiveSpan(name, { links, attributes: { 'db.operation.batch.size': size } }, parent, (batch) => {
    const { traceId, spanId } = batch.spanContext();
    for (const c of spans)
      c.addEvent(name, { 'boxauth.batch.trace_id': traceId, 'boxauth.batch.span_id': spanId, 'db.operation.batch.size': size });
    return within(o, batch, run);
  });
}

const NO_EXEMPLAR: Record<string, string> = Object.freeze({});

/**
 * The exemplar a latency observed now carries (OpenMetrics): the trace and span of the request
 * being served, if it is sampled (a trace that is not kept is nowhere to be found); else none ({}).
 */
export function traceExemplar(): Record<string, string> {
  const s = requestSpanNow();
  if (!s) return NO_EXEMPLAR;
  const { traceId, spanId, traceFlags } = s.spanContext();
  return traceFlags & 1 ? { trace_id: traceId, span_id: spanId } : NO_EXEMPLAR;
}
