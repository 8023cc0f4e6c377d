// Keycloak as its production guide runs it (test/support/keycloak.ts: `kc.sh start --optimized` on a
// distribution built for PostgreSQL by scripts/peers-build.sh, the hostname set, HTTP enabled (the
// guide's option for a proxy that ends TLS), clustering caches as in production but bound to
// loopback); a realm of its own for the bench's client, made through the admin REST API.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startKeycloakServer } from '../../support/keycloak.js';
import { clientCredentials, expectToken, type Target } from './target.js';

const REALM = 'bench';
const CLIENT_ID = 'bench';

export async function startKeycloak(home: string, javaHome: string, databaseUrl: string, logDir: string): Promise<Target> {
  const server = await startKeycloakServer(home, javaHome, databaseUrl, path.join(logDir, 'keycloak.log'));
  try {
    await server.admin('POST', '/admin/realms', { realm: REALM, enabled: true });
    const secret = randomBytes(32).toString('base64url');
    await server.admin('POST', `/admin/realms/${REALM}/clients`, {
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
      baseUrl: server.baseUrl,
      pid: server.pid,
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
