// A person signed in at a provider becomes a person of the box: the facts gathered under a lock
// of the identity (two first sign-ins racing would both make a person), the decision taken by
// ./linking.ts, and carried out in the same transaction — the link, the person made, the groups
// the provider's rules keep (./groups.ts). What signs the browser in is the door's (it goes on
// like every sign-in: api/http/sign-in-steps.ts proceed, with the amr this returns).
import type { HookCaller } from '../../hooks/caller.js';
import { FAILED_MESSAGE } from '../../hooks/moments.js';
import { personHooks } from '../registration.js';
import type { Actor, Audit } from '../../audit.js';
import type { Config } from '../../config.js';
import type { Pool, Transaction } from '../../db/pool.js';
import { withTransaction } from '../../db/pool.js';
import { dummyHash } from '../../credentials/secrets.js';
import { ValidationError } from '../../errors.js';
import type { IdentityProvider } from '../../types.js';
import { deleteBrowserSessionsThrough } from '../../store/browser-sessions.js';
import { endBrowsersGrants } from '../../credentials/closing.js';
import { deleteSignInStepsThrough } from '../../store/sign-in-steps.js';
import { factorState } from '../../store/factors.js';
import type { SessionRow } from '../../store/sessions.js';
import { followGroups } from '../../store/groups.js';
import {
  findUpstreamIdentity,
  identitiesOf,
  linkUpstreamIdentity,
  lockUpstreamIdentity,
  unlinkedBefore,
  touchUpstreamIdentity,
  unlinkUpstreamIdentity,
  identityProviders,
} from '../../store/identity-providers.js';
import { createUserIn, findUserByEmail, getUser, lockUser } from '../../store/users.js';
import { sameAddress } from '../../input.js';
import type { RecordCache } from '../../cache/record-cache.js';
import { tellOfFactorChange } from '../notices.js';
import { labelOf } from './flow.js';
import { groupChanges } from './groups.js';
import { decideLink, type LinkDecision, type LinkRefusal } from './linking.js';
import type { UpstreamProfile } from './profile.js';

export interface AdmitServices {
  pool: Pool;
  /** Asked at personCreating before a person a provider names is made (api/hooks/). */
  hooks: Pick<HookCaller, 'asksAt' | 'ask'>;
  audit: Audit;
  users: RecordCache<unknown>;
  sessions: RecordCache<SessionRow>;
  config: Pick<Config, 'smtp'>;
}

/** Factors a provider's amr names (RFC 8176 §2), each a kind of proof of its own. */
const FACTORS = ['pwd', 'pin', 'otp', 'sms', 'tel', 'hwk', 'swk', 'sc', 'fpt', 'face', 'iris', 'retina', 'vbm', 'kba', 'user'];

/**
 * What a sign-in at the provider proved, as the box counts it: one factor, unless the provider
 * is trusted for its second factors (linking.trustMFA) and its amr says several were used —
 * `mfa`, or two kinds of factor (`otp` alone may be a passwordless one-time code: one factor).
 * Never a passkey's class: the box cannot tell how phishing-resistant the provider's factor was.
 */
export function upstreamAmr(provider: Pick<IdentityProvider, 'linking'>, profile: UpstreamProfile): string[] {
  const kinds = new Set(profile.amr.filter((v) => FACTORS.includes(v))).size;
  const severalFactors = provider.linking?.trustMFA === true && (profile.amr.includes('mfa') || kinds >= 2);
  return severalFactors ? ['pwd', 'mfa'] : ['pwd'];
}

export type Admission = { userId: number; decision: LinkDecision } | { refused: LinkRefusal; message?: string };

/**
 * The Hooks of personCreating, asked before the admission's transaction when it would make a
 * person (read without its locks: nobody linked to this identity, nobody with the address). A
 * person made in the transaction without the hooks' word (another request raced this one) is not
 * made: the hooks must be asked, and no lock is held while they are.
 */
async function hooksBefore(
  svc: AdmitServices,
  provider: IdentityProvider,
  profile: UpstreamProfile,
  linkFor: number | undefined,
): Promise<Awaited<ReturnType<typeof personHooks>> | undefined> {
  if (linkFor !== undefined || profile.email === undefined || !(await svc.hooks.asksAt('personCreating'))) return undefined;
  if ((await findUpstreamIdentity(svc.pool, provider.id, profile.subject)) !== undefined) return undefined;
  if ((await findUserByEmail(svc.pool, profile.email)) !== undefined) return undefined;
  return personHooks(svc, { email: profile.email, via: 'upstream' });
}

/**
 * The person `profile` is at the box (made or linked as ./linking.ts decides), with their
 * groups following the provider's rules; or why nobody is. `linkFor`: a link begun on the
 * account page by that person.
 */
export async function admit(
  svc: AdmitServices,
  provider: IdentityProvider,
  profile: UpstreamProfile,
  linkFor: number | undefined,
  address: string,
): Promise<Admission> {
  // A hash for a person without a password: of a secret nobody knows (credentials/secrets.ts), made before the locks.
  const noPassword = await dummyHash();
  const base = { event: 'upstream' as const, provider: provider.id, subject: profile.subject, address };
  const hooked = await hooksBefore(svc, provider, profile, linkFor);
  if (hooked && 'refused' in hooked) {
    svc.audit.record({ ...base, action: 'refused', reason: 'hook-refused' });
    return { refused: 'hook-refused', message: hooked.refused };
  }
  const asks = hooked === undefined && linkFor === undefined && (await svc.hooks.asksAt('personCreating'));
  const admission = await withTransaction(svc.pool, async (tx): Promise<Admission> => {
    await lockUpstreamIdentity(tx, provider.id, profile.subject);
    const linkedTo = (await findUpstreamIdentity(tx, provider.id, profile.subject))?.userId;
    const holder = linkedTo === undefined && profile.email !== undefined ? await findUserByEmail(tx, profile.email) : undefined;
    const linkedHere = async (userId: number): Promise<boolean> => (await identitiesOf(tx, userId)).some((i) => i.provider === provider.id);
    const decision = decideLink({
      provider,
      profile,
      linkedTo,
      sameEmail: holder && {
        userId: holder.id,
        linkedHere: await linkedHere(holder.id),
        proven: holder.emailVerified && !holder.mustVerifyEmail,
        exact: sameAddress(holder.email, profile.email!),
        unlinkedHere: await unlinkedBefore(tx, provider.id, holder.id),
      },
      linkFor,
      linkForLinkedHere: linkFor !== undefined && (await linkedHere(linkFor)),
    });
    if (decision.kind === 'refuse') return { refused: decision.why };
    if (decision.kind === 'create' && asks) return { refused: 'hook-refused', message: FAILED_MESSAGE };
    const userId = await carryOut(svc, tx, provider, profile, decision, noPassword, hooked);
    if (userId === undefined) return { refused: 'email-taken' };
    const groups = groupChanges(provider.groups, profile);
    await followGroups(tx, userId, groups.member, groups.notMember, `Follows the identity provider ${provider.id}.`);
    await recordAdmission(svc, tx, base, userId, decision);
    return { userId, decision };
  }).catch((err: unknown) => {
    // A person made with this email meanwhile by another way in (the unique index decided).
    if (err instanceof ValidationError) return { refused: 'email-taken' as const };
    throw err;
  });
  // A refusal changed nothing: its event is kept shortly after.
  if ('refused' in admission) svc.audit.record({ ...base, action: 'refused', reason: admission.refused });
  else svc.users.invalidate(String(admission.userId));
  return admission;
}

/**
 * What an upstream sign-in stands on when it is recorded (api/http/sign-in-steps.ts proceed, under
 * the person's row): the identity still leads to the person. An adoption of the account (its
 * maker's links end: api/people/accounts.ts) or an unlink that came between the admission and
 * the record leaves nobody signed in.
 */
export const stillLinked =
  (provider: string, subject: string, userId: number) =>
  async (tx: Transaction): Promise<boolean> =>
    (await findUpstreamIdentity(tx, provider, subject))?.userId === userId;

async function carryOut(
  svc: Pick<AdmitServices, 'config'>,
  tx: Transaction,
  provider: IdentityProvider,
  profile: UpstreamProfile,
  decision: Exclude<LinkDecision, { kind: 'refuse' }>,
  noPassword: string,
  hooked: { data?: Record<string, unknown>; groupIds: number[] } | undefined,
): Promise<number | undefined> {
  const identity = { provider: provider.id, subject: profile.subject, email: profile.email };
  switch (decision.kind) {
    case 'sign-in':
      await touchUpstreamIdentity(tx, provider.id, profile.subject, profile.email);
      return decision.userId;
    case 'link': {
      // Under the person's row: a deletion racing the link either comes first (nothing to link) or waits.
      if (!(await lockUser(tx, decision.userId))) return undefined;
      if (!(await linkUpstreamIdentity(tx, { ...identity, userId: decision.userId }))) return undefined;
      // A way in that needs no password of theirs: told as a factor added is (whoever held their
      // browser may have linked an identity of their own), in the link's transaction.
      const person = (await getUser(tx, decision.userId))!;
      await tellOfFactorChange(svc, tx, person, { change: 'added', factor: 'provider', name: labelOf(provider) });
      return decision.userId;
    }
    case 'create': {
      const made = await createUserIn(tx, {
        email: profile.email!,
        passwordHash: noPassword,
        passwordSet: false,
        // The box keeps no profile of its own: the name the provider gave is the `name` claim's (api/oauth/openid.ts).
        data: profile.name || hooked?.data ? JSON.stringify({ ...hooked?.data, ...(profile.name ? { name: profile.name } : {}) }) : null,
        groupIds: hooked?.groupIds ?? [],
        emailVerified: decision.emailVerified,
      });
      await linkUpstreamIdentity(tx, { ...identity, userId: made.id });
      return made.id;
    }
  }
}

/** What every `upstream` event of an admission says: the identity, and where the sign-in came from. */
interface AdmissionEvent {
  event: 'upstream';
  provider: string;
  subject: string;
  address: string;
}

/** A person made or an identity linked, audited in the transaction that does it (a sign-in of a linked identity changes nothing to audit). */
async function recordAdmission(
  svc: Pick<AdmitServices, 'audit'>,
  tx: Transaction,
  base: AdmissionEvent,
  userId: number,
  decision: LinkDecision,
): Promise<void> {
  const user = String(userId);
  if (decision.kind === 'create') await svc.audit.recordIn(tx, { ...base, action: 'created', user });
  if (decision.kind === 'link') await svc.audit.recordIn(tx, { ...base, action: 'linked', user, reason: decision.why, by: { user } });
}

/** Why a person may not unlink a provider: it is their only way in. */
export type UnlinkRefusal = 'not-linked' | 'only-way-in';

/**
 * Unlinks the person's identity at `provider`, audited in the same transaction, unless it is their
 * only way in: no password of the box, no passkey, no other provider (an administrator may:
 * `evenTheOnlyWayIn`).
 *
 * The browsers that identity signed in are signed out in the same transaction, with what was
 * issued through them (codes, device codes, grants), and so are the sign-ins through it half done
 * (a step whose second factor or enrolment is still to come, which would sign the thief in once
 * answered) and the step-ups of those browsers: an unlink is the answer to an account taken over
 * at its provider, and what the thief signed in must not outlive it (as disabling the provider
 * does not let it). `keep`: the browser of a person unlinking on their own account page, which
 * stays theirs (their others are signed out).
 */
export async function unlink(
  svc: AdmitServices,
  userId: number,
  provider: string,
  by: Actor,
  opts: { evenTheOnlyWayIn?: boolean; keep?: string } = {},
): Promise<UnlinkRefusal | undefined> {
  const result = await withTransaction(svc.pool, async (tx) => {
    if (!(await lockUser(tx, userId))) return 'not-linked' as const;
    const identities = await identitiesOf(tx, userId);
    if (!identities.some((i) => i.provider === provider)) return 'not-linked' as const;
    const person = (await getUser(tx, userId))!;
    const passkeys = (await factorState(tx, userId)).passkey;
    if (!opts.evenTheOnlyWayIn && !person.passwordSet && passkeys === 0 && identities.length === 1) return 'only-way-in' as const;
    const unlinked = await unlinkUpstreamIdentity(tx, userId, provider);
    const stored = (await identityProviders.read(tx, provider))?.resource;
    await tellOfFactorChange(svc, tx, person, { change: 'removed', factor: 'provider', name: stored ? labelOf(stored) : provider });
    for (const sid of await deleteBrowserSessionsThrough(tx, userId, provider, opts.keep))
      await endBrowsersGrants(svc, tx, sid, { how: 'unlinked', by });
    // A sign-in half done has no browser session yet: its step is ended by its provider.
    await deleteSignInStepsThrough(tx, userId, provider, opts.keep);
    await svc.audit.recordIn(tx, { event: 'upstream', action: 'unlinked', provider, subject: unlinked?.subject, user: String(userId), by });
    return undefined;
  });
  return result;
}
