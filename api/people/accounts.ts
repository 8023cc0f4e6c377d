// What changing a person's account means beyond its row. A new password ends
// everything the old one obtained (OWASP ASVS 3.3.3: sessions end when credentials
// change), and deleting a person ends their grants before the row goes: both in the
// transaction of the change, so that nothing issued meanwhile outlives it
// (api/credentials/closing.ts endPersonsGrants). A new address is unverified until its
// link is followed or an administrator vouches for it; vouching for an address an account holds
// and never proved is adopting the account, and ends first what its maker set (docs/architecture.md §12).
// Ending a person's sessions, all or one browser's or one grant, goes through the same closing path.
import { ApiError } from '../errors.js';
import type { HookCaller } from '../hooks/caller.js';
import { personHooks } from './registration.js';
import type { Actor, Audit } from '../audit.js';
import { recordChanges } from '../record-changes.js';
import type { Config } from '../config.js';
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import { closeGrants, endBrowsersGrants, endPersonsGrants, type Closing } from '../credentials/closing.js';
import { dummyHash } from '../credentials/secrets.js';
import { factorCount } from '../factor-kinds.js';
import type { RecordCache } from '../cache/record-cache.js';
import { sameAddress } from '../input.js';
import { isEmailAddress } from '../schema/people.js';
import { deleteLinksOfUser } from '../store/account-links.js';
import { deleteBrowserSignIn, holdBrowserSession } from '../store/browser-sessions.js';
import { deleteConsentsOf } from '../store/consents.js';
import { deleteIdentitiesOf } from '../store/identity-providers.js';
import { enqueueMail } from '../mail/kinds.js';
import { isPersonsOpenGrant, type SessionRow } from '../store/sessions.js';
import type { PrincipalUser } from '../types.js';
import { deleteSignInStepsReplacing } from '../store/sign-in-steps.js';
import { factorState, forgetEmailCodes, removeAllFactors, removeFactor, setMustEnrol, type FactorSummary } from '../store/factors.js';
import { replaceRecoveryCodes } from '../store/recovery-codes.js';
import { tellOfFactorChange, tellOfPasswordChange } from './notices.js';
import {
  addressNeverProven,
  createUserIn,
  dataOf,
  deleteUser,
  getUser,
  lockUser,
  updateUser,
  type UserFields,
  type UserRow,
} from '../store/users.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Pick<Config, 'smtp'>;
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
  users: RecordCache<PrincipalUser>;
  /** Asked at personCreating before a person is made (api/hooks/). */
  hooks: Pick<HookCaller, 'asksAt' | 'ask'>;
}

export type AccountServices = Pick<Needs, 'config' | 'pool' | 'sessions' | 'audit' | 'users' | 'hooks'>;

/** What a change did to the person's address, for the audit: in the order it records them. */
type EmailEvent = 'email-changed' | 'email-vouched' | 'email-unvouched' | 'adopted';
/** And what a change did to the person's being on (SCIM active). */
type AccountEvent = EmailEvent | 'activated' | 'deactivated';

/**
 * The address rule. A new address (another mailbox: input.ts sameAddress, not a change of case) is unverified
 * unless this very change vouches for it (`emailVerified: true`, an administrator's word);
 * the person's outstanding links and sign-in codes go (one mailed to the old address proves nothing of the
 * new one), and with mail configured a verification link is on its way to the new address.
 * Vouching for the address the account holds and never proved (store/users.ts addressNeverProven)
 * is an adoption (`adopted`): whoever made the account — a stranger who signed up with the address,
 * say — is not the person vouched for. A new address vouched for is the administrator's act on an
 * account they chose by its id, not an adoption. The events say what the audit records.
 */
async function applyEmailRule(
  svc: Pick<Needs, 'config'>,
  tx: Transaction,
  before: UserRow,
  change: Partial<UserFields>,
): Promise<{ change: Partial<UserFields>; events: EmailEvent[]; newAddress: boolean }> {
  // Another mailbox, not a change of case: a look-alike emailKey folds together is another (input.ts sameAddress).
  const newAddress = change.email !== undefined && !sameAddress(change.email, before.email);
  const events: EmailEvent[] = [];
  if (change.email !== undefined && change.email.normalize('NFC') !== before.email) events.push('email-changed');
  if (newAddress) {
    change = { ...change, emailVerified: change.emailVerified === true };
    await deleteLinksOfUser(tx, before.id);
    // And so does a sign-in code: one mailed to the old address must not sign in beside the new one.
    await forgetEmailCodes(tx, before.id);
    if (!change.emailVerified && svc.config.smtp)
      await enqueueMail(tx, { kind: 'verify-email', address: change.email!, userId: before.id });
    // The old address hears of it: a change it did not make is a sign of someone else in the account.
    if (svc.config.smtp) await enqueueMail(tx, { kind: 'email-changed', address: before.email, userId: before.id });
  }
  const vouched = change.emailVerified === true && (newAddress || !before.emailVerified || before.mustVerifyEmail);
  if (vouched) events.push('email-vouched');
  if (vouched && !newAddress && addressNeverProven(before)) events.push('adopted');
  if (change.emailVerified === false && before.emailVerified && !newAddress) events.push('email-unvouched');
  return { change, events, newAddress };
}

/**
 * Changes the fields given; undefined when there is no such user. `by` is who changes them: an
 * administrator may vouch for an address (`emailVerified`), a person changing their own
 * (`by: {user}`) passes none and gets a link to follow.
 */
export async function changeAccount(
  svc: AccountServices,
  id: number,
  /** The fields, or what makes them from the person as they are under the lock (a SCIM PATCH); what it throws changes nothing. */
  change: Partial<UserFields> | ((before: UserRow, tx: Transaction) => Promise<Partial<UserFields>>),
  by: Actor,
  /**
   * What a person's own change stands on, checked under their row: the password they gave, the
   * browser they asked from still signed in, their being on; nothing changes when one is gone.
   */
  stillHolds?: { passwordHash?: string; sid?: string; active?: true },
): Promise<UserRow | undefined> {
  // The hash of a password nobody knows, for an account adopted: made before the row is held.
  const noPassword = await dummyHash();
  const done = await withTransaction(svc.pool, async (tx) => {
    // The row held: two changes of one person's address are ruled on one after the other.
    if (!(await lockUser(tx, id))) return undefined;
    const before = (await getUser(tx, id))!;
    if (stillHolds?.passwordHash !== undefined && before.passwordHash !== stillHolds.passwordHash) return undefined;
    if (stillHolds?.sid !== undefined && !(await holdBrowserSession(tx, stillHolds.sid))) return undefined;
    // A link followed by a person turned off meanwhile (the mail sent as they were turned off) does nothing.
    if (stillHolds?.active && !before.active) return undefined;
    const fields = typeof change === 'function' ? await change(before, tx) : change;
    const ruled = await applyEmailRule(svc, tx, before, fields);
    const adopted = ruled.events.includes('adopted');
    if (adopted) await endWhatItsMakerSet(tx, id);
    // Adopted: the maker's password goes too, unless this change gives the account one of its own. The
    // account keeps a password of the box (one nobody knows): the address's owner sets theirs through
    // a reset link, which the now vouched-for mailbox receives, and links their provider again after.
    const write = adopted && !fields.passwordHash ? { ...ruled.change, passwordHash: noPassword, passwordSet: true } : ruled.change;
    const changed = await updateUser(tx, id, write);
    if (changed && adopted) await endPersonsGrants(svc, tx, id, { how: 'adopted', by });
    else if (changed && fields.passwordHash) await endPersonsGrants(svc, tx, id, { how: 'password-change', by });
    // Turned off (SCIM active=false): everything they obtained ends with it, as a deletion's does.
    else if (changed && fields.active === false && before.active) await endPersonsGrants(svc, tx, id, { how: 'deactivated', by });
    // A new password is told to the person, at the address the change leaves them.
    if (changed && fields.passwordHash) await tellOfPasswordChange(svc, tx, changed);
    // And every link mailed to them goes (a reset link, endPersonsGrants's, is not the only way back in a mailbox holds).
    if (changed && fields.active === false && before.active) await deleteLinksOfUser(tx, id);
    const turned = fields.active === undefined || fields.active === before.active ? [] : [fields.active ? 'activated' : 'deactivated'];
    if (!changed) return undefined;
    // Recorded with the change: a change never commits without its record, nor a record without its change.
    await recordUserChange(svc, tx, before, changed, by, fields.passwordHash ? ['password'] : []);
    for (const action of [...ruled.events, ...turned] as AccountEvent[])
      await svc.audit.recordIn(tx, { event: 'account', action, user: String(id), email: changed.email, by });
    return changed;
  });
  svc.users.invalidate(String(id));
  return done;
}

/** A person's record as its audit events show it, before and after a change: never their password, which is only said to change. */
const auditedFields = (u: UserRow): Record<string, unknown> => ({
  email: u.email,
  email_verified: u.emailVerified,
  active: u.active,
  data: u.data,
  externalId: u.externalId,
  scim: u.scim,
  groups: u.groups,
});

/** The `record_changed` event of a person's record (none when nothing of it changed), in `tx`. */
async function recordUserChange(
  svc: Pick<Needs, 'audit'>,
  tx: Transaction,
  before: UserRow | undefined,
  after: UserRow | undefined,
  by: Actor,
  secretsWritten: readonly string[] = [],
): Promise<void> {
  const changes = recordChanges(before && auditedFields(before), after && auditedFields(after), secretsWritten);
  const action = !before ? 'created' : !after ? 'deleted' : 'changed';
  if (action === 'changed' && !Object.keys(changes).length) return;
  // A person deleted is gone when the outbox fans the event out: it keeps who they were (a receiver's policies ask).
  const facts = action === 'deleted' ? { person: { id: before!.id, email: before!.email, subject: before!.subject } } : undefined;
  await svc.audit.recordIn(tx, { event: 'record_changed', kind: 'User', id: String((after ?? before)!.id), action, by, changes }, facts);
}

/**
 * What the maker of an account set beside its password and its sign-ins (endPersonsGrants ends
 * those), ended as the account is adopted: its factors and recovery codes, its links to upstream
 * identities, what it consented to, and every link mailed to it. In `tx`, under the person's row.
 * A change link that a mail still in the outbox makes later asks for the account's password, which
 * is not the maker's any more.
 */
async function endWhatItsMakerSet(tx: Transaction, id: number): Promise<void> {
  await removeAllFactors(tx, id);
  await deleteIdentitiesOf(tx, id);
  await deleteConsentsOf(tx, id);
  await deleteLinksOfUser(tx, id);
}

/**
 * Creates a person; an address the administrator enters is vouched for unless they say otherwise,
 * and the audit says so. One they do not vouch for is mailed a link, where the box mails.
 */
export async function createAccount(
  svc: Pick<Needs, 'config' | 'pool' | 'audit' | 'hooks'>,
  asked: UserFields,
  by: Actor,
  via: 'api' | 'scim' = 'api',
): Promise<UserRow> {
  // The Hooks of personCreating, before the transaction: a refusal is a 403 in the hook's words.
  const hooked = await personHooks(svc, { email: asked.email, via });
  if ('refused' in hooked) throw new ApiError(403, 'access_denied', `refused by a hook: ${hooked.refused}`);
  const fields: UserFields = {
    ...asked,
    ...(hooked.data ? { data: JSON.stringify({ ...dataOf(asked), ...hooked.data }) } : {}),
    groupIds: [...new Set([...asked.groupIds, ...hooked.groupIds])],
  };
  return withTransaction(svc.pool, async (tx) => {
    const made = await createUserIn(tx, fields);
    // A sign-in name that is not an address (SCIM) is mailed nothing.
    if (!made.emailVerified && svc.config.smtp && isEmailAddress(made.email))
      await enqueueMail(tx, { kind: 'verify-email', address: made.email, userId: made.id });
    await recordUserChange(svc, tx, undefined, made, by, fields.passwordHash ? ['password'] : []);
    if (made.emailVerified)
      await svc.audit.recordIn(tx, { event: 'account', action: 'email-vouched', user: String(made.id), email: made.email, by });
    return made;
  });
}

/** Deletes the user and ends all they obtained; the user as they were, or undefined when there was none. */
export async function removeAccount(svc: AccountServices, id: number, by: Actor): Promise<UserRow | undefined> {
  const user = await withTransaction(svc.pool, async (tx) => {
    const found = await getUser(tx, id);
    if (!found) return undefined;
    await endPersonsGrants(svc, tx, id, { how: 'user-deleted', by });
    await deleteUser(tx, id);
    await recordUserChange(svc, tx, found, undefined, by);
    return found;
  });
  svc.users.invalidate(String(id));
  return user;
}

/**
 * An administrator's reset of a person's second factors (a lost phone, a stolen passkey): in one
 * transaction every factor and recovery code goes, the person must enrol a new factor at their
 * next sign-in, and everything they obtained ends — signed-in browsers, sign-ins half made, codes
 * and grants (docs/architecture.md §12: every way back in ends the person's other sessions). False when
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
    await tellOfFactorChange(svc, tx, (await getUser(tx, id))!, { change: 'removed', factor: 'every-factor' });
    await svc.audit.recordIn(tx, { event: 'factor', action: 'reset', user: String(id), by });
    return true;
  });
  if (!found) return false;
  svc.users.invalidate(String(id));
  return true;
}

/**
 * A person removes one of their own factors: under their row's lock, so that two removals at
 * once are counted one after the other. Refused (`last`) when it is their last factor and a group
 * of theirs requires one; with the last factor, its recovery codes go too (they would sign in
 * past nothing). The person is told by mail, and the removal audited (from `address`), in the
 * removal's transaction. Only while the browser asking (`sid`) is still signed in (`signed-out`
 * otherwise): a reset, a password change or a sign-out that ended it first leaves the factor where
 * it was. The factor removed, or undefined when it is not theirs.
 */
export async function removeOwnFactor(
  svc: Pick<AccountServices, 'pool' | 'config' | 'audit'>,
  user: { id: number; email: string },
  factorId: number,
  sid: string,
  address: string,
): Promise<FactorSummary | 'last' | 'signed-out' | undefined> {
  return withTransaction(svc.pool, async (tx) => {
    if (!(await lockUser(tx, user.id)) || !(await holdBrowserSession(tx, sid))) return 'signed-out';
    const state = await factorState(tx, user.id);
    const count = factorCount(state);
    if (state.groupRequires && count <= 1) return 'last';
    const removed = await removeFactor(tx, user.id, factorId);
    if (!removed) return undefined;
    if (count === 1) await replaceRecoveryCodes(tx, user.id, []);
    await tellOfFactorChange(svc, tx, user, { change: 'removed', factor: removed.kind, name: removed.name });
    const [id, by] = [String(removed.id), { user: String(user.id) }];
    await svc.audit.recordIn(tx, { event: 'factor', action: 'removed', kind: removed.kind, factor: id, user: by.user, by, address });
    return removed;
  });
}

/** Ends everything a person obtained (an administrator's "end all sessions"); false when there is no such person. */
export async function endPersonsSessions(svc: AccountServices, id: number, by: Actor): Promise<boolean> {
  return withTransaction(svc.pool, async (tx) => {
    if (!(await lockUser(tx, id))) return false;
    await endPersonsGrants(svc, tx, id, { how: 'api', by });
    return true;
  });
}

/**
 * Ends one signed-in browser of a person and what was issued through it, as its sign-out
 * would (an administrator's end, or the person's own from their account page): what it closed; undefined when `sid` is not a signed-in
 * browser of theirs (one person's id never ends another's browser).
 */
export async function endSignIn(svc: AccountServices, userId: number, sid: string, closing: Closing): Promise<SessionRow[] | undefined> {
  return withTransaction(svc.pool, async (tx) => {
    if (!(await deleteBrowserSignIn(tx, sid, userId))) return undefined;
    await deleteSignInStepsReplacing(tx, sid);
    return endBrowsersGrants(svc, tx, sid, closing);
  });
}

/** Ends a person's grant to an app (its whole family: the refresh token too); false when it is not an open grant of theirs. */
export async function endGrant(svc: AccountServices, userId: number, family: string, closing: Closing): Promise<boolean> {
  return withTransaction(svc.pool, async (tx) => {
    if (!(await isPersonsOpenGrant(tx, family, userId))) return false;
    await closeGrants(svc, { family }, closing, tx);
    return true;
  });
}
