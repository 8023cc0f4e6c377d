// grant_type=authorization_code (RFC 6749 §4.1.3, PKCE per RFC 7636). A code is
// used once: a second exchange is refused and closes the session the first one
// obtained (RFC 6749 §4.1.2: the code was probably stolen).
import { withTransaction } from '../../db/pool.js';
import { findAuthorizationCodeForUpdate, markCodeUsed } from '../../store/browser.js';
import { closeTree, insertSessions } from '../../store/sessions.js';
import { forgetSession } from '../access-tokens.js';
import { authenticateClient } from '../client-auth.js';
import { OAuthError, invalidGrant } from '../errors.js';
import { verifierMatches } from '../pkce.js';
import { mint, tokenHash, type TokenResponse } from '../tokens.js';
import { required } from '../params.js';
import type { GrantHandler } from './grant.js';

export const authorizationCode: GrantHandler = async ({ svc, params, presented }) => {
  const code = required(params, 'code');
  const stored = await authenticateClient(svc, presented, false);
  const client = stored.resource;
  // A confidential client proves itself with its secret; a public one with PKCE alone.
  if (stored.secretHash && presented.secret === undefined) {
    throw new OAuthError('invalid_client', `client "${client.id}" has a secret: authenticate with it`, { basicAuthUsed: presented.basic });
  }
  if (!client.grant_types.includes('authorization_code')) {
    throw new OAuthError('unauthorized_client', `client "${client.id}" may not use the authorization_code grant (see its grant_types)`);
  }
  const hash = tokenHash(code);
  const now = Date.now();

  const outcome = await withTransaction(svc.pool, async (tx): Promise<TokenResponse | OAuthError> => {
    const found = await findAuthorizationCodeForUpdate(tx, hash);
    if (!found || found.clientId !== client.id) return invalidGrant('authorization code is unknown or was issued to another client');
    if (found.usedAt) {
      if (found.sessionId) for (const s of await closeTree(tx, found.sessionId)) forgetSession(svc, s);
      return invalidGrant('authorization code was already used; the tokens obtained with it have been revoked');
    }
    await markCodeUsed(tx, hash, null);
    if (found.expiresAt.getTime() <= now) return invalidGrant('authorization code has expired');
    if (params.redirect_uri !== found.redirectUri) return invalidGrant('redirect_uri differs from the one of the authorization request');
    if (found.codeChallenge) {
      if (!params.code_verifier) return invalidGrant('code_verifier is required (the authorization request had a code_challenge)');
      if (!verifierMatches(params.code_verifier, found.codeChallenge)) return invalidGrant('code_verifier does not match the code_challenge');
    } else if (params.code_verifier) {
      return invalidGrant('code_verifier sent, but the authorization request had no code_challenge');
    }
    const settings = client.auth?.authorization_code ?? {};
    const { session, response } = mint({
      type: 'authorization_code', origin: 'authorization_code', client, settings, userId: found.userId,
      scope: found.scope, refresh: settings.refresh_token === true,
    }, svc.config.baseUrl, svc.keyring.active, now);
    await insertSessions(tx, [session]);
    await markCodeUsed(tx, hash, session.id);
    return { ...response, ...(found.scope ? { scope: found.scope } : {}) };
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
};
