// grant_type=authorization_code (RFC 6749 §4.1.3, PKCE per RFC 7636). A code is
// used once: a second exchange is refused and closes the session the first one
// obtained (RFC 6749 §4.1.2: the code was probably stolen). A confidential client
// proves itself with its secret, a public one with PKCE alone.
import type { Queryable, Transaction } from '../../db/pool.js';
import {
  authorizationCodeClient,
  findAuthorizationCodeForUpdate,
  markCodeUsed,
  peekAuthorizationCode,
  type AuthorizationCode,
} from '../../store/authorization-codes.js';
import { insertSessions, type CloseSelector, type SessionRow } from '../../store/sessions.js';
import type { Client, GrantSettings } from '../../types.js';
import { getUser, type UserRow } from '../../store/users.js';
import { closeGrants, type Closing } from '../../credentials/closing.js';
import { invalidGrant, OAuthError } from '../../credentials/errors.js';
import { grantedResource } from '../entitlements.js';
import { browserDetails, hasOpenid, idTokenFor } from '../openid.js';
import { shapedClaimsFor } from '../shaped-claims.js';
import { withHooked } from '../token-hooks.js';
import type { Params } from '../params.js';
import { verifierMatches } from '../../credentials/pkce.js';
import { mint, tokenHash } from '../../credentials/tokens.js';
import {
  commitThenRefuse,
  certificateBound,
  dpopBound,
  personSubject,
  notIssuedToClient,
  type Grant,
  type GrantServices,
  type Issued,
} from './grant.js';
import { listedInGrantTypes } from '../grant-types.js';

/**
 * Everything this grant does to the database (fosite's storage interfaces: a flow states the
 * methods it needs). An exchange runs in one transaction that commits even when it refuses
 * (commitThenRefuse): `tx` holds the code's lock from the read to the commit.
 */
export interface AuthorizationCodeStore {
  /** Whom a code was issued to, whatever became of it since (used, expired): for a client named by client_id alone. */
  authorizationCodeClient(db: Queryable, hash: Buffer): Promise<string | undefined>;
  /** The code as it is now, without a lock: what the box's Hooks are asked about before the transaction. */
  peekAuthorizationCode(db: Queryable, hash: Buffer): Promise<AuthorizationCode | undefined>;
  /** The code, locked until `tx` ends; undefined when there is none. */
  findAuthorizationCodeForUpdate(tx: Transaction, hash: Buffer): Promise<AuthorizationCode | undefined>;
  /** Spends the code, naming the session it obtained (null: it was refused). */
  markCodeUsed(tx: Transaction, hash: Buffer, sessionId: string | null): Promise<void>;
  /** The person the code was issued to, for the ID token. */
  getUser(tx: Transaction, id: number): Promise<UserRow | undefined>;
  /** The person of a grant as the client's shaped claims see them (Client.claims), read afresh. */
  /** The session the exchange issues. */
  insertSessions(tx: Transaction, sessions: SessionRow[]): Promise<void>;
  /** Closes what a replayed code obtained (the sessions, this process's cache of them, the audit: credentials/closing.ts). */
  closeGrants(svc: GrantServices, selector: CloseSelector, closing: Closing, tx: Transaction): Promise<SessionRow[]>;
}

const store: AuthorizationCodeStore = {
  authorizationCodeClient,
  peekAuthorizationCode,
  findAuthorizationCodeForUpdate,
  markCodeUsed,
  getUser,
  insertSessions,
  closeGrants,
};

const CODE = 'authorization code';

/**
 * What presenting `found` (the code as stored, locked) comes to: a refusal, which
 * spends the code unless it never was this client's; a replay of a spent code;
 * or the code to honour.
 */
export type CodeVerdict = { refuse: OAuthError; spend: boolean } | { replayed: AuthorizationCode } | { honour: AuthorizationCode };

/** `jkt`: the key of the token request's DPoP proof, if it sent one. */
export function judgeCode(client: Client, found: AuthorizationCode | undefined, params: Params, now: number, jkt?: string): CodeVerdict {
  const refuse = (description: string): CodeVerdict => ({ refuse: invalidGrant(description), spend: true });
  if (!found || found.clientId !== client.id) return { refuse: notIssuedToClient(CODE), spend: false };
  if (found.usedAt) return { replayed: found };
  if (found.expiresAt.getTime() <= now) return refuse('authorization code has expired');
  if (params.redirect_uri !== found.redirectUri) return refuse('redirect_uri differs from the one of the authorization request');
  if (found.codeChallenge) {
    if (!params.code_verifier) return refuse('code_verifier is required (the authorization request had a code_challenge)');
    if (!verifierMatches(params.code_verifier, found.codeChallenge)) return refuse('code_verifier does not match the code_challenge');
  } else if (params.code_verifier) {
    return refuse('code_verifier sent, but the authorization request had no code_challenge');
  }
  // RFC 9449 §10: "the authorization server computes the JWK thumbprint [...] of the proof-of-possession
  // public key in the DPoP proof and verifies that it matches the dpop_jkt parameter value in the
  // authorization request. If they do not match, it MUST reject the request."
  if (found.dpopJkt !== null) {
    if (jkt === undefined)
      return refuse('the authorization request bound this code to a DPoP key (dpop_jkt): send a DPoP proof of that key');
    if (jkt !== found.dpopJkt) return refuse("the DPoP proof's key is not the one the authorization request bound this code to (dpop_jkt)");
  }
  // RFC 8707 §2.2: the token request's resource may only name what the authorization request was
  // granted (./entitlements.ts grantedResource); the code is spent, as by every other refusal.
  try {
    grantedResource(found.audience, params.resource, CODE);
  } catch (err) {
    if (err instanceof OAuthError) return { refuse: err, spend: true };
    throw err;
  }
  return { honour: found };
}

export const authorizationCode: Grant = {
  type: 'authorization_code',
  clientAuthentication: 'if-confidential',
  requiredParameters: ['code'],
  permits: listedInGrantTypes('authorization_code'),
  credential: { name: CODE, issuedTo: (svc, params) => store.authorizationCodeClient(svc.pool, tokenHash(params.code!)) },

  async prospect(svc, params, client) {
    const found = await store.peekAuthorizationCode(svc.pool, tokenHash(params.code!));
    if (!found || found.clientId !== client.id || found.usedAt) return undefined;
    const { userId, scope, audience, sid, authTime, amr, claims } = found;
    return { userId, scope, audience, details: sid && authTime ? browserDetails({ sid, authTime, amr }, claims) : null };
  },

  async handle({ svc, params, client: { resource: client, method }, dpop, certificate, hooked }) {
    const hash = tokenHash(params.code!);
    const now = Date.now();
    return commitThenRefuse(svc.pool, async (tx): Promise<Issued | OAuthError> => {
      const verdict = judgeCode(client, await store.findAuthorizationCodeForUpdate(tx, hash), params, now, dpop?.jkt);
      if ('replayed' in verdict) {
        const { sessionId } = verdict.replayed;
        if (sessionId) await store.closeGrants(svc, { tree: sessionId }, { how: 'code-replay', by: { client: client.id } }, tx);
        return invalidGrant('authorization code was already used; the tokens obtained with it have been revoked');
      }
      if ('refuse' in verdict) {
        // Used once, whatever the outcome: a code that was refused cannot be tried again.
        if (verdict.spend) await store.markCodeUsed(tx, hash, null);
        return verdict.refuse;
      }
      const { userId, scope, nonce, authTime, sid, claims, audience, amr } = verdict.honour;
      const user = hasOpenid(scope) ? await store.getUser(tx, userId) : undefined;
      if (hasOpenid(scope) && !user) return invalidGrant('the user the code was issued to no longer exists');
      const settings: GrantSettings = client.auth?.authorization_code ?? {};
      const details = sid && authTime ? browserDetails({ sid, authTime, amr }, claims) : null;
      const shaped = await shapedClaimsFor(svc, client, { userId, scope, audience, details });
      const { session, response } = mint(
        {
          type: 'authorization_code',
          origin: 'authorization_code',
          client,
          settings,
          userId,
          scope,
          audience,
          refresh: settings.refresh_token === true,
          details,
          shaped: withHooked(hooked?.access, shaped),
          clientAuthMethod: method,
          ...(await personSubject(svc, client, userId)),
          ...dpopBound(dpop),
          ...certificateBound(certificate),
        },
        svc.config.baseUrl,
        svc.keyring.active,
        now,
      );
      await store.insertSessions(tx, [session]);
      await store.markCodeUsed(tx, hash, session.id);
      const idToken =
        user &&
        idTokenFor(svc, settings, {
          client,
          user,
          scope,
          nonce,
          claims: claims?.id_token ?? [],
          authTime,
          amr,
          sid,
          shaped: withHooked(hooked?.id, shaped),
          accessToken: response.access_token,
          now,
        });
      return { session, response: { ...response, ...(scope ? { scope } : {}), ...(idToken ? { id_token: idToken } : {}) } };
    });
  },
};
