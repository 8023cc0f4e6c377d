// Closing grants: every way a session ends — sign-out, revocation, logout, the
// resource API, reuse of a rotated refresh token, replay of a code, a password
// change, a deleted user or client — goes through closeGrants here. It closes in
// the database (api/store/sessions.ts closeGrants: serialized with refreshes, so
// closing beats using), then this process's caches forget the sessions at once
// (the others hear of it through the change feed) and the audit records who did it.
import type { Actor, CloseReason, Audit } from '../audit.js';
import { withTransaction, type Transaction, type Pool } from '../db/pool.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { ClosedSession, EventFacts } from '../store/notices.js';
import type { Client } from '../types.js';
import { deleteBrowserSessionsOfUser, holdBrowserSession } from '../store/browser-sessions.js';
import { deletePendingCodes } from '../store/authorization-codes.js';
import { clients } from '../store/clients.js';
import { deletePendingDeviceCodes } from '../store/device-codes.js';
import { deleteSignInStepsOfUser } from '../store/sign-in-steps.js';
import { deleteLinksOfUser } from '../store/account-links.js';
import { lockUser } from '../store/users.js';
import type { Stored } from '../store/resources.js';
import { closeGrants as closeInDatabase, type CloseSelector, type SessionRow } from '../store/sessions.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
}

/** Why sessions are closed, and by whom: what the audit records of it. */
export interface Closing {
  how: CloseReason;
  by: Actor;
}

/** Drops a session from this process's cache at once; other processes hear of it through the change feed. */
export function forgetSession(svc: Pick<Needs, 'sessions'>, s: SessionRow): void {
  svc.sessions.invalidate(s.id, ...(s.accessTokenHash ? [s.accessTokenHash.toString('hex')] : []));
}

/**
 * Closes the sessions `selector` names (see CloseSelector) and returns them. In
 * `tx` when the close belongs to a larger change (a code replay, a password
 * change), else in a transaction of its own.
 */
export async function closeGrants(
  svc: Pick<Needs, 'pool' | 'sessions' | 'audit'>,
  selector: CloseSelector,
  closing: Closing,
  tx?: Transaction,
): Promise<SessionRow[]> {
  const close = async (t: Transaction): Promise<SessionRow[]> => recordClose(svc, t, await closeInDatabase(t, selector), closing);
  const rows = tx ? await close(tx) : await withTransaction(svc.pool, close);
  return closed(svc, rows);
}

/**
 * The audit event of a close, in the transaction that closes (api/audit.ts recordIn): who closed
 * which sessions, and why; with, for the outbox of notices, each session's client, person and the
 * browser session it came from (its ID tokens' `sid`).
 */
async function recordClose(svc: Pick<Needs, 'audit'>, tx: Transaction, rows: SessionRow[], closing: Closing): Promise<SessionRow[]> {
  if (!rows.length) return rows;
  const facts: EventFacts = { closed: rows.map(closedSession) };
  await svc.audit.recordIn(tx, { event: 'session_closed', sessions: rows.map((s) => s.id), ...closing }, facts);
  return rows;
}

/** A closed session as the outbox's kinds (api/notices/kinds.ts) and a sign-out's SAML logout (api/saml/logout-chains.ts) see it. */
export function closedSession(s: SessionRow): ClosedSession {
  const sid = s.details?.sid;
  // The sub its client was given of the person (api/credentials/tokens.ts personSub), kept now: a deleted person's is gone with them.
  const subject = s.details?.subject as { iss?: unknown; sub?: unknown } | undefined;
  const sub = s.userId !== null && subject?.iss === undefined && typeof subject?.sub === 'string' ? subject.sub : undefined;
  // A SAML app's sign-in (api/saml/sign-ins.ts) keeps the NameID its assertion gave.
  const saml = s.details?.saml as { nameId?: unknown; nameIdFormat?: unknown } | undefined;
  return {
    session: s.id,
    client: s.clientId,
    user: s.userId,
    ...(sub !== undefined ? { sub } : {}),
    sid: typeof sid === 'string' ? sid : null,
    ...(typeof saml?.nameId === 'string' && typeof saml.nameIdFormat === 'string'
      ? { saml: { nameId: saml.nameId, nameIdFormat: saml.nameIdFormat } }
      : {}),
  };
}

/** What follows a close in the database: this process forgets the sessions. */
function closed(svc: Pick<Needs, 'sessions'>, rows: SessionRow[]): SessionRow[] {
  for (const s of rows) forgetSession(svc, s);
  return rows;
}

/** Deletes a client through the box API: its sessions close in the same transaction (`tx`, or one of its own). */
export async function removeClient(
  svc: Pick<Needs, 'pool' | 'sessions' | 'audit'>,
  id: string,
  by: Actor,
  tx?: Transaction,
): Promise<Stored<Client> | undefined> {
  const remove = async (t: Transaction): Promise<Awaited<ReturnType<typeof clients.removeWithSessionsIn>>> => {
    const result = await clients.removeWithSessionsIn(t, id, null);
    if (result) await recordClose(svc, t, result.closed, { how: 'client-deleted', by });
    return result;
  };
  const result = tx ? await remove(tx) : await withTransaction(svc.pool, remove);
  if (result) closed(svc, result.closed);
  return result?.removed;
}

/**
 * A person's credentials changed (a new password), or they are gone: everything
 * the old credentials obtained ends, in `tx` with the change — signed-in browsers,
 * sign-ins half made, reset links mailed,
 * codes not yet exchanged, device codes allowed but not yet picked up, and every
 * grant. Artefacts first: an exchange racing this holds its code's row until it
 * commits, and the grants' close that follows then sees the session it made.
 */
export async function endPersonsGrants(
  svc: Pick<Needs, 'pool' | 'sessions' | 'audit'>,
  tx: Transaction,
  userId: number,
  closing: Closing,
): Promise<SessionRow[]> {
  // First the person's row: a sign-in recording a session or a step holds it (store/users.ts
  // holdPerson), so it finishes before this ends what it made, or waits and finds nothing.
  await lockUser(tx, userId);
  // A reset link asked for before (by a thief of the mailbox, say) must not undo what ends here.
  await deleteLinksOfUser(tx, userId, 'reset');
  await deleteSignInStepsOfUser(tx, userId);
  await deleteBrowserSessionsOfUser(tx, userId);
  await deletePendingCodes(tx, { user: userId });
  await deletePendingDeviceCodes(tx, { user: userId });
  return closeGrants(svc, { user: userId }, closing, tx);
}

/** A browser signed out (api/http/browser-session.ts): what was issued through it ends, as `endPersonsGrants` does for a person. */
export async function endBrowsersGrants(
  svc: Pick<Needs, 'pool' | 'sessions' | 'audit'>,
  tx: Transaction,
  sid: string,
  closing: Closing,
): Promise<SessionRow[]> {
  await deletePendingCodes(tx, { sid });
  await deletePendingDeviceCodes(tx, { sid });
  return closeGrants(svc, { sid }, closing, tx);
}

/**
 * Runs `issue` (a code, an implicit token, a device code's approval) in a
 * transaction that holds the browser session `sid` signed in until it commits;
 * undefined, issuing nothing, when the session has ended. A sign-out or password
 * change racing it waits, and then ends what it issued (endBrowsersGrants,
 * endPersonsGrants): nothing a browser obtains outlives its sign-out.
 */
export async function whileSignedIn<T>(
  svc: Pick<Needs, 'pool'>,
  sid: string,
  issue: (tx: Transaction) => Promise<T>,
): Promise<T | undefined> {
  return withTransaction(svc.pool, async (tx) => ((await holdBrowserSession(tx, sid)) ? issue(tx) : undefined));
}
