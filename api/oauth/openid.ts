// OpenID Connect Core on the box's own flows: with scope `openid`, whoever signed
// in is told to the client in a standard way, an ID token signed with the box's
// keys, and the same claims at /auth/userinfo. What the claims are, and which
// scope releases which, lives here only.
import { createHash } from 'node:crypto';
import type { UserRow } from '../store/users.js';
import type { Services } from '../services.js';
import type { Client, GrantSettings } from '../types.js';
import { signJwt, verifyJwt, JwtError, type SigningKey } from './jwt.js';

export const OPENID = 'openid';
/** Scopes with a meaning of their own in OpenID Connect, as the box serves them. */
export const OPENID_SCOPES = ['openid', 'email', 'profile', 'groups'];
/** Claims the box can state (discovery's claims_supported). */
export const PROFILE_CLAIMS = [
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
];
export const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'at_hash',
  'c_hash',
  'sid',
  'email',
  'email_verified',
  'groups',
  ...PROFILE_CLAIMS,
  'updated_at',
];
/** An ID token lives this long unless the client's grant settings say otherwise. */
export const DEFAULT_ID_TOKEN_SECONDS = 3600;

export const scopesOf = (scope: string | null | undefined): string[] => (scope ?? '').split(' ').filter(Boolean);
export const hasOpenid = (scope: string | null | undefined): boolean => scopesOf(scope).includes(OPENID);

/**
 * profile: the standard claims that a user's `data` (a string of JSON) holds, when
 * it is an object whose member of that name is a string, and updated_at. The box
 * keeps no profile of its own; it states only what an administrator put there.
 */
function profileClaims(user: UserRow): Record<string, unknown> {
  let data: unknown;
  try {
    data = user.data === null ? null : JSON.parse(user.data);
  } catch {
    data = null;
  }
  const claims: Record<string, unknown> = {};
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    for (const name of PROFILE_CLAIMS) {
      const value = Object.hasOwn(data, name) ? (data as Record<string, unknown>)[name] : undefined;
      if (typeof value === 'string') claims[name] = value;
    }
  }
  claims.updated_at = Math.floor(user.updatedAt.getTime() / 1000);
  return claims;
}

/** The claims about `user` that `scopes` release (Core §5.4; `groups` by name). */
export function userClaims(user: UserRow, scopes: string[]): Record<string, unknown> {
  return {
    sub: String(user.id),
    ...(scopes.includes('email') ? { email: user.email, email_verified: user.emailVerified } : {}),
    ...(scopes.includes('groups') ? { groups: user.groups.map((g) => g.name) } : {}),
    ...(scopes.includes('profile') ? profileClaims(user) : {}),
  };
}

/** at_hash / c_hash (Core §3.1.3.6, §3.3.2.11): the left half of the hash of the value, by the JWS algorithm's hash. */
export function halfHash(key: SigningKey, value: string): string {
  const digest = createHash(key.alg === 'EdDSA' ? 'sha512' : 'sha256')
    .update(value, 'ascii')
    .digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

export interface IdTokenRequest {
  client: Client;
  user: UserRow;
  scope: string | null;
  nonce?: string | null;
  /** When the person signed in; null when unknown (a session from before the box recorded it). */
  authTime: Date | null;
  sid?: string | null;
  /** The access token issued with it (at_hash), and the code (c_hash), when there are. */
  accessToken?: string;
  code?: string;
  lifetimeSeconds: number;
  now: number;
}

/** The ID token of an answer of the box: its lifetime from the grant's settings, signed with the active key. */
export function idTokenFor(
  svc: Pick<Services, 'config' | 'keyring'>,
  settings: GrantSettings,
  req: Omit<IdTokenRequest, 'lifetimeSeconds'>,
): string {
  return mintIdToken(
    { ...req, lifetimeSeconds: settings.id_token_expiration ?? DEFAULT_ID_TOKEN_SECONDS },
    svc.config.baseUrl,
    svc.keyring.active,
  );
}

export function mintIdToken(req: IdTokenRequest, issuer: string, key: SigningKey): string {
  const iat = Math.floor(req.now / 1000);
  return signJwt(
    key,
    {
      iss: issuer,
      ...userClaims(req.user, scopesOf(req.scope)),
      aud: req.client.id,
      iat,
      exp: iat + req.lifetimeSeconds,
      ...(req.authTime ? { auth_time: Math.floor(req.authTime.getTime() / 1000) } : {}),
      ...(req.nonce ? { nonce: req.nonce } : {}),
      ...(req.sid ? { sid: req.sid } : {}),
      ...(req.accessToken ? { at_hash: halfHash(key, req.accessToken) } : {}),
      ...(req.code ? { c_hash: halfHash(key, req.code) } : {}),
    },
    'JWT',
  );
}

/** What a token session records of the signed-in browser session it came from (its `details`). */
export function browserDetails(browser: { sid: string; authTime: Date }): Record<string, unknown> {
  return { sid: browser.sid, auth_time: Math.floor(browser.authTime.getTime() / 1000) };
}

/** The browser session a token session came from, as browserDetails recorded it. */
export function browserOf(details: Record<string, unknown> | null): { sid: string | null; authTime: Date | null } {
  const sid = typeof details?.sid === 'string' ? details.sid : null;
  const authTime = typeof details?.auth_time === 'number' ? new Date(details.auth_time * 1000) : null;
  return { sid, authTime };
}

/**
 * The claims of an ID token this box issued, as presented back to it (id_token_hint):
 * its signature and issuer are checked, its expiry is not (Core §3.1.2.1 allows an
 * expired hint). Undefined for anything else.
 */
export function idTokenHintClaims(
  hint: string,
  issuer: string,
  findKey: (kid: string) => SigningKey | undefined,
): Record<string, unknown> | undefined {
  try {
    const { claims, header } = verifyJwt(hint, findKey);
    return header.typ === 'JWT' && claims.iss === issuer && typeof claims.sub === 'string' ? claims : undefined;
  } catch (err) {
    if (err instanceof JwtError) return undefined;
    throw err;
  }
}
