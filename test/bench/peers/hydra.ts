// Ory Hydra as its production mode runs it: `hydra serve all` without --dev,
// its defaults otherwise (PBKDF2 client-secret hasher, opaque tokens, request
// logging at info), its schema made by `hydra migrate sql up`.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { onFreePorts } from '../../support/ports.js';
import { runLogged, startProcess, waitReady } from './process.js';
import { clientCredentials, expectToken, type Target } from './target.js';

/** Hydra on free ports; again on new ones when another process took one before Hydra listened. */
export function startHydra(bin: string, databaseUrl: string, logDir: string): Promise<Target> {
  return onFreePorts(2, (ports) => startOn(ports, bin, databaseUrl, logDir));
}

async function startOn([publicPort, adminPort]: [number, number], bin: string, databaseUrl: string, logDir: string): Promise<Target> {
  const logFile = path.join(logDir, 'hydra.log');
  const dsn = new URL(databaseUrl);
  dsn.searchParams.set('sslmode', 'disable');
  const env = {
    DSN: dsn.toString(),
    SECRETS_SYSTEM: randomBytes(32).toString('base64url'),
    // Production mode wants an https issuer: Hydra behind a proxy that ends TLS,
    // as deployments run it (and as boxauth runs here, without TLS). Hydra
    // itself then serves plain HTTP (serve.tls is off by default).
    URLS_SELF_ISSUER: `https://127.0.0.1:${publicPort}/`,
    SERVE_PUBLIC_HOST: '127.0.0.1',
    SERVE_PUBLIC_PORT: String(publicPort),
    SERVE_ADMIN_HOST: '127.0.0.1',
    SERVE_ADMIN_PORT: String(adminPort),
  };
  await runLogged(bin, ['migrate', 'sql', 'up', '--read-from-env', '--yes'], env, logFile);
  // --sqa-opt-out: no telemetry (this machine reaches no one but itself)
  const server = startProcess(bin, ['serve', 'all', '--sqa-opt-out'], env, logFile);
  try {
    const baseUrl = `http://127.0.0.1:${publicPort}`;
    await waitReady(server, `${baseUrl}/health/ready`, 60_000, 'Hydra');
    const res = await fetch(`http://127.0.0.1:${adminPort}/admin/clients`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_name: 'bench',
        client_secret: randomBytes(32).toString('base64url'),
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'client_secret_basic',
      }),
    });
    const client = (await res.json()) as { client_id?: string; client_secret?: string };
    if (res.status !== 201 || !client.client_id || !client.client_secret) {
      throw new Error(`Hydra's POST /admin/clients: ${res.status} ${JSON.stringify(client)}`);
    }
    return {
      key: 'hydra',
      title: 'Ory Hydra v2.3.0, serve all (opaque)',
      baseUrl,
      pid: server.child.pid!,
      request: clientCredentials('/oauth2/token', { id: client.client_id, secret: client.client_secret }),
      perToken:
        'client secret checked with PBKDF2-SHA256, 25,000 iterations (its default hasher) on every request; ' +
        'opaque HMAC-SHA256 token whose signature row is inserted and committed before the answer',
      check: (body) => expectToken(body, false),
      stop: () => server.stop(),
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
