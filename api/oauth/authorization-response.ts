// The authorization response (RFC 6749 §4.1.2, §4.2.2; OpenID Connect Core §3.1.2.5, §3.2.2.5): what
// an authorization request that was read and checked (./authorization-request.ts) and granted by its
// person (./interaction.ts) issues. A code; or, for the implicit kinds, an access token and an ID
// token, never a refresh token: in the request's response mode (./response-mode.ts).
import { subjectFor, type SubjectSettings } from '../credentials/subjects.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { PrincipalUser } from '../types.js';
import { randomBytes } from 'node:crypto';
import type { Transaction, Pool } from '../db/pool.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Metrics } from '../metrics.js';
import type { Audit } from '../audit.js';
import { insertSessions, type SessionRow } from '../store/sessions.js';
import { whileSignedIn } from '../credentials/closing.js';
import { createAuthorizationCode, type AuthorizationCode } from '../store/authorization-codes.js';
import { type BrowserSession } from '../store/browser-sessions.js';
import { consumePushedRequest, type PushedRequestClaim } from '../store/pushed-requests.js';
import type { UserRow } from '../store/users.js';
import { errorAnswer, type AuthorizationRequest, type PageProblem } from './authorization-request.js';
import { answerTo, type ClientAnswer } from './response-mode.js';
import { browserDetails, idTokenFor } from './openid.js';
import { pushedRequestGone } from './par.js';
import { shapedClaimsFor } from './shaped-claims.js';
import { mint, tokenHash } from '../credentials/tokens.js';
import { codeLifetimeSeconds } from './fapi2.js';
import { hookedClaims, withHooked, type TokenHookServices } from './token-hooks.js';
import type { HookedClaims } from './grants/grant.js';
import { OAuthError } from '../credentials/errors.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  /** What a person's `sub` is for each client (api/credentials/subjects.ts). */
  subjects: SubjectSettings;
  log: Logger;
  pool: Pool;
  keyring: Keyring;
  metrics: Metrics;
  audit: Audit;
  /** The people as decisions see them: the person whose claims a client shapes. */
  users: RecordCache<PrincipalUser>;
}

/** What issuing the response needs: the store, the keys that sign, the metrics and the audit of what it issues, the Hooks. */
export type AuthorizationResponseServices = Pick<
  Needs,
  'audit' | 'config' | 'subjects' | 'keyring' | 'log' | 'metrics' | 'pool' | 'users'
> &
  TokenHookServices;

/**
 * Everything issuing the response does to the database (fosite's storage interfaces: a flow states
 * the methods it needs): all of it in one transaction, `tx`, that holds the browser's sign-in.
 */
export interface AuthorizationResponseStore {
  /**
   * Runs `issue` in a transaction holding the browser session `sid` signed in until it commits
   * (credentials/closing.ts); undefined, nothing issued, when the sign-in has ended.
   */
  whileSignedIn<T>(svc: Pick<Needs, 'pool'>, sid: string, issue: (tx: Transaction) => Promise<T>): Promise<T | undefined>;
  /** Deletes the pushed request this answer ends; false when it is gone (another use of its request_uri ended it, or it expired). */
  consumePushedRequest(tx: Transaction, claim: PushedRequestClaim, now: Date): Promise<boolean>;
  /** The code of the code flow, stored by its hash. */
  createAuthorizationCode(tx: Transaction, hash: Buffer, code: Omit<AuthorizationCode, 'usedAt' | 'sessionId'>): Promise<void>;
  /** The session of an implicit access token. */
  insertSessions(tx: Transaction, sessions: SessionRow[]): Promise<void>;
  /** The person as the client's shaped claims see them (Client.claims): their upstream identities read beside the row held. */
}

const store: AuthorizationResponseStore = {
  whileSignedIn,
  consumePushedRequest,
  createAuthorizationCode,
  insertSessions,
};

/**
 * Issues what the request asked for to the signed-in person; returns the answer
 * to the client (or, for a pushed request another use answered first, the
 * page of pushedRequestGone). What is issued here carries the browser session's
 * sid, so that logging that browser out (RP-initiated logout) ends it, and is
 * issued only while that session lasts (whileSignedIn): a sign-out or password
 * change racing it ends it too.
 */
export async function grantAuthorization(
  svc: AuthorizationResponseServices,
  req: AuthorizationRequest,
  user: UserRow,
  browser: BrowserSession,
): Promise<ClientAnswer | PageProblem> {
  // The implicit kinds' tokens: the Hooks of tokenIssuing and idTokenIssuing are asked before the
  // transaction, as at the token endpoint (a code's tokens are asked about there).
  let hooked: HookedClaims | undefined;
  try {
    hooked = await implicitHooked(svc, req, user, browser);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    // Back to the client (RFC 6749 §4.2.2.1), which may show the description on a page of its own: the
    // hook's words as errorFields lets them travel (printable ASCII), and no markup (< > & percent-encoded).
    const code = err.code === 'temporarily_unavailable' ? 'temporarily_unavailable' : 'access_denied';
    return errorAnswer(svc.config.baseUrl, req, code, err.message.replace(/[<>&]/g, encodeURIComponent));
  }
  const issued = await store.whileSignedIn(svc, browser.sid, (tx) => issue(svc, tx, req, user, browser, hooked));
  return issued ?? errorAnswer(svc.config.baseUrl, req, 'access_denied', 'the sign-in ended before the request was granted');
}

/** What the Hooks add to an implicit answer's tokens (nothing for a code): throws their refusal as an OAuthError. */
async function implicitHooked(
  svc: AuthorizationResponseServices,
  req: AuthorizationRequest,
  user: UserRow,
  browser: BrowserSession,
): Promise<HookedClaims | undefined> {
  if (req.responseType === 'code') return undefined;
  const grant = { userId: user.id, scope: req.scope ?? null, audience: req.audience ?? null, details: browserDetails(browser, req.claims) };
  return hookedClaims(svc, 'authorization', req.client.resource, async () => grant, 'access_denied', {
    access: req.responseType !== 'id_token',
    id: req.responseType.startsWith('id_token'),
  });
}

async function issue(
  svc: AuthorizationResponseServices,
  tx: Transaction,
  req: AuthorizationRequest,
  user: UserRow,
  browser: BrowserSession,
  hooked: HookedClaims | undefined,
): Promise<ClientAnswer | PageProblem> {
  const client = req.client.resource;
  // A pushed request is answered once: it is deleted in the transaction that issues, and of requests
  // racing with one request_uri only the one that deleted it answers the client; the others are shown
  // what any used request_uri shows.
  if (req.pushed && !(await store.consumePushedRequest(tx, req.pushed, new Date()))) {
    return pushedRequestGone(svc, client.id, 'request_uri answered by another use');
  }
  if (req.responseType === 'code') {
    const code = randomBytes(32).toString('base64url');
    await store.createAuthorizationCode(tx, tokenHash(code), {
      clientId: client.id,
      userId: user.id,
      redirectUri: req.redirectUri,
      scope: req.scope ?? null,
      codeChallenge: req.codeChallenge ?? null,
      expiresAt: new Date(Date.now() + codeLifetimeSeconds(svc.config.authCodeTtlSeconds, client) * 1000),
      nonce: req.nonce ?? null,
      claims: req.claims,
      audience: req.audience ?? null,
      authTime: browser.authTime,
      sid: browser.sid,
      amr: browser.amr,
      dpopJkt: req.dpopJkt ?? null,
    });
    return answerTo(svc.config.baseUrl, req, { code, state: req.state });
  }
  // The implicit kinds: what was asked for travels in the fragment (or a form posted); never a refresh token.
  const settings = client.auth?.implicit ?? {};
  const now = Date.now();
  const values: Record<string, string | undefined> = { state: req.state, ...(req.scope ? { scope: req.scope } : {}) };
  let accessToken: string | undefined;
  const details = browserDetails(browser, req.claims);
  const grant = { userId: user.id, scope: req.scope ?? null, audience: req.audience ?? null, details };
  const shaped = await shapedClaimsFor(svc, client, grant);
  if (req.responseType !== 'id_token') {
    const { session, response } = mint(
      {
        type: 'implicit',
        origin: 'implicit',
        client,
        settings: { ...settings, refresh_token: false },
        userId: user.id,
        // The implicit flow authenticates no client (RFC 6749 §4.2).
        clientAuthMethod: 'none',
        scope: req.scope ?? null,
        audience: req.audience ?? null,
        refresh: false,
        details,
        shaped: withHooked(hooked?.access, shaped),
        personSub: subjectFor(svc.subjects, client, user),
      },
      svc.config.baseUrl,
      svc.keyring.active,
      now,
    );
    await store.insertSessions(tx, [session]);
    svc.metrics.tokens.inc({ grant: 'implicit' });
    svc.audit.record({
      event: 'token_issued',
      client: client.id,
      grant: 'implicit',
      session: session.id,
      user: String(user.id),
      client_auth_method: 'none',
    });
    accessToken = response.access_token;
    Object.assign(values, {
      access_token: accessToken,
      token_type: 'Bearer',
      ...(response.expires_in ? { expires_in: String(response.expires_in) } : {}),
    });
  }
  if (req.responseType.startsWith('id_token')) {
    values.id_token = idTokenFor(svc, settings, {
      client,
      user,
      scope: req.scope ?? null,
      nonce: req.nonce,
      claims: req.claims?.id_token ?? [],
      authTime: browser.authTime,
      amr: browser.amr,
      sid: browser.sid,
      shaped: withHooked(hooked?.id, shaped),
      ...(accessToken ? { accessToken } : {}),
      now,
    });
  }
  return answerTo(svc.config.baseUrl, req, values);
}
