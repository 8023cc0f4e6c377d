// A sign-in at a provider, from the box's side: begun (a state, a nonce and a PKCE verifier,
// bound to the browser that began it), finished (the callback checked against what was begun,
// the provider's answer checked by ./oauth.ts), or a directory's password checked (./ldap.ts).
// The doors (api/http/routes/upstream.ts) only carry these to and from the browser.
//
// RFC 9700 §4.7 (CSRF) and §4.4 (mix-up): the state is single-use and bound to the browser by
// a cookie, so a callback pasted into another browser finishes nothing; the provider the
// callback's path names must be the one the sign-in was begun at, and ./oauth.ts checks the
// issuer of what comes back. The PKCE verifier is derived from the browser's cookie, never
// stored: a copy of the database cannot finish a sign-in (RFC 7636).
import type { Attempts, Refusal } from '../attempts.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Pool } from '../../db/pool.js';
import type { Config } from '../../config.js';
import type { Keyring } from '../../credentials/keyring.js';
import { tokenHash } from '../../credentials/tokens.js';
import type { IdentityProvider } from '../../types.js';
import {
  allIdentityProviders,
  identityProviders,
  insertUpstreamSignIn,
  takeUpstreamSignIn,
  type UpstreamSignIn,
} from '../../store/identity-providers.js';
import { wayAccepted } from '../../credentials/sign-in.js';
import { ldapSignIn } from './ldap.js';
import { authorizationUrl, finishAuthorization, type UpstreamRequest } from './oauth.js';
import { UpstreamError, type UpstreamProfile } from './profile.js';
import { providerSecret } from './secret.js';
import { acceptedAssertion, samlProfile } from './saml.js';
import { boxSamlKey, boxSamlKeys } from '../../saml/box-keys.js';
import { newSamlId } from '../../saml/names.js';
import { clientDocumentRules } from '../../document-fetch.js';
import { idpMetadata, spUrls } from './saml-metadata.js';
import { authnRequestUrl, firstUseOfAssertion, requestAnswered, verifiedSamlResponse } from './saml-sp.js';

export interface FlowServices {
  pool: Pool;
  factorKey: Buffer;
  config: Pick<Config, 'baseUrl' | 'clientMetadata'>;
  keyring: Pick<Keyring, 'activeFor' | 'jwks' | 'find'>;
}

const random = (): string => randomBytes(32).toString('base64url');
const verifierOf = (binding: string): string => createHash('sha256').update(`pkce:${binding}`).digest('base64url');

/** Where a provider sends the browser back: registered at the provider as the redirect URI. */
export const callbackUrl = (baseUrl: string, provider: string): string =>
  `${baseUrl.replace(/\/$/, '')}/auth/upstream/${encodeURIComponent(provider)}/callback`;

/** The label of a provider's button. */
export const labelOf = (provider: IdentityProvider): string => provider.displayName ?? provider.id;

/** A provider people may use now (one that is disabled is neither offered nor accepted). */
export async function enabledProvider(svc: Pick<FlowServices, 'pool'>, id: string): Promise<IdentityProvider | undefined> {
  const stored = await identityProviders.read(svc.pool, id);
  return stored && !stored.resource.disabled ? stored.resource : undefined;
}

/**
 * Whether a browser's sign-in through `provider` (null: the box's own) still counts: a provider
 * disabled or removed (its people cut off, an incident) takes its sign-ins with it.
 */
export async function providerStands(pool: Pool, provider: string | null): Promise<boolean> {
  return provider === null || (await enabledProvider({ pool }, provider)) !== undefined;
}

/** The providers a sign-in page offers, of those the client accepts (Client.identityProviders; unset: all). */
export async function offeredProviders(pool: Pool, accepted: readonly string[] | undefined): Promise<IdentityProvider[]> {
  return (await allIdentityProviders(pool)).map((p) => p.provider).filter((p) => !p.disabled && wayAccepted(accepted, p.id));
}

/** What a sign-in at a provider comes back to. */
export interface Begun {
  returnTo: string;
  acr: string | null;
  /** A link from the account page: the person it is for. */
  linkUser: number | null;
}

/**
 * Begins a sign-in at `provider` (oidc, oauth2, github) for a browser at `address`: the browser's
 * cookie value, and where to send it. Each sign-in begun writes a row until its provider answers,
 * so it is counted per address before it is written (`throttled`), and given back when the
 * provider did not answer (nothing was written); that failure is thrown.
 */
export async function beginUpstream(
  svc: FlowServices & { attempts: Attempts },
  provider: IdentityProvider,
  begun: Begun,
  address: string,
): Promise<{ binding: string; url: URL } | { throttled: Refusal }> {
  const keys = [{ upstreamStartsFrom: address }];
  const throttled = await svc.attempts.begin(keys);
  if (throttled) return { throttled };
  try {
    return await begin(svc, provider, begun);
  } catch (err) {
    await svc.attempts.giveBack(keys);
    throw err;
  }
}

async function begin(svc: FlowServices, provider: IdentityProvider, begun: Begun): Promise<{ binding: string; url: URL }> {
  const binding = random();
  if (provider.type === 'saml') {
    // The AuthnRequest's ID is the state: the Response names it (InResponseTo), and it is found by it.
    const requestId = newSamlId();
    const idp = await idpMetadata(provider, clientDocumentRules(svc.config));
    const url = authnRequestUrl(svc.config.baseUrl, provider, idp, requestId, boxSamlKey(svc.keyring), new Date());
    await insertUpstreamSignIn(svc.pool, tokenHash(requestId), {
      provider: provider.id,
      browserHash: tokenHash(binding),
      nonce: '',
      ...begun,
    });
    return { binding, url };
  }
  const request: UpstreamRequest = {
    state: random(),
    nonce: random(),
    codeVerifier: verifierOf(binding),
    redirectUri: callbackUrl(svc.config.baseUrl, provider.id),
  };
  // The provider's address first (its metadata may be fetched): a provider that does not answer leaves no row behind.
  const url = await authorizationUrl(provider, request);
  const row: UpstreamSignIn = { provider: provider.id, browserHash: tokenHash(binding), nonce: request.nonce, ...begun };
  await insertUpstreamSignIn(svc.pool, tokenHash(request.state), row);
  return { binding, url };
}

/**
 * Finishes the sign-in the callback (`callback`: its whole URL) answers: the sign-in begun with
 * its state, used up now, at this provider, by this browser (`binding`: its cookie); then the
 * provider's answer, checked. UpstreamError 'invalid' when any of that does not hold.
 */
export async function finishUpstream(
  svc: FlowServices,
  providerId: string,
  callback: URL,
  binding: string | undefined,
): Promise<{ provider: IdentityProvider; profile: UpstreamProfile; begun: UpstreamSignIn }> {
  const state = callback.searchParams.get('state');
  if (!state) throw new UpstreamError('invalid', 'the callback carries no state');
  // Taken whatever follows: a state is used once (a replayed callback finds nothing).
  const begun = await takeUpstreamSignIn(svc.pool, tokenHash(state));
  if (!begun) throw new UpstreamError('invalid', 'no sign-in with this state is waiting (used, expired or never begun)');
  if (begun.provider !== providerId) throw new UpstreamError('invalid', `the sign-in was begun at "${begun.provider}", not here`);
  if (!binding || !timingSafeEqual(tokenHash(binding), begun.browserHash))
    throw new UpstreamError('invalid', 'the sign-in was begun in another browser');
  const provider = await enabledProvider(svc, providerId);
  if (!provider) throw new UpstreamError('invalid', 'the provider is gone or disabled');
  const request: UpstreamRequest = {
    state,
    nonce: begun.nonce,
    codeVerifier: verifierOf(binding),
    redirectUri: callbackUrl(svc.config.baseUrl, provider.id),
  };
  const profile = await finishAuthorization(provider, await secretOf(svc, provider.id), request, callback);
  return { provider, profile, begun };
}

/**
 * Finishes the sign-in a SAML Response posted to the ACS of `providerId` answers (`posted`: the
 * SAMLResponse field). The Response's signature first (the request it names is believed only once
 * the provider signed it), then the sign-in it answers, used up now, begun at this provider by
 * this browser (`binding`), then the profile's rules against that request (./saml.ts), and the
 * Assertion spent once. UpstreamError 'invalid' when any of that does not hold.
 */
export async function finishSamlUpstream(
  svc: FlowServices,
  providerId: string,
  posted: string,
  binding: string | undefined,
): Promise<{ provider: IdentityProvider; profile: UpstreamProfile; begun: UpstreamSignIn }> {
  const provider = await enabledProvider(svc, providerId);
  if (!provider?.saml) throw new UpstreamError('invalid', 'the provider is gone, disabled or not a SAML provider');
  const idp = await idpMetadata(provider, clientDocumentRules(svc.config));
  const verified = await verifiedSamlResponse(posted, idp, boxSamlKeys(svc.keyring));
  const requestId = requestAnswered(verified);
  // Taken whatever follows: a request is answered once (a replayed Response finds nothing).
  const begun = await takeUpstreamSignIn(svc.pool, tokenHash(requestId));
  if (!begun) throw new UpstreamError('invalid', 'no sign-in with this request is waiting (used, expired or never begun)');
  if (begun.provider !== providerId) throw new UpstreamError('invalid', `the sign-in was begun at "${begun.provider}", not here`);
  if (!binding || !timingSafeEqual(tokenHash(binding), begun.browserHash))
    throw new UpstreamError('invalid', 'the sign-in was begun in another browser');
  const sp = spUrls(svc.config.baseUrl, provider.id);
  const assertion = acceptedAssertion(
    verified,
    { idpEntityId: idp.entityId, spEntityId: sp.entityId, acsUrl: sp.acsUrl, requestId },
    new Date(),
  );
  if (!(await firstUseOfAssertion(svc.pool, idp.entityId, assertion.id, assertion.acceptUntil)))
    throw new UpstreamError('invalid', 'the Assertion was used before (a replay)');
  return { provider, profile: samlProfile(provider.saml, assertion), begun };
}

/** A directory's (LDAP) check of a person's username and password; the password is sent on, never kept. */
export async function directorySignIn(
  svc: FlowServices,
  provider: IdentityProvider,
  username: string,
  password: string,
): Promise<UpstreamProfile> {
  if (provider.type !== 'ldap' || !provider.ldap) throw new UpstreamError('invalid', 'not a directory');
  return ldapSignIn(provider.ldap, await secretOf(svc, provider.id), username, password);
}

async function secretOf(svc: FlowServices, id: string): Promise<string | undefined> {
  const stored = await identityProviders.read(svc.pool, id);
  return providerSecret(svc.factorKey, id, stored?.secretSealed ?? null);
}

/** The directory the sign-in page's own password form also asks (ldap.passwordForm), if one is set. */
export async function passwordFormDirectory(pool: Pool): Promise<IdentityProvider | undefined> {
  return (await allIdentityProviders(pool)).map((p) => p.provider).find((p) => !p.disabled && p.ldap?.passwordForm === true);
}
