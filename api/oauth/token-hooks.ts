// The box's Hooks at the token endpoint (api/hooks/): tokenIssuing before an access token,
// idTokenIssuing before an ID token. Asked once the client is authenticated and before the grant's
// transaction, over what the grant is about to issue (Grant.prospect: read without a lock), so that
// no database connection waits for a hook; the grant then writes what the verdict allows. The
// implicit kinds of the authorization endpoint (./authorization-response.ts) ask the same, before
// their transaction. What a hook adds is held to the rules of an admin's shaped claims (never one
// the box alone states); a refusal is access_denied with the hook's message (the grant may name
// another code: Grant.hookRefusal), a failed call of a Hook whose failurePolicy is Fail
// temporarily_unavailable (503): never a 500. The message travels only through errorFields
// (api/errors.ts describable): printable ASCII, at most the 512 characters an answer may carry.
import { OAuthError, resourceError, type EndpointErrorCode } from '../credentials/errors.js';
import type { HookCaller } from '../hooks/caller.js';
import type { HookRequest, Moment, Verdict } from '../hooks/moments.js';
import { requestUser } from '../policy/requests.js';
import type { Client } from '../types.js';
import type { GrantServices, HookedClaims, Prospect } from './grants/grant.js';
import { claimGrantOf } from './shaped-claims.js';
import { scopesOf } from '../credentials/scopes.js';

/** What asking the Hooks uses. */
export type TokenHookServices = Pick<GrantServices, 'users'> & { hooks: HookCaller };

/** What a hook's refusal says: which hook refused, in its words. */
export const refusedByHook = (verdict: { hook: string; message: string }): string =>
  `refused by hook "${verdict.hook}": ${verdict.message}`;

/** The refusal a verdict is at the token endpoint (`code` for a hook's no), or undefined when it allows. */
export function tokenRefusal(verdict: Verdict, code: EndpointErrorCode = 'access_denied'): OAuthError | undefined {
  if (verdict.allowed) return undefined;
  if (verdict.failed) return new OAuthError('temporarily_unavailable', verdict.message);
  return new OAuthError(code, refusedByHook(verdict));
}

/** Which tokens a request issues: an access token (tokenIssuing), an ID token with scope openid (idTokenIssuing). */
export interface Issues {
  access: boolean;
  id: boolean;
}

/**
 * Asks the Hooks of tokenIssuing (and, with scope openid, of idTokenIssuing) about `prospect`,
 * at once; throws the refusal (`refusal` for a hook's no), or answers what each token gets.
 * Nothing (and no read) when the box has no Hook at either moment. `issues`: which of the two
 * tokens the request issues (the token endpoint: an access token always, an ID token with openid).
 */
export async function hookedClaims(
  svc: TokenHookServices,
  grantType: string,
  client: Client,
  prospect: () => Promise<Prospect | undefined>,
  refusal: EndpointErrorCode = 'access_denied',
  issues: Issues = { access: true, id: true },
): Promise<HookedClaims | undefined> {
  const [access, id] = await Promise.all([
    issues.access && svc.hooks.asksAt('tokenIssuing'),
    issues.id && svc.hooks.asksAt('idTokenIssuing'),
  ]);
  if (!access && !id) return undefined;
  const grant = await prospect();
  if (!grant) return undefined; // the grant refuses anyway (an unknown code): it says why
  const person = grant.userId === null ? undefined : await svc.users.get(String(grant.userId));
  const request: HookRequest = {
    client: { id: client.id },
    ...(person ? { user: requestUser(person) } : {}),
    grant: { type: grantType, ...omitClient(claimGrantOf(client.id, grant)) },
  };
  const about = { client: client.id, ...(person ? { user: String(person.id) } : {}) };
  const ask = (moment: Moment, wanted: boolean): Promise<Verdict | undefined> =>
    wanted ? svc.hooks.ask(moment, request, about) : Promise.resolve(undefined);
  const [forAccess, forId] = await Promise.all([
    ask('tokenIssuing', access),
    ask('idTokenIssuing', id && person !== undefined && scopesOf(grant.scope).includes('openid')),
  ]);
  for (const verdict of [forAccess, forId]) {
    const refused = verdict && tokenRefusal(verdict, refusal);
    if (refused) throw refused;
  }
  const claimsOf = (v: Verdict | undefined): Record<string, unknown> => (v?.allowed ? v.claims : {});
  return { access: claimsOf(forAccess), id: claimsOf(forId) };
}

const omitClient = <T extends { client: string }>({ client: _client, ...rest }: T): Omit<T, 'client'> => rest;

/** Shaped claims with what the Hooks add: an admin's shaped claim of a name wins over a hook's. */
export const withHooked = (hooked: Record<string, unknown> | undefined, shaped: Record<string, unknown>): Record<string, unknown> =>
  hooked ? { ...hooked, ...shaped } : shaped;

/**
 * What the Hooks of userinfoAnswering add to a UserInfo answer about the person of `session`
 * (before it is sent; the answer reads nothing after), or the refusal: 403 access_denied with the
 * hook's message, 503 temporarily_unavailable for a failed call of a Hook whose failurePolicy is Fail.
 */
export async function userinfoHooked(
  svc: TokenHookServices,
  session: {
    clientId: string;
    userId: number | null;
    scope: string | null;
    audience: string | null;
    details: Record<string, unknown> | null;
  },
): Promise<Record<string, unknown>> {
  if (session.userId === null || !(await svc.hooks.asksAt('userinfoAnswering'))) return {};
  const person = await svc.users.get(String(session.userId));
  if (!person) return {};
  const verdict = await svc.hooks.ask(
    'userinfoAnswering',
    {
      client: { id: session.clientId },
      user: requestUser(person),
      grant: { type: 'userinfo', ...omitClient(claimGrantOf(session.clientId, session)) },
    },
    { client: session.clientId, user: String(person.id) },
  );
  if (verdict.allowed) return verdict.claims;
  if (verdict.failed) throw resourceError('temporarily_unavailable', verdict.message);
  throw resourceError('access_denied', refusedByHook(verdict));
}

/**
 * What the Hooks of samlAssertionIssuing add to the assertion a SAML app gets of `userId` (its
 * attributes, each a claim's values), asked before the assertion is made and its sign-in recorded;
 * or the refusal, in the hook's words for the page to say as the hook's (failed: a failed call of a
 * Hook whose failurePolicy is Fail, FAILED_MESSAGE).
 */
export async function assertionHooked(
  svc: TokenHookServices,
  clientId: string,
  userId: number,
  amr: readonly string[],
): Promise<{ claims: Record<string, unknown> } | { refused: string; failed: boolean }> {
  if (!(await svc.hooks.asksAt('samlAssertionIssuing'))) return { claims: {} };
  const person = await svc.users.get(String(userId));
  if (!person) return { claims: {} };
  const verdict = await svc.hooks.ask(
    'samlAssertionIssuing',
    {
      client: { id: clientId },
      user: requestUser(person),
      grant: { type: 'saml', ...omitClient(claimGrantOf(clientId, { userId, scope: null, audience: null, details: { amr: [...amr] } })) },
    },
    { client: clientId, user: String(userId) },
  );
  if (verdict.allowed) return { claims: verdict.claims };
  return { refused: verdict.message, failed: verdict.failed };
}
