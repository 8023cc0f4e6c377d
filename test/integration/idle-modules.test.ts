// A box loads what it uses (issue 82): the SAML, CEL, RE2 and LDAP stacks, and gRPC where it is not
// served, are loaded by the first request that needs them, never by the start; the OpenTelemetry SDK
// only with traces on (issue 84). Each is megabytes of
// every box pod's memory (docs/performance.md#an-idle-box). The box's processes run with
// dist/test/support/module-trace.js, which writes every file they loaded when they exit.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { loadedOf } from '../support/module-trace.js';

/** What a box that serves none of these features must not load, by package. */
const LAZY = [
  'xml-crypto',
  'xml-encryption',
  '@xmldom/xmldom',
  'xpath',
  'libxml2-wasm',
  '@bufbuild/cel',
  're2js',
  'ldapts',
  // Traces are off unless OTEL_TRACES_EXPORTER says otlp (api/tracing.ts); the API alone is prom-client's.
  '@opentelemetry/sdk-trace',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/core',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-proto',
];
/** Never in a box at all: the test tools. */
const NEVER = ['playwright', 'playwright-core', 'mocha', 'chai'];

describe('an idle box', function () {
  this.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-module-trace-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Starts a box that traces its modules, runs `use`, stops it; the trace. */
  async function traced(name: string, env: Record<string, string>, use: (box: Box, root: string) => Promise<void>): Promise<string> {
    const trace = path.join(dir, name);
    const box = await Box.start({
      env: { ...env, MODULE_TRACE_FILE: trace },
      nodeArgs: ['--import', projectPath('dist', 'test', 'support', 'module-trace.js')],
    });
    try {
      await use(box, await box.rootToken());
    } finally {
      await box.stop();
    }
    return trace;
  }

  it('serving tokens, loads neither SAML, CEL, RE2, LDAP nor, with BOXAUTH_GRPC_PORT=0, gRPC', async function () {
    const trace = await traced('tokens', { BOXAUTH_GRPC_PORT: '0' }, async (box, root) => {
      expect((await box.json('GET', '/Client/root', undefined, root)).status).to.equal(200);
    });
    for (const pkg of [...LAZY, ...NEVER, '@grpc/grpc-js', 'protobufjs']) expect(loadedOf(trace, pkg), pkg).to.deep.equal([]);
    expect(loadedOf(trace, 'jose'), 'the trace sees what a box loads').to.have.length.above(0);
  });

  it('loads CEL at the first CEL policy written, which works, and gRPC where it is served', async function () {
    const trace = await traced('cel', {}, async (box, root) => {
      const put = await box.json(
        'PUT',
        '/AccessPolicy/cel-reads',
        { engine: 'cel', link: [{ id: 'root', resourceType: 'Client' }], cel: 'request["request-method"] == "get"' },
        root,
      );
      expect(put.status, put.text).to.be.oneOf([200, 201]);
    });
    expect(loadedOf(trace, '@bufbuild/cel')).to.have.length.above(0);
    expect(loadedOf(trace, '@grpc/grpc-js')).to.have.length.above(0);
    for (const pkg of ['xml-crypto', 'ldapts', ...NEVER]) expect(loadedOf(trace, pkg), pkg).to.deep.equal([]);
  });
});
