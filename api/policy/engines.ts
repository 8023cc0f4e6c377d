// Policy engines: each turns an AccessPolicy into a test of the request object.
import type { Ajv } from 'ajv';
import { errorMessage, ValidationError } from '../errors.js';
import { createAjv } from '../schema/resources.js';
import type { AccessPolicy, PrincipalUser } from '../types.js';
import { matcho, mismatch, patternErrors } from './matcho.js';
import { re2Engine, regexRefusal } from './regex.js';

/** A person as every request object names them: the box's API's, an app's, a token exchange's. */
export interface RequestUser {
  id: string;
  email: string;
  /** Whether the box vouches for `email`: a rule on the address (an email domain) must require it. */
  email_verified: boolean;
  /** Their groups' names. */
  groups: string[];
}

export const requestUser = (user: PrincipalUser): RequestUser => ({
  id: user.id,
  email: user.email,
  email_verified: user.emailVerified,
  groups: user.groups.map((g) => g.name),
});

/** What the engines see of a request (docs/concepts/access-control.md: the request object). */
export interface PolicyRequest {
  'request-method': string;
  uri: string;
  params: Record<string, unknown>;
  'query-string': string;
  client: Record<string, unknown> | null;
  user: RequestUser | null;
  scope: string | null;
}

/**
 * A policy as it runs: `test` on every request (the box's API's PolicyRequest, or
 * an app's request object, api/decision/request.ts), and `why` it did not allow
 * one, for explanations only (`boxauth explain`, dry-run logs).
 */
export interface Rule {
  test(request: object): boolean;
  why(request: object): string | undefined;
}

/** The ajv of policy schemas: their `pattern`s run on RE2, as matcho's regexes do. */
export function createPolicyAjv(): Ajv {
  return createAjv({ code: { regExp: re2Engine } });
}

/** `ajv` (from createPolicyAjv) holds the compiled schemas: one instance per loaded policy set, dropped with it. */
export function compilePolicy(policy: AccessPolicy, ajv: Ajv): Rule {
  switch (policy.engine) {
    case 'allow':
      return { test: () => true, why: () => undefined };
    case 'json-schema': {
      const validate = ajv.compile(policy.schema ?? {});
      return {
        test: (request) => validate(request) === true,
        why: (request) =>
          validate(request) === true
            ? undefined
            : (validate.errors ?? []).map((e) => `${e.instancePath || '(the request)'} ${e.message ?? 'is invalid'}`).join('; '),
      };
    }
    case 'matcho': {
      const pattern = policy.matcho ?? {};
      // Found now, not at request time: a stored pattern that cannot run (written by an older
      // version, or straight into the database) makes its policy allow nothing, never a 500.
      const errors = patternErrors(pattern);
      if (errors.length) throw new Error(errors.join('; '));
      return { test: (request) => matcho(request, pattern), why: (request) => mismatch(request, pattern) };
    }
  }
}

/** 422 for a policy that validates as a resource but could not run (bad schema or regex). */
export function checkPolicyCompiles(policy: AccessPolicy): void {
  if (policy.engine === 'json-schema') {
    try {
      createPolicyAjv().compile(policy.schema ?? {});
    } catch (err) {
      const message = regexRefusal(err) ?? `is not a usable JSON Schema: ${errorMessage(err)}`;
      throw ValidationError.field(policy, 'schema', message);
    }
  }
  if (policy.engine === 'matcho') {
    const errors = patternErrors(policy.matcho);
    if (errors.length) throw new ValidationError(policy, { matcho: errors });
  }
}
