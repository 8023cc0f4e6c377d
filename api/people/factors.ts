// What a person's own factors and rules ask of their sign-ins, and what a sign-in needs next
// (docs/guides/second-factors.md). The classes and the amr values are api/credentials/acr.ts's.
import { ACR_MFA, ACR_PASSKEY, acrOf, meets, strongest, type Acr } from '../credentials/acr.js';
import { hasFactor, holdsWebAuthn } from '../factor-kinds.js';
import type { FactorState } from '../store/factors.js';

/** What a person's factors and groups ask of every sign-in of theirs: their FactorState but the recovery codes. */
export type PersonsFactors = Omit<FactorState, 'recoveryCodes'>;

/**
 * The class a person's own rules ask of their sign-ins: several factors when a group of theirs
 * requires it, when they must enrol, or when they have a factor (who enrolled one gives it at
 * every sign-in: a browser signed in with a password before they enrolled, or before an upgrade,
 * is asked for it again before an app gets a code).
 */
export function acrRequiredOf(person: PersonsFactors): Acr | undefined {
  return person.groupRequires || person.mustEnrol || hasFactor(person) ? ACR_MFA : undefined;
}

/**
 * How long a proof stands for its person (a password or a factor they gave: at a sign-in, in a
 * step-up, on the account page's "confirm it is you"): a credential change asks for one this
 * recent (OWASP ASVS V2.5.1/V3.7.1, NIST SP 800-63B §6.1.2: whoever holds a signed-in browser is
 * not yet its person), and a step-up may enrol a factor only after one.
 */
export const RECENT_PROOF_MINUTES = 10;

/** Whether a proof given at `proofAt` is recent at `now` (ms): a pure decision, the clock is the caller's. */
export function recentProof(proofAt: Date, now: number): boolean {
  return now - proofAt.getTime() <= RECENT_PROOF_MINUTES * 60_000;
}

/**
 * What a sign-in needs next once factors (`amr`) are proven, toward `want` (what the request
 * asked; the person's own rules are added here):
 * - `done`: nothing more;
 * - `second-factor`: one of the person's factors (a person who enrolled one gives it at every
 *   sign-in; one who gave a code and is asked for a passkey gives a passkey);
 * - `enrol`: the person must add a factor first and has none the sign-in could ask for, so
 *   what they proved is the only proof there is: they enrol now, before any app gets a token.
 *   What they may enrol is what meets the class wanted (a passkey for `phr`);
 * - `sign-in`: a step-up (a browser signed in, asked for more) would have to enrol, and its last
 *   proof is not recent: enrolling is a credential change, and whoever holds a signed-in browser
 *   is not yet its person (a stolen browser must not become the account by adding a factor of its
 *   own). The person signs in again; the enrolment follows that sign-in.
 */
export type NextStep = 'done' | 'second-factor' | 'enrol' | 'sign-in';

/** A step-up: when the session's (or the step's) last proof was given, and now (ms). */
export interface StepUpProof {
  proofAt: Date;
  now: number;
}

export function nextStep(amr: readonly string[], person: PersonsFactors, want: Acr | undefined, stepUp?: StepUpProof): NextStep {
  const wanted = strongest(want, acrRequiredOf(person));
  if (hasFactor(person) && !amr.includes('mfa')) return 'second-factor';
  if (meets(acrOf(amr), wanted)) return 'done';
  if (wanted === ACR_PASSKEY && holdsWebAuthn(person)) return 'second-factor';
  if (stepUp && !recentProof(stepUp.proofAt, stepUp.now)) return 'sign-in';
  return 'enrol';
}
