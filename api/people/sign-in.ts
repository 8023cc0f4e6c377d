// What a person must still prove before a request made on their behalf is answered.
// Today that is a sign-in: nobody is signed in, someone else is named, or the
// request asks for a sign-in made for it. The seam for what comes: a second factor
// is one more thing a sign-in may lack (its `acr`), and an upstream provider is
// another way to produce a SignedIn; callers (oauth/authorization.ts) ask only
// these questions.

/** The person a browser is signed in as. */
export interface SignedIn {
  userId: string;
  /** When they signed in (the ID token's auth_time). */
  authTime: Date;
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
  now: number;
}

/** Whether the request asks for a sign-in made for it (then the way back from the sign-in page carries a marker). */
export function asksForFreshSignIn(asked: SignInAsked): boolean {
  return asked.prompt.has('login') || asked.prompt.has('select_account') || asked.maxAge !== undefined;
}

/**
 * Whether the person must sign in (again) before the request is answered (Core
 * §3.1.2.1): nobody is signed in; id_token_hint names someone else; or
 * prompt=login / select_account asks for it, or max_age has passed since the last
 * sign-in — unless this browser has signed in since the request came.
 */
export function mustSignIn(f: SignInFacts): boolean {
  if (!f.signedIn) return true;
  const { asked } = f;
  if (asked.hintedUser !== undefined && asked.hintedUser !== f.signedIn.userId) return true;
  const stale =
    asked.prompt.has('login') ||
    asked.prompt.has('select_account') ||
    (asked.maxAge !== undefined && f.now - f.signedIn.authTime.getTime() > asked.maxAge * 1000);
  return stale && !f.signedInSinceRequest;
}
