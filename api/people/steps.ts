// A sign-in in steps (docs/guides/second-factors.md). A first factor proven (a password, a
// passkey, a provider's answer: ./ways/) or a step-up begun gives the browser a step: a random
// token (the door keeps it in a cookie), its SHA-256 a row of sign_in_steps holding the person and
// what they proved so far. Until the step completes the browser is NOT signed in: no browser
// session exists, so consent, the callback, the device page and an app's /.boxauth/callback all
// see nobody. What comes next is ./factors.ts nextStep's to say; this file carries it out:
// - done: the browser is signed in with what was proven (./browsers.ts recordSignIn);
// - second-factor / enrol: a step, and its page;
// - sign-in: a step-up would enrol a factor without a recent proof: the sign-in page, again.
// A step-up (a signed-in browser asked for more) is no sign-in: what it adds goes into the
// session it strengthens, which keeps its sign-in time; a factor enrolled in it is enrolled, not
// given (./browsers.ts strengthen).
//
// A step is taken (deleted) by the request that completes it, so two requests finishing one step
// cannot both sign in. Closing beats using: what a sign-in records (a browser session, a step) is
// written in a transaction holding the person's row (store/users.ts holdPerson), and a password
// change, a reset or a recovery locks that row before it ends the person's steps and sessions
// (api/credentials/closing.ts endPersonsGrants): one waits for the other, and whichever comes
// second sees what the first did. A password checked before a change that commits first no
// longer matches, and signs nobody in.
import { randomBytes } from 'node:crypto';
import type { Audit } from '../audit.js';
import { isAcr, strongest, type Acr } from '../credentials/acr.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { HookCaller } from '../hooks/caller.js';
import { requestUser } from '../policy/requests.js';
import type { PrincipalUser } from '../types.js';
import { tokenHash } from '../credentials/tokens.js';
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import type { BrowserSession } from '../store/browser-sessions.js';
import { createSignInStep, findSignInStep, takeSignInStep, type SignInStep } from '../store/sign-in-steps.js';
import { factorState } from '../store/factors.js';
import { holdPerson } from '../store/users.js';
import { recordSignIn, strengthen, type BrowserFacts, type BrowserToken, type SignedInPerson } from './browsers.js';
import { nextStep } from './factors.js';
import { acrWanted } from './sign-in.js';
import type { Config } from '../config.js';

/** What the step machine uses of the process's services. */
export interface StepServices {
  config: Pick<Config, 'browserSessionHours'>;
  pool: Pool;
  /** The box's Hooks, asked at signingIn before the sign-in's transaction (api/hooks/). */
  hooks: Pick<HookCaller, 'asksAt' | 'ask'>;
  /** The person as the box's policies see them, for what a hook is told. */
  users: RecordCache<PrincipalUser>;
  /** A step-up's strengthened session is an audit event, in its transaction (./browsers.ts strengthen). */
  audit: Pick<Audit, 'recordIn'>;
}

/** A step lives this long: enough to find a phone, not long enough to be left open for someone else. */
const STEP_MINUTES = 10;

/**
 * The one rule of who may be signed in at all, which every way in keeps under the person's row:
 * a person turned off (a directory's SCIM `active: false`, or the REST API's) is not.
 */
export const mayBeSignedIn = (person: { active: boolean }): boolean => person.active;

/** Where a sign-in goes back to once done, and the class of sign-in it was asked to reach. */
export interface StepTarget {
  returnTo: string;
  acr: Acr | undefined;
}

/** The class asked for, as a step's page carries it (`acr` in its query or form); anything else is nothing. */
export function acrParam(value: unknown): Acr | undefined {
  return isAcr(value) ? value : undefined;
}

/** Why a sign-in is asked for again: `enrol`, a step-up that would enrol needs a recent sign-in first. */
export type SignInAgainReason = 'enrol' | 'refused';

/** Where a sign-in goes on to, as the door carries it out (a page of its own for each). */
export type Next =
  /** Signed in (a step-up: strengthened): back to the target. */
  | { to: 'target' }
  /** One more step, on its page. */
  | { to: 'second-factor' | 'enrol' }
  /** Nobody is signed in: the sign-in page, again (saying why, when there is something to say). */
  | { to: 'sign-in'; reason?: SignInAgainReason };

/** What the door does: go on to `next`, handing the browser a session (signed in) or a step, or ending its step. */
export interface WentOn {
  next: Next;
  /** A Hook refused the sign-in (signingIn): what the person is told, on the sign-in page. */
  refused?: string;
  session?: BrowserToken;
  step?: BrowserToken | 'end';
  /** Who the browser is signed in as now: the door hands it a device cookie naming them (./devices.ts). */
  signedIn?: number;
}

const again = (reason?: SignInAgainReason): WentOn => ({ next: { to: 'sign-in', ...(reason ? { reason } : {}) } });

/** Where a sign-in stands: who, what they proved so far, and when they last proved something. */
interface Progress {
  userId: number;
  amr: readonly string[];
  /** A step-up: the browser session it strengthens. */
  replaces: string | null;
  provider: string | null;
  /** When the last proof was given: a step-up's begins as its session's. */
  proofAt: Date;
  /** A factor was enrolled on the way rather than given. */
  enrolled: boolean;
}

/** What a sign-in proved and where it goes on to, recorded in `tx`. */
async function goOn(svc: StepServices, tx: Transaction, from: BrowserFacts, progress: Progress, target: StepTarget): Promise<WentOn> {
  const { userId, amr, replaces, provider, enrolled } = progress;
  const stepUp = replaces === null ? undefined : { proofAt: progress.proofAt, now: Date.now() };
  const next = nextStep(amr, await factorState(tx, userId), target.acr, stepUp);
  if (next === 'sign-in') return { ...again('enrol'), step: 'end' };
  if (next === 'done') {
    const session =
      replaces === null
        ? await recordSignIn(svc, tx, from, { userId, amr, provider, enrolled })
        : await strengthen(svc, tx, from, amr, { userId, sid: replaces, provider }, progress);
    // A step-up ended meanwhile (a sign-out, an end from the account page, its end come) brings nothing back.
    return session ? { next: { to: 'target' }, session, step: 'end', signedIn: userId } : { ...again(), step: 'end' };
  }
  const step = await startStep(tx, { ...progress, amr: [...amr], ready: false });
  return { next: { to: next }, step };
}

/** What must still hold when a sign-in goes on, checked under the person's row. */
export interface StillHolds {
  /** A step-up: the browser session it strengthens, and when its person last proved something in it. */
  stepUpOf?: Pick<BrowserSession, 'sid' | 'proofAt'>;
  /** The hash the password was checked against: another by now (changed meanwhile), nobody is signed in. */
  passwordHash?: string;
  /** Anything else the proof stood on (the passkey used is still the person's): false, nobody is signed in. */
  still?: (tx: Transaction) => Promise<boolean>;
  /**
   * The IdentityProvider the first factor was proven at (the browser session remembers it, and a
   * Client that accepts only some ways in reads it); null: the box's own sign-in. A step-up keeps
   * the provider of the sign-in it strengthens. Required, so that no way on forgets it.
   */
  provider: string | null;
}

/** A first factor proven by a way in (./ways/): whose, what it proved, and what must still hold. */
export interface FirstFactor {
  userId: number;
  amr: readonly string[];
  holds: StillHolds;
}

/** The class of sign-in a request needs of `userId` (./sign-in.ts acrWanted), with their factors and rules as they are now. */
export async function acrWantedOf(
  svc: Pick<StepServices, 'pool'>,
  userId: number,
  acrValues: string | undefined,
  clientMinimum: unknown,
): Promise<Acr | undefined> {
  return acrWanted(acrValues, clientMinimum, await factorState(svc.pool, userId));
}

/** A step-up of a signed-in person's sign-in (a class it lacks is asked): what it proved, and the session it strengthens. */
export const stepUpOf = (person: SignedInPerson): FirstFactor => ({
  userId: person.user.id,
  amr: person.browser.amr,
  holds: { stepUpOf: person.browser, provider: person.browser.provider },
});

/**
 * Goes on from what a way in proved: signs the browser in when that is enough, otherwise starts a
 * step. Under the person's row, so that a change of their credentials or factors either comes
 * first (and what it asks is checked here: `holds`, and that they may be signed in at all) or ends
 * what this signs in: when something the proof stood on is gone, nobody is signed in. A sign-in's
 * proof is given now; a step-up starts from its session's last one.
 */
export async function proceed(svc: StepServices, from: BrowserFacts, proven: FirstFactor, target: StepTarget): Promise<WentOn> {
  const { userId, amr, holds } = proven;
  // The Hooks of signingIn, before the transaction (no row is held while a hook thinks): a step-up is no sign-in.
  const hooked = holds.stepUpOf ? { acr: undefined } : await signInHooks(svc, proven);
  if ('refused' in hooked) return { ...again('refused'), refused: hooked.refused };
  target = { ...target, acr: strongest(target.acr, hooked.acr) };
  return withTransaction(svc.pool, async (tx) => {
    const person = await holdPerson(tx, userId);
    if (!person || !mayBeSignedIn(person)) return again();
    if (holds.passwordHash !== undefined && person.passwordHash !== holds.passwordHash) return again();
    if (holds.still && !(await holds.still(tx))) return again();
    const { stepUpOf, provider } = holds;
    const progress = { userId, amr, provider, enrolled: false, replaces: stepUpOf?.sid ?? null, proofAt: stepUpOf?.proofAt ?? new Date() };
    return goOn(svc, tx, from, progress, target);
  });
}

/** The way a first factor was proven, as a hook is told it (an upstream provider's, the box's own). */
const wayOf = (proven: FirstFactor): string =>
  proven.holds.provider !== null ? 'upstream' : proven.amr.includes('hwk') || proven.amr.includes('swk') ? 'passkey' : 'password';

/**
 * What the Hooks of signingIn say of this first factor: a refusal (what the person is told; a
 * failed call of a Hook whose failurePolicy is Fail refuses too, with words that never repeat the
 * hook's error), or the class of sign-in a hook requires (a step-up the box then asks for).
 */
async function signInHooks(svc: StepServices, proven: FirstFactor): Promise<{ refused: string } | { acr: Acr | undefined }> {
  if (!(await svc.hooks.asksAt('signingIn'))) return { acr: undefined };
  const person = await svc.users.get(String(proven.userId));
  if (!person) return { acr: undefined };
  const verdict = await svc.hooks.ask(
    'signingIn',
    { user: requestUser(person), signIn: { way: wayOf(proven), amr: [...proven.amr] } },
    { user: String(proven.userId) },
  );
  if (!verdict.allowed) return { refused: verdict.message };
  return { acr: isAcr(verdict.acr) ? verdict.acr : undefined };
}

async function startStep(tx: Transaction, step: Omit<SignInStep, 'expiresAt'>): Promise<BrowserToken> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + STEP_MINUTES * 60_000);
  await createSignInStep(tx, tokenHash(token), { ...step, expiresAt });
  return { token, expiresAt };
}

/**
 * What a step's page proved, given the step (and its transaction, for what is recorded with it: a
 * factor enrolled in the step goes in with the step's completion or not at all): the step's amr
 * with the factor added, and whether that factor was `given` (a code, a passkey: a proof now) or
 * `enrolled` (a factor the sign-in adds, which proves nothing of who holds the browser); undefined:
 * nothing, and the step is used up for nothing.
 */
export interface StepProven {
  amr: readonly string[];
  factor: 'given' | 'enrolled';
}
export type StepProof = (step: SignInStep, tx: Transaction) => StepProven | undefined | Promise<StepProven | undefined>;

/** Where the step stands once its page proved `proven`. */
const progressOf = (step: SignInStep, proven: StepProven): Progress => ({
  userId: step.userId,
  amr: proven.amr,
  replaces: step.replaces,
  provider: step.provider,
  proofAt: proven.factor === 'given' ? new Date() : step.proofAt,
  enrolled: step.enrolled || proven.factor === 'enrolled',
});

/**
 * Uses up the step of `token` and runs `then` in the same transaction, under the person's row
 * (taken first, then the step: the order a credentials change takes them in, so a password
 * change or a reset and a step's completion never both win). Undefined when the step is gone,
 * or its person may not be signed in any more.
 */
async function takingStep<T>(
  svc: StepServices,
  token: string | undefined,
  then: (tx: Transaction, step: SignInStep) => Promise<T>,
): Promise<T | undefined> {
  if (!token) return undefined;
  const hash = tokenHash(token);
  const seen = await findSignInStep(svc.pool, hash);
  if (!seen) return undefined;
  return withTransaction(svc.pool, async (tx) => {
    // Held as a write holds it: `then` may write the row (a factor set up, or the last recovery code
    // used, changes what the person owes), and two requests of one step holding it shared would deadlock.
    const person = await holdPerson(tx, seen.userId, 'change');
    if (!person || !mayBeSignedIn(person)) return undefined;
    const step = await takeSignInStep(tx, hash);
    return step && then(tx, step);
  });
}

/**
 * Uses up the step of `token` and starts another in its place holding what its page proved (the
 * factor just enrolled): a page between the factor's proof and the sign-in (the recovery codes
 * shown once) goes on from what was proven, never from what a form says. The new step's token,
 * and what `proof` returned beside; undefined, doing nothing, when the step is gone.
 */
export async function advanceStep<T>(
  svc: StepServices,
  token: string | undefined,
  proof: (step: SignInStep, tx: Transaction) => Promise<(StepProven & { also: T }) | undefined>,
): Promise<{ step: BrowserToken; also: T } | undefined> {
  return takingStep(svc, token, async (tx, step) => {
    const proven = await proof(step, tx);
    if (!proven) return undefined;
    return { step: await startStep(tx, { ...progressOf(step, proven), amr: [...proven.amr], ready: true }), also: proven.also };
  });
}

/**
 * Whether the step of `token` is still there, read in `tx` (under the person's row, held by the
 * caller): a reset, a password change or a recovery that came first ended it.
 */
export async function stepStillThere(tx: Transaction, token: string | undefined): Promise<boolean> {
  return token !== undefined && (await findSignInStep(tx, tokenHash(token))) !== undefined;
}

/** The step of `token`, when it is still valid (a page shows it; only completeStep uses it up). */
export function currentStep(svc: StepServices, token: string | undefined): Promise<SignInStep | undefined> {
  return token ? findSignInStep(svc.pool, tokenHash(token)) : Promise.resolve(undefined);
}

/**
 * Completes the step of `token` with what its page proved: the step is used up, and the sign-in
 * goes on (signed in, or one more step), in one transaction under the person's row. Undefined,
 * doing nothing, when the step is gone (used by another request, expired, ended by a password
 * change or a reset): the page then says to sign in again.
 */
export async function completeStep(
  svc: StepServices,
  from: BrowserFacts,
  token: string | undefined,
  proof: StepProof,
  target: StepTarget,
): Promise<WentOn | undefined> {
  return takingStep(svc, token, async (tx, step) => {
    const proven = await proof(step, tx);
    return proven && goOn(svc, tx, from, progressOf(step, proven), target);
  });
}

/**
 * Goes on with a step whose factor is already proven (advanceStep's, after the recovery codes
 * it showed), from what it holds. Any other step proved nothing here: it is used up and the
 * browser gets nothing (else a step-up started at a signed-in browser and "continued" would
 * count as a proof for no proof).
 */
export function continueStep(
  svc: StepServices,
  from: BrowserFacts,
  token: string | undefined,
  target: StepTarget,
): Promise<WentOn | undefined> {
  return completeStep(svc, from, token, (step) => (step.ready ? { amr: step.amr, factor: 'enrolled' } : undefined), target);
}
