// Keycloak as its production guide runs it: `kc.sh start --optimized` on a
// distribution built for PostgreSQL (scripts/peers-build.sh), the hostname set,
// HTTP enabled (the guide's option for a proxy that ends TLS), clustering
// caches as in production but bound to loopback; a realm of its own for the
// bench's client, made through the admin REST API.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../support/ports.js';
import { startProcess, waitReady } from './process.js';
import { clientCredentials, expectToken, pgParts, type Target } from './target.js';

const REALM = 'bench';
const CLIENT_ID = 'bench';

/**
 * A free port for JGroups: its failure detection listens 50,000 above it, so
 * the ephemeral ports freePort() gives are too high.
 */
async function clusterPort(): Promise<number> {
  const listens = (port: number): Promise<boolean> =>
    new Promise((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (let port = 7800; port < 15_000; port += 2) {
    if ((await listens(port)) && (await listens(port + 50_000))) return port;
  }
  throw new Error('no free port between 7800 and 15000 for Keycloak’s cluster transport');
}

async function adminJson(baseUrl: string, token: string, method: string, url: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${baseUrl}${url}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status >= 300) throw new Error(`Keycloak ${method} ${url}: ${res.status} ${await res.text()}`);
  return res;
}

export async function startKeycloak(home: string, javaHome: string, databaseUrl: string, logDir: string): Promise<Target> {
  const logFile = path.join(logDir, 'keycloak.log');
  const db = pgParts(databaseUrl);
  const [port, managementPort, jgroupsPort] = [await freePort(), await freePort(), await clusterPort()];
  const admin = { username: 'bench-admin', password: randomBytes(24).toString('base64url') };
  const server = startProcess(
    path.join(home, 'bin', 'kc.sh'),
    [
      'start',
      '--optimized',
      '--http-enabled=true',
      '--http-host=127.0.0.1',
      `--http-port=${port}`,
      `--http-management-port=${managementPort}`,
      `--hostname=http://127.0.0.1:${port}`,
      '--cache-embedded-network-bind-address=127.0.0.1',
      `--cache-embedded-network-bind-port=${jgroupsPort}`,
    ],
    {
      JAVA_HOME: javaHome,
      KC_DB_URL: `jdbc:postgresql://${db.host}:${db.port}/${db.database}`,
      KC_DB_USERNAME: db.user,
      KC_DB_PASSWORD: db.password,
      // the temporary admin of the master realm, created on the first start
      KC_BOOTSTRAP_ADMIN_USERNAME: admin.username,
      KC_BOOTSTRAP_ADMIN_PASSWORD: admin.password,
    },
    logFile,
  );
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    // The first start creates the schema: a minute or two on a busy 2-core machine.
    await waitReady(server, `http://127.0.0.1:${managementPort}/health/ready`, 300_000, 'Keycloak');
    const tokenRes = await fetch(`${baseUrl}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...admin }),
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token?: string };
    if (!token) throw new Error(`Keycloak admin token: ${tokenRes.status}`);
    await adminJson(baseUrl, token, 'POST', '/admin/realms', { realm: REALM, enabled: true });
    const secret = randomBytes(32).toString('base64url');
    await adminJson(baseUrl, token, 'POST', `/admin/realms/${REALM}/clients`, {
      clientId: CLIENT_ID,
      secret,
      clientAuthenticatorType: 'client-secret',
      publicClient: false,
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
      directAccessGrantsEnabled: false,
    });
    return {
      key: 'keycloak',
      title: 'Keycloak 26.7.3, start (RS256 JWT)',
      baseUrl,
      pid: server.child.pid!,
      request: clientCredentials(`/realms/${REALM}/protocol/openid-connect/token`, { id: CLIENT_ID, secret }),
      perToken:
        'client secret compared with the one it stores as given (not hashed), from its cache; ' +
        'RS256 (RSA-2048) JWT; a transient session in memory: nothing written to PostgreSQL, one read (offline_client_session)',
      check: (body) => expectToken(body, true),
      stop: () => server.stop(),
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
