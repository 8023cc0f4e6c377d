// The JWT-SVID journey with a real SPIRE (v1.13.3, built by scripts/test-tools-build.sh from the Go
// module proxy): a spire-server (its datastore a database of the tests' PostgreSQL, its federation
// bundle endpoint served over HTTPS with a certificate of a test CA: the https_web profile) and a
// spire-agent attested by a join token; two workload entries for this test's uid (the unix workload
// attestor); a workload fetches its JWT-SVID from the agent's Workload API (`spire-agent api fetch jwt`)
// with the box as audience and trades it at /auth/token (client_credentials, client_assertion_type
// jwt-spiffe) for an access token; the box reads the trust domain's keys from SPIRE's bundle endpoint.
// The attacks here: the SVID of another workload for this client, and the same SVID after its exp.
// The others (another trust domain, a bundle endpoint at loopback, replayed jti...) are in
// test/integration/spiffe-jwt-svid.test.ts. Every process it starts is stopped in `after`.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Box, type JsonResponse } from '../support/box.js';
import { stopChild } from '../support/child.js';
import { TOOLS_BIN } from '../support/kube.js';
import { onFreePorts } from '../support/ports.js';
import { createDatabase } from '../support/postgres.js';
import { testCa } from '../support/tls.js';

const run = promisify(execFile);
const JWT_SPIFFE = 'urn:ietf:params:oauth:client-assertion-type:jwt-spiffe';
const TRUST_DOMAIN = 'spire.test';
const SHOP = `spiffe://${TRUST_DOMAIN}/ns/shop/sa/api`;
const BILLING = `spiffe://${TRUST_DOMAIN}/ns/billing/sa/api`;

/** Calls `attempt` every 500 ms until it resolves, for `ms` at most; its last error otherwise. */
async function eventually<T>(ms: number, attempt: () => Promise<T>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

describe('SPIRE: a workload trades its JWT-SVID for an access token', function () {
  this.timeout(240_000);
  const server = path.join(TOOLS_BIN, 'spire-server');
  const agent = path.join(TOOLS_BIN, 'spire-agent');
  // Short: a unix socket's path has at most 107 bytes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spire-'));
  const serverSocket = path.join(dir, 'server.sock');
  const agentSocket = path.join(dir, 'agent.sock');
  const children: ChildProcess[] = [];
  let box: Box;

  function start(binary: string, args: string[], name: string): ChildProcess {
    // SPIRE logs to stdout.
    const child = spawn(binary, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = fs.createWriteStream(path.join(dir, `${name}.log`));
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    children.push(child);
    return child;
  }

  const spireServer = (...args: string[]): Promise<{ stdout: string }> => run(server, [...args, '-socketPath', serverSocket]);

  /** The JWT-SVID of `spiffeId` for `audience`, from the agent's Workload API, as a workload gets it. */
  async function fetchSvid(spiffeId: string, audience: string): Promise<string> {
    const { stdout } = await run(agent, ['api', 'fetch', 'jwt', '-audience', audience, '-spiffeID', spiffeId, '-socketPath', agentSocket]);
    const jwt = /eyJ[\w-]+\.[\w-]+\.[\w-]+/.exec(stdout)?.[0];
    if (!jwt) throw new Error(`no JWT-SVID in: ${stdout}`);
    return jwt;
  }

  function tokenRequest(jwt: string, extra: Record<string, string> = {}): Promise<JsonResponse> {
    return box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_SPIFFE,
      client_assertion: jwt,
      ...extra,
    });
  }

  before(async function () {
    for (const binary of [server, agent])
      if (!fs.existsSync(binary)) throw new Error(`${binary} is missing: run scripts/test-tools-build.sh (make test does)`);
    const ca = testCa(fs.mkdtempSync(path.join(dir, 'ca-')));
    const { certFile, keyFile } = ca.issue('bundle-endpoint');
    // lib/pq, SPIRE's driver, asks for TLS unless told not to; the tests' PostgreSQL has none.
    const database = `${await createDatabase('spire')}?sslmode=disable`;
    // The server on free ports: again on new ones when another process took one first.
    const [serverPort, bundlePort] = await onFreePorts(2, async ([serverPort, bundlePort]) => {
      fs.writeFileSync(
        path.join(dir, 'server.conf'),
        `server {
  bind_address = "127.0.0.1"
  bind_port = "${serverPort}"
  socket_path = "${serverSocket}"
  trust_domain = "${TRUST_DOMAIN}"
  data_dir = "${dir}/server"
  log_level = "INFO"
  federation {
    bundle_endpoint {
      address = "127.0.0.1"
      port = ${bundlePort}
      refresh_hint = "1m"
      profile "https_web" {
        serving_cert_file {
          cert_file_path = "${certFile}"
          key_file_path = "${keyFile}"
          file_sync_interval = "1h"
        }
      }
    }
  }
}
plugins {
  DataStore "sql" {
    plugin_data {
      database_type = "postgres"
      connection_string = "${database}"
    }
  }
  KeyManager "memory" { plugin_data {} }
  NodeAttestor "join_token" { plugin_data {} }
}
`,
      );
      const serverLog = path.join(dir, 'server.log');
      const child = start(server, ['run', '-config', path.join(dir, 'server.conf')], 'server');
      const ready = await eventually(150_000, async () =>
        child.exitCode !== null ? 'exited' : (await spireServer('healthcheck')) && 'ready',
      ).catch((err: Error) => {
        throw new Error(`${err.message}\nspire-server's log:\n${fs.readFileSync(serverLog, 'utf8')}`);
      });
      if (ready === 'exited') throw new Error(`spire-server exited with ${child.exitCode}:\n${fs.readFileSync(serverLog, 'utf8')}`);
      return [serverPort, bundlePort] as const;
    });
    const token = /Token: (\S+)/.exec(
      (await spireServer('token', 'generate', '-spiffeID', `spiffe://${TRUST_DOMAIN}/node/test`)).stdout,
    )?.[1];
    expect(token, 'a join token').to.be.a('string');
    fs.writeFileSync(path.join(dir, 'bootstrap.crt'), (await spireServer('bundle', 'show')).stdout);
    for (const id of [SHOP, BILLING]) {
      await spireServer(
        'entry',
        'create',
        '-parentID',
        `spiffe://${TRUST_DOMAIN}/node/test`,
        '-spiffeID',
        id,
        '-selector',
        `unix:uid:${process.getuid!()}`,
      );
    }
    fs.writeFileSync(
      path.join(dir, 'agent.conf'),
      `agent {
  data_dir = "${dir}/agent"
  log_level = "WARN"
  server_address = "127.0.0.1"
  server_port = "${serverPort}"
  socket_path = "${agentSocket}"
  trust_bundle_path = "${dir}/bootstrap.crt"
  trust_domain = "${TRUST_DOMAIN}"
}
plugins {
  NodeAttestor "join_token" { plugin_data {} }
  KeyManager "memory" { plugin_data {} }
  WorkloadAttestor "unix" { plugin_data {} }
}
`,
    );
    start(agent, ['run', '-config', path.join(dir, 'agent.conf'), '-joinToken', token!], 'agent');

    box = await Box.start({
      movableClock: true,
      env: {
        BOXAUTH_SPIFFE_TRUST_DOMAINS: JSON.stringify([
          {
            trustDomain: TRUST_DOMAIN,
            bundleEndpointUrl: `https://localhost:${bundlePort}/`,
            caBundle: ca.pem,
            // SPIRE runs beside the box here: its loopback address is allowed, by name.
            allowedAddresses: ['127.0.0.1/32', '::1/128'],
          },
        ]),
      },
    });
    const root = await box.rootToken();
    for (const [id, spiffeId] of [
      ['shop', SHOP],
      ['billing', BILLING],
    ] as const) {
      const res = await box.json(
        'PUT',
        `/Client/${id}`,
        { grant_types: ['client_credentials'], auth: { client_credentials: { token_format: 'jwt' }, spiffe: { ids: [spiffeId] } } },
        root,
      );
      expect(res.status, res.text).to.equal(201);
      const p = await box.json('PUT', `/AccessPolicy/${id}-allow`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, root);
      expect(p.status, p.text).to.equal(201);
    }
  });

  after(async function () {
    await box?.stop();
    // The agent first: it holds a connection to the server.
    for (const child of children.reverse()) await stopChild(child);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let shopSvid: string;

  it("the workload's JWT-SVID, fetched from the agent, gets an access token for its client", async function () {
    // The agent syncs its entries every few seconds after it attests: the Workload API answers once it has them.
    shopSvid = await eventually(60_000, () => fetchSvid(SHOP, box.url)).catch((err: Error) => {
      throw new Error(`${err.message}\nspire-agent's log:\n${fs.readFileSync(path.join(dir, 'agent.log'), 'utf8')}`);
    });
    const claims = JSON.parse(Buffer.from(shopSvid.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(claims).to.include({ sub: SHOP });
    expect(claims.aud).to.deep.equal([box.url]);
    const res = await tokenRequest(shopSvid);
    expect(res.status, res.text).to.equal(200);
    const introspected = await box.form('/auth/introspect', {
      token: res.body.access_token,
      client_assertion_type: JWT_SPIFFE,
      client_assertion: shopSvid,
    });
    expect(introspected.body).to.include({ active: true, client_id: 'shop' });
  });

  it("attack: another workload's JWT-SVID for this client", async function () {
    const billing = await fetchSvid(BILLING, box.url);
    const res = await tokenRequest(billing, { client_id: 'shop' });
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error_description).to.match(/SPIFFE ID not bound/);
    // It is its own client's all the same.
    expect((await tokenRequest(billing)).status).to.equal(200);
  });

  it('attack: the same JWT-SVID once its exp has passed', async function () {
    const { exp } = JSON.parse(Buffer.from(shopSvid.split('.')[1]!, 'base64url').toString('utf8')) as { exp: number };
    // The box's clock moves past exp and the minute of skew it allows; SPIRE's stays.
    box.advanceClock(exp - Math.floor(Date.now() / 1000) + 120);
    const res = await tokenRequest(shopSvid);
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error_description).to.match(/expired: the JWT-SVID's exp was/);
  });
});
