// What a person must still prove before a request made on their behalf is answered:
// a sign-in (nobody is signed in, someone else is named, or the request asks for a
// sign-in made for it), or a stronger one (its class, `acr`, is short of what is
// wanted: ../people/sign-in.ts acrWanted), or one made a way the client accepts (an upstream
// provider is another way to a SignedIn: ../people/upstream/). Callers (oauth/interaction.ts,
// saml/idp.ts, people/, the doors) ask only these questions. They stand on this floor, below
// oauth/, saml/ and people/, because all three ask them and people/ stands above saml/.
import { ACR_MFA, acrOf, isAcr, meets, type Acr } from './acr.js';

/** The person a browser is signed in as. */
export interface SignedIn {
  userId: string;
  /** When they signed in (the ID token's auth_time). */
  authTime: Date;
  /** What the sign-in proved (RFC 8176): the ID token's amr; its acr follows (./acr.ts acrOf). */
  amr: readonly string[];
  /** The IdentityProvider it went through; null: the box's own sign-in. */
  provider: string | null;
}

/** The name a Client's identityProviders gives the box's own sign-in (password, passkey). */
export const BOX_SIGN_IN = 'box';

/** The ways both a client and the app it signs people in to accept (each unset: every way). */
export function acceptedWays(client: readonly string[] | undefined, app: readonly string[] | undefined): readonly string[] | undefined {
  if (client === undefined) return app;
  if (app === undefined) return client;
  return client.filter((way) => app.includes(way));
}

/** Whether a sign-in through `provider` (null: the box's own) is one of the ways `accepted` names (unset: every way). */
export function wayAccepted(accepted: readonly string[] | undefined, provider: string | null): boolean {
  return accepted === undefined || accepted.includes(provider ?? BOX_SIGN_IN);
}

/**
 * What a request asks of the sign-in behind it (OpenID Connect Core §3.1.2.1):
 * `prompt` (login and select_account ask for a sign-in again), `max_age` in
 * seconds, and the user an `id_token_hint` names.
 */
export interface SignInAsked {
  prompt: ReadonlySet<string>;
  maxAge: number | undefined;
  hintedUser: string | undefined;
}

export interface SignInFacts {
  asked: SignInAsked;
  signedIn: SignedIn | undefined;
  /** This browser signed in after the request was first seen (api/http/fresh-sign-in.ts). */
  signedInSinceRequest: boolean;
  /** The ways of signing in the request's client accepts (Client.identityProviders); unset: every way. */
  accepted?: readonly string[];
  now: number;
}

/** Whether the request asks for a sign-in made for it (then the way back from the sign-in page carries a marker). */
export function asksForFreshSignIn(asked: SignInAsked): boolean {
  return asked.prompt.has('login') || asked.prompt.has('select_account') || asked.maxAge !== undefined;
}

/**
 * Whether the person must sign in (again) before the request is answered (Core
 * §3.1.2.1): nobody is signed in; id_token_hint names someone else; the browser
 * signed in a way the client does not accept; or prompt=login / select_account asks
 * for it, or max_age has passed since the last sign-in — unless this browser has
 * signed in since the request came.
 */
export function mustSignIn(f: SignInFacts): boolean {
  if (!f.signedIn) return true;
  if (!wayAccepted(f.accepted, f.signedIn.provider)) return true;
  const { asked } = f;
  if (asked.hintedUser !== undefined && asked.hintedUser !== f.signedIn.userId) return true;
  const stale =
    asked.prompt.has('login') ||
    asked.prompt.has('select_account') ||
    (asked.maxAge !== undefined && f.now - f.signedIn.authTime.getTime() > asked.maxAge * 1000);
  return stale && !f.signedInSinceRequest;
}

/** Whether a browser's sign-in falls short of the class wanted: a step-up (a sign-in again, with what is missing) is due. */
export function mustStepUp(signedIn: SignedIn, want: Acr | undefined): boolean {
  return !meets(acrOf(signedIn.amr), want);
}

/** Which rule the sign-in behind a grant no longer meets: its client's minimum_acr, or a group's second factor. */
export type Unmet = { rule: 'client'; wants: Acr } | { rule: 'group'; wants: Acr };

/**
 * What a grant's refresh asks of the sign-in behind it, by the rules as they are now
 * (docs/architecture.md §12: "Rules that change what a person must prove (a group's second-factor
 * rule, a client's minimum_acr) hold for grants already issued, at their next refresh"): the
 * client's minimum_acr, and several factors when a group of the person's requires a second
 * factor. Undefined when the sign-in (of class `proved`) meets both. The person's own factors
 * are not among them: enrolling one is the person's choice, and ends none of their grants.
 */
export function unmetAtRefresh(proved: Acr, clientMinimum: unknown, groupRequires: boolean): Unmet | undefined {
  if (isAcr(clientMinimum) && !meets(proved, clientMinimum)) return { rule: 'client', wants: clientMinimum };
  if (groupRequires && !meets(proved, ACR_MFA)) return { rule: 'group', wants: ACR_MFA };
  return undefined;
}
