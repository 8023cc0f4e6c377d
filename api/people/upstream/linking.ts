// Which person of the box an upstream sign-in is (docs/architecture.md §12: "an upstream identity links
// automatically only on a verified email from a provider trusted for it"). Facts in, a decision
// out; ./sign-in.ts gathers the facts under the database's locks and carries the decision out.
//
// The rules, in order:
// 1. A link begun on the account page is for the person who began it: the identity becomes
//    theirs, unless it is another person's already (one upstream identity never reaches two
//    people) or they have another identity at this provider.
// 2. An identity linked before is its person's: they are signed in.
// 3. A person of the box with the same email is reached only when the provider says it verified
//    the email AND the provider is trusted for emails (linking.trustEmail) AND the box's person
//    proved that address too (verified, not merely typed at a sign-up or asserted by another
//    provider: else whoever made the account first, an attacker included, would be handed the
//    real owner's identity) AND it is the same address, not one the box's lookup folds together
//    (api/input.ts sameAddress: `gıthub` is not `github`) AND the person did not unlink this
//    provider (an unlink holds until they link it again). Otherwise nobody is signed in: they sign
//    in the usual way and link the provider from their account page.
// 4. Anyone else is made a person of the box (linking.create, default true), with the email the
//    provider gave; vouched for (email_verified) only when the provider is trusted for emails.
import type { IdentityProvider } from '../../types.js';
import type { UpstreamProfile } from './profile.js';

export interface LinkFacts {
  provider: Pick<IdentityProvider, 'id' | 'linking'>;
  profile: UpstreamProfile;
  /** The person this identity is linked to already. */
  linkedTo: number | undefined;
  /**
   * The person of the box whose email is the profile's: whether they have an identity at this
   * provider, whether their own address is proven, whether it is the very address (not one folded
   * into it), and whether they unlinked this provider.
   */
  sameEmail: { userId: number; linkedHere: boolean; proven: boolean; exact: boolean; unlinkedHere: boolean } | undefined;
  /** The person who began this as a link from their account page. */
  linkFor: number | undefined;
  /** Whether `linkFor` has an identity at this provider already. */
  linkForLinkedHere: boolean;
}

/** Why nobody is signed in (the page says it in words: ./sign-in.ts). */
export type LinkRefusal =
  | 'linked-to-another' // the identity is another person's
  | 'linked-here-already' // the person has another identity at this provider
  | 'email-taken' // a person has the email, and the provider may not vouch for it (or they never proved it, or unlinked this provider)
  | 'no-email' // a person of the box needs an email, and the provider gave none
  | 'not-created' // the provider makes nobody new (linking.create false)
  | 'hook-refused'; // a Hook of personCreating refused the person (its words: Admission.message)

export type LinkDecision =
  | { kind: 'sign-in'; userId: number }
  | { kind: 'link'; userId: number; why: 'account-page' | 'trusted-email' }
  | { kind: 'create'; emailVerified: boolean }
  | { kind: 'refuse'; why: LinkRefusal };

/** Whether the provider vouches for emails: it says it verified it, and the box trusts it to. */
export const vouchedEmail = (provider: Pick<IdentityProvider, 'linking'>, profile: UpstreamProfile): boolean =>
  provider.linking?.trustEmail === true && profile.emailVerified && profile.email !== undefined;

export function decideLink(f: LinkFacts): LinkDecision {
  if (f.linkFor !== undefined) {
    if (f.linkedTo !== undefined && f.linkedTo !== f.linkFor) return { kind: 'refuse', why: 'linked-to-another' };
    if (f.linkedTo === f.linkFor) return { kind: 'sign-in', userId: f.linkFor };
    if (f.linkForLinkedHere) return { kind: 'refuse', why: 'linked-here-already' };
    return { kind: 'link', userId: f.linkFor, why: 'account-page' };
  }
  if (f.linkedTo !== undefined) return { kind: 'sign-in', userId: f.linkedTo };
  if (f.sameEmail) {
    const { proven, exact, unlinkedHere } = f.sameEmail;
    if (!vouchedEmail(f.provider, f.profile) || !proven || !exact || unlinkedHere) return { kind: 'refuse', why: 'email-taken' };
    if (f.sameEmail.linkedHere) return { kind: 'refuse', why: 'linked-here-already' };
    return { kind: 'link', userId: f.sameEmail.userId, why: 'trusted-email' };
  }
  if (f.profile.email === undefined) return { kind: 'refuse', why: 'no-email' };
  if (f.provider.linking?.create === false) return { kind: 'refuse', why: 'not-created' };
  return { kind: 'create', emailVerified: vouchedEmail(f.provider, f.profile) };
}
