// A sign-in in steps (docs/guides/second-factors.md). A first factor proven (a password, a
// passkey) or a step-up begun gives the browser a step: a random token in a cookie, its
// SHA-256 a row of sign_in_steps holding the person and what they proved so far. Until the
// step completes the browser is NOT signed in: no browser session exists, so consent, the
// callback, the device page and an app's /.boxauth/callback all see nobody. What comes next
// is api/people/factors.ts nextStep's to say; this file only carries it out:
// - done: the browser is signed in with what was proven (browser-session.ts signIn);
// - second-factor / enrol: the step's page (/auth/sign-in/second-factor, /auth/sign-in/enrol);
// - sign-in: a step-up would enrol a factor without a recent proof: the sign-in page, again.
// A step-up (a signed-in browser asked for more) is no sign-in: what it adds goes into the
// session it strengthens, which keeps its sign-in time; a factor enrolled in it is enrolled, not
// given (browser-session.ts strengthen).
// A step is taken (deleted) by the request that completes it, so two requests finishing one
// step cannot both sign in. Closing beats using: what a sign-in records (a browser session, a
// step) is written in a transaction holding the person's row (store/users.ts holdPerson), and
// a password change, a reset or a recovery locks that row before it ends the person's steps
// and sessions (api/credentials/closing.ts endPersonsGrants): one waits for the other, and
// whichever comes second sees what the first did. A password checked before a change that
// commits first no longer matches, and signs nobody in.
import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { tokenHash } from '../credentials/tokens.js';
import { isAcr, type Acr } from '../credentials/acr.js';
import { nextStep } from '../people/factors.js';
import { withTransaction, type Transaction } from '../db/pool.js';
import type { BrowserSession } from '../store/browser.js';
import { createSignInStep, factorState, findSignInStep, takeSignInStep, type SignInStep } from '../store/factors.js';
import { holdPerson } from '../store/users.js';
import { cookieNames, cookieOptions, appendCookie, cookies, signIn, strengthen, type BrowserServices } from './browser-session.js';

/** A step lives this long: enough to find a phone, not long enough to be left open for someone else. */
const STEP_MINUTES = 10;

/** Where each step is answered. */
export const STEP_PAGES = { 'second-factor': '/auth/sign-in/second-factor', enrol: '/auth/sign-in/enrol' } as const;

/** The way on from a step's page: where the sign-in goes back to, and the class of sign-in it was asked to reach. */
export interface StepTarget {
  returnTo: string;
  acr: Acr | undefined;
}

/** The class asked for, as a step's page carries it (`acr` in its query or form); anything else is nothing. */
export function acrParam(value: unknown): Acr | undefined {
  return isAcr(value) ? value : undefined;
}

const stepCookie = (svc: BrowserServices): string => cookieNames(svc).step;

/** A step's page, carrying the way on. */
export function pageOf(page: keyof typeof STEP_PAGES, target: StepTarget): string {
  const query = new URLSearchParams({ return_to: target.returnTo, ...(target.acr ? { acr: target.acr } : {}) });
  return `${STEP_PAGES[page]}?${query}`;
}

/** Why the sign-in page is shown again: `enrol`, a step-up that would enrol needs a recent sign-in first. */
export type SignInAgainReason = 'enrol';

/** Where a sign-in that cannot go on goes: the sign-in page, again (saying why, when there is something to say). */
export function signInAgain(target: StepTarget, reason?: SignInAgainReason): string {
  return `/auth/sign-in?${new URLSearchParams({ return_to: target.returnTo, ...(reason ? { reason } : {}) })}`;
}

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

/** What a sign-in proved and where it goes on to, recorded in `tx`: the way on (a page of a step, or the target). */
async function goOn(svc: BrowserServices, tx: Transaction, res: Response, progress: Progress, target: StepTarget): Promise<string> {
  const { userId, amr, replaces, provider, enrolled } = progress;
  const stepUp = replaces === null ? undefined : { proofAt: progress.proofAt, now: Date.now() };
  const next = nextStep(amr, await factorState(tx, userId), target.acr, stepUp);
  if (next === 'done' || next === 'sign-in') endStepCookie(svc, res);
  if (next === 'sign-in') return signInAgain(target, 'enrol');
  if (next === 'done') {
    if (replaces === null) await signIn(svc, tx, res, userId, amr, provider, enrolled);
    // A step-up ended meanwhile (a sign-out, an end from the account page, its end come) brings nothing back.
    else if (!(await strengthen(svc, tx, res, amr, { userId, sid: replaces, provider }, progress))) return signInAgain(target);
    return target.returnTo;
  }
  await startStep(svc, tx, res, { ...progress, amr: [...amr], ready: false });
  return pageOf(next, target);
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

/**
 * Goes on from what `userId` proved (`amr`): signs the browser in when that is enough,
 * otherwise starts a step; either way the browser is sent on (303). Under the person's row, so
 * that a change of their credentials or factors either comes first (and what it asks is checked
 * here: `holds`) or ends what this signs in: when something the proof stood on is gone, nobody
 * is signed in and the browser is sent to sign in again. A sign-in's proof is given now; a
 * step-up starts from its session's last one.
 */
export async function proceed(
  svc: BrowserServices,
  res: Response,
  userId: number,
  amr: readonly string[],
  target: StepTarget,
  holds: StillHolds,
): Promise<void> {
  const location = await withTransaction(svc.pool, async (tx) => {
    const person = await holdPerson(tx, userId);
    if (!person || (holds.passwordHash !== undefined && person.passwordHash !== holds.passwordHash)) return signInAgain(target);
    if (holds.still && !(await holds.still(tx))) return signInAgain(target);
    const { stepUpOf, provider } = holds;
    const progress = { userId, amr, provider, enrolled: false, replaces: stepUpOf?.sid ?? null, proofAt: stepUpOf?.proofAt ?? new Date() };
    return goOn(svc, tx, res, progress, target);
  });
  res.redirect(303, location);
}

async function startStep(svc: BrowserServices, tx: Transaction, res: Response, step: Omit<SignInStep, 'expiresAt'>): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  await createSignInStep(tx, tokenHash(token), { ...step, expiresAt: new Date(Date.now() + STEP_MINUTES * 60_000) });
  appendCookie(res, `${stepCookie(svc)}=${token}${cookieOptions(svc, STEP_MINUTES * 60)}`);
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
 * Uses this browser's step up and starts another in its place holding what its page proved (the
 * factor just enrolled): a page between the factor's proof and the sign-in (the recovery codes
 * shown once) goes on from what was proven, never from what a form says. Undefined, doing
 * nothing, when the step is gone.
 */
export async function advanceStep(svc: BrowserServices, req: Request, res: Response, proof: StepProof): Promise<SignInStep | undefined> {
  return takingStep(svc, req, async (tx, step) => {
    const proven = await proof(step, tx);
    if (!proven) return undefined;
    await startStep(svc, tx, res, { ...progressOf(step, proven), amr: [...proven.amr], ready: true });
    return step;
  });
}

/**
 * Uses up this browser's step and runs `then` in the same transaction, under the person's row
 * (taken first, then the step: the order a credentials change takes them in, so a password
 * change or a reset and a step's completion never both win). Undefined when the step is gone.
 */
async function takingStep<T>(
  svc: BrowserServices,
  req: Request,
  then: (tx: Transaction, step: SignInStep) => Promise<T>,
): Promise<T | undefined> {
  const token = cookies(req)[stepCookie(svc)];
  if (!token) return undefined;
  const hash = tokenHash(token);
  const seen = await findSignInStep(svc.pool, hash);
  if (!seen) return undefined;
  return withTransaction(svc.pool, async (tx) => {
    if (!(await holdPerson(tx, seen.userId))) return undefined;
    const step = await takeSignInStep(tx, hash);
    return step && then(tx, step);
  });
}

/**
 * Whether this browser's step is still there, read in `tx` (under the person's row, held by the
 * caller): a reset, a password change or a recovery that came first ended it.
 */
export async function stepStillThere(svc: BrowserServices, req: Request, tx: Transaction): Promise<boolean> {
  const token = cookies(req)[stepCookie(svc)];
  return token !== undefined && (await findSignInStep(tx, tokenHash(token))) !== undefined;
}

/** This browser's step, when it has one still valid (a page shows it; only completeStep uses it up). */
export async function currentStep(svc: BrowserServices, req: Request): Promise<SignInStep | undefined> {
  const token = cookies(req)[stepCookie(svc)];
  return token ? findSignInStep(svc.pool, tokenHash(token)) : undefined;
}

/**
 * Completes this browser's step with what its page proved: the step is used up, and the sign-in
 * goes on (signed in, or one more step), in one transaction under the person's row. Undefined,
 * doing nothing, when the step is gone (used by another request, expired, ended by a password
 * change or a reset): the page then says to sign in again.
 */
export async function completeStep(
  svc: BrowserServices,
  req: Request,
  res: Response,
  proof: StepProof,
  target: StepTarget,
): Promise<SignInStep | undefined> {
  const done = await takingStep(svc, req, async (tx, step) => {
    const proven = await proof(step, tx);
    return proven && { step, location: await goOn(svc, tx, res, progressOf(step, proven), target) };
  });
  if (!done) return undefined;
  res.redirect(303, done.location);
  return done.step;
}

/**
 * Goes on with a step whose factor is already proven (advanceStep's, after the recovery codes
 * it showed), from what it holds. Any other step proved nothing here: it is used up and the
 * browser gets nothing (else a step-up started at a signed-in browser and "continued" would
 * count as a proof for no proof).
 */
export function continueStep(svc: BrowserServices, req: Request, res: Response, target: StepTarget): Promise<SignInStep | undefined> {
  return completeStep(svc, req, res, (step) => (step.ready ? { amr: step.amr, factor: 'enrolled' } : undefined), target);
}

/** Forgets the browser's step cookie (its row is gone or going). */
export function endStepCookie(svc: BrowserServices, res: Response): void {
  appendCookie(res, `${stepCookie(svc)}=${cookieOptions(svc, 0)}`);
}
