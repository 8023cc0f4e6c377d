// The short-lived JWT an allowed request can carry to its app (App
// upstream.token): signed by the box with its access-token key, for the app's
// audience, naming the caller as the box saw them. Its `jti` is the caller's
// session, so the box refuses it once that session is closed, like any of its
// tokens; the app can also verify it offline with the box's JWKS. One is made per
// session and app and reused until shortly before it expires: signing is the one
// costly step of a decision, and the hot path should not pay it on every request;
// it is never reused once the caller it names has changed. The claims the App shapes (App.claims,
// api/policy/claims.ts) are evaluated only when a token is signed, never for a reused one.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { shapeClaims, shapesClaims, type ClaimBindings } from '../policy/claims.js';
import type { Keyring } from '../credentials/keyring.js';
import { signJwt } from '../credentials/jwt.js';
import type { App } from '../types.js';
import { audienceOf } from './apps.js';
import { claimBindingsOf, type Caller } from './request.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
  log: Logger;
}

const DEFAULT_LIFETIME_SECONDS = 60;
/** A cached token is reused while it has at least this long to live. */
const REUSE_MARGIN_SECONDS = 10;
const MAX_CACHED = 10_000;

const cache = new Map<string, { jwt: string; exp: number }>();

/** What the App's claim expressions see: the person as the box's own policies do, and the caller's grant. */
const claimBindings = (app: App, caller: Caller): ClaimBindings | undefined =>
  shapesClaims(app) ? (claimBindingsOf(caller) ?? undefined) : undefined;

/** The claims the App shapes for this caller; a claim whose expression fails is left out and logged. */
function shapedFor(svc: Pick<Needs, 'log'>, app: App, bindings: ClaimBindings | undefined): Record<string, unknown> {
  if (!bindings) return {};
  const { claims, leftOut } = shapeClaims(app.claims, bindings);
  for (const { claim, why } of leftOut) {
    svc.log.warn({ app: app.id, claim, user: bindings.user.id }, `claim "${claim}" of app "${app.id}" left out: ${why}`);
  }
  return claims;
}

export function upstreamToken(svc: Pick<Needs, 'config' | 'keyring' | 'log'>, app: App, caller: Caller, now = Date.now()): string {
  const claims = {
    iss: svc.config.baseUrl,
    sub: caller.subject?.sub ?? caller.user?.id ?? caller.client ?? '',
    // An exchanged token's subject of another issuer says so (RFC 9493), and its actors stay named (RFC 8693 act).
    ...(caller.subject && caller.subject.iss !== svc.config.baseUrl ? { sub_id: { format: 'iss_sub', ...caller.subject } } : {}),
    ...(caller.act ? { act: caller.act } : {}),
    aud: audienceOf(app),
    ...(caller.client ? { client_id: caller.client } : {}),
    ...(caller.scope ? { scope: caller.scope } : {}),
    ...(caller.user
      ? { email: caller.user.email, email_verified: caller.user.emailVerified, groups: caller.user.groups.map((g) => g.name) }
      : {}),
    // How the person signed in (RFC 9068 §2.2.1, RFC 9470 §6.1), for an app that asks more of some pages itself.
    ...(caller.acr !== null
      ? { acr: caller.acr, amr: caller.amr, ...(caller.authTime !== null ? { auth_time: caller.authTime } : {}) }
      : {}),
    jti: caller.session!,
  };
  // Reused only while it says what the box says now: a person's new email or groups, or the
  // app's new audience, make a new one (the app reads them from the token, not from the box).
  // The App's expressions and what they read belong to the key: a new expression, or new data of the person, make a new one.
  const bindings = claimBindings(app, caller);
  const key = `${app.id}\n${JSON.stringify(claims)}${bindings ? `\n${JSON.stringify(app.claims)}\n${JSON.stringify(bindings.user)}` : ''}`;
  const nowSeconds = Math.floor(now / 1000);
  const cached = cache.get(key);
  if (cached && cached.exp - nowSeconds >= REUSE_MARGIN_SECONDS) return cached.jwt;
  const exp = nowSeconds + (app.upstream?.token?.lifetime ?? DEFAULT_LIFETIME_SECONDS);
  // The shaped claims first: they never replace the box's (their names are refused at write time too).
  const jwt = signJwt(svc.keyring.active, { ...shapedFor(svc, app, bindings), ...claims, iat: nowSeconds, exp });
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, { jwt, exp });
  return jwt;
}
