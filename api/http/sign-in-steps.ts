// A sign-in in steps (docs/guides/second-factors.md). A first factor proven (a password, a
// passkey) or a step-up begun gives the browser a step: a random token in a cookie, its
// SHA-256 a row of sign_in_steps holding the person and what they proved so far. Until the
// step completes the browser is NOT signed in: no browser session exists, so consent, the
// callback, the device page and an app's /.boxauth/callback all see nobody. What comes next
// is api/people/factors.ts nextStep's to say; this file only carries it out:
// - done: the browser is signed in with what was proven (browser-session.ts signIn);
// - second-factor / enrol: the step's page (/auth/sign-in/second-factor, /auth/sign-in/enrol).
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
import { createSignInStep, factorState, findSignInStep, takeSignInStep, type SignInStep } from '../store/factors.js';
import { holdPerson } from '../store/users.js';
import { cookieNames, cookieOptions, appendCookie, cookies, signIn, type BrowserServices } from './browser-session.js';

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

/** What a sign-in proved and where it goes on to, recorded in `tx`: the way on (a page of a step, or the target). */
async function goOn(
  svc: BrowserServices,
  tx: Transaction,
  res: Response,
  userId: number,
  amr: readonly string[],
  target: StepTarget,
  replaces: string | null,
  provider: string | null,
): Promise<string> {
  const next = nextStep(amr, await factorState(tx, userId), target.acr);
  if (next === 'done') {
    await signIn(svc, tx, res, userId, amr, replaces ?? undefined, provider);
    endStepCookie(svc, res);
    return target.returnTo;
  }
  await startStep(svc, tx, res, { userId, amr: [...amr], replaces, ready: false, provider });
  return pageOf(next, target);
}

/** Where a sign-in that found its person changed meanwhile goes: the sign-in page, again. */
const signInAgain = (target: StepTarget): string => `/auth/sign-in?${new URLSearchParams({ return_to: target.returnTo })}`;

/** What must still hold when a sign-in goes on, checked under the person's row. */
export interface StillHolds {
  /** The step-up's browser session (what it strengthens). */
  replaces?: string | null;
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
 * is signed in and the browser is sent to sign in again.
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
    return goOn(svc, tx, res, userId, amr, target, holds.replaces ?? null, holds.provider);
  });
  res.redirect(303, location);
}

async function startStep(svc: BrowserServices, tx: Transaction, res: Response, step: Omit<SignInStep, 'expiresAt'>): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  await createSignInStep(tx, tokenHash(token), { ...step, expiresAt: new Date(Date.now() + STEP_MINUTES * 60_000) });
  appendCookie(res, `${stepCookie(svc)}=${token}${cookieOptions(svc, STEP_MINUTES * 60)}`);
}

/**
 * Uses this browser's step up and starts another in its place holding `amr` (what it held
 * and the factor just enrolled): a page between the factor's proof and the sign-in (the
 * recovery codes shown once) goes on from what was proven, never from what a form says.
 * Undefined, doing nothing, when the step is gone.
 */
export async function advanceStep(svc: BrowserServices, req: Request, res: Response, amr: StepProof): Promise<SignInStep | undefined> {
  return takingStep(svc, req, async (tx, step) => {
    const proven = await amr(step, tx);
    if (!proven) return undefined;
    await startStep(svc, tx, res, { userId: step.userId, amr: [...proven], replaces: step.replaces, ready: true, provider: step.provider });
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

/** This browser's step, when it has one still valid (a page shows it; only completeStep uses it up). */
export async function currentStep(svc: BrowserServices, req: Request): Promise<SignInStep | undefined> {
  const token = cookies(req)[stepCookie(svc)];
  return token ? findSignInStep(svc.pool, tokenHash(token)) : undefined;
}

/**
 * Completes this browser's step with what its page proved (`amr`: what the step held and
 * the factor just given): the step is used up, and the sign-in goes on (signed in, or one
 * more step), in one transaction under the person's row. Undefined, doing nothing, when the
 * step is gone (used by another request, expired, ended by a password change or a reset):
 * the page then says to sign in again.
 */
export function completeStep(
  svc: BrowserServices,
  req: Request,
  res: Response,
  amr: StepProof,
  target: StepTarget,
): Promise<SignInStep | undefined> {
  return finishStep(svc, req, res, amr, target);
}

/**
 * What a step's page proved, given the step (and its transaction, for what is recorded with
 * it: a factor enrolled in the step goes in with the step's completion or not at all);
 * undefined: nothing, and the step is used up for nothing.
 */
export type StepProof = (step: SignInStep, tx: Transaction) => readonly string[] | undefined | Promise<readonly string[] | undefined>;

/**
 * Goes on with a step whose factor is already proven (advanceStep's, after the recovery codes
 * it showed), from what it holds. Any other step proved nothing here: it is used up and the
 * browser gets nothing (else a step-up started at a signed-in browser and "continued" would
 * give a fresh sign-in time for no proof).
 */
export function continueStep(svc: BrowserServices, req: Request, res: Response, target: StepTarget): Promise<SignInStep | undefined> {
  return finishStep(svc, req, res, (step) => (step.ready ? step.amr : undefined), target);
}

async function finishStep(
  svc: BrowserServices,
  req: Request,
  res: Response,
  proven: StepProof,
  target: StepTarget,
): Promise<SignInStep | undefined> {
  const done = await takingStep(svc, req, async (tx, step) => {
    const amr = await proven(step, tx);
    return amr && { step, location: await goOn(svc, tx, res, step.userId, amr, target, step.replaces, step.provider) };
  });
  if (!done) return undefined;
  res.redirect(303, done.location);
  return done.step;
}

/** Forgets the browser's step cookie (its row is gone or going). */
export function endStepCookie(svc: BrowserServices, res: Response): void {
  appendCookie(res, `${stepCookie(svc)}=${cookieOptions(svc, 0)}`);
}
