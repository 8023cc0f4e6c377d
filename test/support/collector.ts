// A real OpenTelemetry Collector for the traces' tests: test/otelcol, built by
// scripts/test-tools-build.sh (make test-tools), started on loopback ports with a config of its
// own in a temporary directory. The box exports to its OTLP receiver (OTLP/HTTP, protobuf);
// its otlphttp exporter hands every span on, as OTLP JSON, to a receiver of this process, so a
// test reads back exactly what the Collector received and decoded: `traces()`.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eventually } from './box.js';
import { stopChild } from './child.js';
import { TOOLS_BIN } from './kube.js';
import { onFreePorts } from './ports.js';

export const OTELCOL = path.join(TOOLS_BIN, 'otelcol');

type Value = string | number | boolean;

/** One span as the Collector passed it on, its attributes as plain values. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client, 1 internal. */
  kind: number;
  attributes: Record<string, Value>;
  /** Its resource's attributes (service.name, boxauth.box). */
  resource: Record<string, Value>;
  /** The spans it links to (a group commit's: the requests it carried). */
  links: { traceId: string; spanId: string }[];
  events: { name: string; attributes: Record<string, Value> }[];
}

/** An app's request as its gateway forwards it: a trace of the app's own, its span, and the W3C traceparent naming both (sampled). */
export function appTrace(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The span ids above `span` among `spans`, its parent first, up to the first parent not among them (the caller's). */
export function ancestorsOf(spans: ExportedSpan[], span: ExportedSpan): string[] {
  const parent = spans.find((p) => p.spanId === span.parentSpanId);
  return parent ? [parent.spanId, ...ancestorsOf(spans, parent)] : [];
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}
interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: (Omit<ExportedSpan, 'attributes' | 'resource' | 'links' | 'events'> & {
        attributes?: OtlpAttribute[];
        links?: { traceId: string; spanId: string }[];
        events?: { name: string; attributes?: OtlpAttribute[] }[];
      })[];
    }[];
  }[];
}

const valuesOf = (attributes: OtlpAttribute[] = []): Record<string, Value> =>
  Object.fromEntries(
    attributes.map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? '')),
    ]),
  );

/** What the Collector sent back: every body as it came (a test greps them whole), and their spans. */
interface Received {
  bodies: string[];
  spans: ExportedSpan[];
}

export class Collector {
  private constructor(
    /** Where the box exports (OTEL_EXPORTER_OTLP_ENDPOINT). */
    readonly endpoint: string,
    private readonly child: ChildProcess,
    private readonly back: http.Server,
    private readonly dir: string,
    private readonly received: Received,
    readonly log: string[],
  ) {}

  /** Every body received so far, as the Collector sent it. */
  get bodies(): string[] {
    return [...this.received.bodies];
  }

  /** Its receiver on a free port: again on a new one when another process took it first. */
  static start(): Promise<Collector> {
    if (!fs.existsSync(OTELCOL))
      return Promise.reject(new Error(`${OTELCOL} is missing: run scripts/test-tools-build.sh (make test-tools)`));
    return onFreePorts(1, ([receiverPort]) => Collector.startOn(receiverPort));
  }

  private static async startOn(receiverPort: number): Promise<Collector> {
    const received: Received = { bodies: [], spans: [] };
    // Where the Collector exports to: a server of ours, on its own port 0.
    const back = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        received.bodies.push(body);
        const json = JSON.parse(body) as OtlpJson;
        for (const rs of json.resourceSpans ?? []) {
          const resource = valuesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              received.spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                attributes: valuesOf(s.attributes),
                resource,
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                events: (s.events ?? []).map((e) => ({ name: e.name, attributes: valuesOf(e.attributes) })),
              });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => back.listen(0, '127.0.0.1', resolve));
    const backPort = (back.address() as AddressInfo).port;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-otelcol-'));
    const config = path.join(dir, 'config.yaml');
    fs.writeFileSync(
      config,
      `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${receiverPort}
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:${backPort}
    encoding: json
    compression: none
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlphttp]
`,
    );
    const log: string[] = [];
    const child = spawn(OTELCOL, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => log.push(c.toString()));
    child.stderr.on('data', (c: Buffer) => log.push(c.toString()));
    const collector = new Collector(`http://127.0.0.1:${receiverPort}`, child, back, dir, received, log);
    try {
      await collector.ready();
    } catch (err) {
      await collector.stop();
      throw err;
    }
    return collector;
  }

  /** Answers once its receiver takes an (empty) export. */
  private async ready(): Promise<void> {
    const until = Date.now() + 30_000;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`otelcol exited (${this.child.exitCode}): ${this.log.join('')}`);
      const ok = await fetch(`${this.endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return;
      if (Date.now() > until) throw new Error(`otelcol did not start: ${this.log.join('')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Every span received so far. */
  traces(): ExportedSpan[] {
    return [...this.received.spans];
  }

  /** The spans received, once `until` holds of them (the box exports in batches). */
  waitFor(until: (spans: ExportedSpan[]) => boolean, what: string): Promise<ExportedSpan[]> {
    return eventually(what, async () => until(this.traces()) && this.traces(), 20_000);
  }

  async stop(): Promise<void> {
    await stopChild(this.child);
    await new Promise<void>((resolve) => this.back.close(() => resolve()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
