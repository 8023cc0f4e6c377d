// What a person's own account page shows of their records (accountRecords), and what they change
// on it (api/http/routes/account.ts): their password
// (the current one, or a second factor given minutes ago, stands for them), and a consent they
// withdraw (a browser or a grant they end is accounts.ts endSignIn, endGrant). Each in one transaction with what it closes
// (api/credentials/closing.ts), so that nothing issued meanwhile outlives it.
import type { Actor } from '../audit.js';
import { acrOf, ACR_MFA, meets } from '../credentials/acr.js';
import { recentProof, RECENT_PROOF_MINUTES } from './factors.js';
import { closeGrants, endPersonsGrants } from '../credentials/closing.js';
import { Argon2Busy, type Argon2 } from '../credentials/secrets.js';
import { withTransaction } from '../db/pool.js';
import { deleteConsent, listConsents, type Consent } from '../store/consents.js';
import { holdBrowserSession, listBrowserSignIns, recordProof, type BrowserSignIn } from '../store/browser-sessions.js';
import { factorState, listFactors, type FactorState, type FactorSummary } from '../store/factors.js';
import { recoveryCodesLeft } from '../store/recovery-codes.js';
import { allIdentityProviders, identitiesOf } from '../store/identity-providers.js';
import { listPersonGrants, type PersonGrant } from '../store/sessions.js';
import { continueSignIn, type BrowserFacts, type BrowserToken, type SignedInPerson } from './browsers.js';
import { getUser, holdPerson, lockUser, updateUser, type UserRow } from '../store/users.js';
import { changeAccount, type AccountServices } from './accounts.js';
import { ConstraintViolation } from '../store/constraints.js';
import { tellOfPasswordChange } from './notices.js';
import { labelOf } from './upstream/flow.js';

/**
 * Whether this browser's sign-in is a fresh second factor, which stands for the person's current
 * password: it proved more than a password, all of it given (`proven`: a factor enrolled in the
 * session since — by whoever holds it — proves nothing of the person), at a sign-in (`authTime`,
 * which a step-up, an enrolment or a password change never renews) minutes ago. A pure decision:
 * the clock is the caller's.
 */
export function freshSecondFactor(browser: { amr: readonly string[]; authTime: Date; proven: boolean }, now: number): boolean {
  return browser.proven && meets(acrOf(browser.amr), ACR_MFA) && now - browser.authTime.getTime() <= RECENT_PROOF_MINUTES * 60_000;
}

/**
 * A new password, set by its person from the browser of `person`: everything the old one obtained
 * ends (OWASP ASVS 3.3.3), and this browser goes on in a session that continues its own, in the
 * same transaction, so that only the browser the person is at stays signed in. `typed`: the
 * current password was typed for it, a proof given now (the session may change factors for a
 * while). The session's token; `busy` (argon2's queue is full) or `ended` (the browser was signed
 * out meanwhile, or the password checked is not theirs any more: the change would undo a reset).
 */
export async function changeOwnPassword(
  svc: AccountServices & { argon2: Argon2 },
  person: SignedInPerson,
  change: { password: string; typed: boolean },
  from: BrowserFacts,
): Promise<BrowserToken | 'busy' | 'ended'> {
  let passwordHash: string;
  try {
    passwordHash = await svc.argon2.hash(change.password);
  } catch (err) {
    if (err instanceof Argon2Busy) return 'busy';
    throw err;
  }
  const { user, browser } = person;
  const by = { user: String(user.id) };
  const done = await withTransaction(svc.pool, async (tx) => {
    // Under the person's row, what the request stood on must still hold: this browser still
    // signed in (not signed out, reset or ended by an administrator while the passwords were
    // hashed), and the password it checked still theirs.
    if (!(await lockUser(tx, user.id)) || !(await holdBrowserSession(tx, browser.sid))) return 'ended' as const;
    const now = await getUser(tx, user.id);
    if (now?.passwordHash !== user.passwordHash) return 'ended' as const;
    await updateUser(tx, user.id, { passwordHash });
    await endPersonsGrants(svc, tx, user.id, { how: 'password-change', by });
    await tellOfPasswordChange(svc, tx, now);
    await svc.audit.recordIn(tx, { event: 'account', action: 'password-changed', user: String(user.id), by, address: from.address });
    return continueSignIn(tx, from, change.typed ? { ...browser, proofAt: new Date() } : browser);
  });
  if (done === 'ended') return done;
  svc.users.invalidate(String(user.id));
  return done;
}

/**
 * A new address the person gives themselves where the box sends no mail (none can prove it): it
 * changes now, unverified, for an administrator to vouch for (./accounts.ts changeAccount), while
 * the browser asking is still signed in. `taken`: another account has it; `ended`: signed out meanwhile.
 */
export async function changeOwnAddress(
  svc: AccountServices,
  person: SignedInPerson,
  email: string,
): Promise<'changed' | 'taken' | 'ended'> {
  try {
    const by = { user: String(person.user.id) };
    return (await changeAccount(svc, person.user.id, { email }, by, { sid: person.browser.sid })) ? 'changed' : 'ended';
  } catch (err) {
    if (err instanceof ConstraintViolation && err.field === 'email') return 'taken';
    throw err;
  }
}

/**
 * Records that the person proved who they are in this browser just now (their password, on the
 * account page's "confirm it is you"): its session's last proof is now, so that a change of their
 * factors may follow for a few minutes. Under their row, what the proof stood on must still hold:
 * the browser still signed in, the password checked still theirs. False otherwise.
 */
export async function confirmProof(
  svc: Pick<AccountServices, 'pool' | 'audit'>,
  proof: { userId: number; sid: string; checkedHash: string },
  address: string,
): Promise<boolean> {
  return withTransaction(svc.pool, async (tx) => {
    if ((await holdPerson(tx, proof.userId))?.passwordHash !== proof.checkedHash) return false;
    if (!(await recordProof(tx, proof.sid, proof.userId, new Date()))) return false;
    const reason = 'confirmed on the account page';
    await svc.audit.recordIn(tx, { event: 'sign_in', outcome: 'success', user: String(proof.userId), address, reason });
    return true;
  });
}

/** Withdraws the person's consent to `clientId`: the app asks again, and its grants of theirs end. False when there was none. */
export async function withdrawConsent(svc: AccountServices, userId: number, clientId: string, address: string): Promise<boolean> {
  const by: Actor = { user: String(userId) };
  const withdrawn = await withTransaction(svc.pool, async (tx) => {
    if (!(await deleteConsent(tx, userId, clientId))) return false;
    await closeGrants(svc, { user: userId, client: clientId }, { how: 'consent-withdrawn', by }, tx);
    await svc.audit.recordIn(tx, { event: 'account', action: 'consent-withdrawn', user: String(userId), client: clientId, by, address });
    return true;
  });
  return withdrawn;
}

/** Whether this browser's person gave a proof minutes ago (./factors.ts recentProof): what a change of their factors asks. */
export const provenRecently = (person: SignedInPerson, now = Date.now()): boolean => recentProof(person.browser.proofAt, now);

/** At most this many sign-ins and grants are listed: a person with more ends them all at once (a password change). */
const LISTED = 100;

/** An IdentityProvider as the account page lists it: linked to the person (since when, the address it gave) or not. */
export interface ProviderOnAccount {
  provider: { id: string; label: string; directory: boolean };
  linked?: { since: Date; email: string | null };
}

/** What a person's account page lists of their own records. */
export interface AccountRecords {
  factors: FactorSummary[];
  recoveryCodesLeft: number;
  signIns: BrowserSignIn[];
  grants: PersonGrant[];
  consents: Consent[];
  providers: ProviderOnAccount[];
}

/** The person's records their account page lists: factors, browsers signed in, grants, consents, and providers to link. */
export async function accountRecords(svc: Pick<AccountServices, 'pool'>, userId: number): Promise<AccountRecords> {
  const [factors, codesLeft, signIns, grants, consents, providers, identities] = await Promise.all([
    listFactors(svc.pool, userId),
    recoveryCodesLeft(svc.pool, userId),
    listBrowserSignIns(svc.pool, { user: userId, limit: LISTED, offset: 0 }),
    listPersonGrants(svc.pool, { user: userId, limit: LISTED, offset: 0 }),
    listConsents(svc.pool, userId),
    allIdentityProviders(svc.pool),
    identitiesOf(svc.pool, userId),
  ]);
  // Linked providers are listed even when disabled (they may be unlinked); others only while enabled.
  const links = providers
    .map(({ provider }) => ({ provider, identity: identities.find((i) => i.provider === provider.id) }))
    .filter(({ provider, identity }) => identity || !provider.disabled)
    .map(({ provider, identity }) => ({
      provider: { id: provider.id, label: labelOf(provider), directory: provider.type === 'ldap' },
      ...(identity ? { linked: { since: identity.linkedAt, email: identity.email } } : {}),
    }));
  return { factors, recoveryCodesLeft: codesLeft, signIns: signIns.rows, grants: grants.rows, consents, providers: links };
}

/** A person and what their factors and the rules over them are, as the pages of a sign-in's steps read them. */
export async function factorsOf(
  svc: Pick<AccountServices, 'pool'>,
  userId: number,
): Promise<{ user: UserRow | undefined; factors: FactorState }> {
  const [user, factors] = await Promise.all([getUser(svc.pool, userId), factorState(svc.pool, userId)]);
  return { user, factors };
}
