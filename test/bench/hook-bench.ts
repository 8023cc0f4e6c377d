// make bench's rows of a token with a Hook (docs/guides/hooks.md): the cc_jwt row's request, by a
// client whose token a Hook is asked about, a Go hook in another process (test/hooks/go) answering
// after 5 ms or after 50 ms. Each Hook exists only while its row runs (written before, deleted
// after): every other row's tokens are asked of no hook, as on a box without any.
import { randomBytes, randomUUID } from 'node:crypto';
import https from 'node:https';
import { signedHeaders } from '../../api/webhooks/signing.js';
import type { Box, JsonResponse } from '../support/box.js';
import { HookServer } from '../support/hook-servers.js';
import { testCa, type TestCa } from '../support/tls.js';

/** What a hook row needs: the hook's server, and the box's settings that let it reach it. */
export interface BenchHooks {
  server: HookServer;
  ca: TestCa;
  secret: string;
  /** BOXAUTH_NOTICE_ALLOWED_ADDRESSES: the hook is at 127.0.0.1, as an administrator allows a cluster's own range. */
  allowed: string;
}

export async function startBenchHooks(): Promise<BenchHooks> {
  const ca = testCa();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  return { server: await HookServer.start('go', secret, ca), ca, secret, allowed: '127.0.0.1/32' };
}

/** The Hook of a row: asked at tokenIssuing for `client` only, its answer after `ms`, calls at once enough for the bench's connections. */
export function hookRow(box: Box, hooks: BenchHooks, client: string, ms: number): { before(): Promise<void>; after(): Promise<void> } {
  const id = `bench-hook-${ms}ms`;
  return {
    async before() {
      const token = await box.rootToken();
      const res = await box.json(
        'PUT',
        `/Hook/${id}`,
        {
          moments: ['tokenIssuing'],
          url: `${hooks.server.url}/slow/${ms}`,
          caBundle: Buffer.from(hooks.ca.pem).toString('base64'),
          secret: hooks.secret,
          matchConditions: [{ name: 'this-client', expression: `request.client.id == '${client}'` }],
          maxInFlight: 256,
          timeoutSeconds: 5,
        },
        token,
      );
      if (res.status >= 300) throw new Error(`PUT /Hook/${id}: ${res.status} ${res.text}`);
    },
    async after() {
      await box.json('DELETE', `/Hook/${id}`, undefined, await box.rootToken());
    },
  };
}

/** A token the hook was asked about: a JWT carrying the claim it added. */
export function hookedJwt(res: JsonResponse): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text.slice(0, 300)}`);
  const payload = JSON.parse(Buffer.from(String(res.body.access_token).split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;
  if (payload.slow !== true) throw new Error(`the hook's claim is not in the token: ${JSON.stringify(payload)}`);
}

/** A bare call's share of the box's calls at once: the bench's connections over the API's workers. */
const BARE_IN_FLIGHT = 16;

/**
 * The least a call to the row's hook costs a client's process: a keep-alive HTTPS POST of a body
 * like the box's, signed (Standard Webhooks: the least a call may be), from node:https with no
 * guard, no conditions, no metrics; CPU µs a call of this process (user + system), `calls` of them
 * BARE_IN_FLIGHT at once. What the box's own CPU a call (the row's, less the cc_jwt row's) is compared with.
 */
export async function bareCallCpu(hooks: BenchHooks, ms: number, calls = 4000): Promise<number> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: BARE_IN_FLIGHT, ca: hooks.ca.pem });
  const url = new URL(`${hooks.server.url}/slow/${ms}`);
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const id = `hook_${randomUUID()}`;
      const body = JSON.stringify({
        id,
        box: 'https://bench.example',
        hook: `bench-hook-${ms}ms`,
        moment: 'tokenIssuing',
        request: { client: { id: 'bench-hook' }, grant: { type: 'client_credentials', scope: [], aud: ['https://api.example'] } },
      });
      const headers = { 'content-type': 'application/json', ...signedHeaders(hooks.secret, id, body, new Date()) };
      const req = https.request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`the hook answered ${res.statusCode}`));
          res.resume().on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const run = async (n: number): Promise<void> => {
    let left = n;
    await Promise.all(
      Array.from({ length: BARE_IN_FLIGHT }, async () => {
        while (left-- > 0) await one();
      }),
    );
  };
  await run(BARE_IN_FLIGHT * 20); // connections made, code warm
  const before = process.cpuUsage();
  await run(calls);
  const used = process.cpuUsage(before);
  agent.destroy();
  return (used.user + used.system) / calls;
}

/** What a hook row came to beside the cc_jwt row of the same run and the bounds its load sets. */
export interface HookRowSummary {
  key: string;
  ms: number;
  rps: number;
  /** × the cc_jwt row of the same run. */
  ratio: number;
  /** The API's CPU a call, µs: the row's CPU a request less the cc_jwt row's. */
  callCpuUs: number;
  /** A bare keep-alive HTTPS call's CPU (bareCallCpu), µs. */
  bareCpuUs: number;
  /** The most the load allows: `connections` requests at once, each waiting the hook's `ms` at least. */
  latencyBound: number;
  /** The most the cores allow at the row's CPU a request (API + PostgreSQL), the load's and the hook's own aside. */
  cpuBound: number;
}

/** The hook rows' summary (HookRowSummary), given the run's rows and the bare call's CPU by the hook's latency. */
export function hookSummaries(
  rows: { key: string; rps: number; failed?: string; cpuUs: { api: number; postgres: number } }[],
  bare: Map<number, number>,
  load: { connections: number; cores: number },
): HookRowSummary[] {
  const plain = rows.find((r) => r.key === 'cc_jwt' && !r.failed);
  return rows.flatMap((r) => {
    const ms = Number(/^cc_jwt_hook_(\d+)ms$/.exec(r.key)?.[1]);
    if (!plain || r.failed || !ms) return [];
    return [
      {
        key: r.key,
        ms,
        rps: r.rps,
        ratio: r.rps / plain.rps,
        callCpuUs: r.cpuUs.api - plain.cpuUs.api,
        bareCpuUs: bare.get(ms) ?? 0,
        latencyBound: (load.connections * 1000) / ms,
        cpuBound: (load.cores * 1e6) / (r.cpuUs.api + r.cpuUs.postgres),
      },
    ];
  });
}

/** The lines make bench prints of its hook rows. */
export function hookLines(summaries: HookRowSummary[]): string {
  const n = (x: number): string => Math.round(x).toLocaleString('en');
  return summaries
    .map(
      (s) =>
        `${s.key}: ${n(s.rps)}/s, ${s.ratio.toFixed(2)} × cc_jwt; the API's CPU a hook call ${n(s.callCpuUs)} µs (a bare keep-alive HTTPS call ${n(s.bareCpuUs)} µs); ` +
        `bounds: ${n(s.latencyBound)}/s by the connections over the hook's ${s.ms} ms, ${n(s.cpuBound)}/s by the cores at the row's CPU a request`,
    )
    .join('\n');
}
