// What changing a person's account means beyond its row. A new password ends
// everything the old one obtained (OWASP ASVS 3.3.3: sessions end when credentials
// change), and deleting a person ends their grants before the row goes: both in the
// transaction of the change, so that nothing issued meanwhile outlives it
// (api/credentials/closing.ts endPersonsGrants). Second factors, resets and email
// verification will change accounts through here too.
import type { Actor, Audit } from '../audit.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { endPersonsGrants } from '../credentials/closing.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { SessionRow } from '../store/sessions.js';
import type { PrincipalUser } from '../types.js';
import { factorState, removeAllFactors, removeFactor, replaceRecoveryCodes, setMustEnrol, type FactorSummary } from '../store/factors.js';
import { deleteUser, getUser, lockUser, updateUser, type UserFields, type UserRow } from '../store/users.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
  users: RecordCache<PrincipalUser>;
}

export type AccountServices = Pick<Needs, 'pool' | 'sessions' | 'audit' | 'users'>;

/** Changes the fields given; undefined when there is no such user. */
export async function changeAccount(
  svc: AccountServices,
  id: number,
  change: Partial<UserFields>,
  by: Actor,
): Promise<UserRow | undefined> {
  const user = await withTransaction(svc.pool, async (tx) => {
    const changed = await updateUser(tx, id, change);
    if (changed && change.passwordHash) await endPersonsGrants(svc, tx, id, { how: 'password-change', by });
    return changed;
  });
  svc.users.invalidate(String(id));
  return user;
}

/** Deletes the user and ends all they obtained; the user as they were, or undefined when there was none. */
export async function removeAccount(svc: AccountServices, id: number, by: Actor): Promise<UserRow | undefined> {
  const user = await withTransaction(svc.pool, async (tx) => {
    const found = await getUser(tx, id);
    if (!found) return undefined;
    await endPersonsGrants(svc, tx, id, { how: 'user-deleted', by });
    await deleteUser(tx, id);
    return found;
  });
  svc.users.invalidate(String(id));
  return user;
}

/**
 * An administrator's reset of a person's second factors (a lost phone, a stolen passkey): in one
 * transaction every factor and recovery code goes, the person must enrol a new factor at their
 * next sign-in, and everything they obtained ends — signed-in browsers, sign-ins half made, codes
 * and grants (ARCHITECTURE §12: every way back in ends the person's other sessions). False when
 * there is no such person.
 */
export async function resetFactors(svc: AccountServices, id: number, by: Actor): Promise<boolean> {
  const found = await withTransaction(svc.pool, async (tx) => {
    // First, the person's row: a sign-in whose browser session is written but not committed yet is
    // waited for, and ended below with the rest; a second reset of the same person takes its turn.
    if (!(await lockUser(tx, id))) return false;
    await setMustEnrol(tx, id, true);
    await removeAllFactors(tx, id);
    await endPersonsGrants(svc, tx, id, { how: 'factors-reset', by });
    return true;
  });
  if (!found) return false;
  svc.users.invalidate(String(id));
  svc.audit.record({ event: 'factor', action: 'reset', user: String(id), by });
  return true;
}

/**
 * A person removes one of their own factors: under their row's lock, so that two removals at
 * once are counted one after the other. Refused (`last`) when it is their last factor and a group
 * of theirs requires one; with the last factor, its recovery codes go too (they would sign in
 * past nothing). The factor removed, or undefined when it is not theirs.
 */
export async function removeOwnFactor(
  svc: Pick<AccountServices, 'pool'>,
  userId: number,
  factorId: number,
): Promise<FactorSummary | 'last' | undefined> {
  return withTransaction(svc.pool, async (tx) => {
    await lockUser(tx, userId);
    const state = await factorState(tx, userId);
    const count = state.passkeys + (state.totp ? 1 : 0);
    if (state.groupRequires && count <= 1) return 'last';
    const removed = await removeFactor(tx, userId, factorId);
    if (removed && count === 1) await replaceRecoveryCodes(tx, userId, []);
    return removed;
  });
}
