// Keycloak 26.7.3, the one `make bench-peers` measures (scripts/peers-build.sh keycloak: cached after
// the first build, which .ci/run starts in the background), as the tests' SAML peer: a service
// provider that brokers sign-ins to the box (test/e2e/saml-keycloak-sp.test.ts) and an identity
// provider upstream of it. Run as its production guide says (`kc.sh start --optimized` on the
// distribution built for PostgreSQL, here a database of the tests' embedded PostgreSQL), HTTP on
// loopback, with a temporary admin of the master realm for the admin REST API.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildPeer, startProcess, waitReady, type PeerProcess } from '../bench/peers/process.js';
import { pgParts } from '../bench/peers/target.js';
import { onFreePorts } from './ports.js';
import { createDatabase } from './postgres.js';

/**
 * A free port for JGroups: its failure detection listens 50,000 above it, so
 * the ephemeral ports of freePort() are too high.
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

/** A Keycloak server that answers: where, its admin REST API, and how to stop it. */
export interface KeycloakServer {
  /** http://127.0.0.1:<port>, its hostname (what it puts in its URLs and metadata). */
  baseUrl: string;
  pid: number;
  /** Its stdout and stderr. */
  logFile: string;
  /** Calls the admin REST API (`/admin/realms...`) as the master realm's admin; throws on a status >= 300. */
  admin(method: string, urlPath: string, body?: unknown, contentType?: string): Promise<Response>;
  /** Stops its process group (SIGTERM, then SIGKILL): resolves once it is gone. */
  stop(): Promise<void>;
}

/**
 * Starts a built distribution on `databaseUrl` (a PostgreSQL database of its own: the first start
 * creates the schema) and waits until it is ready (a minute or two on a busy 2-core machine).
 */
export function startKeycloakServer(home: string, javaHome: string, databaseUrl: string, logFile: string): Promise<KeycloakServer> {
  // On free ports: again on new ones when another process took one first ("Address already in use").
  return onFreePorts(2, async ([port, managementPort]) => startKeycloakOn(home, javaHome, databaseUrl, logFile, port, managementPort));
}

async function startKeycloakOn(
  home: string,
  javaHome: string,
  databaseUrl: string,
  logFile: string,
  port: number,
  managementPort: number,
): Promise<KeycloakServer> {
  const db = pgParts(databaseUrl);
  const jgroupsPort = await clusterPort();
  const credentials = { username: 'test-admin', password: randomBytes(24).toString('base64url') };
  const server: PeerProcess = startProcess(
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
      KC_BOOTSTRAP_ADMIN_USERNAME: credentials.username,
      KC_BOOTSTRAP_ADMIN_PASSWORD: credentials.password,
    },
    logFile,
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  // admin-cli's tokens live a minute: a new one when the last is near its end.
  let token: { value: string; until: number } | undefined;
  const adminToken = async (): Promise<string> => {
    if (token && Date.now() < token.until) return token.value;
    const res = await fetch(`${baseUrl}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...credentials }),
    });
    const body = (await res.json()) as { access_token?: string; expires_in?: number };
    if (!body.access_token) throw new Error(`Keycloak admin token: ${res.status} ${JSON.stringify(body)}`);
    token = { value: body.access_token, until: Date.now() + ((body.expires_in ?? 60) - 15) * 1000 };
    return token.value;
  };
  const admin = async (method: string, urlPath: string, body?: unknown, contentType = 'application/json'): Promise<Response> => {
    const res = await fetch(`${baseUrl}${urlPath}`, {
      method,
      headers: { Authorization: `Bearer ${await adminToken()}`, 'Content-Type': contentType },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    if (res.status >= 300) throw new Error(`Keycloak ${method} ${urlPath}: ${res.status} ${await res.text()}`);
    return res;
  };
  try {
    await waitReady(server, `http://127.0.0.1:${managementPort}/health/ready`, 300_000, 'Keycloak');
    await adminToken();
  } catch (err) {
    await server.stop();
    throw err;
  }
  return { baseUrl, pid: server.child.pid!, logFile, admin, stop: () => server.stop() };
}

/** A person in a realm of Keycloak, who signs in there with a password (Keycloak as the identity provider). */
export interface KeycloakUser {
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  password: string;
}

/** What the tests of SAML do with a Keycloak: realms, people, identity providers, SAML clients. */
export interface Keycloak extends KeycloakServer {
  /** A realm, enabled, with its defaults (the account console among its clients). */
  createRealm(realm: string): Promise<void>;
  /** A person with a verified email and a password that is not temporary; returns Keycloak's id of them. */
  createUser(realm: string, user: KeycloakUser): Promise<string>;
  /**
   * Keycloak as a service provider: an identity provider of type saml (identity brokering) made
   * from the IdP metadata at `metadataUrl` (Keycloak fetches it: `import-config`), with `config`
   * over what the import found; `mappers` map attributes of the assertion to the user Keycloak
   * makes (`{ email: 'email' }`: the attribute named email fills the user's email).
   */
  addSamlIdentityProvider(
    realm: string,
    provider: {
      alias: string;
      displayName: string;
      metadataUrl: string;
      config?: Record<string, string>;
      mappers?: Record<string, string>;
    },
  ): Promise<Record<string, string>>;
  /** Keycloak's consumer service for that identity provider (where an IdP posts its Response). */
  brokerEndpoint(realm: string, alias: string): string;
  /** Keycloak's SP metadata for that identity provider (its entity ID, ACS, signing key). */
  brokerMetadataUrl(realm: string, alias: string): string;
  /**
   * Keycloak as an identity provider: a SAML client made from the SP's metadata (Keycloak's
   * client-description-converter reads its entity ID, ACS and certificates), `attributes` over
   * what it read; `mappers` put user properties in the assertion (`{ email: 'email' }`: the
   * attribute named email carries the user's email). Returns Keycloak's id of the client.
   */
  addSamlClient(
    realm: string,
    spMetadataXml: string,
    options?: { attributes?: Record<string, string>; mappers?: Record<string, string> },
  ): Promise<string>;
  /** Keycloak's IdP metadata of a realm (entity ID `${baseUrl}/realms/${realm}`). */
  idpMetadataUrl(realm: string): string;
}

/**
 * Builds (or finds cached: scripts/peers-build.sh keycloak, which waits for a build under way) and
 * starts a Keycloak on a new database of the tests' PostgreSQL. Its log is in a temporary
 * directory (`logFile`); stop it with `stop()` in an `after` hook.
 */
export async function startKeycloak(): Promise<Keycloak> {
  const built = await buildPeer('keycloak');
  if (!built.KEYCLOAK_HOME || !built.JAVA_HOME) throw new Error('scripts/peers-build.sh keycloak printed no KEYCLOAK_HOME or JAVA_HOME');
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keycloak-')), 'keycloak.log');
  const server = await startKeycloakServer(built.KEYCLOAK_HOME, built.JAVA_HOME, await createDatabase('kc'), logFile);
  const { admin } = server;
  const realmPath = (realm: string): string => `/admin/realms/${encodeURIComponent(realm)}`;
  /** The id Keycloak gave what a POST created: the last segment of its Location. */
  const createdId = (res: Response): string => (res.headers.get('location') ?? '').split('/').pop()!;
  const brokerEndpoint = (realm: string, alias: string): string =>
    `${server.baseUrl}/realms/${encodeURIComponent(realm)}/broker/${encodeURIComponent(alias)}/endpoint`;

  return {
    ...server,
    async createRealm(realm) {
      await admin('POST', '/admin/realms', { realm, enabled: true });
    },
    async createUser(realm, user) {
      const res = await admin('POST', `${realmPath(realm)}/users`, {
        username: user.username,
        email: user.email,
        firstName: user.firstName,
        lastName: user.lastName,
        enabled: true,
        emailVerified: true,
        credentials: [{ type: 'password', value: user.password, temporary: false }],
      });
      return createdId(res);
    },
    async addSamlIdentityProvider(realm, provider) {
      const imported = (await (
        await admin('POST', `${realmPath(realm)}/identity-provider/import-config`, { providerId: 'saml', fromUrl: provider.metadataUrl })
      ).json()) as Record<string, string>;
      const config = { ...imported, ...provider.config };
      await admin('POST', `${realmPath(realm)}/identity-provider/instances`, {
        alias: provider.alias,
        displayName: provider.displayName,
        providerId: 'saml',
        enabled: true,
        trustEmail: true,
        config,
      });
      for (const [attribute, userProperty] of Object.entries(provider.mappers ?? {})) {
        await admin('POST', `${realmPath(realm)}/identity-provider/instances/${provider.alias}/mappers`, {
          name: `${attribute} to ${userProperty}`,
          identityProviderAlias: provider.alias,
          identityProviderMapper: 'saml-user-attribute-idp-mapper',
          config: { syncMode: 'FORCE', 'attribute.name': attribute, 'user.attribute': userProperty },
        });
      }
      return config;
    },
    brokerEndpoint,
    brokerMetadataUrl(realm, alias) {
      return `${brokerEndpoint(realm, alias)}/descriptor`;
    },
    async addSamlClient(realm, spMetadataXml, options = {}) {
      const described = (await (
        await admin('POST', `${realmPath(realm)}/client-description-converter`, spMetadataXml, 'application/xml')
      ).json()) as { attributes?: Record<string, string> } & Record<string, unknown>;
      const res = await admin('POST', `${realmPath(realm)}/clients`, {
        ...described,
        attributes: { ...described.attributes, ...options.attributes },
        protocolMappers: Object.entries(options.mappers ?? {}).map(([attribute, userProperty]) => ({
          name: attribute,
          protocol: 'saml',
          protocolMapper: 'saml-user-property-mapper',
          config: { 'user.attribute': userProperty, 'attribute.name': attribute, 'attribute.nameformat': 'Basic' },
        })),
      });
      return createdId(res);
    },
    idpMetadataUrl(realm) {
      return `${server.baseUrl}/realms/${encodeURIComponent(realm)}/protocol/saml/descriptor`;
    },
  };
}
