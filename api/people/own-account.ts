// What a person changes on their own account page (api/http/routes/account.ts): their password
// (the current one, or a second factor given minutes ago, stands for them), and a consent they
// withdraw (a browser or a grant they end is accounts.ts endSignIn, endGrant). Each in one transaction with what it closes
// (api/credentials/closing.ts), so that nothing issued meanwhile outlives it.
import type { Actor } from '../audit.js';
import { acrOf, ACR_MFA, meets } from '../credentials/acr.js';
import { closeGrants, endPersonsGrants } from '../credentials/closing.js';
import { withTransaction, type Transaction } from '../db/pool.js';
import { deleteConsent } from '../store/browser.js';
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
