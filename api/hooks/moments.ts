// What a call to a hook carries and what its answer means, per moment: pure, the clock and the
// network elsewhere (./caller.ts). Shaped as an admission webhook's AdmissionReview: the box asks,
// the hook answers `allowed` (and, where the moment lets it, what to add); an answer that is not
// one is a failed call, which the Hook's failurePolicy decides, never the hook's words.
import { CLAIM_SIZE_LIMITS, claimNameProblem } from '../policy/claims.js';
import type { RequestUser } from '../policy/requests.js';
import type { Hook } from '../types.js';

/** The moments a Hook may be asked at (crds/hook.yaml). */
export type Moment = Hook['moments'][number];

/** The moments before a token, an ID token, a UserInfo answer or a SAML assertion: the hook may add claims. */
export const CLAIM_MOMENTS: readonly Moment[] = ['tokenIssuing', 'idTokenIssuing', 'userinfoAnswering', 'samlAssertionIssuing'];

/** The grant a token moment is about, as the hook sees it. */
export interface HookGrant {
  /** The grant_type (or `authorization` for a token of the authorization endpoint, `userinfo`). */
  type: string;
  scope: string[];
  aud: string[];
  amr: string[];
  acr: string;
}

/**
 * What a call carries besides the box, the hook and the moment: what the moment is about. Only
 * what the moment has; never a token, a code or a secret, and a password only at passwordImport.
 */
export interface HookRequest {
  client?: { id: string };
  /** The person, as the box's policies see them. */
  user?: RequestUser;
  grant?: HookGrant;
  /** signingIn: how the person proved it (password, passkey, upstream, saml). */
  signIn?: { way: string; amr: string[] };
  /** personCreating: who is about to be made, and by what way (signUp, upstream, scim, api). */
  person?: { email: string; via: string; data?: Record<string, unknown>; groups?: string[] };
  /** passwordImport: the address and the password given, to check against the old system. */
  password?: { email: string; password: string };
}

/** A hook's answer, once read as one. */
export interface HookAnswer {
  allowed: boolean;
  /** Why it refuses, shown to the person (signingIn, personCreating) or in the error (token moments). */
  message?: string;
  claims?: Record<string, unknown>;
  data?: Record<string, unknown>;
  groups?: string[];
  acr?: string;
  /** passwordImport: the old system knows this password. */
  valid?: boolean;
}

/** Why a call has no answer to go by: the results of boxauth_hook_calls_total besides allowed and refused. */
export type CallFailure =
  'timeout' | 'unreachable' | 'refused_address' | 'status' | 'garbage' | 'busy' | 'breaker_open' | 'condition_error';

/** What one call came to. */
export type CallOutcome = { answer: HookAnswer } | { failed: CallFailure; why: string };

const MAX_MESSAGE = 512;
const MAX_GROUPS = 100;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The answer of a hook at `moment`, read from what it sent: a 200 with a JSON object whose
 * `allowed` is a boolean (`valid` at passwordImport), each other field of the type it must have.
 * Anything else is garbage: the hook said nothing the box may go by.
 */
export function readAnswer(moment: Moment, status: number, body: string): CallOutcome {
  if (status !== 200) return { failed: 'status', why: `it answered ${status} (a hook answers 200 with a JSON object)` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { failed: 'garbage', why: 'its answer is not JSON' };
  }
  if (!isObject(parsed)) return { failed: 'garbage', why: 'its answer is not a JSON object' };
  const garbage = (why: string): CallOutcome => ({ failed: 'garbage', why });
  const { allowed, message, claims, data, groups, acr, valid } = parsed;
  if (moment === 'passwordImport') {
    if (typeof valid !== 'boolean') return garbage('its answer has no boolean "valid"');
  } else if (typeof allowed !== 'boolean') return garbage('its answer has no boolean "allowed"');
  if (message !== undefined && (typeof message !== 'string' || message.length > MAX_MESSAGE))
    return garbage(`its "message" is not a string of at most ${MAX_MESSAGE} characters`);
  if (claims !== undefined && !isObject(claims)) return garbage('its "claims" is not an object');
  if (data !== undefined && !isObject(data)) return garbage('its "data" is not an object');
  if (groups !== undefined && (!Array.isArray(groups) || groups.length > MAX_GROUPS || !groups.every((g) => typeof g === 'string')))
    return garbage(`its "groups" is not a list of at most ${MAX_GROUPS} strings`);
  if (acr !== undefined && (typeof acr !== 'string' || acr.length > 256)) return garbage('its "acr" is not a string');
  return {
    answer: {
      allowed: moment === 'passwordImport' ? allowed !== false : (allowed as boolean),
      ...(message !== undefined ? { message } : {}),
      ...(claims !== undefined ? { claims } : {}),
      ...(data !== undefined ? { data } : {}),
      ...(groups !== undefined ? { groups: groups } : {}),
      ...(acr !== undefined ? { acr } : {}),
      ...(valid !== undefined ? { valid: valid as boolean } : {}),
    },
  };
}

/** A claim a hook's answer named that the token does not carry, and why. */
export interface ClaimDropped {
  claim: string;
  why: string;
}

/**
 * The claims a hook may add: each name held to the rules of an administrator's shaped claims
 * (api/policy/claims.ts: never one the box alone states — iss, sub, aud, exp, acr, amr, cnf,
 * email, groups…), each value and all of them together within the same sizes. `room` is what is
 * left of CLAIM_SIZE_LIMITS.claims once earlier hooks' claims are in.
 */
export function admittedClaims(
  claims: Record<string, unknown>,
  room: number = CLAIM_SIZE_LIMITS.claims,
): { claims: Record<string, unknown>; dropped: ClaimDropped[]; room: number } {
  const admitted: Record<string, unknown> = {};
  const dropped: ClaimDropped[] = [];
  for (const [name, value] of Object.entries(claims)) {
    const problem = claimNameProblem(name);
    if (problem) {
      dropped.push({ claim: name, why: problem });
      continue;
    }
    const size = JSON.stringify(value)?.length ?? 0;
    if (value === undefined || value === null || size > CLAIM_SIZE_LIMITS.claim || size > room) {
      dropped.push({
        claim: name,
        why: `its value is empty or longer than what a token may carry (${CLAIM_SIZE_LIMITS.claim} characters)`,
      });
      continue;
    }
    admitted[name] = value;
    room -= size;
  }
  return { claims: admitted, dropped, room };
}

/** One hook's part in a moment: its id, its failure policy and what its call came to. */
export interface HookPart {
  hook: string;
  failurePolicy: 'Fail' | 'Ignore';
  outcome: CallOutcome;
}

/** The moment's verdict, all its hooks asked. */
export type Verdict =
  | {
      allowed: true;
      claims: Record<string, unknown>;
      dropped: (ClaimDropped & { hook: string })[];
      data: Record<string, unknown>;
      groups: string[];
      /** signingIn: the class of sign-in a hook requires (a step-up), when one does. */
      acr?: string;
      /** passwordImport: whether a hook vouched for the password (undefined: none was asked). */
      valid?: boolean;
    }
  | { allowed: false; hook: string; message: string; failed: boolean };

/** What the person (or client) is told when a hook's call failed and its policy is Fail: never the hook's error. */
export const FAILED_MESSAGE = 'a check the box must make could not be made; try again in a moment';

/**
 * The verdict of a moment from its hooks' parts, in the order of the hooks' ids: the first refusal
 * (or failed call of a Hook whose failurePolicy is Fail) refuses; otherwise what each adds, claims
 * held to `admittedClaims` (an earlier hook's claim of a name is kept), groups joined, the first
 * `acr` asked for. A failed call of a Hook whose failurePolicy is Ignore adds nothing.
 */
export function combine(moment: Moment, parts: readonly HookPart[]): Verdict {
  const verdict: Extract<Verdict, { allowed: true }> = { allowed: true, claims: {}, dropped: [], data: {}, groups: [] };
  let room: number = CLAIM_SIZE_LIMITS.claims;
  for (const { hook, failurePolicy, outcome } of [...parts].sort((a, b) => (a.hook < b.hook ? -1 : a.hook > b.hook ? 1 : 0))) {
    if ('failed' in outcome) {
      if (failurePolicy === 'Fail') return { allowed: false, hook, message: FAILED_MESSAGE, failed: true };
      continue;
    }
    const { answer } = outcome;
    if (moment === 'passwordImport') {
      verdict.valid = (verdict.valid ?? false) || answer.valid === true;
      continue;
    }
    if (!answer.allowed) return { allowed: false, hook, message: answer.message ?? `refused by hook "${hook}"`, failed: false };
    if (answer.claims && CLAIM_MOMENTS.includes(moment)) {
      const fresh = Object.fromEntries(Object.entries(answer.claims).filter(([name]) => !(name in verdict.claims)));
      const admitted = admittedClaims(fresh, room);
      Object.assign(verdict.claims, admitted.claims);
      room = admitted.room;
      verdict.dropped.push(...admitted.dropped.map((d) => ({ ...d, hook })));
    }
    if (moment === 'personCreating') {
      if (answer.data) verdict.data = { ...answer.data, ...verdict.data };
      for (const group of answer.groups ?? []) if (!verdict.groups.includes(group)) verdict.groups.push(group);
    }
    if (moment === 'signingIn' && answer.acr !== undefined && verdict.acr === undefined) verdict.acr = answer.acr;
  }
  return verdict;
}
