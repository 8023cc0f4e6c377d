// Minting access and refresh tokens and the session behind them. Opaque tokens are
// 256 random bits; only their SHA-256 is kept. A JWT's `jti` is its session id.
import { createHash, hash } from 'node:crypto';
import { randomBytesPooled } from '../random.js';
import type { Client, GrantSettings } from '../types.js';
import { newSessionId, type SessionRow } from '../store/sessions.js';
import { signJwt, type SigningKey } from './jwt.js';
import { signInOf } from './acr.js';
import type { TxnClaims } from './txn-tokens.js';

export const newOpaqueToken = (): string => randomBytesPooled(32).toString('base64url');
export const tokenHash = (token: string): Buffer => createHash('sha256').update(token).digest();
/**
 * tokenHash in hex: the key an opaque token's session is cached under (api/server.ts sessions). One
 * call and no Hash object: a quarter of createHash's time, on every use of an opaque token.
 */
export const tokenHashHex = (token: string): string => hash('sha256', token, 'hex');

export interface TokenResponse {
  access_token: string;
  /**
   * DPoP when the access token is bound to the key of the request's proof (RFC 9449 §5); N_A for a
   * Txn-Token, which is no access token (draft-ietf-oauth-transaction-tokens-10 §11.4: "The
   * `token_type` value MUST be set to `N_A`").
   */
  token_type: 'Bearer' | 'DPoP' | 'N_A';
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
  /** OpenID Connect: with scope openid, who signed in. */
  id_token?: string;
  /** RFC 8693 token exchange: the type of the token issued. */
  issued_token_type?: string;
}

export interface MintRequest {
  /** The grant issuing this token, and the one that started its family. */
  type: string;
  origin: string;
  client: Client;
  settings: GrantSettings;
  userId?: number | null;
  audience?: string | null;
  scope?: string | null;
  parent?: SessionRow;
  /** Issue a refresh token with this access token. */
  refresh: boolean;
  details?: Record<string, unknown> | null;
  /** The token's `sub` when it is not the user or client (a token exchange: the subject token's subject). */
  subject?: string;
  /**
   * The `sub` the client sees of the token's person (api/credentials/subjects.ts subjectFor): the JWT's
   * `sub`, kept in the session's details (`subject`) for introspection and exchanges, replacing what a
   * refresh copied. Without it a person's token says their row id (a session from before release 036).
   */
  personSub?: string;
  /** Claims of a JWT access token beyond the usual ones (a token exchange's `act`). */
  claims?: Record<string, unknown>;
  /** The claims the client shapes for this grant (Client.claims): a JWT access token carries them. */
  shaped?: Record<string, unknown>;
  /** The latest the access token may live (a token exchange: its subject token's expiry). */
  notAfter?: Date | null;
  /** DPoP (RFC 9449): the thumbprint of the proof's key the access token is bound to. */
  jkt?: string;
  /** DPoP: the key the refresh token is bound to (a public client's, RFC 9449 §5). */
  refreshJkt?: string;
  /**
   * How the client proved who it is for this token (api/oauth/client-auth.ts ClientAuthMethod):
   * kept in the session's details as `client_auth_method`, which the audit of the token and the
   * decision point's records name.
   */
  clientAuthMethod?: string;
  /** A Transaction Token's claims but its times and jti: the token issued is that Txn-Token (./txn-tokens.ts), not an access token. */
  txn?: Omit<TxnClaims, 'iat' | 'exp' | 'jti'>;
  /** Mutual TLS (RFC 8705 §3): the x5t#S256 of the client certificate the access token is bound to. */
  x5t?: string;
}

export interface Minted {
  session: SessionRow;
  response: TokenResponse;
}

/**
 * A token's confirmation claim (RFC 7800 §3.1): the DPoP key's thumbprint (RFC 9449 §6.1), the client
 * certificate's (RFC 8705 §3.1: "the x5t#S256 confirmation method member"), or both.
 */
export function confirmation(bound: { jkt?: string | null | undefined; x5t?: string | null | undefined }): Record<string, string> {
  return { ...(bound.jkt ? { jkt: bound.jkt } : {}), ...(bound.x5t ? { 'x5t#S256': bound.x5t } : {}) };
}

/** What a session records beyond its columns: the grant's details, the person's sub, how the client proved itself. */
function detailsOf(req: MintRequest): Record<string, unknown> | null {
  if (!req.clientAuthMethod && req.personSub === undefined) return req.details ?? null;
  return {
    ...req.details,
    ...(req.personSub !== undefined ? { subject: { sub: req.personSub } } : {}),
    // A refresh's holder may have been obtained another way: this token's method replaces it.
    ...(req.clientAuthMethod ? { client_auth_method: req.clientAuthMethod } : {}),
  };
}

export function mint(req: MintRequest, issuer: string, key: SigningKey, now = Date.now()): Minted {
  const id = newSessionId(now);
  let exp = req.settings.access_token_expiration ? new Date(now + req.settings.access_token_expiration * 1000) : null;
  if (req.notAfter && (!exp || req.notAfter < exp)) exp = req.notAfter;
  const lifetime = exp ? Math.max(0, Math.floor((exp.getTime() - now) / 1000)) : undefined;
  const jwt = req.settings.token_format === 'jwt' || req.txn !== undefined;
  const subject = req.subject ?? req.personSub ?? (req.userId != null ? String(req.userId) : req.client.id);
  // RFC 9068 §2.2.1 / RFC 9470 §6.1: a person's token says how and when they signed in.
  const signIn = jwt ? signInOf({ userId: req.userId ?? null, details: req.details ?? null }) : null;
  const accessToken = req.txn
    ? // draft-ietf-oauth-transaction-tokens-10 §9: only the Txn-Token's own claims, typ txntoken+jwt; its jti is its session.
      signJwt(key, { ...req.txn, iat: Math.floor(now / 1000), exp: Math.floor(exp!.getTime() / 1000), jti: id }, 'txntoken+jwt')
    : jwt
      ? signJwt(key, {
          ...req.shaped,
          ...req.claims, // first: they never replace the claims below
          iss: issuer,
          sub: subject,
          client_id: req.client.id,
          ...(req.audience ? { aud: req.audience } : {}),
          ...(req.scope ? { scope: req.scope } : {}),
          iat: Math.floor(now / 1000),
          ...(exp ? { exp: Math.floor(exp.getTime() / 1000) } : {}),
          jti: id,
          ...(signIn ? { acr: signIn.acr, amr: signIn.amr, ...(signIn.authTime !== null ? { auth_time: signIn.authTime } : {}) } : {}),
          // RFC 9449 §6.1: "the JWK SHA-256 Thumbprint ... in the jkt member of the cnf claim".
          ...(req.jkt || req.x5t ? { cnf: confirmation(req) } : {}),
        })
      : newOpaqueToken();
  const refreshToken = req.refresh ? newOpaqueToken() : undefined;
  const refreshLifetime = req.settings.refresh_token_expiration;
  const session: SessionRow = {
    id,
    type: req.type,
    origin: req.origin,
    clientId: req.client.id,
    userId: req.userId ?? null,
    audience: req.audience ?? null,
    scope: req.scope ?? null,
    start: new Date(now),
    exp,
    accessTokenHash: jwt ? null : tokenHash(accessToken),
    refreshTokenHash: refreshToken ? tokenHash(refreshToken) : null,
    refreshTokenExp: refreshToken && refreshLifetime ? new Date(now + refreshLifetime * 1000) : null,
    refreshUsedAt: null,
    active: true,
    end: null,
    parent: req.parent?.id ?? null,
    family: req.parent?.family ?? id,
    kid: jwt ? key.kid : null,
    // A refresh's holder may have been obtained another way: this token's method replaces it.
    details: detailsOf(req),
    jkt: req.jkt ?? null,
    refreshJkt: refreshToken && req.refreshJkt ? req.refreshJkt : null,
    x5t: req.x5t ?? null,
  };
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: req.jkt ? 'DPoP' : 'Bearer',
    ...(lifetime !== undefined ? { expires_in: lifetime } : {}),
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
  return { session, response };
}
