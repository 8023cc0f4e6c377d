// Start-up records: the root client (client_credentials, with an allow policy)
// and the first admin user (group `admins`, allowed by a policy on that group).
// Credentials come from the environment, or are generated once and written to
// $BOXAUTH_DATA_DIR (root-client.json, admin-user.json; mode 0600) so a person
// can find them.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.js';
import type { Pool } from './db/pool.js';
import { generateSecret, hashSecret, verifyHash } from './oauth/secrets.js';
import { accessPolicies } from './store/policies.js';
import { clients } from './store/clients.js';
import { createGroup, findGroupByName } from './store/groups.js';
import { createUser, findUserByEmail, updateUser } from './store/users.js';
import { ADMIN_CLIENT_ID, ADMINS_GROUP } from './reserved.js';

export interface Credentials {
  file: string | undefined;
}

async function readJson(file: string): Promise<Record<string, string> | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as Record<string, string>;
  } catch {
    return undefined;
  }
}

/**
 * The secret from the environment; failing that, the one saved in `file` for the
 * same owner; failing that, a new one saved there (with `extra` facts for people).
 */
async function secretFor(
  fromEnv: string | undefined, file: string, owner: [field: string, value: string], secretField: string,
  generate: () => string, extra: Record<string, string>,
): Promise<{ secret: string; file: string | undefined }> {
  if (fromEnv) return { secret: fromEnv, file: undefined };
  const saved = await readJson(file);
  const [ownerField, ownerValue] = owner;
  if (saved?.[ownerField] === ownerValue && saved[secretField]) return { secret: saved[secretField], file };
  const secret = generate();
  await writeSecretFile(file, { [ownerField]: ownerValue, [secretField]: secret, ...extra });
  return { secret, file };
}

export async function writeSecretFile(file: string, content: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(tmp, file);
}

/** Creates or updates the root client; returns where its credentials are, if written to a file. */
export async function bootstrapRootClient(pool: Pool, config: Config): Promise<Credentials> {
  const { secret, file } = await secretFor(config.rootClientSecret, path.join(config.dataDir, 'root-client.json'),
    ['client_id', config.rootClientId], 'client_secret', generateSecret, { base_url: config.baseUrl });
  const existing = await clients.read(pool, config.rootClientId);
  // Re-hash only when the secret changed: argon2 is slow, and every restart would otherwise bump the version.
  const same = existing?.secretHash ? await verifyHash(existing.secretHash, secret) : false;
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
  return { file };
}



/** Creates the admin user, the `admins` group and its allow policy; returns the credentials file, if written. */
export async function bootstrapAdmin(pool: Pool, config: Config): Promise<Credentials> {
  const { secret: password, file } = await secretFor(config.adminPassword, path.join(config.dataDir, 'admin-user.json'),
    ['email', config.adminEmail], 'password', () => generateSecret().slice(0, 24), { admin_ui: `${config.baseUrl}/admin` });
  const group = (await findGroupByName(pool, ADMINS_GROUP))
    ?? await createGroup(pool, ADMINS_GROUP, 'Box administrators: allowed everything by the admins-allow policy.');
  const existing = await findUserByEmail(pool, config.adminEmail);
  if (!existing) {
    await createUser(pool, { email: config.adminEmail, passwordHash: await hashSecret(password), data: null, groupIds: [group.id] });
  } else {
    const same = await verifyHash(existing.passwordHash, password);
    const groupIds = [...new Set([...existing.groups.map((g) => g.id), group.id])];
    await updateUser(pool, existing.id, { groupIds, ...(same ? {} : { passwordHash: await hashSecret(password) }) });
  }
  await accessPolicies.write(pool, {
    resourceType: 'AccessPolicy',
    id: `${ADMINS_GROUP}-allow`,
    engine: 'allow',
    description: 'Members of the admins group may do everything.',
    link: [{ id: ADMINS_GROUP, resourceType: 'Group' }],
  }, { managedBy: null });
  return { file };
}

/** The admin UI's own client: public (PKCE), first party, redirecting to this box's /admin/callback. */
export async function bootstrapAdminClient(pool: Pool, config: Config): Promise<void> {
  await clients.write(pool, {
    resourceType: 'Client',
    id: ADMIN_CLIENT_ID,
    grant_types: ['authorization_code'],
    first_party: true,
    description: 'The admin UI of this box.',
    auth: { authorization_code: { redirect_uri: `${config.baseUrl}/admin/callback`, access_token_expiration: 3600 } },
  }, { managedBy: null, secretHash: null });
}
