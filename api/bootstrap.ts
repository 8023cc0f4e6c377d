// Start-up records (api/reserved.ts lists them): the root client and its allow
// policy, the first admin user, the `admins` group and its policy, and the admin
// UI's client. Bootstrap creates what is missing and never overwrites what a
// person changed since: a password or secret rotated after a leak must stay
// rotated across restarts, and a group membership removed must stay removed.
// Two things are re-applied at every start, because they are configuration, not
// people's data: BOXAUTH_ROOT_CLIENT_SECRET when set (the operator rotates the
// root secret through it) and the admin UI client (it follows BOXAUTH_BASE_URL).
//
// Generated credentials are written once to $BOXAUTH_DATA_DIR (root-client.json,
// admin-user.json; mode 0600) so a person can find them.
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from './config.js';
import type { Pool } from './db/pool.js';
import type { Logger } from './log.js';
import { generatePassword, generateSecret, hashSecret, verifyHash } from './credentials/secrets.js';
import { passwordCheck } from './schema/password-policy.js';
import { OPENID_SCOPES } from './oauth/openid.js';
import { ADMIN_CLIENT_ID, adminClientPolicyId, ADMINS_GROUP, adminsPolicyId, rootPolicyId } from './reserved.js';
import { claimSetting, ensureSetting } from './store/box-settings.js';
import { clients } from './store/clients.js';
import { ensureGroup } from './store/groups.js';
import { accessPolicies } from './store/policies.js';
import type { ResourceTable } from './store/resources.js';
import { createUser, findUserByEmail } from './store/users.js';
import type { AccessPolicy } from './types.js';

/** Where a person finds a bootstrap credential, as the start-up banner says it. */
export interface Credentials {
  where: string;
}

async function readJson(file: string): Promise<Record<string, string> | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as Record<string, string>;
  } catch {
    return undefined;
  }
}

async function writeSecretFile(file: string, content: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(tmp, file);
}

/** The secret saved in `file` for this owner, or a new one saved there. Only for records being created. */
async function savedOrNew(
  file: string,
  owner: [field: string, value: string],
  secretField: string,
  generate: () => string,
  extra: Record<string, string>,
): Promise<string> {
  const saved = await readJson(file);
  const [ownerField, ownerValue] = owner;
  if (saved?.[ownerField] === ownerValue && saved[secretField]) return saved[secretField];
  const secret = generate();
  await writeSecretFile(file, { [ownerField]: ownerValue, [secretField]: secret, ...extra });
  return secret;
}

/** The secret in `file` still matches `hash` (nobody rotated it since it was written). */
async function fileStillWorks(file: string, owner: [string, string], secretField: string, hash: string | null): Promise<boolean> {
  const saved = await readJson(file);
  const secret = saved?.[owner[0]] === owner[1] ? saved[secretField] : undefined;
  return secret !== undefined && hash !== null && verifyHash(hash, secret, 'write');
}

/**
 * A reserved record that a Kubernetes resource took over (operators before the
 * reserved list was complete did) goes back to the box: the box relies on it.
 */
async function reclaim<T extends { id: string; resourceType: string }>(
  pool: Pool,
  log: Logger,
  table: ResourceTable<T>,
  kind: string,
  id: string,
): Promise<void> {
  const stored = await table.read(pool, id);
  if (!stored?.managedBy) return;
  log.warn({ [kind]: id, managedBy: stored.managedBy }, 'a reserved record was managed by a Kubernetes resource; the box takes it back');
  await table.setOwner(pool, id, null);
}

async function createPolicyIfMissing(pool: Pool, policy: AccessPolicy): Promise<void> {
  if (!(await accessPolicies.read(pool, policy.id))) await accessPolicies.write(pool, policy, { managedBy: null });
}

/** The root client (client_credentials) and its allow policy. */
export async function bootstrapRootClient(pool: Pool, config: Config, log: Logger): Promise<Credentials> {
  const id = config.rootClientId;
  const file = path.join(config.dataDir, 'root-client.json');
  const fromEnv = { where: 'from BOXAUTH_ROOT_CLIENT_SECRET' };
  await reclaim(pool, log, clients, 'Client', id);
  const existing = await clients.read(pool, id);
  let credentials: Credentials;
  if (!existing) {
    const secret =
      config.rootClientSecret ?? (await savedOrNew(file, ['client_id', id], 'client_secret', generateSecret, { base_url: config.baseUrl }));
    await clients.write(
      pool,
      {
        resourceType: 'Client',
        id,
        grant_types: ['client_credentials'],
        description: 'The box administrator client, created at start-up.',
        auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 3600 } },
      },
      { managedBy: null, secretHash: await hashSecret(secret) },
    );
    credentials = config.rootClientSecret ? fromEnv : { where: `in ${file}` };
  } else if (config.rootClientSecret) {
    const same = existing.secretHash !== null && (await verifyHash(existing.secretHash, config.rootClientSecret, 'write'));
    if (!same) await clients.write(pool, existing.resource, { managedBy: null, secretHash: await hashSecret(config.rootClientSecret) });
    credentials = fromEnv;
  } else {
    credentials = (await fileStillWorks(file, ['client_id', id], 'client_secret', existing.secretHash))
      ? { where: `in ${file}` }
      : { where: `as last changed through the API (set BOXAUTH_ROOT_CLIENT_SECRET to reset it)` };
  }
  await createPolicyIfMissing(pool, {
    resourceType: 'AccessPolicy',
    id: rootPolicyId(id),
    engine: 'allow',
    description: 'The root client may do everything.',
    link: [{ id, resourceType: 'Client' }],
  });
  return credentials;
}

/**
 * The first admin user in the `admins` group, and that group's allow policy. The
 * user is created once per box and email (recorded in box_settings): deleted or
 * changed later, it stays as people left it.
 */
export async function bootstrapAdmin(pool: Pool, config: Config, log: Logger): Promise<Credentials> {
  const file = path.join(config.dataDir, 'admin-user.json');
  const group = await ensureGroup(pool, ADMINS_GROUP, 'Box administrators: allowed everything by the admins-allow policy.');
  await createPolicyIfMissing(pool, {
    resourceType: 'AccessPolicy',
    id: adminsPolicyId(),
    engine: 'allow',
    description: 'Members of the admins group may do everything.',
    link: [{ id: ADMINS_GROUP, resourceType: 'Group' }],
  });
  const mark = `bootstrap.admin_user.${config.adminEmail.toLowerCase()}`;
  const existing = await findUserByEmail(pool, config.adminEmail);
  if (!existing && (await claimSetting(pool, mark, new Date().toISOString()))) {
    const password =
      config.adminPassword ??
      (await savedOrNew(file, ['email', config.adminEmail], 'password', () => generatePassword(config.passwordMinLength), {
        admin_ui: `${config.baseUrl}/admin`,
      }));
    await warnOfWeakAdminPassword(config, log);
    await createUser(pool, { email: config.adminEmail, passwordHash: await hashSecret(password), data: null, groupIds: [group.id] });
    return config.adminPassword ? { where: 'from BOXAUTH_ADMIN_PASSWORD' } : { where: `in ${file}` };
  }
  // Created at an earlier start: an existing user marks the box as bootstrapped too (boxes from before the mark).
  if (existing) await claimSetting(pool, mark, new Date().toISOString());
  if (!existing) return { where: 'none: the first admin user was deleted (create admins through /users or the CLI)' };
  if (!config.adminPassword && (await fileStillWorks(file, ['email', config.adminEmail], 'password', existing.passwordHash))) {
    return { where: `in ${file}` };
  }
  return { where: 'as last changed (BOXAUTH_ADMIN_PASSWORD applies only when the user is first created)' };
}

/**
 * BOXAUTH_ADMIN_PASSWORD is not refused when it breaks the box's password rule (a box that started
 * yesterday must start after an upgrade), but when the first admin is made with it the log says
 * which rule it breaks, never the password. Only then: at later starts it is not the admin's
 * password by this start's doing, and every box the operator runs sets it: their starts need not read the list.
 */
async function warnOfWeakAdminPassword(config: Config, log: Logger): Promise<void> {
  if (config.adminPassword === undefined) return;
  const problem = (await passwordCheck(config))(config.adminPassword, config.adminEmail);
  if (problem)
    log.warn(
      { user: config.adminEmail, rule: `the password ${problem}` },
      "BOXAUTH_ADMIN_PASSWORD breaks the box's password rule (docs/security.md): the first admin should choose another " +
        '(on their account page, or with boxauth user set-password)',
    );
}

/**
 * The admin UI's own client: public (PKCE), first party, redirecting to this
 * box's /admin/callback, with a fixed scope list (first party means no consent
 * page, so without a list anyone who can sign in could grant themselves any
 * scope through it). Its policy lets it act for the person signed in to it:
 * what that person's own policies allow, nothing more (api/policy/evaluate.ts).
 */
export async function bootstrapAdminClient(pool: Pool, config: Config, log: Logger): Promise<void> {
  await reclaim(pool, log, clients, 'Client', ADMIN_CLIENT_ID);
  await clients.write(
    pool,
    {
      resourceType: 'Client',
      id: ADMIN_CLIENT_ID,
      grant_types: ['authorization_code'],
      first_party: true,
      description: 'The admin UI of this box.',
      scope: [...OPENID_SCOPES],
      auth: { authorization_code: { redirect_uri: `${config.baseUrl}/admin/callback`, access_token_expiration: 3600 } },
    },
    { managedBy: null, secretHash: null },
  );
  await createPolicyIfMissing(pool, {
    resourceType: 'AccessPolicy',
    id: adminClientPolicyId(),
    engine: 'allow',
    description: 'The admin UI acts for the person signed in to it, within what their own policies allow.',
    link: [{ id: ADMIN_CLIENT_ID, resourceType: 'Client' }],
  });
}

/**
 * The key TOTP secrets are sealed with (api/credentials/sealing.ts): BOXAUTH_FACTOR_KEY, else
 * $BOXAUTH_DATA_DIR/factor-key, made once (mode 0600). The box records a fingerprint of the
 * key it seals with and refuses to start with another: secrets sealed with one key are
 * unreadable with the next, and a process that quietly sealed with its own would lock people
 * out of their codes.
 */
export async function ensureFactorKey(pool: Pool, config: Config): Promise<Buffer> {
  let key = config.factorKey;
  const file = path.join(config.dataDir, 'factor-key');
  if (!key) {
    const saved = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (saved === undefined) {
      await fs.mkdir(config.dataDir, { recursive: true });
      // 'wx': of two processes making it at once, one writes; the other reads what it wrote.
      await fs
        .writeFile(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
        .catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
    }
    key = Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
    if (key.length !== 32) throw new ConfigError(`${file} does not hold a factor key (32 bytes in base64)`);
  }
  const fingerprint = createHmac('sha256', key).update('boxauth factor key').digest('base64url').slice(0, 16);
  if ((await ensureSetting(pool, 'factor_key_fingerprint', () => fingerprint)) !== fingerprint)
    throw new ConfigError(
      `the factor key (${config.factorKey ? 'BOXAUTH_FACTOR_KEY' : file}) is not the one this box's database was first used with ` +
        '(every process of a box seals and opens TOTP secrets with the same key); ' +
        'set BOXAUTH_FACTOR_KEY to that key (docs/guides/second-factors.md)',
    );
  return key;
}
