// What to ask the person for an authorization request — at the authorization endpoint, and
// again when the consent form answers: a sign-in, a stronger one, their consent, or nothing more
// (grant), or an error back to the client. Decided in one pure function from what the box knows:
// the request (read and checked by ./authorization-request.ts), who this browser is signed in as
// and since when, what the person allowed the client before, and the form's answer. The door
// (api/http/routes/authorization-endpoint.ts) gathers those facts and carries out the decision
// (a grant by ./authorization-response.ts); it decides nothing itself.
//
// What the person must still prove is asked of api/credentials/sign-in.ts: a
// sign-in, or a stronger one (`next: 'step-up'` when the class of sign-in wanted —
// the request's acr_values, its client's minimum_acr, the person's group — is more
// than this browser's sign-in proved), or a sign-in another way (the client accepts only
// some: Client.identityProviders).
import type { AuthorizationRequest } from './authorization-request.js';
import { scopesOf } from '../credentials/scopes.js';
import type { Acr } from '../credentials/acr.js';
import { asksForFreshSignIn, mustSignIn, mustStepUp, type SignedIn } from '../credentials/sign-in.js';

export interface InteractionFacts {
  request: AuthorizationRequest;
  signedIn: SignedIn | undefined;
  /**
   * This browser signed in after the request was first seen (the `sign_in_after`
   * marker, api/http/fresh-sign-in.ts): what prompt=login and max_age wait for.
   */
  signedInSinceRequest: boolean;
  /**
   * The scopes the person allowed this client before; undefined when they never
   * allowed it anything (not even a request without scopes); `first-party`: the
   * client needs no consent.
   */
  consented: readonly string[] | 'first-party' | undefined;
  /** The consent form's answer, when the request comes back from it. */
  answer?: 'allow' | 'deny';
  /** The class of sign-in the request needs (api/people/sign-in.ts acrWanted); undefined: any. */
  acrWanted?: Acr;
  /** The ways of signing in the client and the app asked for accept (api/credentials/sign-in.ts acceptedWays); undefined: every way. */
  accepted?: readonly string[] | undefined;
  now: number;
}

export type Interaction =
  /** The sign-in page; `fresh`: the request waits for a sign-in made after it (prompt, max_age). */
  | { next: 'sign-in'; fresh: boolean }
  /** A sign-in again, with the factor this browser's sign-in lacks for `acr` (api/http/sign-in-steps.ts). */
  | { next: 'step-up'; acr: Acr }
  /** The consent form was sent by a browser that is no longer signed in: start again from the app. */
  | { next: 'signed-out' }
  /** The consent page. */
  | { next: 'consent' }
  /** Issue what the request asks for; `remember`: record the consent first. */
  | { next: 'grant'; remember: boolean }
  /** Back to the client with an error (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6). */
  | { next: 'error'; error: 'login_required' | 'consent_required' | 'access_denied'; description: string };

export function decideInteraction(f: InteractionFacts): Interaction {
  const { request } = f;
  if (f.answer !== undefined) {
    if (!f.signedIn) return { next: 'signed-out' };
    if (f.answer === 'deny') return { next: 'error', error: 'access_denied', description: 'the user denied access' };
  }
  // The consent form carries the request: what it asks of the sign-in holds there too.
  const accepted = f.accepted;
  if (mustSignIn({ asked: request, signedIn: f.signedIn, signedInSinceRequest: f.signedInSinceRequest, accepted, now: f.now })) {
    // Core §3.1.2.1: prompt=none "MUST NOT display any authentication or consent user interface pages".
    if (request.prompt.has('none')) return { next: 'error', error: 'login_required', description: 'the user must sign in' };
    return { next: 'sign-in', fresh: asksForFreshSignIn(request) };
  }
  // Step-up is a new sign-in with the missing factor, never a flag (docs/architecture.md §12): no
  // grant, not even an answer to the consent form, while the sign-in falls short.
  if (f.acrWanted !== undefined && mustStepUp(f.signedIn!, f.acrWanted)) {
    if (request.prompt.has('none'))
      return { next: 'error', error: 'login_required', description: 'the user must sign in with a stronger factor' };
    return { next: 'step-up', acr: f.acrWanted };
  }
  if (f.answer === 'allow') return { next: 'grant', remember: true };
  const allowed = f.consented;
  const consented = allowed === 'first-party' || (allowed !== undefined && scopesOf(request.scope).every((s) => allowed.includes(s)));
  if (consented && !request.prompt.has('consent')) return { next: 'grant', remember: false };
  if (request.prompt.has('none')) {
    return { next: 'error', error: 'consent_required', description: 'the user has not allowed this client these scopes' };
  }
  return { next: 'consent' };
}
