// What a person's own factors and rules ask of their sign-ins, and what a sign-in needs next
// (docs/guides/second-factors.md). The classes and the amr values are api/credentials/acr.ts's.
import { ACR_MFA, ACR_PASSKEY, acrOf, meets, strongest, type Acr } from '../credentials/acr.js';

/** What a person's factors and groups ask of every sign-in of theirs. */
export interface PersonsFactors {
  passkeys: number;
  totp: boolean;
  /** A group of theirs requires a second factor. */
  groupRequires: boolean;
  /** An administrator reset their factors: they enrol one at their next sign-in. */
  mustEnrol: boolean;
}

/**
 * The class a person's own rules ask of their sign-ins: several factors when a group of theirs
 * requires it, when they must enrol, or when they have a factor (who enrolled one gives it at
 * every sign-in: a browser signed in with a password before they enrolled, or before an upgrade,
 * is asked for it again before an app gets a code).
 */
export function acrRequiredOf(person: PersonsFactors): Acr | undefined {
  return person.groupRequires || person.mustEnrol || person.passkeys > 0 || person.totp ? ACR_MFA : undefined;
}

/**
 * What a sign-in needs next once factors (`amr`) are proven, toward `want` (what the request
 * asked; the person's own rules are added here):
 * - `done`: nothing more;
 * - `second-factor`: one of the person's factors (a person who enrolled one gives it at every
 *   sign-in; one who gave a code and is asked for a passkey gives a passkey);
 * - `enrol`: the person must add a factor first and has none the sign-in could ask for, so
 *   what they proved is the only proof there is: they enrol now, before any app gets a token.
 *   What they may enrol is what meets the class wanted (a passkey for `phr`).
 */
export type NextStep = 'done' | 'second-factor' | 'enrol';

export function nextStep(amr: readonly string[], person: PersonsFactors, want: Acr | undefined): NextStep {
  const wanted = strongest(want, acrRequiredOf(person));
  const hasFactor = person.passkeys > 0 || person.totp;
  if (hasFactor && !amr.includes('mfa')) return 'second-factor';
  if (meets(acrOf(amr), wanted)) return 'done';
  if (wanted === ACR_PASSKEY && person.passkeys > 0) return 'second-factor';
  return 'enrol';
}
