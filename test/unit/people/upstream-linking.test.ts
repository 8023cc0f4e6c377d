// Which person an upstream sign-in is (api/people/upstream/linking.ts) and which groups follow
// the provider (groups.ts): the rules of docs/architecture.md §12, one by one.
import { expect } from 'chai';
import { decideLink, type LinkFacts } from '../../../api/people/upstream/linking.js';
import { groupChanges } from '../../../api/people/upstream/groups.js';
import { upstreamAmr } from '../../../api/people/upstream/admit.js';
import type { UpstreamProfile } from '../../../api/people/upstream/profile.js';

const profile = (change: Partial<UpstreamProfile> = {}): UpstreamProfile => ({
  subject: 'u-1',
  email: 'ada@example.com',
  emailVerified: true,
  groups: [],
  claims: {},
  amr: [],
  ...change,
});

const facts = (change: Partial<LinkFacts> = {}): LinkFacts => ({
  provider: { id: 'corp', linking: { trustEmail: true } },
  profile: profile(),
  linkedTo: undefined,
  sameEmail: undefined,
  linkFor: undefined,
  linkForLinkedHere: false,
  ...change,
});

describe('upstream linking', () => {
  it('signs in the person an identity is linked to', () => {
    expect(decideLink(facts({ linkedTo: 4 }))).to.deep.equal({ kind: 'sign-in', userId: 4 });
  });

  const holder = { userId: 9, linkedHere: false, proven: true, exact: true, unlinkedHere: false };

  it('reaches a person by email only on a verified email from a provider trusted for it', () => {
    const sameEmail = holder;
    expect(decideLink(facts({ sameEmail }))).to.deep.equal({ kind: 'link', userId: 9, why: 'trusted-email' });
    const unverified = facts({ sameEmail, profile: profile({ emailVerified: false }) });
    expect(decideLink(unverified)).to.deep.equal({ kind: 'refuse', why: 'email-taken' });
    const untrusted = facts({ sameEmail, provider: { id: 'corp', linking: {} } });
    expect(decideLink(untrusted)).to.deep.equal({ kind: 'refuse', why: 'email-taken' });
    // A person who has another identity at this provider is not given a second one by email.
    expect(decideLink(facts({ sameEmail: { ...holder, linkedHere: true } }))).to.deep.equal({ kind: 'refuse', why: 'linked-here-already' });
  });

  it("never hands a trusted provider's identity to an account whose address was never proven, folded, or unlinked", () => {
    // Made first by someone else (a sign-up, another provider) with the owner's address, never proven: not theirs to get.
    expect(decideLink(facts({ sameEmail: { ...holder, proven: false } }))).to.deep.equal({ kind: 'refuse', why: 'email-taken' });
    // ops@gıthub.example is not ops@github.example, though the box's lookup folds them together.
    expect(decideLink(facts({ sameEmail: { ...holder, exact: false } }))).to.deep.equal({ kind: 'refuse', why: 'email-taken' });
    // The person unlinked this provider: their email does not link it back.
    expect(decideLink(facts({ sameEmail: { ...holder, unlinkedHere: true } }))).to.deep.equal({ kind: 'refuse', why: 'email-taken' });
  });

  it('makes a person, vouching for the email only where the provider is trusted for it', () => {
    expect(decideLink(facts())).to.deep.equal({ kind: 'create', emailVerified: true });
    expect(decideLink(facts({ provider: { id: 'corp' } }))).to.deep.equal({ kind: 'create', emailVerified: false });
    expect(decideLink(facts({ profile: profile({ email: undefined }) }))).to.deep.equal({ kind: 'refuse', why: 'no-email' });
    expect(decideLink(facts({ provider: { id: 'corp', linking: { create: false } } }))).to.deep.equal({
      kind: 'refuse',
      why: 'not-created',
    });
  });

  it('links from the account page to the person who asked, never to a second person', () => {
    expect(decideLink(facts({ linkFor: 3 }))).to.deep.equal({ kind: 'link', userId: 3, why: 'account-page' });
    expect(decideLink(facts({ linkFor: 3, linkedTo: 4 }))).to.deep.equal({ kind: 'refuse', why: 'linked-to-another' });
    expect(decideLink(facts({ linkFor: 3, linkedTo: 3 }))).to.deep.equal({ kind: 'sign-in', userId: 3 });
    expect(decideLink(facts({ linkFor: 3, linkForLinkedHere: true }))).to.deep.equal({ kind: 'refuse', why: 'linked-here-already' });
    // Another person holding the email does not matter: the link is the signed-in person's.
    expect(decideLink(facts({ linkFor: 3, sameEmail: holder }))).to.deep.equal({
      kind: 'link',
      userId: 3,
      why: 'account-page',
    });
  });
});

describe('upstream groups', () => {
  const rules = [
    { group: 'engineers', upstream: 'eng' },
    { group: 'staff', claim: { name: 'hd', value: 'example.com' } },
    { group: 'admins', upstream: 'ops' },
  ];

  it('puts the person in the groups whose rule matches, takes them out of the others the rules name', () => {
    const changes = groupChanges(rules, profile({ groups: ['eng', 'unmapped-1', 'unmapped-2'], claims: { hd: 'example.com' } }));
    expect(changes.member).to.have.members(['engineers', 'staff']);
    expect(changes.notMember).to.deep.equal(['admins']);
  });

  it('carries only mapped groups: 500 upstream groups, one rule, one group', () => {
    const many = Array.from({ length: 500 }, (_, i) => `team-${i}`);
    const changes = groupChanges([{ group: 'team-7', upstream: 'team-7' }], profile({ groups: many }));
    expect(changes.member).to.deep.equal(['team-7']);
  });

  it('matches claims exactly, and lists holding the value, never numbers or objects', () => {
    const rule = [{ group: 'staff', claim: { name: 'roles', value: '1' } }];
    expect(groupChanges(rule, profile({ claims: { roles: ['1', '2'] } })).member).to.deep.equal(['staff']);
    expect(groupChanges(rule, profile({ claims: { roles: 1 } })).member).to.deep.equal([]);
    expect(groupChanges(rule, profile({ claims: { roles: [1] } })).member).to.deep.equal([]);
  });
});

describe('upstream amr', () => {
  it("counts the provider's second factor only where it is trusted for it, and never as a passkey", () => {
    expect(upstreamAmr({ linking: { trustMFA: true } }, profile({ amr: ['pwd', 'otp', 'mfa'] }))).to.deep.equal(['pwd', 'mfa']);
    expect(upstreamAmr({ linking: { trustMFA: true } }, profile({ amr: ['pwd', 'hwk'] }))).to.deep.equal(['pwd', 'mfa']);
    // One factor, whatever its kind (a passwordless code, a passkey alone): not two.
    expect(upstreamAmr({ linking: { trustMFA: true } }, profile({ amr: ['otp'] }))).to.deep.equal(['pwd']);
    expect(upstreamAmr({ linking: { trustMFA: true } }, profile({ amr: ['hwk'] }))).to.deep.equal(['pwd']);
    expect(upstreamAmr({ linking: {} }, profile({ amr: ['pwd', 'otp', 'mfa'] }))).to.deep.equal(['pwd']);
    expect(upstreamAmr({ linking: { trustMFA: true } }, profile({ amr: ['pwd'] }))).to.deep.equal(['pwd']);
  });
});
