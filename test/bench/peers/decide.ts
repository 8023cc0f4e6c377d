// bench-peers' decision part: boxauth and its peers deciding `make bench`'s
// question (test/bench/decisions.ts: may the bench's callers GET /reports/7 of
// an app with 20 policies), one at a time under the same load as `make bench`
// (32 connections or concurrent checks, each warmed until its rate is steady, 10 s measured):
//
// - boxauth, as `make bench` runs it, through its HTTP door (forward-auth) and
//   its gRPC door (Envoy's ext_authz), with an ES256 JWT and an opaque token;
// - OPA over gRPC (opa.ts) and oauth2-proxy over HTTP (oauth2-proxy.ts), with
//   the same JWT, trusting the same box: neither can decide on an opaque token
//   without a round trip to the box per request, so they have JWT rows only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../../../api/errors.js';
import { Box } from '../../support/box.js';
import { checkRequest, forwardAuthRequest, appTokens, seedApp, APP_POLICIES } from '../decisions.js';
import { measureAtRate, type RateTarget } from '../fixed-rate.js';
import { warmedFor } from './warmed.js';
import { LOAD, measure, measureGrpc, steadyWarmup, type Measured } from '../measure.js';
import { AUDIENCE, tokenClients } from '../scenarios.js';
import type { BoxTrust, Decider } from './deciders.js';
import { startOauth2Proxy } from './oauth2-proxy.js';
import { startOpa } from './opa.js';
import { stopOnInterrupt } from './process.js';
import type { Skipped } from './report.js';

export interface DecisionRow extends Measured {
  key: string;
  title: string;
  door: 'http' | 'grpc';
  checks: string;
  /** The same requests at a fixed rate (RATE a second), where latency is compared: a closed loop's is concurrency over throughput. */
  atRate: { rate: number; rps: number; p50Ms: number; p99Ms: number; failures: number };
}

/**
 * Decisions a second of the fixed-rate measurement: one every decision point here sustains on the
 * 2-core machine (OPA's Envoy plugin with its quick start's console decision logs decided 770 to
 * 1,250/s in a closed loop), so that their p99s compare at equal load.
 */
export const RATE = Number(process.env.BENCH_PEERS_DECISION_RATE ?? 500);

export const DECISION_PEERS = ['opa', 'oauth2-proxy'] as const;

const BOXAUTH_CHECKS =
  "the token: a JWT's ES256 signature verified once per token and process, an opaque token's digest looked up; for both, its session still open (revocation holds within 1 s), its audience the app's; then the app's 20 policies (18 apply and run); the decision recorded (audit line, metrics)";

type Log = (msg: string) => void;

async function measureDecider(d: Decider, postgresPid: number | undefined, log: Log): Promise<DecisionRow> {
  const m =
    d.door === 'http'
      ? await measure(d.baseUrl, d.pid, [d.request], postgresPid, steadyWarmup)
      : await measureGrpc(d.addr, d.pid, [d.request], postgresPid, undefined, steadyWarmup);
  const target: RateTarget =
    d.door === 'http' ? { door: 'http', url: d.baseUrl, requests: [d.request] } : { door: 'grpc', addr: d.addr, requests: [d.request] };
  const fixed = await measureAtRate(target, d.pid, RATE, postgresPid);
  log(
    `${d.title}: warmed ${warmedFor(m)}; ${Math.round(m.rps)} decisions/s, p99 ${m.p99Ms.toFixed(2)} ms, ${m.failures} failed; ` +
      `at ${RATE.toLocaleString('en')}/s: p50 ${fixed.p50Ms.toFixed(2)} ms, p99 ${fixed.p99Ms.toFixed(2)} ms, ${fixed.failures} failed`,
  );
  const atRate = { rate: RATE, rps: fixed.rps, p50Ms: fixed.p50Ms, p99Ms: fixed.p99Ms, failures: fixed.failures };
  return { key: d.key, title: d.title, door: d.door, checks: d.checks, ...m, atRate };
}

function boxDeciders(box: Box, tokens: { jwt: string; opaque: string }): Decider[] {
  const base = { pid: box.process!.pid!, checks: BOXAUTH_CHECKS, stop: async () => undefined };
  const kinds = [
    ['jwt', 'JWT ES256', tokens.jwt],
    ['opaque', 'opaque token', tokens.opaque],
  ] as const;
  return kinds.flatMap(([kind, name, token]): Decider[] => [
    {
      ...base,
      key: `boxauth_http_${kind}`,
      title: `boxauth, forward-auth, ${name}`,
      door: 'http',
      baseUrl: box.url,
      request: forwardAuthRequest(token),
    },
    {
      ...base,
      key: `boxauth_grpc_${kind}`,
      title: `boxauth, ext_authz gRPC, ${name}`,
      door: 'grpc',
      addr: `127.0.0.1:${box.env.BOXAUTH_GRPC_PORT}`,
      request: checkRequest(token),
    },
  ]);
}

/** `built`: what scripts/peers-build.sh printed for each peer that was built. */
export async function benchDecisionPeers(
  databaseUrl: string,
  postgresPid: number | undefined,
  built: Map<string, Record<string, string>>,
  logDir: string,
  log: Log,
): Promise<{ rows: DecisionRow[]; skipped: Skipped[] }> {
  const rows: DecisionRow[] = [];
  const skipped: Skipped[] = [];
  const box = await Box.start({
    databaseUrl,
    dataDir: fs.mkdtempSync(`${os.tmpdir()}/boxauth-bench-peers-`),
    env: { BOXAUTH_WORKERS: String(LOAD.workers) },
    // its log as production's collector takes it (make bench does the same), beside the peers' logs
    logFile: path.join(logDir, 'boxauth-decisions.log'),
  });
  const forgetBox = stopOnInterrupt(() => box.stop());
  try {
    const clients = await tokenClients(box);
    await seedApp(box);
    const tokens = await appTokens(box, clients);
    log(`boxauth: app with ${APP_POLICIES} policies, ${LOAD.workers} workers`);
    for (const d of boxDeciders(box, tokens)) rows.push(await measureDecider(d, postgresPid, log));

    // The peers, while the box idles: they trust its keys, fetched when they start.
    const discovery = (await (await fetch(`${box.url}/.well-known/openid-configuration`)).json()) as { issuer: string; jwks_uri: string };
    const trust: BoxTrust = { issuer: discovery.issuer, jwksUri: discovery.jwks_uri, audience: AUDIENCE };
    const opa = (decisionLogs: boolean) => (b: Record<string, string>) =>
      startOpa(b.OPA!, b.OPA_VERSION!, b.OPA_KIND ?? 'stand-in', trust, tokens.jwt, logDir, decisionLogs);
    const peers = [
      { key: 'opa', title: 'OPA', start: opa(true) },
      // The plugin's default, no decision logs: what a decision costs OPA apart from its record (the stand-in logs none).
      {
        key: 'opa',
        title: 'OPA without decision logs',
        start: opa(false),
        when: (b: Record<string, string>) => b.OPA_KIND === 'envoy-plugin',
      },
      {
        key: 'oauth2-proxy',
        title: 'oauth2-proxy',
        start: (b: Record<string, string>) => startOauth2Proxy(b.OAUTH2_PROXY!, trust, tokens.jwt, logDir),
      },
    ];
    for (const peer of peers) {
      const b = built.get(peer.key);
      if (!b || (peer.when && !peer.when(b))) continue;
      let decider: Decider | undefined;
      try {
        log(`starting ${peer.title}`);
        decider = await peer.start(b);
        rows.push(await measureDecider(decider, postgresPid, log));
      } catch (err) {
        log(`${peer.title} not measured: ${errorMessage(err)}`);
        skipped.push({ key: peer.key, title: peer.title, reason: errorMessage(err) });
      } finally {
        await decider?.stop();
      }
    }
  } finally {
    forgetBox();
    await box.stop();
  }
  return { rows, skipped };
}
