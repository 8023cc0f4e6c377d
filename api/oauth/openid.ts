// OpenID Connect Core on the box's own flows: with scope `openid`, whoever signed
// in is told to the client in a standard way, an ID token signed with the box's
// keys, and the same claims at /auth/userinfo. What the claims are, and which
// scope releases which, lives here only.
import { isEmailAddress } from '../schema/people.js';
import { createHash } from 'node:crypto';
import { dataOf, getUser, type UserRow } from '../store/users.js';
import type { Pool } from '../db/pool.js';
import type { Config, JwtAlg } from '../config.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Client, GrantSettings } from '../types.js';
import { signJwt, verifyJwt, JwtError, type SigningKey } from '../credentials/jwt.js';
import { scopesOf } from '../credentials/scopes.js';
import { acrOf, amrOf } from '../credentials/acr.js';
import type { RequestedClaims } from '../store/authorization-codes.js';
import { FAPI2_ID_TOKEN_ALG, isFapi2 } from './fapi2.js';
import { subjectFor, type SubjectSettings } from '../credentials/subjects.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
  subjects: SubjectSettings;
}

export type { RequestedClaims };

export const OPENID = 'openid';
/** Scopes with a meaning of their own in OpenID Connect, as the box serves them. */
export const OPENID_SCOPES = ['openid', 'email', 'profile', 'address', 'phone', 'groups'];
/**
 * Core §5.4: the claims of these scopes go to the UserInfo endpoint when an access
 * token is issued, and into the ID token only when none is (or when the client
 * asks: the claims parameter, or its `claims_in_id_token`). `groups` is the box's
 * own scope: kube-apiserver reads it from the ID token, so it stays there.
 */
const USERINFO_SCOPES = ['email', 'profile', 'address', 'phone'];
/**
 * What a sign-in from before the box recorded it proved (`amr`, RFC 8176): a password. What
 * later sign-ins proved travels with them (api/people/factors.ts says their `acr`).
 */
export const AMR_PASSWORD: readonly string[] = ['pwd'];
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
  'acr',
  'amr',
  'email',
  'email_verified',
  'groups',
  // Client.claims (api/policy/claims.ts): the name its documentation gives the roles an admin shapes.
  'roles',
  ...PROFILE_CLAIMS,
  'updated_at',
  'address',
  'phone_number',
  'phone_number_verified',
];
/** An ID token lives this long unless the client's grant settings say otherwise. */
export const DEFAULT_ID_TOKEN_SECONDS = 3600;

export const hasOpenid = (scope: string | null | undefined): boolean => scopesOf(scope).includes(OPENID);

const ADDRESS_MEMBERS = ['formatted', 'street_address', 'locality', 'region', 'postal_code', 'country'];

const own = (data: Record<string, unknown>, name: string): unknown => (Object.hasOwn(data, name) ? data[name] : undefined);

/**
 * The claims a user can be described with, by name (Core §5.1). The box keeps no
 * profile of its own: profile, address and phone claims are what an administrator
 * put in the user's `data` — a string member of that name (`address`: an object of
 * the standard string members; `phone_number_verified`: a boolean).
 */
/** The profile claims a directory's SCIM attributes give (Core §5.1 from RFC 7643 §4.1); `data` has the last word. */
function scimProfile(user: UserRow): Record<string, unknown> {
  const kept = user.scim ?? {};
  const name = (kept.name ?? {}) as Record<string, unknown>;
  return {
    name: kept.displayName ?? name.formatted,
    given_name: name.givenName,
    family_name: name.familyName,
    middle_name: name.middleName,
    nickname: kept.nickName,
    locale: kept.locale,
    zoneinfo: kept.timezone,
  };
}

function availableClaims(user: UserRow): Record<string, unknown> {
  const data = dataOf(user);
  const claims: Record<string, unknown> = {
    // A sign-in name a directory gave that is not an address (SCIM userName) is no email claim.
    ...(isEmailAddress(user.email) ? { email: user.email, email_verified: user.emailVerified } : {}),
    groups: user.groups.map((g) => g.name),
  };
  const scim = scimProfile(user);
  for (const name of [...PROFILE_CLAIMS, 'phone_number']) {
    const value = own(data, name) ?? scim[name];
    if (typeof value === 'string') claims[name] = value;
  }
  if (typeof own(data, 'phone_number_verified') === 'boolean') claims.phone_number_verified = own(data, 'phone_number_verified');
  const address = own(data, 'address');
  if (address && typeof address === 'object' && !Array.isArray(address)) {
    const members = Object.fromEntries(
      ADDRESS_MEMBERS.map((m) => [m, own(address as Record<string, unknown>, m)]).filter(([, v]) => typeof v === 'string'),
    );
    if (Object.keys(members).length) claims.address = members;
  }
  claims.updated_at = Math.floor(user.updatedAt.getTime() / 1000);
  return claims;
}

/** Which claims each scope releases (Core §5.4; `groups` is the box's own). */
const SCOPE_CLAIMS: Record<string, string[]> = {
  email: ['email', 'email_verified'],
  profile: [...PROFILE_CLAIMS, 'updated_at'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
  groups: ['groups'],
};

/**
 * The claims about `user` that `scopes` release, and those asked for by name
 * (`requested`: the claims parameter, Core §5.5), of what the box can state; `sub` is the one
 * the client sees of them (api/credentials/subjects.ts subjectFor).
 */
export function userClaims(sub: string, user: UserRow, scopes: string[], requested: readonly string[] = []): Record<string, unknown> {
  const available = availableClaims(user);
  const names = new Set([...scopes.flatMap((s) => (Object.hasOwn(SCOPE_CLAIMS, s) ? SCOPE_CLAIMS[s]! : [])), ...requested]);
  return { sub, ...Object.fromEntries(Object.entries(available).filter(([name]) => names.has(name))) };
}

/**
 * The claims parameter (Core §5.5): a JSON object whose `userinfo` and `id_token`
 * members name claims (each null or an object of `essential`, `value`, `values`).
 * Claims the box does not know are ignored, as §5.5 says; a malformed parameter is
 * a string saying why.
 */
export function parseClaimsParameter(raw: string): RequestedClaims | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return 'claims must be a JSON object (OpenID Connect Core 5.5)';
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return 'claims must be a JSON object (OpenID Connect Core 5.5)';
  const requested: RequestedClaims = { userinfo: [], id_token: [] };
  for (const where of ['userinfo', 'id_token'] as const) {
    const member = own(parsed as Record<string, unknown>, where);
    if (member === undefined) continue;
    if (!member || typeof member !== 'object' || Array.isArray(member)) return `claims.${where} must be an object of claim names`;
    for (const [name, request] of Object.entries(member)) {
      if (request !== null && (typeof request !== 'object' || Array.isArray(request))) {
        return `claims.${where}.${name} must be null or an object (essential, value, values)`;
      }
      if (CLAIMS_SUPPORTED.includes(name)) requested[where].push(name);
    }
  }
  return requested;
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
  /** The `sub` the client sees of the person (api/credentials/subjects.ts subjectFor). */
  sub: string;
  scope: string | null;
  /** Claims the relying party asked for in the ID token by name (the claims parameter). */
  claims?: readonly string[];
  nonce?: string | null;
  /** When the person signed in; null when unknown (a session from before the box recorded it). */
  authTime: Date | null;
  /** What the sign-in proved (RFC 8176); null when unknown (a session from before the box recorded it: a password). */
  amr?: readonly string[] | null;
  sid?: string | null;
  /** The claims the client shapes for this grant (oauth/shaped-claims.ts); never one the box states. */
  shaped?: Record<string, unknown>;
  /** The access token issued with it (at_hash), and the code (c_hash), when there are. */
  accessToken?: string;
  code?: string;
  lifetimeSeconds: number;
  now: number;
}

/** ID tokens are RS256 unless their client registered another algorithm (Core §15.1: RS256 is what every RP accepts). */
export const DEFAULT_ID_TOKEN_ALG = 'RS256';

/** The algorithm of `client`'s ID tokens (and logout tokens): the one it registered, else ES256 for a fapi2 client (./fapi2.ts), else RS256. */
export const idTokenAlgOf = (client: Client): JwtAlg =>
  client.id_token_signed_response_alg ?? (isFapi2(client) ? FAPI2_ID_TOKEN_ALG : DEFAULT_ID_TOKEN_ALG);

/**
 * The ID token of an answer of the box: its lifetime from the grant's settings,
 * signed with the active key of the client's id_token_signed_response_alg.
 */
export function idTokenFor(
  svc: Pick<Needs, 'config' | 'keyring' | 'subjects'>,
  settings: GrantSettings,
  req: Omit<IdTokenRequest, 'lifetimeSeconds' | 'sub'>,
): string {
  return mintIdToken(
    {
      ...req,
      sub: subjectFor(svc.subjects, req.client, req.user),
      lifetimeSeconds: settings.id_token_expiration ?? DEFAULT_ID_TOKEN_SECONDS,
    },
    svc.config.baseUrl,
    svc.keyring.activeFor(idTokenAlgOf(req.client)),
  );
}

export function mintIdToken(req: IdTokenRequest, issuer: string, key: SigningKey): string {
  const iat = Math.floor(req.now / 1000);
  // With an access token the scopes' claims are the UserInfo endpoint's (Core §5.4), unless the client asks.
  const scopes = scopesOf(req.scope);
  const inIdToken = req.accessToken && req.client.claims_in_id_token !== true ? scopes.filter((s) => !USERINFO_SCOPES.includes(s)) : scopes;
  return signJwt(
    key,
    {
      iss: issuer,
      ...userClaims(req.sub, req.user, inIdToken, req.claims),
      // Shaped claims go in whatever the scope: the client's admin asked for them (docs/concepts/access-control.md).
      ...req.shaped,
      aud: req.client.id,
      iat,
      exp: iat + req.lifetimeSeconds,
      ...(req.authTime ? { auth_time: Math.floor(req.authTime.getTime() / 1000) } : {}),
      acr: acrOf(req.amr ?? AMR_PASSWORD),
      amr: req.amr ?? AMR_PASSWORD,
      ...(req.nonce ? { nonce: req.nonce } : {}),
      ...(req.sid ? { sid: req.sid } : {}),
      ...(req.accessToken ? { at_hash: halfHash(key, req.accessToken) } : {}),
      ...(req.code ? { c_hash: halfHash(key, req.code) } : {}),
    },
    'JWT',
  );
}

/**
 * What a token session records of the signed-in browser session it came from, and
 * of the claims its relying party asked for (its `details`; refreshes copy them).
 */
export function browserDetails(
  browser: { sid: string; authTime: Date; amr: readonly string[] | null },
  claims?: RequestedClaims | null,
): Record<string, unknown> {
  return {
    sid: browser.sid,
    auth_time: Math.floor(browser.authTime.getTime() / 1000),
    ...(browser.amr ? { amr: browser.amr, acr: acrOf(browser.amr) } : {}),
    ...(claims ? { claims } : {}),
  };
}

/** The browser session a token session came from, and the claims asked for, as browserDetails recorded them. */
export function browserOf(details: Record<string, unknown> | null): {
  sid: string | null;
  authTime: Date | null;
  amr: string[] | null;
  claims: string[];
} {
  const sid = typeof details?.sid === 'string' ? details.sid : null;
  const authTime = typeof details?.auth_time === 'number' ? new Date(details.auth_time * 1000) : null;
  return { sid, authTime, amr: amrOf(details), claims: requestedClaimsOf(details).id_token };
}

/** The claims recorded in a session's details (browserDetails), for UserInfo and refreshed ID tokens. */
export function requestedClaimsOf(details: Record<string, unknown> | null): RequestedClaims {
  const claims = details?.claims as Partial<RequestedClaims> | undefined;
  const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter((n): n is string => typeof n === 'string') : []);
  return { userinfo: names(claims?.userinfo), id_token: names(claims?.id_token) };
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

/** The person a token's session speaks for, as UserInfo answers of them (OpenID Connect Core §5.3); undefined without one. */
export const personOfSession = (svc: { pool: Pool }, session: { userId: number | null }): Promise<UserRow | undefined> =>
  session.userId === null ? Promise.resolve(undefined) : getUser(svc.pool, session.userId);
