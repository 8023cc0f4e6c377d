// What every kind of upstream provider hands the box once a person signed in there: who they are
// at the provider, what it says of them, and why it would not say. OpenID Connect, OAuth 2.0 and
// GitHub (./oauth.ts, ./github.ts) and LDAP (./ldap.ts) produce it; what becomes of it (a person
// linked, made, refused; their groups) is ./linking.ts's and ./groups.ts's to decide.
import type { IdentityProviderSpec } from '../../schema/crd-types.js';
import { emailProblem } from '../../schema/people.js';

/** What a provider says of the person who signed in there, read once and checked. */
export interface UpstreamProfile {
  /** Their stable id at the provider (OpenID Connect `sub`, GitHub's numeric id, LDAP entryUUID or DN). */
  subject: string;
  /** The address the provider gave, when it is one the box takes of anyone (emailFrom). */
  email?: string;
  /** Why the address the provider gave is not used (never the address itself): then there is no `email`. */
  unusableEmail?: string;
  /** The provider says it verified `email` (email_verified true; GitHub's verified primary; LDAP where configured). */
  emailVerified: boolean;
  name?: string;
  /** Their groups at the provider, by name (LDAP: the groups' names; GitHub: "org" and "org/team"). */
  groups: string[];
  /** The claims (ID token, userinfo) or attributes read, for the group rules that test a claim. */
  claims: Record<string, unknown>;
  /** What the provider says the sign-in proved (its ID token's amr, RFC 8176); empty when it says nothing. */
  amr: string[];
}

/**
 * The address a provider gave, as a profile holds it. Any address that enters goes through one
 * check (api/schema/people.ts emailProblem): a provider's that fails it — a CR LF and a header,
 * two addresses, thousands of characters, a NUL — is as if the provider gave none, and the
 * profile says why. A person linked before still signs in (their link is by subject); nobody is
 * made or linked by it (a new person needs an address: ./linking.ts 'no-email'), and it is never
 * stored. A value that is no string, or empty, is absent as before.
 */
export function emailFrom(value: unknown): Pick<UpstreamProfile, 'email' | 'unusableEmail'> {
  if (typeof value !== 'string' || value === '') return {};
  const problem = emailProblem(value);
  return problem ? { unusableEmail: problem } : { email: value.trim() };
}

/**
 * Why a provider gave no profile:
 * - `unavailable`: it did not answer, or not in time (the person may try again later);
 * - `refused`: it said no (a wrong password, a denied consent, not in an allowed organization);
 * - `invalid`: what came back does not hold (a forged or replayed token, a state or issuer that
 *   does not match, a response without what it must carry): a callback replayed or expired;
 * - `misconfigured`: the provider's set-up at the box does not hold (the provider refuses the
 *   box's client credentials, its metadata names another issuer or lacks an endpoint, the
 *   directory refuses the service account): nothing the person can change, an admin must;
 * - `unusable`: the provider signed the person in, but its answer names them by nothing the box
 *   can keep (a transient NameID, new at each sign-in): the provider's side or the mapping at the
 *   box must change, and the page says so without blaming either's set-up.
 * The message is for the log and the audit, never with a secret in it; the page says less.
 */
export type UpstreamFailure = 'unavailable' | 'refused' | 'invalid' | 'misconfigured' | 'unusable';

export class UpstreamError extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

export type OidcSettings = NonNullable<IdentityProviderSpec['oidc']>;
export type OAuth2Settings = NonNullable<IdentityProviderSpec['oauth2']>;
export type GitHubSettings = NonNullable<IdentityProviderSpec['github']>;
export type LdapSettings = NonNullable<IdentityProviderSpec['ldap']>;

/** How long the box waits for a provider, for each request (LDAP: ldap.timeoutSeconds). */
export const UPSTREAM_TIMEOUT_MS = 5000;
