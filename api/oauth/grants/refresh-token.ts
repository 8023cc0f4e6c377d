// grant_type=refresh_token (RFC 6749 §6). The refreshed access token gets a session
// of its own whose parent is the session holding the refresh token. Without
// rotation the refresh token stays and its expiration slides; with rotation each
// use hands out a new one, and a used one presented again closes the whole family.
//
// Most uses take the fast path: the holder is read without a lock and the use is
// group-committed (RefreshWriter), applied only if the holder is still usable at
// commit. Anything else (a reused token, a holder that changed since it was read)
// is decided again in a transaction holding the holder's lock.
import { withTransaction } from '../../db/pool.js';
import type { Services } from '../../services.js';
import {
  findByRefreshToken, findByRefreshTokenForUpdate, insertSessions, touchRefreshToken,
  type Refresh, type SessionRow,
} from '../../store/sessions.js';
import type { Client, GrantSettings } from '../../types.js';
import { closeFamilySessions } from '../access-tokens.js';
import { authenticateClient } from '../client-auth.js';
import { grantedAudience, refreshedScope } from '../entitlements.js';
import { OAuthError, invalidGrant } from '../errors.js';
import { mint, tokenHash, type TokenResponse } from '../tokens.js';
import { required, scopeParam } from '../params.js';
import type { GrantHandler } from './grant.js';

export const refreshToken: GrantHandler = async ({ svc, params, presented }) => {
  const hash = tokenHash(required(params, 'refresh_token'));
  const narrowed = scopeParam(params.scope);
  const { resource: client } = await authenticateClient(svc, presented, false);

  const holder = await findByRefreshToken(svc.pool, hash);
  const verdict = judge(client, holder, Date.now());
  if ('error' in verdict) throw verdict.error;
  if ('settings' in verdict) {
    const { refresh, response } = prepare(svc, client, verdict.holder, verdict.settings, narrowed, Date.now());
    if (await svc.refreshWriter.apply(refresh)) return response;
  }

  const outcome = await withTransaction(svc.pool, async (tx): Promise<TokenResponse | OAuthError> => {
    const locked = await findByRefreshTokenForUpdate(tx, hash);
    const now = Date.now();
    const verdict = judge(client, locked, now);
    if ('reused' in verdict) {
      // Someone replayed a rotated token: either the client or a thief holds a copy.
      // Closing the family cuts both off; this commits before the error is sent.
      const closed = (await closeFamilySessions(svc, verdict.reused.family, tx)).length;
      svc.log.warn({ client: client.id, family: verdict.reused.family, closed }, 'refresh token reuse detected; session family closed');
      return invalidGrant('refresh token was already used; every session obtained with it has been closed');
    }
    if ('error' in verdict) return verdict.error;
    const { refresh, response } = prepare(svc, client, verdict.holder, verdict.settings, narrowed, now);
    await touchRefreshToken(tx, verdict.holder, refresh.refreshTokenExp, refresh.rotate);
    await insertSessions(tx, [refresh.session]);
    return response;
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
};

type Verdict = { error: OAuthError } | { reused: SessionRow } | { holder: SessionRow; settings: GrantSettings };

/** What a use of the token held by `holder` (as read at `now`) comes to. */
function judge(client: Client, holder: SessionRow | undefined, now: number): Verdict {
  if (!holder || holder.clientId !== client.id) return { error: invalidGrant('refresh token is unknown or was issued to another client') };
  if (holder.refreshUsedAt) return { reused: holder };
  if (!holder.active) return { error: invalidGrant('refresh token belongs to a closed session') };
  if (holder.refreshTokenExp && holder.refreshTokenExp.getTime() <= now) return { error: invalidGrant('refresh token has expired') };
  const settings: GrantSettings = (client.auth?.[holder.origin] as GrantSettings | undefined) ?? {};
  if (settings.refresh_token !== true) {
    return { error: new OAuthError('unauthorized_client', `refresh tokens are not enabled for client "${client.id}" (auth.${holder.origin}.refresh_token)`) };
  }
  return { holder, settings };
}

/**
 * The new session and answer of a use, and what becomes of the holder's token.
 * The new token carries the holder's grants, or fewer: none beyond the client's
 * allow-lists as they are now.
 */
function prepare(svc: Services, client: Client, holder: SessionRow, settings: GrantSettings, narrowed: string[] | null, now: number): { refresh: Refresh; response: TokenResponse } {
  const rotate = settings.refresh_token_rotation === true;
  const { session, response } = mint({
    type: 'refresh_token', origin: holder.origin, client, settings, userId: holder.userId,
    audience: grantedAudience(client, holder.audience), scope: refreshedScope(client, holder.scope, narrowed),
    parent: holder, refresh: rotate, details: holder.details,
  }, svc.config.baseUrl, svc.keyring.active, now);
  const lifetime = settings.refresh_token_expiration;
  const refreshTokenExp = rotate ? holder.refreshTokenExp : lifetime ? new Date(now + lifetime * 1000) : null;
  return { refresh: { session, rotate, refreshTokenExp }, response };
}
