// Box groups that follow a provider (IdentityProvider.groups): at every sign-in through it, a
// person is put in each rule's group that matches and taken out of each one that does not. A
// group no rule names is the box's alone and left as it is; an upstream group no rule names is
// not carried at all, so a person in 500 directory groups brings only the mapped ones into
// their tokens (docs/guides/upstream-providers.md, "Groups").
import type { IdentityProvider } from '../../types.js';
import type { UpstreamProfile } from './profile.js';

export interface GroupChanges {
  /** The groups the person is in from now on, of those the provider's rules name. */
  member: string[];
  /** The groups the rules name that the person is not in (taken out where they were). */
  notMember: string[];
}

type Rule = NonNullable<IdentityProvider['groups']>[number];

/** A claim equal to the value, or a list holding it (strings only: numbers and objects never match by accident). */
function claimHolds(claims: Record<string, unknown>, name: string, value: string): boolean {
  const claim = claims[name];
  return claim === value || (Array.isArray(claim) && claim.includes(value));
}

function matches(rule: Rule, profile: UpstreamProfile): boolean {
  if (rule.upstream !== undefined) return profile.groups.includes(rule.upstream);
  return rule.claim !== undefined && claimHolds(profile.claims, rule.claim.name, rule.claim.value);
}

/** What the provider's rules make of the person's groups (names compared as the box compares them: case-insensitively). */
export function groupChanges(rules: readonly Rule[] | undefined, profile: UpstreamProfile): GroupChanges {
  const member = new Map<string, string>();
  const named = new Map<string, string>();
  for (const rule of rules ?? []) {
    const key = rule.group.toLowerCase();
    named.set(key, rule.group);
    if (matches(rule, profile)) member.set(key, rule.group);
  }
  return { member: [...member.values()], notMember: [...named].filter(([key]) => !member.has(key)).map(([, group]) => group) };
}
