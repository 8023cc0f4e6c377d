// Signed-in browsers: what a sign-in records, what continues it, and what signing out ends
// (docs/security.md#what-a-sign-in-proves). A browser holds a random token (the door keeps it in
// a cookie); the box keeps only its SHA-256, with who signed in, when (`auth_time`), what they
// proved (`amr`), when they last proved something (`proof_at`) and until when.
//
// A session's proof is what it proved at its own time. A sign-in records a new session, its
// sign-in time and its last proof now. A step-up and a factor enrolled in a session continue it
// under the same sid (what was issued through it stays tied to it) with its sign-in time and its
// end; a password change continues it under a new sid. An enrolment proves nothing of who holds
// the browser: a session that enrolled a factor is no longer `proven`, and never stands for the
// password (./own-account.ts freshSecondFactor).
import { randomBytes } from 'node:crypto';
import type { Audit, AuditEvent } from '../audit.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Config } from '../config.js';
import { acrOf } from '../credentials/acr.js';
import { endBrowsersGrants } from '../credentials/closing.js';
import { tokenHash } from '../credentials/tokens.js';
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import {
  createBrowserSession,
  deleteBrowserSession,
  endForStepUp,
  findBrowserSession,
  type BrowserSession,
  type NewBrowserSession,
} from '../store/browser-sessions.js';
import { deleteSignInStepsReplacing, takeSignInStep } from '../store/sign-in-steps.js';
import { factorState } from '../store/factors.js';
import type { SessionRow } from '../store/sessions.js';
import { getUser, type UserRow } from '../store/users.js';
import { nextStep } from './factors.js';
import { providerStands } from './upstream/flow.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
}

export type BrowserSessionServices = Pick<Needs, 'config' | 'pool' | 'sessions' | 'audit'>;

/** Where a request came from, as the door read it: what the person's account page shows of a sign-in. */
export interface BrowserFacts {
  address: string;
  userAgent: string | null;
}

/** A token the door hands the browser (in a cookie), and until when it holds. */
export interface BrowserToken {
  token: string;
  expiresAt: Date;
}

/** Records `session` under a new random token: the token, for the door to hand the browser. */
async function record(tx: Transaction, from: BrowserFacts, session: Omit<NewBrowserSession, 'from'>): Promise<BrowserToken> {
  const token = randomBytes(32).toString('base64url');
  await createBrowserSession(tx, tokenHash(token), { ...session, from });
  return { token, expiresAt: session.expiresAt };
}

/**
 * A sign-in of `userId` with what it proved (`amr`): a new session, its sign-in time and its last
 * proof now. In `tx`, under the person's row (./steps.ts holds it): a change of their credentials
 * racing it ends it too. `enrolled`: a factor of `amr` was enrolled in the sign-in rather than
 * given, so the session is not `proven` (one signed in at an upstream provider, its second factor
 * an app it just added, knows no password of the box).
 */
export async function recordSignIn(
  svc: { config: Pick<Config, 'browserSessionHours'> },
  tx: Transaction,
  from: BrowserFacts,
  proof: { userId: number; amr: readonly string[]; provider: string | null; enrolled: boolean },
): Promise<BrowserToken> {
  // The process's clock, as every time the box compares with it (an expiry, a proof's age).
  const now = new Date();
  const expiresAt = new Date(now.getTime() + svc.config.browserSessionHours * 3600_000);
  const { userId, amr, provider, enrolled } = proof;
  return record(tx, from, { userId, amr, provider, proven: !enrolled, authTime: now, proofAt: now, expiresAt });
}

/**
 * What a session continued in another proved since: its last proof (a factor given in a step-up
 * renews it; `kept`: the session's own), and whether a factor was enrolled in it (on the person's
 * own page, or by a step-up that enrols) rather than given. Neither is a sign-in: the session's
 * sign-in time and its end stay.
 */
export interface ProvenSince {
  proofAt: Date | 'kept';
  enrolled: boolean;
}

/** What a strengthened session's audit event says of it: its class and amr before and after, and how it rose. */
function strengthened(
  before: readonly string[],
  after: readonly string[],
  since: ProvenSince,
): Pick<Extract<AuditEvent, { event: 'session_strengthened' }>, 'action' | 'from' | 'to'> {
  return {
    action: since.enrolled ? 'factor-enrolled' : 'factor-given',
    from: { acr: acrOf(before), amr: [...before] },
    to: { acr: acrOf(after), amr: [...after] },
  };
}

/**
 * Strengthens the session `sid` with what was just proven or enrolled in it (`amr`): a new token,
 * the same sid, so that one sign-out still ends everything issued through it; its audit event
 * (`session_strengthened`, which the Shared Signals transmitter reports as CAEP
 * assurance-level-change when the class rose) in the same transaction. Undefined, and nobody
 * signed in, when the session ended meanwhile (a sign-out, a password change or a reset that won
 * the race, its end come): a change made from a session never outlives the session's end.
 */
export async function strengthen(
  svc: { audit: Pick<Audit, 'recordIn'> },
  tx: Transaction,
  from: BrowserFacts,
  amr: readonly string[],
  session: Pick<BrowserSession, 'userId' | 'sid' | 'provider'>,
  since: ProvenSince,
): Promise<BrowserToken | undefined> {
  const kept = await endForStepUp(tx, session.sid, session.userId);
  if (!kept) return undefined;
  const token = await record(tx, from, {
    userId: session.userId,
    amr,
    provider: session.provider,
    sid: session.sid,
    authTime: kept.authTime,
    expiresAt: kept.expiresAt,
    proofAt: since.proofAt === 'kept' ? kept.proofAt : since.proofAt,
    proven: kept.proven && !since.enrolled,
  });
  const user = String(session.userId);
  await svc.audit.recordIn(tx, {
    event: 'session_strengthened',
    ...strengthened(kept.amr, amr, since),
    user,
    sid: session.sid,
    by: { user },
    address: from.address,
  });
  return token;
}

/**
 * Thrown in the transaction of a change made for a browser session when strengthen finds that
 * session ended meanwhile: the change (a factor enrolled in it) rolls back with it.
 */
export class EndedMeanwhile extends Error {}

/**
 * The session a person who changed their password goes on in (they stay signed in where they did
 * it): a new session and sid, with the ended one's sign-in time, last proof and end; not itself a
 * sign-in, so not `proven` (what stands for a password is a sign-in, never its continuation).
 */
export function continueSignIn(
  tx: Transaction,
  from: BrowserFacts,
  ended: Pick<BrowserSession, 'userId' | 'amr' | 'provider' | 'authTime' | 'proofAt' | 'expiresAt'>,
): Promise<BrowserToken> {
  const { userId, amr, provider, authTime, proofAt, expiresAt } = ended;
  return record(tx, from, { userId, amr, provider, authTime, proofAt, expiresAt, proven: false });
}

/** The browser session of this token, if it is still valid. */
export function browserSession(svc: Pick<Needs, 'pool'>, token: string | undefined): Promise<BrowserSession | undefined> {
  return token ? findBrowserSession(svc.pool, tokenHash(token)) : Promise.resolve(undefined);
}

/** Who a browser is signed in as, and its session. */
export interface SignedInPerson {
  user: UserRow;
  browser: BrowserSession;
}

/** The person the session of this token is, if any (and if they still exist, and the provider they signed in through is still enabled). */
export async function signedInPerson(svc: Pick<Needs, 'pool'>, token: string | undefined): Promise<SignedInPerson | undefined> {
  const browser = await browserSession(svc, token);
  if (!browser || !(await providerStands(svc.pool, browser.provider))) return undefined;
  const user = await getUser(svc.pool, browser.userId);
  return user && { user, browser };
}

/**
 * The signed-in person who may see and change their own account: this browser's sign-in meets
 * what the person's own rules ask (a person with a factor gave one). A sign-in from before they
 * enrolled, or from before an upgrade, proved a password only: it may not add or remove a passkey.
 */
export async function accountHolder(svc: Pick<Needs, 'pool'>, token: string | undefined): Promise<SignedInPerson | undefined> {
  const person = await signedInPerson(svc, token);
  return person && nextStep(person.browser.amr, await factorState(svc.pool, person.user.id), undefined) === 'done' ? person : undefined;
}

/**
 * Signs a browser out: its session ends, and so do the token sessions issued through it (they
 * carry its sid) and its codes not yet exchanged, as a person signing out expects of the apps
 * they signed in to with it. So does a sign-in step the browser is in the middle of, and any
 * step-up of the session: left, the next person at this browser could finish it (enrol a factor
 * of their own) and be signed in as the one who signed out. What it closed is returned: the SAML
 * apps among them are told through this browser (api/saml/logout-chains.ts).
 */
export async function signOut(
  svc: BrowserSessionServices,
  tokens: { session?: string | undefined; step?: string | undefined },
): Promise<SessionRow[]> {
  if (!tokens.session && !tokens.step) return [];
  return withTransaction(svc.pool, async (tx) => {
    if (tokens.step) await takeSignInStep(tx, tokenHash(tokens.step));
    const ended = tokens.session && (await deleteBrowserSession(tx, tokenHash(tokens.session)));
    if (!ended) return [];
    await deleteSignInStepsReplacing(tx, ended.sid);
    return endBrowsersGrants(svc, tx, ended.sid, { how: 'logout', by: { user: String(ended.userId) } });
  });
}
