// What a person changes on their own account page (api/http/routes/account.ts): their password
// (the current one, or a second factor given minutes ago, stands for them), and what they end —
// a browser signed in, an app's grant, a consent. Each in one transaction with what it closes
// (api/credentials/closing.ts), so that nothing issued meanwhile outlives it.
import type { Actor } from '../audit.js';
import { acrOf, ACR_MFA, meets } from '../credentials/acr.js';
import { closeGrants, endBrowsersGrants, endPersonsGrants } from '../credentials/closing.js';
import { withTransaction, type Transaction } from '../db/pool.js';
import { deleteBrowserSignIn, deleteConsent } from '../store/browser.js';
import { deleteSignInStepsReplacing } from '../store/factors.js';
import { grantHolder } from '../store/sessions.js';
import { updateUser } from '../store/users.js';
import type { AccountServices } from './accounts.js';

/** How long a sign-in with a second factor stands for the person's current password. */
export const FRESH_MINUTES = 10;

/**
 * Whether this browser's sign-in is a fresh second factor: it proved more than a password, and
 * minutes ago. A pure decision: the clock is the caller's.
 */
export function freshSecondFactor(browser: { amr: readonly string[]; authTime: Date }, now: number): boolean {
  return meets(acrOf(browser.amr), ACR_MFA) && now - browser.authTime.getTime() <= FRESH_MINUTES * 60_000;
}

/**
 * A new password, set by its person: everything the old one obtained ends (OWASP ASVS 3.3.3),
 * and `signInAgain` signs this browser back in, in the same transaction, so that only the
 * browser the person is at stays signed in.
 */
export async function changeOwnPassword(
  svc: AccountServices,
  userId: number,
  passwordHash: string,
  signInAgain: (tx: Transaction) => Promise<void>,
  address: string,
): Promise<void> {
  const by = { user: String(userId) };
  await withTransaction(svc.pool, async (tx) => {
    await updateUser(tx, userId, { passwordHash });
    await endPersonsGrants(svc, tx, userId, { how: 'password-change', by });
    await signInAgain(tx);
  });
  svc.users.invalidate(String(userId));
  svc.audit.record({ event: 'account', action: 'password-changed', user: String(userId), by, address });
}

/** Ends one of the person's signed-in browsers and what was issued through it; false when it is not theirs. */
export async function endOwnSignIn(svc: AccountServices, userId: number, sid: string): Promise<boolean> {
  const by: Actor = { user: String(userId) };
  return withTransaction(svc.pool, async (tx) => {
    if (!(await deleteBrowserSignIn(tx, sid, userId))) return false;
    await deleteSignInStepsReplacing(tx, sid);
    await endBrowsersGrants(svc, tx, sid, { how: 'sign-out', by });
    return true;
  });
}

/** Ends one of the person's grants (a session family); false when it is not theirs. */
export async function endOwnGrant(svc: AccountServices, userId: number, family: string): Promise<boolean> {
  if ((await grantHolder(svc.pool, family)) !== userId) return false;
  await closeGrants(svc, { family }, { how: 'revoke', by: { user: String(userId) } });
  return true;
}

/** Withdraws the person's consent to `clientId`: the app asks again, and its grants of theirs end. False when there was none. */
export async function withdrawConsent(svc: AccountServices, userId: number, clientId: string, address: string): Promise<boolean> {
  const by: Actor = { user: String(userId) };
  const withdrawn = await withTransaction(svc.pool, async (tx) => {
    if (!(await deleteConsent(tx, userId, clientId))) return false;
    await closeGrants(svc, { user: userId, client: clientId }, { how: 'consent-withdrawn', by }, tx);
    return true;
  });
  if (withdrawn) svc.audit.record({ event: 'account', action: 'consent-withdrawn', user: String(userId), client: clientId, by, address });
  return withdrawn;
}
