// A SAML app's sign-in, kept as a session row beside the grants of OpenID Connect apps: that this
// browser session (its sid, the SessionIndex the assertion carried) signed in to that app, with the
// NameID the app was given. Why a session row and not a table of its own: every close of the box
// (a sign-out, an admin's close, a password change or reset, the person turned off or deleted, the
// app removed) already ends the rows of that sid or that person in its own transaction and hands
// what it ended to the outbox of notices (api/credentials/closing.ts, ClosedSession); one more row
// there is told of by every one of those paths at once, with nothing to keep in step. The row holds
// no token (no digest: nothing is ever found by it), and it ends with the browser session at the latest.
import type { Pool } from '../db/pool.js';
import { closeGrants, whileSignedIn, type Closing } from '../credentials/closing.js';
import { insertSessions, newSessionId, type SessionRow } from '../store/sessions.js';
import type { NameIdFormat } from './names.js';

/** The session row's `type` and `origin`: a SAML assertion, not an OAuth grant. */
export const SAML_SIGN_IN = 'saml';

/** What the box gave an app of a person signed in at one browser session. */
export interface SamlSignIn {
  clientId: string;
  userId: number;
  /** The browser session's sid: the assertion's SessionIndex. */
  sid: string;
  nameId: { format: NameIdFormat; value: string };
  /** When the browser session ends on its own: the row stands no longer. */
  until: Date;
}

/**
 * Records `signIn` while the browser session holds (a sign-out racing it waits and then ends this
 * row too, api/credentials/closing.ts whileSignedIn); false when the session ended first, and the
 * app must then be given nothing.
 */
export async function recordSamlSignIn(svc: { pool: Pool }, signIn: SamlSignIn, now = new Date()): Promise<boolean> {
  const id = newSessionId(now.getTime());
  const row: SessionRow = {
    id,
    type: SAML_SIGN_IN,
    origin: SAML_SIGN_IN,
    clientId: signIn.clientId,
    userId: signIn.userId,
    audience: null,
    scope: null,
    start: now,
    exp: signIn.until,
    accessTokenHash: null,
    refreshTokenHash: null,
    refreshTokenExp: null,
    refreshUsedAt: null,
    active: true,
    end: null,
    parent: null,
    family: id,
    kid: null,
    details: { sid: signIn.sid, saml: { nameId: signIn.nameId.value, nameIdFormat: signIn.nameId.format } },
    jkt: null,
    refreshJkt: null,
    x5t: null,
  };
  return (await whileSignedIn(svc, signIn.sid, async (tx) => insertSessions(tx, [row]).then(() => true))) === true;
}

/**
 * An app's own LogoutRequest (api/http/routes/saml.ts /auth/saml/slo): its sign-in at this browser
 * session ends first, closed by the app itself, so that the close of the box session that follows
 * tells every other app and not the one that asked (Profiles §4.4.3.3: the identity provider
 * propagates the logout to "each session participant [...] other than the requester").
 * Whether there was one to end: an app that never signed in at this browser session is no participant of it.
 */
export async function endSamlSignIn(svc: Parameters<typeof closeGrants>[0], clientId: string, sid: string): Promise<boolean> {
  const closing: Closing = { how: 'logout', by: { client: clientId } };
  return (await closeGrants(svc, { sid, client: clientId }, closing)).length > 0;
}
