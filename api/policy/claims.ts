// Claims an admin shapes (Client.claims, App.claims): a claim name and a CEL expression over the
// person a token speaks for and the grant it belongs to, as Kubernetes' AuthenticationConfiguration
// claimMappings map a token's claims to a user (docs/concepts/access-control.md#claims-an-admin-shapes).
// Each expression is compiled once per record written (kept beside the record while a cache holds
// it, never per token), refused at write time when it cannot compile or names a claim the box alone
// states, and evaluated at issue over this person and this grant only: the variables hold nothing
// else, so no expression can read another person's data.
import { ValidationError, type FieldErrors } from '../errors.js';
import { CEL_PERSON, CelCompileError, celToJson, compileCel, type CelObjectShape, type CompiledCel, type JsonBudget } from './cel/index.js';
import type { AppPerson, RequestUser } from './requests.js';

/**
 * Claims no expression may set: what makes a token a token and says whose it is, for whom, how
 * the person signed in and what the client may do. A relying party trusts them because the box
 * states them, so an admin's expression never shapes them.
 */
export const RESERVED_CLAIMS: readonly string[] = [
  // RFC 7519 §4.1, the registered claims: who issued it, about whom, for whom, when, which.
  'iss',
  'sub',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  // OpenID Connect Core §2 and §3.1.3.6, §3.3.2.11; Front-/Back-Channel Logout's sid; JARM/FAPI's s_hash.
  'auth_time',
  'nonce',
  'acr',
  'amr',
  'azp',
  'at_hash',
  'c_hash',
  's_hash',
  'sid',
  // Core §5.6.2: aggregated and distributed claims would send a relying party to another source.
  '_claim_names',
  '_claim_sources',
  // RFC 9068 §2.2, RFC 8693 §4, RFC 9449 §6, RFC 9493: the client, what it may do, who acts, the key.
  'client_id',
  'scope',
  'act',
  'may_act',
  'cnf',
  'sub_id',
  // RFC 7662 §2.2: what an introspection answer says of the token itself.
  'active',
  'token_type',
  'username',
  // What the box vouches for about the person: relying parties link accounts by the address it
  // verified, and kube-apiserver authorizes by groups. Shape new names (roles) beside them.
  'email',
  'email_verified',
  'groups',
  'phone_number',
  'phone_number_verified',
];

const RESERVED = new Set(RESERVED_CLAIMS.map((name) => name.toLowerCase()));

/** A claim name: a word, or a collision-resistant name such as a URI (RFC 7519 §4.2); at most 256 characters. */
const CLAIM_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:/#~+-]{0,255}$/;
/** Keys that name the prototype machinery of a JavaScript object, never a claim. */
const OBJECT_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Why `name` cannot be a shaped claim's name; undefined when it can. */
export function claimNameProblem(name: string): string | undefined {
  if (RESERVED.has(name.toLowerCase())) return `"${name}" is a claim the box alone states; shape a claim of another name`;
  if (!CLAIM_NAME.test(name) || OBJECT_KEYS.has(name)) {
    return `"${name}" is not a claim name: letters, digits and _ . : / # ~ + - (a word, or a URI), at most 256 characters`;
  }
  return undefined;
}

/** What a record declares: its claims by name, each a CEL expression. */
export type ClaimExpressions = Record<string, string>;

/** The person the token speaks for, as policies see them (request.user: data, SCIM attributes and upstream identities beside id, email and groups). */
export type ClaimsPerson = RequestUser;

/** The variables of a claim expression (CLAIMS_SHAPE declares their types). */
export interface ClaimBindings {
  /** This person, and only them. */
  user: ClaimsPerson;
  grant: ClaimGrant;
}

/** The grant a token belongs to, as a claim expression sees it. */
export interface ClaimGrant {
  /** The client the grant was issued to. */
  client: string;
  /** The scopes granted. */
  scope: string[];
  /** The audience of the grant's access tokens (RFC 8707); empty when they are for the box's own API. */
  aud: string[];
  /** What the person's sign-in proved (RFC 8176); empty when unknown. */
  amr: string[];
  /** Its class (urn:boxauth:acr:password, urn:boxauth:acr:mfa, phr); "" when unknown. */
  acr: string;
}

const strings = { list: 'string' } as const;

/** The variables of a claim expression, as CEL's checker sees them: `user` and `grant` (ClaimBindings). */
export const CLAIMS_SHAPE: CelObjectShape = {
  fields: {
    user: CEL_PERSON,
    grant: { fields: { client: 'string', scope: strings, aud: strings, amr: strings, acr: 'string' } },
  },
};

interface Compiled {
  name: string;
  program: CompiledCel | undefined;
  /** Why the stored expression does not compile (a record from an older release, or written straight into the database). */
  problem: string | undefined;
}

/** Compiles one claim; throws CelCompileError, or an Error naming a reserved or malformed name. */
function compileClaim(name: string, source: string): CompiledCel {
  const refused = claimNameProblem(name);
  if (refused) throw new Error(refused);
  return compileCel(source, CLAIMS_SHAPE, { yields: 'any' });
}

const problemsOf = (err: unknown): string[] =>
  err instanceof CelCompileError ? err.problems : [err instanceof Error ? err.message : String(err)];

/**
 * 422 naming each claim that cannot be: a name the box alone states, or an expression that does
 * not parse, type-check or stay under the cost limit. The REST API and the operator ask it before
 * writing a Client or an App.
 */
export function checkClaimsCompile(record: { claims?: ClaimExpressions }): void {
  const errors: FieldErrors = {};
  for (const [name, source] of Object.entries(record.claims ?? {})) {
    try {
      compileClaim(name, source);
    } catch (err) {
      errors[`claims.${name}`] = problemsOf(err);
    }
  }
  if (Object.keys(errors).length) throw new ValidationError(record, errors);
}

/**
 * The compiled claims of a record, by its claims object: a cached Client or App keeps the same
 * object until it is written again (the caches drop it then), so each expression is compiled once
 * per write and process, never per token.
 */
const compiledByRecord = new WeakMap<ClaimExpressions, Compiled[]>();

function compiledOf(claims: ClaimExpressions): Compiled[] {
  let compiled = compiledByRecord.get(claims);
  if (!compiled) {
    compiled = Object.entries(claims).map(([name, source]) => {
      try {
        return { name, program: compileClaim(name, source), problem: undefined };
      } catch (err) {
        return { name, program: undefined, problem: problemsOf(err).join('; ') };
      }
    });
    compiledByRecord.set(claims, compiled);
  }
  return compiled;
}

/** A claim left out of a token: which, and why. */
export interface ClaimLeftOut {
  claim: string;
  why: string;
}

/**
 * The longest JSON text one shaped claim, and all of a token's shaped claims together, may take.
 * Tokens travel in headers (HTTP servers and proxies commonly refuse headers over 8 to 16 KiB),
 * and a claim's value is built per token: a few references in a comprehension
 * (`[0, …, 199].map(a, [0, …, 199].map(b, user.data))`) cost little to evaluate and make
 * hundreds of megabytes of JSON. A claim over either limit is left out, as a failing one is.
 */
export const CLAIM_SIZE_LIMITS = { claim: 8 * 1024, claims: 16 * 1024 } as const;

/** As Kubernetes' claim mappings read them: null, "" and [] say "no such claim". */
const isNothing = (value: unknown): boolean => value === null || value === '' || (Array.isArray(value) && value.length === 0);

/**
 * The claims `claims` shape for this person and grant. A claim whose expression fails (a field
 * the person lacks, the cost limit, a value JSON cannot carry) or that cannot compile any more is
 * left out and reported in `leftOut`: a shaped claim never fails a sign-in or a token.
 */
export function shapeClaims(
  claims: ClaimExpressions | undefined,
  bindings: ClaimBindings,
): { claims: Record<string, unknown>; leftOut: ClaimLeftOut[] } {
  const shaped: Record<string, unknown> = {};
  const leftOut: ClaimLeftOut[] = [];
  if (!claims) return { claims: shaped, leftOut };
  const variables = { user: bindings.user, grant: bindings.grant };
  let room: number = CLAIM_SIZE_LIMITS.claims;
  for (const { name, program, problem } of compiledOf(claims)) {
    if (!program) {
      leftOut.push({ claim: name, why: `does not compile: ${problem}` });
      continue;
    }
    const result = program.evaluate(variables);
    if (result.kind === 'error') {
      leftOut.push({ claim: name, why: result.message });
      continue;
    }
    const budget: JsonBudget = { left: Math.min(CLAIM_SIZE_LIMITS.claim, room) };
    const value = celToJson(result.value, budget);
    if (budget.left < 0) {
      leftOut.push({
        claim: name,
        why: `its value is longer than ${CLAIM_SIZE_LIMITS.claim.toLocaleString('en')} characters of JSON, or than what is left of the ${CLAIM_SIZE_LIMITS.claims.toLocaleString('en')} all shaped claims may take`,
      });
    } else if (value === undefined)
      leftOut.push({ claim: name, why: 'its value is not one JSON can carry (bytes, a duration, a huge integer)' });
    else if (!isNothing(value)) {
      shaped[name] = value;
      room -= Math.min(CLAIM_SIZE_LIMITS.claim, room) - budget.left;
    }
  }
  return { claims: shaped, leftOut };
}

/** Whether a record shapes any claim (most do not: their tokens pay nothing). */
export const shapesClaims = (record: { claims?: ClaimExpressions }): boolean =>
  record.claims !== undefined && Object.keys(record.claims).length > 0;

/**
 * The person as an App's policies see them (AppRequest.user): what a token for the App carries —
 * id, email, email_verified, groups — and the claims the App shapes (`claims`, App.claims) over this
 * person and grant, as its upstream JWT carries them; never the person's data, SCIM attributes or
 * upstream identities, which only the box's own policies read. An App's policies are its team's to
 * write, the App's claims an unconditional writer's (api/policy/writers.ts): what the team's rules
 * may read of a person, the box's administrators choose. Made once per decision, by the decision
 * (./evaluate.ts decideApp), so its expressions spend the decision's budget (./budget.ts); a claim
 * that fails is left out, as from the App's token.
 */
export function appPerson(claims: ClaimExpressions | undefined, bindings: ClaimBindings): AppPerson {
  const { id, email, email_verified, groups } = bindings.user;
  return { id, email, email_verified, groups, claims: shapeClaims(claims, bindings).claims };
}
