// The ways back in that go through a person's mailbox (docs/guides/password-reset.md): a
// password reset and an address proven by a mailed link. The mail is written to the outbox in
// the transaction of the request and sent after the page has answered (api/mail/outbox.ts), so
// asking for a reset does the same work — count, one INSERT — whether or not the address has an
// account, and a mail server that is down or slow holds no request. A link is used by deleting
// it (one DELETE wins a race), is void once the person's address is another, and a reset, like
// every way back in, ends everything the person had obtained (docs/architecture.md §12).
import { endPersonsGrants } from '../credentials/closing.js';
import { Argon2Busy, type Argon2 } from '../credentials/secrets.js';
import { tokenHash } from '../credentials/tokens.js';
import { withTransaction, type Transaction } from '../db/pool.js';
import { FACTOR_KINDS } from '../factor-kinds.js';
import { sameAddress } from '../input.js';
import { deleteLinksOfUser, findLink, takeLink, type AccountLink, type LinkPurpose } from '../store/account-links.js';
export { LINK_MINUTES } from '../store/account-links.js';
import { enqueueMail } from '../mail/kinds.js';
import { getUser, lockUser, updateUser, type UserRow } from '../store/users.js';
import { holdBrowserSession } from '../store/browser-sessions.js';
import { listFactors, removeFactor, type FactorSummary } from '../store/factors.js';
import { tellOfFactorChange, tellOfPasswordChange } from './notices.js';
import { ConstraintViolation } from '../store/constraints.js';
import { changeAccount, type AccountServices } from './accounts.js';

/** A link still means its person when their address is still the one it was sent to. */
const stillTheirs = (user: UserRow | undefined, sentTo: string): user is UserRow => !!user && sameAddress(user.email, sentTo);

/**
 * Asks for a reset link to `email`: the outbox resolves the person when it sends (nobody: no
 * mail), so this does the same for every address. The caller has counted it (attempts.ts).
 */
export async function requestReset(
  svc: Pick<AccountServices, 'pool' | 'audit'>,
  email: string,
  language: string | undefined,
  address: string,
): Promise<void> {
  await enqueueMail(svc.pool, { kind: 'password-reset', address: email, ...(language ? { language } : {}) });
  svc.audit.record({ event: 'account', action: 'password-reset-requested', email, by: {}, address });
}

/** The person a link in a page's URL is for, while it may be used; it is left as it is (the page's form uses it). */
export async function linkHolder(
  svc: Pick<AccountServices, 'pool'>,
  token: string,
  purpose: LinkPurpose,
): Promise<{ user: UserRow; sentTo: string } | undefined> {
  const link = token ? await findLink(svc.pool, tokenHash(token), purpose) : undefined;
  const user = link && (await getUser(svc.pool, link.userId));
  // A change link went to the address that is to become theirs; the others, to the one that is.
  // A person turned off has no link that works (one made as they were turned off, say).
  const holds = (purpose === 'change' ? !!user : stillTheirs(user, link?.email ?? '')) && user?.active === true;
  return link && user && holds ? { user, sentTo: link.email } : undefined;
}

/**
 * Uses up the link `token` of `purpose` in `tx`, under its person's row: the row first, then the
 * link, the order every change of theirs takes them in (a reset deletes their other reset links
 * under it, a turn-off all of them). Taken the other way round, two resets with two links of one
 * person at once (at two replicas), or a reset and a turn-off, each held what the other waited
 * for, and PostgreSQL ended one with a deadlock error: a 500. The link, when it was still valid.
 */
async function takeLinkOfPerson(tx: Transaction, token: string, purpose: LinkPurpose): Promise<AccountLink | undefined> {
  const seen = await findLink(tx, tokenHash(token), purpose);
  if (!seen || !(await lockUser(tx, seen.userId))) return undefined;
  return takeLink(tx, tokenHash(token), purpose);
}

/**
 * Sets a new password through a reset link, in one transaction: the link is used up, the
 * person's other reset links go, and every browser, sign-in step, code and grant of theirs ends
 * (a sign-in racing it either committed first and is ended here, or finds the password changed:
 * api/http/sign-in-steps.ts). The factors the person chose (`remove`) go with it — one they do not
 * know may have been added by whoever held their browser —, but never every one of them
 * (`keep-one`, and nothing changes): a reset proves a mailbox, not a second factor, so what is left
 * is asked at the next sign-in. Codes by email, which that mailbox opens, go with it whenever
 * another factor stays, and do not count as the one kept. The link proved the mailbox, so the address is verified too. The
 * person, or undefined when the link is unknown, used, expired or for an address no longer theirs.
 */
export async function resetPassword(
  svc: AccountServices & { argon2: Argon2 },
  token: string,
  password: string,
  address: string,
  remove: readonly number[] = [],
): Promise<UserRow | 'keep-one' | 'busy' | undefined> {
  let passwordHash: string;
  try {
    // In sign-ups' lane: a flood of resets waits behind sign-ins, admins and clients (api/credentials/secrets.ts).
    passwordHash = await svc.argon2.hash(password, 'sign-up');
  } catch (err) {
    if (err instanceof Argon2Busy) return 'busy';
    throw err;
  }
  const reset = await withTransaction(svc.pool, async (tx) => {
    const link = await takeLinkOfPerson(tx, token, 'reset');
    if (!link) return undefined;
    const person = await getUser(tx, link.userId);
    // Turned off after the link was made (a send racing the deactivation, which deletes links): void too.
    if (!stillTheirs(person, link.email) || !person.active) return undefined;
    // Read under the person's row: a factor added meanwhile counts among those that stay.
    const factors = await listFactors(tx, person.id);
    // Codes by email open with the mailbox the link just proved: beside another factor they would
    // make the mailbox the whole account, so they go, and the factor that stays is one of the others.
    const mailbox = (f: FactorSummary): boolean => f.kind === FACTOR_KINDS.email.kind;
    const guarding = factors.some((f) => !mailbox(f)) ? factors.filter((f) => !mailbox(f)) : factors;
    const chosen = guarding.filter((f) => remove.includes(f.id));
    // Thrown, so that the link's use rolls back with the rest: the page is shown again with it.
    if (chosen.length && chosen.length === guarding.length) throw new KeepOne();
    const removing = factors.filter((f) => remove.includes(f.id) || (guarding !== factors && mailbox(f)));
    const by = { user: String(person.id) };
    // The link proved the mailbox as a verify link does: the address is verified, the account open.
    await updateUser(tx, person.id, { passwordHash, emailVerified: true, mustVerifyEmail: false });
    await deleteLinksOfUser(tx, person.id, 'reset');
    await endPersonsGrants(svc, tx, person.id, { how: 'password-reset', by });
    await tellOfPasswordChange(svc, tx, person);
    await svc.audit.recordIn(tx, { event: 'account', action: 'password-reset', user: String(person.id), by, address });
    for (const factor of removing) {
      await removeFactor(tx, person.id, factor.id);
      await tellOfFactorChange(svc, tx, person, { change: 'removed', factor: factor.kind, name: factor.name });
      await svc.audit.recordIn(tx, {
        event: 'factor',
        action: 'removed',
        kind: factor.kind,
        factor: String(factor.id),
        user: String(person.id),
        by,
        address,
      });
    }
    return person;
  }).catch((err: unknown) => {
    if (err instanceof KeepOne) return 'keep-one' as const;
    throw err;
  });
  if (reset === undefined || reset === 'keep-one') return reset;
  svc.users.invalidate(String(reset.id));
  return reset;
}

/** A reset that would remove every factor of its person: refused, nothing done. */
class KeepOne extends Error {}

/**
 * Proves the person's address through a verify link, their password checked against
 * `passwordHash` (still theirs: a reset or change meanwhile voids the check); the person, or
 * undefined as resetPassword says.
 */
export async function verifyEmail(
  svc: AccountServices,
  token: string,
  passwordHash: string,
  address: string,
): Promise<UserRow | undefined> {
  const user = await withTransaction(svc.pool, async (tx) => {
    const link = await takeLinkOfPerson(tx, token, 'verify');
    if (!link) return undefined;
    const person = await getUser(tx, link.userId);
    // Turned off after the link was made (a send racing the deactivation, which deletes links): void too.
    if (!stillTheirs(person, link.email) || !person.active || person.passwordHash !== passwordHash) return undefined;
    await updateUser(tx, person.id, { emailVerified: true, mustVerifyEmail: false });
    await deleteLinksOfUser(tx, person.id, 'verify');
    const by = { user: String(person.id) };
    await svc.audit.recordIn(tx, { event: 'account', action: 'email-verified', user: String(person.id), email: person.email, by, address });
    return person;
  });
  if (!user) return undefined;
  svc.users.invalidate(String(user.id));
  return user;
}

/** Mails the person a new verify link for their current address (the caller has counted it). */
export async function resendVerification(svc: Pick<AccountServices, 'pool'>, user: UserRow, language: string | undefined): Promise<void> {
  await enqueueMail(svc.pool, { kind: 'verify-email', address: user.email, userId: user.id, ...(language ? { language } : {}) });
}

/**
 * A person asks for a new address (their account page): a link goes to it, and their address
 * changes only when the link is followed with their password (confirmEmailChange). Until then
 * nothing is theirs that they have not proven — no address squatted, no account's address told
 * apart from a free one (a taken address just gets no mail). A newer request voids older links.
 * False when `sid`, the browser asking, is signed in no more.
 */
export async function requestEmailChange(
  svc: Pick<AccountServices, 'pool' | 'audit'>,
  user: UserRow,
  newEmail: string,
  ask: { sid: string; language: string | undefined; address: string },
): Promise<boolean> {
  const asked = await withTransaction(svc.pool, async (tx) => {
    if (!(await lockUser(tx, user.id)) || !(await holdBrowserSession(tx, ask.sid))) return false;
    await deleteLinksOfUser(tx, user.id, 'change');
    await enqueueMail(tx, {
      kind: 'confirm-email-change',
      address: newEmail,
      userId: user.id,
      ...(ask.language ? { language: ask.language } : {}),
    });
    const by = { user: String(user.id) };
    await svc.audit.recordIn(tx, {
      event: 'account',
      action: 'email-change-requested',
      user: String(user.id),
      email: newEmail,
      by,
      address: ask.address,
    });
    return true;
  });
  return asked;
}

/**
 * Makes the address a change link was sent to the person's, verified (the link proved the
 * mailbox, `passwordHash` the account), through accounts.ts changeAccount: the old address is
 * told, the person's other links go. 'taken' when another account took the address meanwhile;
 * undefined when the link does not work.
 */
export async function confirmEmailChange(
  svc: AccountServices,
  token: string,
  passwordHash: string,
): Promise<UserRow | 'taken' | undefined> {
  const link = await withTransaction(svc.pool, (tx) => takeLink(tx, tokenHash(token), 'change'));
  if (!link) return undefined;
  const by = { user: String(link.userId) };
  try {
    return await changeAccount(svc, link.userId, { email: link.email, emailVerified: true }, by, { passwordHash, active: true });
  } catch (err) {
    if (err instanceof ConstraintViolation && err.field === 'email') return 'taken';
    throw err;
  }
}

/** The person's second factors, as a reset's page lists them (each may be removed with the reset, not every one). */
export const factorsToList = (svc: Pick<AccountServices, 'pool'>, userId: number): Promise<FactorSummary[]> =>
  listFactors(svc.pool, userId);
