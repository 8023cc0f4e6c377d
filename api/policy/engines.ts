// Policy engines: each turns an AccessPolicy into a test of the request object.
import type { Ajv } from 'ajv';
import { ValidationError } from '../errors.js';
import { createAjv } from '../schema/resources.js';
import type { AccessPolicy } from '../types.js';
import { matcho, patternErrors } from './matcho.js';

/** What the engines see of a request (ARCHITECTURE §4, "Access control"). */
export interface PolicyRequest {
  'request-method': string;
  uri: string;
  params: Record<string, unknown>;
  'query-string': string;
  client: Record<string, unknown> | null;
  user: { id: string; email: string; groups: string[] } | null;
  scope: string | null;
}

export type Rule = (request: PolicyRequest) => boolean;

/** `ajv` holds the compiled schemas: one instance per loaded policy set, dropped with it. */
export function compilePolicy(policy: AccessPolicy, ajv: Ajv): Rule {
  switch (policy.engine) {
    case 'allow':
      return () => true;
    case 'json-schema': {
      const validate = ajv.compile(policy.schema ?? {});
      return (request) => validate(request) === true;
    }
    case 'matcho': {
      const pattern = policy.matcho ?? {};
      return (request) => matcho(request, pattern);
    }
  }
}

/** 422 for a policy that validates as a resource but could not run (bad schema or regex). */
export function checkPolicyCompiles(policy: AccessPolicy): void {
  if (policy.engine === 'json-schema') {
    try {
      createAjv().compile(policy.schema ?? {});
    } catch (err) {
      throw ValidationError.field(policy, 'schema', `is not a usable JSON Schema: ${(err as Error).message}`);
    }
  }
  if (policy.engine === 'matcho') {
    const errors = patternErrors(policy.matcho);
    if (errors.length) throw new ValidationError(policy, { matcho: errors });
  }
}
