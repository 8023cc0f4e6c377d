// OPA deciding `make bench`'s question over gRPC, built by scripts/peers-build.sh opa: as its
// users run it, OPA's Envoy plugin (opa-envoy-plugin, from the Go module proxy: OPA_KIND
// envoy-plugin) — `opa run --server --config-file` with the envoy_ext_authz_grpc plugin and
// console decision logs, as the plugin's quick start configures it (and once more without them,
// the plugin's default: what a decision costs OPA apart from its record) — the Rego of opa-policy.rego,
// and the box's published JWKS as data (fetched once, as a bundle would carry it). Where the proxy
// refuses the plugin, the library stand-in of test/bench/peers/opa-extauthz (OPA_KIND stand-in),
// which the row's title says.
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';
import { sleep } from '../../support/box.js';
import { onFreePorts } from '../../support/ports.js';
import { checkRequest } from '../decisions.js';
import { checkOnce } from '../grpc-load.js';
import type { BoxTrust, GrpcDecider } from './deciders.js';
import { logTail, startProcess } from './process.js';

/** `opa run`'s arguments as the plugin's users run it: its quick start's configuration, on our ports. */
function envoyPluginArgs(addr: string, logDir: string, policy: string, dataFile: string, decisionLogs: boolean): string[] {
  const configFile = path.join(logDir, 'opa-envoy-config.yaml');
  const plugins = { envoy_ext_authz_grpc: { addr, path: 'envoy/authz/allow' } };
  // JSON is YAML: the quick start's config.yaml.
  fs.writeFileSync(configFile, JSON.stringify(decisionLogs ? { plugins, decision_logs: { console: true } } : { plugins }));
  return ['run', '--server', `--config-file=${configFile}`, '--addr=127.0.0.1:0', '--ignore=.*', policy, dataFile];
}

/** OPA on a free port; again on a new one when another process took it before OPA listened. */
export async function startOpa(
  bin: string,
  version: string,
  kind: string,
  trust: BoxTrust,
  jwt: string,
  logDir: string,
  /** The plugin's console decision logs (its quick start's), or none (its default). */
  decisionLogs = true,
): Promise<GrpcDecider> {
  const dataFile = path.join(logDir, 'opa-data.json');
  const jwks = await (await fetch(trust.jwksUri)).text();
  // io.jwt.decode_verify takes the JWKS as a string
  fs.writeFileSync(dataFile, JSON.stringify({ jwks, issuer: trust.issuer, audience: trust.audience }));
  return onFreePorts(1, ([port]) => startOn(`127.0.0.1:${port}`, bin, version, kind, jwt, logDir, dataFile, decisionLogs));
}

async function startOn(
  addr: string,
  bin: string,
  version: string,
  kind: string,
  jwt: string,
  logDir: string,
  dataFile: string,
  decisionLogs: boolean,
): Promise<GrpcDecider> {
  const logFile = path.join(logDir, 'opa.log');
  const policy = projectPath('test', 'bench', 'peers', 'opa-policy.rego');
  const plugin = kind === 'envoy-plugin';
  const args = plugin
    ? envoyPluginArgs(addr, logDir, policy, dataFile, decisionLogs)
    : ['-addr', addr, '-policy', policy, '-data', dataFile];
  const server = startProcess(bin, args, {}, logFile);
  const request = checkRequest(jwt);
  for (let i = 0; i < 100; i++) {
    const answer = await checkOnce(addr, request).catch(() => undefined);
    if (answer && !('grpcError' in answer)) {
      if ((answer.status as { code?: number } | undefined)?.code) {
        await server.stop();
        throw new Error(`OPA refused the bench's request: ${JSON.stringify(answer)}`);
      }
      return {
        key: plugin && !decisionLogs ? 'opa_no_decision_logs' : 'opa',
        title: plugin
          ? `OPA-Envoy ${version} (opa run, envoy_ext_authz_grpc, ${decisionLogs ? 'console decision logs' : 'no decision logs'}), JWT ES256`
          : `OPA ${version} (library, stand-in for its Envoy plugin: the Go module proxy refused it), JWT ES256`,
        door: 'grpc',
        addr,
        request,
        pid: server.child.pid!,
        checks:
          "the JWT's ES256 signature, issuer, audience and expiry (io.jwt.decode_verify on every request; the parsed JWKS cached, as OPA's server does by default), then 20 Rego rules equivalent to the app's policies; no session: a revoked token stays valid until it expires" +
          (plugin && decisionLogs ? "; each decision logged to the console (its quick start's decision_logs)" : '; no decision logged'),
        stop: () => server.stop(),
      };
    }
    if (server.child.exitCode !== null) break;
    await sleep(200);
  }
  await server.stop();
  throw new Error(`OPA did not answer; the end of ${logFile}:\n${logTail(logFile)}`);
}
