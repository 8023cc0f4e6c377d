// Start-up records: the root client (client_credentials, with an allow policy)
// whose credentials come from the environment, or are generated once and written
// to $BOXAUTH_DATA_DIR/root-client.json (mode 0600) so a person can find them.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.js';
import type { Pool } from './db/pool.js';
import { generateSecret, hashSecret } from './oauth/secrets.js';
import { accessPolicies } from './store/policies.js';
import { clients } from './store/clients.js';
import argon2 from 'argon2';

export interface Credentials {
  file: string | undefined;
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

export async function writeSecretFile(file: string, content: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(tmp, file);
}

/** Creates or updates the root client; returns where its credentials are, if written to a file. */
export async function bootstrapRootClient(pool: Pool, config: Config): Promise<Credentials> {
  const file = path.join(config.dataDir, 'root-client.json');
  let secret = config.rootClientSecret;
  let written: string | undefined;
  if (!secret) {
    const saved = await readJson<{ client_id: string; client_secret: string }>(file);
    secret = saved?.client_id === config.rootClientId ? saved.client_secret : undefined;
    if (!secret) {
      secret = generateSecret();
      await writeSecretFile(file, { client_id: config.rootClientId, client_secret: secret, base_url: config.baseUrl });
    }
    written = file;
  }
  const existing = await clients.read(pool, config.rootClientId);
  // Re-hash only when the secret changed: argon2 is slow, and every restart would otherwise bump the version.
  const same = existing?.secretHash ? await argon2.verify(existing.secretHash, secret).catch(() => false) : false;
  await clients.write(pool, {
    resourceType: 'Client',
    id: config.rootClientId,
    grant_types: ['client_credentials'],
    description: 'The box administrator client, created at start-up.',
    auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 3600 } },
  }, { managedBy: null, secretHash: same ? undefined : await hashSecret(secret) });
  await accessPolicies.write(pool, {
    resourceType: 'AccessPolicy',
    id: `${config.rootClientId}-allow`,
    engine: 'allow',
    description: 'The root client may do everything.',
    link: [{ id: config.rootClientId, resourceType: 'Client' }],
  }, { managedBy: null });
  return { file: written };
}
