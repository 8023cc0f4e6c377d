// The screenshot of docs/operations/traces.md: one journey of a box (a token issued to a client,
// then a gateway's request refused) exported over OTLP to an OpenTelemetry Collector
// (test/otelcol-zipkin) whose Zipkin exporter hands the spans to a Zipkin server, and the refused
// decision's trace in Zipkin's UI, in headless Chromium. Zipkin rather than Jaeger: Jaeger's UI is
// on no registry this project builds from; Zipkin's server, UI included, is on Maven Central.
// Run by scripts/trace-screenshot.sh (make docs-screenshots), which builds the Collector first.
//
//   node dist/test/screenshots/traces.js <otelcol-zipkin> <zipkin-server-exec.jar>
//
// It writes test-artifacts/traces-zipkin.png; the script copies it to docs/screenshots/.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { basic, Box, eventually } from '../support/box.js';
import { stopChild } from '../support/child.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { freePorts } from '../support/ports.js';
import { mochaGlobalSetup, mochaGlobalTeardown } from '../support/postgres.js';

const [otelcol, zipkinJar] = process.argv.slice(2);
if (!otelcol || !zipkinJar) throw new Error('usage: traces.js <otelcol-zipkin> <zipkin-server-exec.jar>');

const children: ChildProcess[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-trace-screenshot-'));

function start(command: string, args: string[], name: string): ChildProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = fs.createWriteStream(path.join(dir, `${name}.log`));
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  children.push(child);
  return child;
}

const answers = (url: string, init?: RequestInit) => () =>
  fetch(url, init)
    .then((r) => r.ok)
    .catch(() => false);

async function main(): Promise<void> {
  const [zipkinPort, otlpPort] = await freePorts(2);
  const zipkin = `http://127.0.0.1:${zipkinPort}`;
  start('java', ['-jar', zipkinJar!, `--server.port=${zipkinPort}`], 'zipkin');
  const config = path.join(dir, 'otelcol.yaml');
  fs.writeFileSync(
    config,
    `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlpPort}
exporters:
  zipkin:
    endpoint: ${zipkin}/api/v2/spans
    format: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [zipkin]
`,
  );
  start(otelcol!, ['--config', config], 'otelcol');
  await eventually('Zipkin', answers(`${zipkin}/health`), 120_000, 500);
  const collector = `http://127.0.0.1:${otlpPort}`;
  await eventually(
    'the Collector',
    answers(`${collector}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
  );

  await mochaGlobalSetup();
  const box = await Box.start({ env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: collector } });
  try {
    const root = await box.rootToken();
    const secret = 'indexer-secret-of-the-screenshot';
    await box.addClient('indexer', { audience: ['https://wiki.example'] }, { secret, policy: false });
    await box.json('PUT', '/App/wiki', { urls: ['https://wiki.example'], audience: 'https://wiki.example' }, root);
    const policy = {
      app: 'wiki',
      engine: 'matcho',
      link: [{ id: 'indexer', resourceType: 'Client' }],
      matcho: { 'request-method': 'get', path: '#^/docs/' },
    };
    await box.json('PUT', '/AccessPolicy/wiki-indexer-reads', policy, root);
    const token = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', audience: 'https://wiki.example' },
      { Authorization: basic('indexer', secret) },
    );
    if (token.status !== 200) throw new Error(`token: ${token.status} ${token.text}`);
    // The indexer may read the wiki's docs, not write them: its POST is refused.
    const refused = await fetch(`${box.url}/authz/forward-auth/wiki`, {
      headers: {
        'X-Forwarded-Method': 'POST',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'wiki.example',
        'X-Forwarded-Uri': '/docs/a',
        Authorization: `Bearer ${token.body.access_token as string}`,
      },
    });
    if (refused.status !== 403) throw new Error(`the gateway check answered ${refused.status}, not 403`);
  } finally {
    await box.stop(); // it exports what is left as it stops
  }

  const query = new URLSearchParams({ serviceName: 'boxauth', annotationQuery: 'boxauth.decision=deny', lookback: '3600000' });
  const traceId = await eventually(
    'the refused decision in Zipkin',
    async () => ((await (await fetch(`${zipkin}/api/v2/traces?${query}`)).json()) as { traceId: string }[][])[0]?.[0]?.traceId,
  );
  const browser = await launchBrowser();
  try {
    // Tall enough for the whole tree: the request, its decision and policy, its statements.
    const page = await browser.newPage({ viewport: { width: 1200, height: 600 } });
    await page.goto(`${zipkin}/zipkin/traces/${traceId}`);
    // The policy's span, selected: its tags beside the tree (Zipkin names a span "<service>: <name in lower case>").
    await page.getByText('boxauth: policy', { exact: true }).click();
    await page.getByText('boxauth.policy.verdict').waitFor();
    await screenshot(page, 'traces-zipkin');
  } finally {
    await browser.close();
  }
  console.log(`test-artifacts/traces-zipkin.png: trace ${traceId}`);
}

try {
  await main();
} finally {
  for (const child of children.reverse()) await stopChild(child);
  await mochaGlobalTeardown();
  fs.rmSync(dir, { recursive: true, force: true });
}
