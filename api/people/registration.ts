// People who sign up themselves (BOXAUTH_REGISTRATION). Where the box mails, the address is
// proven by a link (api/people/links.ts): before the first sign-in (`before-sign-in`, the
// default), or after it. Before it, a sign-up answers alike for a new address and a taken one —
// the holder of a taken one is told by mail that someone tried — so that the page tells nobody
// who has an account here (OWASP ASVS 2.x: no account enumeration at registration).
import type { Audit } from '../audit.js';
import type { Config } from '../config.js';
import { Argon2Busy, type Argon2 } from '../credentials/secrets.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { ConstraintViolation } from '../store/constraints.js';
import { ensureGroup, findGroupByName } from '../store/groups.js';
import type { HookCaller } from '../hooks/caller.js';
import { ADMINS_GROUP } from '../reserved.js';
import type { AttemptKey, Attempts, Refusal } from './attempts.js';
import { enqueueMail } from '../mail/kinds.js';
import { createUserIn, findUserByEmail, type UserRow } from '../store/users.js';

/** How a sign-up goes on: the address is proven before the first sign-in, after it, or not at all (no mail). */
export type Proof = 'before-sign-in' | 'after-sign-in' | 'none';

export function proofOf(config: Pick<Config, 'smtp' | 'registrationVerify'>): Proof {
  return config.smtp === undefined ? 'none' : config.registrationVerify;
}

/** What a sign-up did: an account made, or an address found taken (its holder told by mail where the proof comes first). */
export type SignUpResult = { made: UserRow } | { taken: true };

/**
 * Makes the account of a sign-up, with its verify mail and its audit event in the same
 * transaction (nothing acknowledged is lost, nothing made is unrecorded), in group `groupId`.
 */
export async function signUp(
  svc: { pool: Pool; audit: Audit; config: Pick<Config, 'smtp' | 'registrationVerify'> },
  fields: {
    email: string;
    passwordHash: string;
    groupId: number;
    language: string | undefined;
    data?: Record<string, unknown>;
    groupIds?: number[];
  },
): Promise<SignUpResult> {
  const proof = proofOf(svc.config);
  const language = fields.language ? { language: fields.language } : {};
  try {
    const made = await withTransaction(svc.pool, async (tx) => {
      const user = await createUserIn(tx, {
        email: fields.email,
        passwordHash: fields.passwordHash,
        data: fields.data ? JSON.stringify(fields.data) : null,
        groupIds: [fields.groupId, ...(fields.groupIds ?? []).filter((id) => id !== fields.groupId)],
        emailVerified: false,
        mustVerifyEmail: proof === 'before-sign-in',
      });
      if (proof !== 'none') await enqueueMail(tx, { kind: 'verify-email', address: user.email, userId: user.id, ...language });
      const id = String(user.id);
      await svc.audit.recordIn(tx, { event: 'record_changed', kind: 'User', id, action: 'created', by: { user: id } });
      return user;
    });
    return { made };
  } catch (err) {
    if (!(err instanceof ConstraintViolation && err.field === 'email')) throw err;
    if (proof === 'before-sign-in') {
      const holder = await findUserByEmail(svc.pool, fields.email);
      if (holder) await enqueueMail(svc.pool, { kind: 'already-registered', address: holder.email, userId: holder.id, ...language });
    }
    return { taken: true };
  }
}

/** What a sign-up uses of the process's services. */
export interface RegistrationServices {
  pool: Pool;
  attempts: Attempts;
  audit: Audit;
  config: Pick<Config, 'smtp' | 'registrationVerify' | 'registrationGroup'>;
  argon2: Argon2;
  /** Asked at personCreating before anything is made (api/hooks/). */
  hooks: Pick<HookCaller, 'asksAt' | 'ask'>;
}

/** What a sign-up came to: made or taken (signUp), refused before anything was done (a Hook's words), or the box too busy to hash. */
export type Registered = SignUpResult | { throttled: Refusal } | { busy: string } | { refused: string };

/**
 * What the Hooks of personCreating say of a person about to be made (`via`: signUp, upstream,
 * scim, api): a refusal (what the person is told), or the data and groups to make them with.
 * Groups a hook names are the box's existing ones, never the admins group (the box's own).
 */
export async function personHooks(
  svc: { pool: Pool; hooks: Pick<HookCaller, 'asksAt' | 'ask'> },
  person: { email: string; via: string },
): Promise<{ refused: string } | { data?: Record<string, unknown>; groupIds: number[] }> {
  if (!(await svc.hooks.asksAt('personCreating'))) return { groupIds: [] };
  const verdict = await svc.hooks.ask('personCreating', { person });
  if (!verdict.allowed) return { refused: verdict.message };
  const groups = await Promise.all(verdict.groups.filter((g) => g !== ADMINS_GROUP).map((g) => findGroupByName(svc.pool, g)));
  return {
    ...(Object.keys(verdict.data).length ? { data: verdict.data } : {}),
    groupIds: groups.filter((g) => g !== undefined).map((g) => g.id),
  };
}

/**
 * A person signs up with a checked email and password (the door checked them: api/schema/people.ts).
 * Counted before the password is hashed, per address and box-wide, across the box's processes
 * (and per email address where a mail goes out for any of them); hashed in argon2's last lane (a
 * flood of sign-ups waits behind sign-ins, admins and clients: api/credentials/secrets.ts); made
 * in the registration group.
 */
export async function register(
  svc: RegistrationServices,
  asked: { email: string; password: string; address: string; language: string | undefined },
): Promise<Registered> {
  const keys: AttemptKey[] = [
    { signUpsFrom: asked.address },
    'sign-ups',
    ...(proofOf(svc.config) === 'before-sign-in' ? [{ mailsTo: asked.email }] : []),
  ];
  const throttled = await svc.attempts.begin(keys);
  if (throttled) return { throttled };
  // Before the hash and the transaction: nothing is held while a hook thinks.
  const hooked = await personHooks(svc, { email: asked.email, via: 'signUp' });
  if ('refused' in hooked) return hooked;
  let passwordHash: string;
  try {
    passwordHash = await svc.argon2.hash(asked.password, 'sign-up');
  } catch (err) {
    await svc.attempts.giveBack(keys);
    if (err instanceof Argon2Busy) return { busy: err.headers['Retry-After'] ?? '1' };
    throw err;
  }
  const group = await ensureGroup(svc.pool, svc.config.registrationGroup, 'People who signed up themselves.');
  return signUp(svc, { email: asked.email, passwordHash, groupId: group.id, language: asked.language, ...hooked });
}
