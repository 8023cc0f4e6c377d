// An upstream provider's answer (an OpenID Provider's ID token, GitHub's user, a directory's bind:
// ../upstream/): the person it is at the box (made or linked as ../upstream/linking.ts decides,
// in ../upstream/admit.ts), as a first factor for the sign-in — or the link a person began on
// their account page. Its proof is no guess (the answer is bound to the browser that began the
// sign-in: ../upstream/flow.ts), so nothing is counted against a throttle; the starts are
// (../attempts.ts upstreamStartsFrom). A sign-in goes on only while the identity is still the
// person's: an unlink (an administrator's, after a takeover at the provider) or an adoption that
// commits first signs nobody in; one that comes after ends it.
import type { IdentityProvider } from '../../types.js';
import type { FirstFactor } from '../steps.js';
import { admit, stillLinked, upstreamAmr, type AdmitServices } from '../upstream/admit.js';
import type { LinkRefusal } from '../upstream/linking.js';
import type { UpstreamProfile } from '../upstream/profile.js';
import { signInThrough, type WayServices } from './way.js';

/** What a provider's answer came to: a first factor, a link done (from the account page), or why nobody is signed in. */
export type ProviderAnswer = { proven: FirstFactor } | { linked: true } | { refused: LinkRefusal; message?: string };

/** The person `profile` is at the box, after a sign-in at `provider` (or a link for `linkFor`, begun on their account page). */
export async function throughProvider(
  svc: WayServices & AdmitServices,
  provider: IdentityProvider,
  profile: UpstreamProfile,
  linkFor: number | undefined,
  address: string,
): Promise<ProviderAnswer> {
  let refused: LinkRefusal | undefined;
  let message: string | undefined;
  const attempt = { address, counts: linkFor === undefined, unthrottled: true, success: linkFor === undefined && `through ${provider.id}` };
  const answer = await signInThrough<FirstFactor | 'linked'>(svc, attempt, async () => {
    const admission = await admit(svc, provider, profile, linkFor, address);
    // The refusal's line is ../upstream/admit.ts's (which linking rule): this one is the sign-in's.
    if ('refused' in admission) {
      message = admission.message;
      return { refused: (refused = admission.refused), said: admission.refused };
    }
    if (linkFor !== undefined) return { proven: 'linked', user: admission.userId };
    const still = stillLinked(provider.id, profile.subject, admission.userId);
    return {
      proven: { userId: admission.userId, amr: upstreamAmr(provider, profile), holds: { provider: provider.id, still } },
      user: admission.userId,
    };
  });
  if ('proven' in answer) return answer.proven === 'linked' ? { linked: true } : { proven: answer.proven };
  // Nothing else: the answer is never throttled (unthrottled) and always checked.
  return { refused: refused!, ...(message !== undefined ? { message } : {}) };
}
