// OPA deciding `make bench`'s question over gRPC (test/bench/peers/opa-extauthz,
// built by scripts/peers-build.sh opa): the Rego of opa-policy.rego, with the
// box's published JWKS as data (fetched once, as a bundle would carry it).
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';
import { sleep } from '../../support/box.js';
import { freePort } from '../../support/ports.js';
import { checkRequest } from '../decisions.js';
import { checkOnce } from '../grpc-load.js';
import type { BoxTrust, GrpcDecider } from './deciders.js';
import { logTail, startProcess } from './process.js';

export async function startOpa(bin: string, version: string, trust: BoxTrust, jwt: string, logDir: string): Promise<GrpcDecider> {
  const logFile = path.join(logDir, 'opa.log');
  const dataFile = path.join(logDir, 'opa-data.json');
  const jwks = await (await fetch(trust.jwksUri)).text();
  // io.jwt.decode_verify takes the JWKS as a string
  fs.writeFileSync(dataFile, JSON.stringify({ jwks, issuer: trust.issuer, audience: trust.audience }));
  const addr = `127.0.0.1:${await freePort()}`;
  const policy = projectPath('test', 'bench', 'peers', 'opa-policy.rego');
  const server = startProcess(bin, ['-addr', addr, '-policy', policy, '-data', dataFile], {}, logFile);
  const request = checkRequest(jwt);
  for (let i = 0; i < 100; i++) {
    const answer = await checkOnce(addr, request).catch(() => undefined);
    if (answer && !('grpcError' in answer)) {
      if ((answer.status as { code?: number } | undefined)?.code) {
        await server.stop();
        throw new Error(`OPA refused the bench's request: ${JSON.stringify(answer)}`);
      }
      return {
        key: 'opa',
        title: `OPA ${version} (library, stand-in for its Envoy plugin), JWT ES256`,
        door: 'grpc',
        addr,
        request,
        pid: server.child.pid!,
        checks:
          "the JWT's ES256 signature, issuer, audience and expiry (io.jwt.decode_verify on every request; the parsed JWKS cached, as OPA's server does by default), then 20 Rego rules equivalent to the app's policies; no session: a revoked token stays valid until it expires",
        stop: () => server.stop(),
      };
    }
    if (server.child.exitCode !== null) break;
    await sleep(200);
  }
  await server.stop();
  throw new Error(`OPA did not answer; the end of ${logFile}:\n${logTail(logFile)}`);
}
