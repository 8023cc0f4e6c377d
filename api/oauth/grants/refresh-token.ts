// grant_type=refresh_token (RFC 6749 §6). The refreshed access token gets a session
// of its own whose parent is the session holding the refresh token. Without
// rotation the refresh token stays and its expiration slides; with rotation each
// use hands out a new one, and a used one presented again closes the whole family.
//
// Most uses take the fast path: the holder is read without a lock and the use is
// group-committed (RefreshWriter), applied only if the holder is still usable at
// commit. Anything else (a reused token, a holder that changed since it was read)
// is decided again in a transaction holding the holder's lock.
import type { Queryable, Transaction } from '../../db/pool.js';
import {
  insertSessions,
  lockRefreshHolder,
  touchRefreshToken,
  type CloseSelector,
  type Refresh,
  type SessionRow,
} from '../../store/sessions.js';
import type { Client, GrantName, GrantSettings } from '../../types.js';
import { closeGrants, type Closing } from '../../credentials/closing.js';
import { getUser, type UserRow } from '../../store/users.js';
import { factorState, type FactorState } from '../../store/factors.js';
import { ACR_MFA, meets, signInOf } from '../../credentials/acr.js';
import { unmetAtRefresh } from '../../credentials/sign-in.js';
import { grantedAudience, grantedResource, refreshedScope } from '../entitlements.js';
import { agentRefusalAtRefresh } from '../agents.js';
import { OAuthError, invalidGrant } from '../../credentials/errors.js';
import { mint, tokenHash, type TokenResponse } from '../../credentials/tokens.js';
import { browserOf, hasOpenid, idTokenFor } from '../openid.js';
import { shapedClaimsFor } from '../shaped-claims.js';
import { withHooked } from '../token-hooks.js';
import { scopeParam } from '../params.js';
import {
  personSubject,
  commitThenRefuse,
  certificateBound,
  dpopBound,
  notIssuedToClient,
  type DpopBinding,
  type Grant,
  type GrantServices,
  type HookedClaims,
  type Issued,
} from './grant.js';

/**
 * Everything this grant does to the database (fosite's RefreshTokenStorage: a flow states the
 * methods it needs). The fast path reads without a lock and writes through the group commit
 * (applyRefresh); anything else is decided again in one transaction that commits even when it
 * refuses (commitThenRefuse), `tx` holding the holder's lock from the read to the commit.
 */
export interface RefreshTokenStore {
  /**
   * The session holding the refresh token, read without a lock (with others', store/refresh-reader.ts):
   * whom it was issued to, and the fast path's holder.
   */
  findByRefreshToken(svc: Pick<GrantServices, 'refreshReader'>, hash: Buffer): Promise<SessionRow | undefined>;
  /**
   * The fast path's use, group-committed with others (store/refresh-writer.ts): the holder's token slid
   * or spent and the new session stored, if the holder is still usable as read; false, nothing written, if not.
   */
  applyRefresh(svc: Pick<GrantServices, 'refreshWriter'>, refresh: Refresh): Promise<boolean>;
  /** The holder, locked until `tx` ends: a use racing a close or another use waits here. */
  lockRefreshHolder(tx: Transaction, hash: Buffer): Promise<SessionRow | undefined>;
  /** Slides the holder's refresh token expiration, or spends it (rotation). */
  touchRefreshToken(tx: Transaction, holder: SessionRow, refreshTokenExp: Date | null, used: boolean): Promise<void>;
  /** The session the use issues. */
  insertSessions(tx: Transaction, sessions: SessionRow[]): Promise<void>;
  /** The person, for a new ID token (their groups today). */
  getUser(db: Queryable, id: number): Promise<UserRow | undefined>;
  /** The person of a grant as the client's shaped claims see them (Client.claims), read afresh. */
  /** Whether a group of the person requires a second factor now (checkSignInStillEnough). */
  factorState(db: Queryable, userId: number): Promise<FactorState>;
  /** Closes the family of a reused token (the sessions, this process's cache of them, the audit: credentials/closing.ts). */
  closeGrants(svc: GrantServices, selector: CloseSelector, closing: Closing, tx: Transaction): Promise<SessionRow[]>;
}

const store: RefreshTokenStore = {
  findByRefreshToken: (svc, hash) => svc.refreshReader.find(hash),
  applyRefresh: (svc, refresh) => svc.refreshWriter.apply(refresh),
  lockRefreshHolder,
  touchRefreshToken,
  insertSessions,
  getUser,
  factorState,
  closeGrants,
};

const REFRESH_TOKEN = 'refresh token';

export const refreshToken: Grant = {
  type: 'refresh_token',
  clientAuthentication: 'optional',
  requiredParameters: ['refresh_token'],
  // Not by grant_types: each refresh token is decided by the settings of the grant
  // that started its family (auth.<grant>.refresh_token), see judgeRefresh.
  permits: () => true,
  credential: {
    name: REFRESH_TOKEN,
    async issuedTo(svc, params) {
      const hash = tokenHash(params.refresh_token!);
      const holder = svc.refreshHolders.get(hash) ?? (await store.findByRefreshToken(svc, hash));
      if (holder) svc.refreshHolders.remember(holder); // the handler reads it next
      return holder?.clientId;
    },
  },

  async prospect(svc, params, client) {
    const hash = tokenHash(params.refresh_token!);
    const holder = svc.refreshHolders.get(hash) ?? (await store.findByRefreshToken(svc, hash));
    if (!holder || holder.clientId !== client.id) return undefined;
    const scope = refreshedScope(client, holder.scope, scopeParam(params.scope));
    return { userId: holder.userId, scope, audience: holder.audience, details: holder.details };
  },

  async handle({ svc, params, client: { resource: client, method }, dpop, certificate, unproven = false, hooked }) {
    const hash = tokenHash(params.refresh_token!);
    const narrowed: Narrowed = { scope: scopeParam(params.scope), resource: params.resource };
    // Nobody proved to be the client: a confidential one named by client_id alone, or one that is public
    // now (token_endpoint_auth_method none, its secret dropped) and was not when the grant was issued.
    const presented: Presented = { jkt: dpop?.jkt, unproven: unproven || method === 'none', x5t: certificate };

    const verdict = await readHolder(svc, client, hash, presented);
    if ('error' in verdict) throw verdict.error;
    if ('settings' in verdict) {
      const { refresh, response } = await prepare(
        svc,
        client,
        verdict.holder,
        verdict.settings,
        narrowed,
        Date.now(),
        dpop,
        method,
        certificate,
        hooked,
      );
      if (await store.applyRefresh(svc, refresh)) {
        // The token endpoint remembers a new holder (rotation); an old one slid its expiration.
        if (refresh.rotate) svc.refreshHolders.forget(verdict.holder.id);
        else svc.refreshHolders.remember({ ...verdict.holder, refreshTokenExp: refresh.refreshTokenExp });
        return { response, session: refresh.session };
      }
      svc.refreshHolders.forget(verdict.holder.id); // it changed since it was read
    }

    return commitThenRefuse(svc.pool, async (tx): Promise<Issued | OAuthError> => {
      const now = Date.now();
      const locked = judgeRefresh(client, await store.lockRefreshHolder(tx, hash), now, presented);
      if ('reused' in locked) {
        // Someone replayed a rotated token: either the client or a thief holds a copy. Closing the family cuts both off.
        const closed = (
          await store.closeGrants(svc, { family: locked.reused.family }, { how: 'refresh-token-reuse', by: { client: client.id } }, tx)
        ).length;
        svc.log.warn({ client: client.id, family: locked.reused.family, closed }, 'refresh token reuse detected; session family closed');
        return invalidGrant('refresh token was already used; every session obtained with it has been closed');
      }
      if ('error' in locked) return locked.error;
      const { refresh, response } = await prepare(
        svc,
        client,
        locked.holder,
        locked.settings,
        narrowed,
        now,
        dpop,
        method,
        certificate,
        hooked,
      );
      await store.touchRefreshToken(tx, locked.holder, refresh.refreshTokenExp, refresh.rotate);
      await store.insertSessions(tx, [refresh.session]);
      return { response, session: refresh.session };
    });
  },
};

/**
 * The verdict on the holder as this process knows it (svc.refreshHolders) or as
 * the database has it: a remembered holder is trusted for a yes only.
 */
async function readHolder(svc: GrantServices, client: Client, hash: Buffer, presented: Presented): Promise<RefreshVerdict> {
  const remembered = svc.refreshHolders.get(hash);
  if (remembered) {
    const verdict = judgeRefresh(client, remembered, Date.now(), presented);
    if ('settings' in verdict) return verdict;
    svc.refreshHolders.forget(remembered.id);
  }
  const holder = await store.findByRefreshToken(svc, hash);
  if (holder) svc.refreshHolders.remember(holder);
  return judgeRefresh(client, holder, Date.now(), presented);
}

export type RefreshVerdict = { error: OAuthError } | { reused: SessionRow } | { holder: SessionRow; settings: GrantSettings };

/**
 * What the request showed beside the token: the key of its DPoP proof; whether nobody proved to be
 * its client (client_id alone: GrantContext.unproven, or a public client).
 */
export interface Presented {
  jkt?: string | undefined;
  unproven?: boolean;
  /** The x5t#S256 of the client certificate the request came with (RFC 8705), if any. */
  x5t?: string | undefined;
}

/** What a refresh asks to narrow: its scope (RFC 6749 §6) and its resource (RFC 8707 §2.2), as sent. */
interface Narrowed {
  scope: string[] | null;
  resource: string | undefined;
}

/** What a use of the token held by `holder` (as read at `now`) comes to, with what the request `presented`. */
export function judgeRefresh(client: Client, holder: SessionRow | undefined, now: number, presented: Presented = {}): RefreshVerdict {
  const { jkt, unproven } = presented;
  if (!holder || holder.clientId !== client.id) return { error: notIssuedToClient(REFRESH_TOKEN) };
  // RFC 9449 §5: a public client's refresh token is bound to the key of its DPoP proof, and
  // is used only with a proof of that key. Checked first, so that whoever lacks the key can
  // do nothing with the token, not even set off reuse detection.
  if (holder.refreshJkt !== null) {
    if (jkt === undefined)
      return { error: new OAuthError('invalid_dpop_proof', 'this refresh token is DPoP-bound: send a DPoP proof signed with its key') };
    if (jkt !== holder.refreshJkt) return { error: invalidGrant('this refresh token is bound to another DPoP key') };
  }
  // A confidential client's refresh token is not bound: "they are already sender-constrained with a
  // different existing mechanism" (§5), the client's authentication. Named by client_id alone the
  // client is whoever holds the token, who would refresh the grant's bound access tokens into
  // tokens without the key. So, too, once the client is public (rewritten as none): its grants issued
  // while it authenticated keep refresh tokens bound to nothing, which client_id alone would refresh
  // into unbound tokens. Checked before reuse, as the binding is.
  // RFC 8705 §4: a grant whose access tokens are bound to a certificate is refreshed with that
  // certificate only - whether the client authenticated with it or (a public client) named itself -
  // else whoever stole the refresh token would get tokens unbound, or bound to a certificate of its own.
  if (holder.x5t !== null && presented.x5t !== holder.x5t) {
    return {
      error: invalidGrant(
        presented.x5t === undefined
          ? 'this refresh token belongs to a certificate-bound grant: present the client certificate its tokens are bound to'
          : 'this refresh token belongs to a grant bound to another client certificate',
      ),
    };
  }
  if (unproven && holder.refreshJkt === null && holder.jkt !== null) {
    return {
      error: new OAuthError(
        'invalid_client',
        `client "${client.id}" must authenticate to use this refresh token: the access tokens of its grant are DPoP-bound`,
      ),
    };
  }
  if (holder.refreshUsedAt) return { reused: holder };
  if (!holder.active) return { error: invalidGrant('refresh token belongs to a closed session') };
  if (holder.refreshTokenExp && holder.refreshTokenExp.getTime() <= now) return { error: invalidGrant('refresh token has expired') };
  // The grant the family began with, as the box wrote it (sessions.origin).
  const settings: GrantSettings = client.auth?.[holder.origin as GrantName] ?? {};
  if (settings.refresh_token !== true) {
    return {
      error: new OAuthError(
        'unauthorized_client',
        `refresh tokens are not enabled for client "${client.id}" (auth.${holder.origin}.refresh_token)`,
      ),
    };
  }
  return { holder, settings };
}

/**
 * Refuses the refresh of a grant whose browser sign-in proved less than its client's
 * minimum_acr or the person's groups ask now (credentials/sign-in.ts unmetAtRefresh): a rule
 * turned on holds for the grants already issued, at their next refresh. The groups are
 * read only for a sign-in short of several factors, the most a group asks.
 *
 * The grant is refused, not closed: nothing is written on the way to the refusal, a rule
 * turned off again (a mistake undone) finds the grant as it was, and while the rule holds
 * the grant mints nothing; its access tokens end at their own expiry, as a group removed
 * shows in the next token, not in those already issued.
 */
async function checkSignInStillEnough(svc: GrantServices, client: Client, holder: SessionRow): Promise<void> {
  const signIn = signInOf(holder);
  if (!signIn) return; // no browser sign-in behind it: nothing a person proved to fall short
  const groupRequires = !meets(signIn.acr, ACR_MFA) && (await store.factorState(svc.pool, holder.userId!)).groupRequires;
  const unmet = unmetAtRefresh(signIn.acr, client.minimum_acr, groupRequires);
  if (!unmet) return;
  const what =
    unmet.rule === 'client'
      ? `client "${client.id}" requires (minimum_acr ${unmet.wants})`
      : `a group of this person requires (a second factor: ${unmet.wants})`;
  throw invalidGrant(`the sign-in behind this grant (${signIn.acr}) no longer meets what ${what}: sign in again`);
}

/**
 * The new session and answer of a use, and what becomes of the holder's token.
 * The new token carries the holder's grants, or fewer: none beyond the client's
 * allow-lists as they are now. With scope openid, a new ID token states who the
 * user is now (their groups today): a user removed from a group loses it here.
 */
async function prepare(
  svc: GrantServices,
  client: Client,
  holder: SessionRow,
  settings: GrantSettings,
  narrowed: Narrowed,
  now: number,
  dpop: DpopBinding | undefined,
  clientAuthMethod: string,
  certificate: string | undefined,
  hooked?: HookedClaims,
): Promise<{ refresh: Refresh; response: TokenResponse }> {
  await checkSignInStillEnough(svc, client, holder);
  const rotate = settings.refresh_token_rotation === true;
  const scope = refreshedScope(client, holder.scope, narrowed.scope);
  const user = hasOpenid(scope) && holder.userId !== null ? await store.getUser(svc.pool, holder.userId) : undefined;
  if (hasOpenid(scope) && holder.userId !== null && !user) throw invalidGrant('the user of this refresh token no longer exists');
  // The holder's audience, or the one resource it names of it: never another (grantedResource).
  const audience = grantedAudience(client, grantedResource(holder.audience, narrowed.resource, REFRESH_TOKEN));
  const refusal = await agentRefusalAtRefresh(svc, client, { scope, audience });
  if (refusal) {
    svc.log.info({ event: 'refresh_refused', client: client.id, reason: refusal }, 'agent no longer admitted');
    throw invalidGrant(`no AccessPolicy of this box admits client "${client.id}" any longer: ask the person again`);
  }
  const shaped = await shapedClaimsFor(svc, client, { userId: holder.userId, scope, audience, details: holder.details });
  const { session, response } = mint(
    {
      type: 'refresh_token',
      origin: holder.origin,
      client,
      settings,
      userId: holder.userId,
      audience,
      scope,
      parent: holder,
      refresh: rotate,
      details: holder.details,
      clientAuthMethod,
      shaped: withHooked(hooked?.access, shaped),
      ...(await personSubject(svc, client, holder.userId)),
      // A confidential client's new access token is bound to the proof's key, its refresh
      // token is not (§5: "refresh tokens issued to [confidential clients] are not bound").
      ...dpopBound(dpop),
      ...certificateBound(certificate),
    },
    svc.config.baseUrl,
    svc.keyring.active,
    now,
  );
  if (user) {
    response.id_token = idTokenFor(svc, settings, {
      client,
      user,
      scope,
      ...browserOf(holder.details),
      shaped: withHooked(hooked?.id, shaped),
      accessToken: response.access_token,
      now,
    });
  }
  const lifetime = settings.refresh_token_expiration;
  const refreshTokenExp = rotate ? holder.refreshTokenExp : lifetime ? new Date(now + lifetime * 1000) : null;
  return { refresh: { session, rotate, refreshTokenExp }, response };
}
