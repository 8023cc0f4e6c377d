// Policy engines: each turns an AccessPolicy into a test of the request object.
import type { Ajv, ValidateFunction } from 'ajv';
import { errorMessage, ValidationError } from '../errors.js';
import { createAjv } from '../schema/resources.js';
import type { AccessPolicy } from '../types.js';
import {
  CEL_ENVIRONMENTS,
  CelCompileError,
  celValue,
  compileCel,
  convertedValues,
  explain,
  showCel,
  type CelEnvironmentName,
  type CompiledCel,
} from './cel/index.js';
import { EVALUATION_LIMITS, metered, spend, stopMessage, takeSpent } from './budget.js';
import { span, tracingOn } from '../tracing.js';
import { matcho, mismatch, patternErrors } from './matcho.js';
import { re2Engine, regexRefusal } from './regex.js';
import { chargeValidation, referenceErrors } from './schema-work.js';
import type { PolicyObject } from './requests.js';

/**
 * A policy as it runs: `test` on every request object (./requests.ts), and `why` it
 * did not allow one, for explanations only (`boxauth explain`, dry-run logs).
 */
export interface Rule {
  test(request: PolicyObject): boolean;
  why(request: PolicyObject): string | undefined;
}

/**
 * The ajv of policy schemas: their `pattern`s run on RE2, as matcho's regexes do. A keyword
 * or a format it would not apply is an error (strictSchema), not ignored: ignored, it would
 * let the policy match more than its author wrote (a misspelt `propertes`, a `format` ajv does
 * not know).
 */
export function createPolicyAjv(): Ajv {
  return createAjv({ code: { regExp: re2Engine }, strictSchema: true });
}

/**
 * Where `schema` uses `$data` (ajv's extension, which the engine does not turn on), as a JSON
 * pointer; undefined when it does not. Left off, `{"const": {"$data": …}}` would compare with
 * that object itself, and the policy would never match. Turned on, it would be worse: ajv skips a
 * keyword whose `$data` names a value the request does not have, so `{"const": {"$data":
 * "/user/data/team"}}` would allow everyone without a team. A rule that compares two fields of the
 * request is a matcho reference (".user.data.team"), which a missing value never matches.
 */
function dataReference(schema: unknown, at = ''): string | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  if (!Array.isArray(schema) && Object.hasOwn(schema, '$data')) return at || '/';
  for (const [key, value] of Object.entries(schema)) {
    const found = dataReference(value, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    if (found) return found;
  }
  return undefined;
}

/** The policy's JSON Schema compiled; throws when it cannot run or uses what the engine does not apply. */
function compileSchema(schema: object, ajv: Ajv): ValidateFunction {
  const data = dataReference(schema);
  if (data) throw new Error(`uses "$data" (at ${data}), which the json-schema engine does not apply: the policy would never match`);
  const references = referenceErrors(schema);
  if (references.length) throw new Error(references.join('; '));
  try {
    return ajv.compile(schema);
  } catch (err) {
    const message = errorMessage(err);
    const keyword = /^strict mode: unknown keyword: (".*")$/.exec(message)?.[1];
    const format = /^unknown format (".*") ignored in schema at path "(.*)"$/.exec(message);
    const what = keyword
      ? `keyword ${keyword} is not one the json-schema engine applies (JSON Schema draft-07)`
      : format
        ? `format ${format[1]} (at ${format[2]}) is not one the json-schema engine knows`
        : /^strict mode: /.test(message) && `${message.slice('strict mode: '.length)} by the json-schema engine`;
    if (!what) throw err;
    throw new Error(`${what}: the policy would ignore it`, { cause: err });
  }
}

/**
 * The CEL environment of a policy: an App's policies are asked about that app's requests (a
 * gateway's, and AuthZEN evaluations: the `app` environment, whose `resource` and `context` exist
 * only in an evaluation); the box's own, about requests on its API and, when linked to a client,
 * that client's token exchanges (./evaluate.ts decideExchange): the `box-api` environment, whose
 * `exchange` exists only in an exchange. A field of the other kind is refused when written.
 */
export const celEnvironmentOf = (policy: Pick<AccessPolicy, 'app'>): CelEnvironmentName => (policy.app === undefined ? 'box-api' : 'app');

/**
 * The bindings of a request object, converted to CEL values once per decision: every cel policy
 * asked about the same request object reads the same conversion. Request objects are not changed
 * once built (./requests.ts), and the entry goes with the object. Converting is the decision's own
 * work, a unit a value (./budget.ts spend): a request object of 1,850 strings costs 1,850 whether
 * its policies then read one of them or none.
 */
const bindingsOf = (() => {
  const converted = new WeakMap<PolicyObject, { request: unknown }>();
  return (request: PolicyObject): { request: unknown } => {
    let bindings = converted.get(request);
    if (!bindings) {
      const before = convertedValues();
      converted.set(request, (bindings = { request: celValue(request) }));
      spend(convertedValues() - before);
    }
    return bindings;
  };
})();

/**
 * Allows only on `true`. Why it did not: false (and the sub-expressions that made it so), another
 * value, or an error (a field the request lacks, the cost limit): said apart in the record.
 */
function celRule(compiled: CompiledCel): Rule {
  const outcome = (request: PolicyObject) => compiled.evaluate(bindingsOf(request));
  return {
    test: (request) => {
      const o = outcome(request);
      return o.kind === 'value' && o.value === true;
    },
    why: (request) => {
      const o = outcome(request);
      if (o.kind === 'error') return `the expression could not be evaluated (denied): ${o.message}`;
      if (o.value === true) return undefined;
      if (o.value !== false) return `the expression is ${showCel(o.value)}, not true (denied)`;
      const { parts } = explain(compiled, bindingsOf(request));
      return `the expression is false${parts.length ? `: ${parts.map((p) => `${p.expression} is ${p.value}`).join('; ')}` : ''}`;
    },
  };
}

/**
 * A rule whose patterns charge the running evaluation (./regex.ts PolicyRegex): metered as an
 * expression is (./budget.ts), a policy stopped by its budget does not allow, and says why.
 */
function meteredRule(rule: Rule): Rule {
  return {
    test: (request) => metered(() => rule.test(request)).value === true,
    why: (request) => {
      const { value, stopped } = metered(() => rule.why(request));
      return stopped ? `${stopMessage(stopped, EVALUATION_LIMITS.perPolicy)} (denied)` : value;
    },
  };
}

/** The policy's expression compiled for its environment; a CelCompileError names each problem. */
const compiledCel = (policy: AccessPolicy): CompiledCel => compileCel(policy.cel ?? '', celEnvironmentOf(policy));

/** `ajv` (from createPolicyAjv) holds the compiled schemas: one instance per loaded policy set, dropped with it. */
export const compilePolicy = (policy: AccessPolicy, ajv: Ajv): Rule => traced(policy, compileRule(policy, ajv));

/**
 * Each evaluation of `rule` in a span of its own when traces are on (api/tracing.ts): the policy,
 * its engine, the units of work it spent (./budget.ts) and its verdict. Never the request object.
 */
function traced(policy: AccessPolicy, rule: Rule): Rule {
  const attributes = { 'boxauth.policy': policy.id, 'boxauth.policy.engine': policy.engine, 'boxauth.app': policy.app ?? '' };
  return {
    test: (request) =>
      tracingOn()
        ? span('policy', attributes, (notes) => {
            takeSpent();
            const allows = rule.test(request);
            notes.setAttributes({ 'boxauth.policy.verdict': allows ? 'allows' : 'denies', 'boxauth.policy.units': takeSpent() });
            return allows;
          })
        : rule.test(request),
    why: (request) => rule.why(request),
  };
}

function compileRule(policy: AccessPolicy, ajv: Ajv): Rule {
  switch (policy.engine) {
    case 'allow':
      return { test: () => true, why: () => undefined };
    case 'json-schema': {
      const schema = policy.schema ?? {};
      const validate = compileSchema(schema, ajv);
      // The validation's work is paid for before ajv does it (./schema-work.ts).
      const valid = (request: PolicyObject) => (chargeValidation(schema, request), validate(request) === true);
      return meteredRule({
        test: valid,
        why: (request) =>
          valid(request)
            ? undefined
            : (validate.errors ?? []).map((e) => `${e.instancePath || '(the request)'} ${e.message ?? 'is invalid'}`).join('; '),
      });
    }
    case 'matcho': {
      const pattern = policy.matcho ?? {};
      // Found now, not at request time: a stored pattern that cannot run (written by an older
      // version, or straight into the database) makes its policy allow nothing, never a 500.
      const errors = patternErrors(pattern, CEL_ENVIRONMENTS[celEnvironmentOf(policy)]);
      if (errors.length) throw new Error(errors.join('; '));
      return meteredRule({ test: (request) => matcho(request, pattern), why: (request) => mismatch(request, pattern) });
    }
    case 'cel':
      // Compiled here, once per loaded set: a stored expression that no longer compiles (written by
      // an older version, or straight into the database) makes its policy allow nothing.
      return celRule(compiledCel(policy));
  }
}

/** 422 for a policy that validates as a resource but could not run (bad schema or regex). */
export function checkPolicyCompiles(policy: AccessPolicy): void {
  if (policy.engine === 'json-schema') {
    try {
      compileSchema(policy.schema ?? {}, createPolicyAjv());
    } catch (err) {
      const message = regexRefusal(err) ?? `is not a usable JSON Schema: ${errorMessage(err)}`;
      throw ValidationError.field(policy, 'schema', message);
    }
  }
  if (policy.engine === 'matcho') {
    const errors = patternErrors(policy.matcho, CEL_ENVIRONMENTS[celEnvironmentOf(policy)]);
    if (errors.length) throw new ValidationError(policy, { matcho: errors });
  }
  if (policy.engine === 'cel') {
    try {
      compiledCel(policy);
    } catch (err) {
      if (!(err instanceof CelCompileError)) throw err;
      throw new ValidationError(policy, { cel: err.problems });
    }
  }
}
