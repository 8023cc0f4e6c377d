// The class of sign-in a request needs of a person, by their own rules too: what the
// credentials' sign-in questions (../credentials/sign-in.ts mustStepUp) are asked against.
import { acrAsked, isAcr, strongest, type Acr } from '../credentials/acr.js';
import { acrRequiredOf, type PersonsFactors } from './factors.js';

/**
 * The class of sign-in a request needs: the strongest of what it asks (acr_values), what its
 * client requires (minimum_acr) and what the person's own rules require (a group's second
 * factor, an administrator's reset).
 */
export function acrWanted(acrValues: string | undefined, clientMinimum: unknown, person: PersonsFactors): Acr | undefined {
  return strongest(acrAsked(acrValues), isAcr(clientMinimum) ? clientMinimum : undefined, acrRequiredOf(person));
}
