// grant_type=refresh_token (RFC 6749 §6). The refreshed access token gets a session
// of its own whose parent is the session holding the refresh token. Without
// rotation the refresh token stays and its expiration slides; with rotation each
// use hands out a new one, and a used one presented again closes the whole family.
import { withTransaction } from '../../db/pool.js';
import { closeFamily, findByRefreshTokenForUpdate, insertSessions, touchRefreshToken } from '../../store/sessions.js';
import type { GrantSettings } from '../../types.js';
import { authenticateClient } from '../client-auth.js';
import { OAuthError, invalidGrant } from '../errors.js';
import { mint, tokenHash, type TokenResponse } from '../tokens.js';
import { required, type GrantHandler } from './grant.js';

export const refreshToken: GrantHandler = async ({ svc, params, presented }) => {
  const token = required(params, 'refresh_token');
  const { resource: client } = await authenticateClient(svc, presented, false);
  const now = Date.now();

  const outcome = await withTransaction(svc.pool, async (tx): Promise<TokenResponse | OAuthError> => {
    const holder = await findByRefreshTokenForUpdate(tx, tokenHash(token));
    if (!holder || holder.clientId !== client.id) return invalidGrant('refresh token is unknown or was issued to another client');
    if (holder.refreshUsedAt) {
      // Someone replayed a rotated token: either the client or a thief holds a copy.
      // Closing the family cuts both off; this commits before the error is sent.
      const closed = await closeFamily(tx, holder.family);
      svc.log.warn({ client: client.id, family: holder.family, closed }, 'refresh token reuse detected; session family closed');
      return invalidGrant('refresh token was already used; every session obtained with it has been closed');
    }
    if (!holder.active) return invalidGrant('refresh token belongs to a closed session');
    if (holder.refreshTokenExp && holder.refreshTokenExp.getTime() <= now) return invalidGrant('refresh token has expired');

    const settings: GrantSettings = (client.auth?.[holder.origin] as GrantSettings | undefined) ?? {};
    if (settings.refresh_token !== true) {
      return new OAuthError('unauthorized_client', `refresh tokens are not enabled for client "${client.id}" (auth.${holder.origin}.refresh_token)`);
    }
    const rotate = settings.refresh_token_rotation === true;
    const { session, response } = mint({
      type: 'refresh_token', origin: holder.origin, client, settings, userId: holder.userId,
      audience: holder.audience, scope: holder.scope, parent: holder, refresh: rotate, details: holder.details,
    }, svc.config.baseUrl, svc.keyring.active, now);
    const lifetime = settings.refresh_token_expiration;
    await touchRefreshToken(tx, holder, rotate ? holder.refreshTokenExp : lifetime ? new Date(now + lifetime * 1000) : null, rotate);
    await insertSessions(tx, [session]);
    return response;
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
};
